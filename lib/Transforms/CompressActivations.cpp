//===- CompressActivations.cpp - Saved activations in narrow formats ------===//
//
// --strata-compress-activations: packs every f32 activation the step saves
// for its backward pass with a strata.compress after its producer and gives
// each backward op that reads it a strata.decompress of its own. Formats,
// names and packed sizes are strata-rt/ActivationFormat.h's; the runtime
// chooses among the candidates a tensor carries (docs/compression.md).
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/SavedValues.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/PlanBuffers.h"

#include "strata-rt/ActivationFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace mlir::strata {
#define GEN_PASS_DEF_COMPRESSACTIVATIONSPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The candidates `auto` chooses among when none are given: from about 4x
/// to about 7.5x smaller than f32.
constexpr const char *kAutoCandidates = "mxfp8;mxfp6;bfp:m=4,block=32;mxfp4";

/// The formats of one compressed tensor: the one it starts in and those the
/// runtime may switch it to (the starting one among them).
struct FormatChoice {
  ActFormatAttr initial;
  SmallVector<ActFormatAttr> candidates;
  /// Relative error budget; 0 when none.
  double budget = 0;
};

/// The formats of the ordinary saved values and of the error-sensitive ones
/// (isErrorSensitive); `sensitive` is `ordinary` unless `sensitive=` says
/// otherwise, and its `initial` is null when those stay f32.
struct Choices {
  FormatChoice ordinary;
  FormatChoice sensitive;
};

/// Parses `text` into its canonical attribute, or reports why not.
FailureOr<ActFormatAttr> parseFormat(MLIRContext *context, Location loc,
                                     StringRef text) {
  strata_plan::ActFormat format;
  std::string error = strata_plan::parseActFormat(text.trim().str(), format);
  if (!error.empty())
    return emitError(loc) << "--strata-compress-activations: " << error;
  return ActFormatAttr::get(context, strata_plan::actFormatName(format));
}

/// Whether a forward op reduces `value` to the step's loss (a rank-0
/// result): the loss gradient exponentiates an error in its input (a
/// softmax's logits), so a loss's inputs stay f32.
bool isLossInput(Value value) {
  return llvm::any_of(value.getUsers(), [](Operation *user) {
    if (user->hasAttr(StrataDialect::getPhaseAttrName()) ||
        user->getNumResults() != 1)
      return false;
    auto type = dyn_cast<RankedTensorType>(user->getResult(0).getType());
    return type && type.getRank() == 0;
  });
}

/// Whether `value` is a saved activation this pass compresses.
bool isCompressible(Value value, int64_t minElements) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.getElementType().isF32() || !type.hasStaticShape() ||
      type.getNumElements() < std::max<int64_t>(minElements, 1) ||
      isLossInput(value))
    return false;
  // Vectors (batch norm's saved batch mean and inverse deviation, one value
  // per channel) are tiny and each value scales a whole channel's gradient:
  // they stay f32.
  if (type.getRank() < 2)
    return false;
  // A tensor remat swaps to host memory moves as it is.
  return llvm::none_of(value.getUsers(), [](Operation *user) {
    return isa<SwapOutOp, SwapOutWaitOp>(user);
  });
}

/// Whether `op`, a clone --strata-remat placed in the backward pass, is a
/// recomputation.
bool isRecompute(Operation *op) {
  auto phase = op->getAttrOfType<PhaseAttr>(StrataDialect::getPhaseAttrName());
  return phase && phase.getValue() == Phase::recompute;
}

/// Whether an op that saves `value` for its backward pass amplifies an
/// error in it (AutodiffOpInterface::amplifiesSavedError): the input of a
/// normalisation, the probabilities of a softmax. After --strata-remat a
/// value whose error reaches such a value through recomputations is as
/// sensitive (the keys and queries from which a softmax's probabilities are
/// recomputed: an error in the scores comes out exponentiated). The walk
/// finds such a value through a recomputed clone of the amplifying op; a
/// recomputed normalisation input whose normalisation is not itself
/// recomputed is read by the backward op directly and is not found.
bool isErrorSensitive(Value value) {
  auto amplifies = [&](Operation *op) {
    auto autodiff = dyn_cast_or_null<AutodiffOpInterface>(op);
    return autodiff && !op->hasAttr(StrataDialect::getPhaseAttrName()) &&
           autodiff.amplifiesSavedError(value);
  };
  if (amplifies(value.getDefiningOp()) ||
      llvm::any_of(value.getUsers(), amplifies))
    return true;
  SmallVector<Value> work = {value};
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!work.empty()) {
    Value reached = work.pop_back_val();
    for (Operation *user : reached.getUsers()) {
      if (!isRecompute(user) || !seen.insert(user).second)
        continue;
      auto autodiff = dyn_cast<AutodiffOpInterface>(user);
      if (autodiff && (autodiff.amplifiesSavedError(reached) ||
                       llvm::any_of(user->getResults(), [&](Value result) {
                         return autodiff.amplifiesSavedError(result);
                       })))
        return true;
      llvm::append_range(work, user->getResults());
    }
  }
  return false;
}

/// The backward ops (those with a phase) that read `value`, in program
/// order.
SmallVector<Operation *> backwardUsers(Value value) {
  llvm::SetVector<Operation *> users;
  for (Operation *user : value.getUsers())
    if (user->hasAttr(StrataDialect::getPhaseAttrName()))
      users.insert(user);
  SmallVector<Operation *> sorted = users.takeVector();
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return sorted;
}

/// Compresses `value` after its producer and decompresses it before each
/// of `users`; returns the compress op.
CompressOp compressValue(Value value, ArrayRef<Operation *> users,
                         const FormatChoice &choice) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t bytes = 0;
  for (ActFormatAttr format : choice.candidates)
    bytes = std::max(bytes, format.getPackedBytes(type.getNumElements()));
  MLIRContext *context = value.getContext();
  OpBuilder builder(context);
  builder.setInsertionPointAfterValue(value);
  auto packedType =
      RankedTensorType::get({bytes}, IntegerType::get(context, 8));
  ArrayAttr candidates;
  if (choice.candidates.size() > 1 || choice.budget > 0)
    candidates = builder.getArrayAttr(SmallVector<Attribute>(
        choice.candidates.begin(), choice.candidates.end()));
  FloatAttr budget =
      choice.budget > 0 ? builder.getF64FloatAttr(choice.budget) : nullptr;
  auto compress = CompressOp::create(builder, value.getLoc(), packedType, value,
                                     choice.initial, candidates, budget);
  copyPlacement(value.getDefiningOp(), compress);
  for (Operation *user : users) {
    builder.setInsertionPoint(user);
    auto decompress = DecompressOp::create(builder, value.getLoc(), type,
                                           compress.getResult());
    copyPlacement(user, decompress);
    setPhase(decompress, Phase::backward);
    user->replaceUsesOfWith(value, decompress.getResult());
  }
  return compress;
}

/// Undoes compressValue: the backward ops read the f32 value again.
void uncompress(CompressOp compress) {
  Value value = compress.getInput();
  for (Operation *user :
       llvm::make_early_inc_range(compress.getResult().getUsers())) {
    auto decompress = cast<DecompressOp>(user);
    decompress.getResult().replaceAllUsesWith(value);
    decompress->erase();
  }
  compress->erase();
}

/// Whether a recomputation (a clone that --strata-remat placed in the
/// backward pass) reads the tensor `compress` packs: its bytes then live
/// beside a decompressed copy until the later backward uses.
bool feedsRecompute(CompressOp compress) {
  for (Operation *decompress : compress.getResult().getUsers())
    if (llvm::any_of(decompress->getResult(0).getUsers(), isRecompute))
      return true;
  return false;
}

/// A packed tensor lives from its compress to its last decompress, beside
/// the decompressed copies, so compressing can raise the peak where the
/// backward pass reads it. After --strata-remat the step must stay within
/// the remat budget: undo compressions (those that feed recomputations
/// first, then the earliest tensors, which the backward pass reads last)
/// until it does. Returns the number undone.
FailureOr<int64_t> fitRematBudget(func::FuncOp func,
                                  SmallVector<CompressOp> &compressed) {
  auto remat =
      func->getAttrOfType<RematPlanAttr>(StrataDialect::getRematPlanAttrName());
  if (!remat)
    return 0;
  std::stable_partition(compressed.begin(), compressed.end(),
                        [](CompressOp op) { return !feedsRecompute(op); });
  int64_t undone = 0;
  while (true) {
    FailureOr<PlannedArena> arena =
        measurePlannedArena(func, PackStrategy::BestFit);
    if (failed(arena))
      return failure();
    if (arena->bytes <= remat.getBudget() || compressed.empty())
      return undone;
    uncompress(compressed.pop_back_val());
    ++undone;
  }
}

class CompressActivationsPass
    : public strata::impl::CompressActivationsPassBase<
          CompressActivationsPass> {
public:
  using CompressActivationsPassBase::CompressActivationsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<FormatChoice> choice = resolveChoice(module);
    if (failed(choice))
      return signalPassFailure();
    FailureOr<FormatChoice> sensitiveChoice = resolveSensitive(module, *choice);
    if (failed(sensitiveChoice))
      return signalPassFailure();
    if (!choice->initial)
      return; // format=none: the step stays as it is.
    Choices choices{*choice, *sensitiveChoice};
    if (failed(forEachTrainStep(
            module,
            "no training step to compress (run --strata-autodiff first)",
            [&](func::FuncOp func) { return runOnStep(func, choices); })))
      signalPassFailure();
  }

private:
  /// The formats from the options; `initial` is null for format=none.
  FailureOr<FormatChoice> resolveChoice(ModuleOp module);
  /// The formats of the error-sensitive saved values from `sensitive=`;
  /// `initial` is null when they stay f32.
  FailureOr<FormatChoice> resolveSensitive(ModuleOp module,
                                           const FormatChoice &ordinary);
  LogicalResult runOnStep(func::FuncOp func, const Choices &choices);
};

FailureOr<FormatChoice>
CompressActivationsPass::resolveSensitive(ModuleOp module,
                                          const FormatChoice &ordinary) {
  if (sensitive.empty())
    return ordinary;
  Location loc = module.getLoc();
  if (!ordinary.initial)
    return emitError(loc) << "--strata-compress-activations: format=none "
                             "takes no sensitive format";
  FailureOr<ActFormatAttr> format =
      parseFormat(module.getContext(), loc, sensitive);
  if (failed(format))
    return failure();
  // One fixed format: the runtime's switching and budget apply to the
  // ordinary values only.
  FormatChoice choice;
  if ((*format).getName() != "none") {
    choice.initial = *format;
    choice.candidates.push_back(*format);
  }
  return choice;
}

FailureOr<FormatChoice>
CompressActivationsPass::resolveChoice(ModuleOp module) {
  Location loc = module.getLoc();
  MLIRContext *context = module.getContext();
  FormatChoice choice;
  if (!(budget >= 0 && budget <= 1e6) || std::isnan(budget))
    return emitError(loc) << "--strata-compress-activations needs 0 <= "
                             "budget <= 1e6, got "
                          << static_cast<double>(budget);
  if (minElements < 0)
    return emitError(loc) << "--strata-compress-activations needs "
                             "min-elements >= 0, got "
                          << static_cast<int64_t>(minElements);
  choice.budget = static_cast<double>(budget);
  bool isAuto = format == "auto";
  if (isAuto && budget <= 0)
    return emitError(loc) << "--strata-compress-activations: format=auto "
                             "needs budget=E (the relative error each "
                             "tensor may have, e.g. 0.05)";
  if (!isAuto) {
    FailureOr<ActFormatAttr> initial = parseFormat(context, loc, format);
    if (failed(initial))
      return failure();
    if ((*initial).getName() == "none") {
      if (!candidates.empty() || budget > 0)
        return emitError(loc) << "--strata-compress-activations: format=none "
                                 "takes no candidates or budget";
      return choice;
    }
    choice.initial = *initial;
  }
  std::string list = candidates.empty()
                         ? std::string(isAuto ? kAutoCandidates : "")
                         : std::string(candidates);
  SmallVector<StringRef> names;
  StringRef(list).split(names, ';', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (StringRef name : names) {
    FailureOr<ActFormatAttr> candidate = parseFormat(context, loc, name);
    if (failed(candidate))
      return failure();
    if ((*candidate).getName() == "none")
      return emitError(loc) << "--strata-compress-activations: 'none' cannot "
                               "be a candidate (a compressed tensor is never "
                               "stored as f32)";
    if (!llvm::is_contained(choice.candidates, *candidate))
      choice.candidates.push_back(*candidate);
  }
  if (choice.initial && !llvm::is_contained(choice.candidates, choice.initial))
    choice.candidates.insert(choice.candidates.begin(), choice.initial);
  // auto starts every tensor in its widest candidate; the runtime measures
  // before the first compress runs.
  if (isAuto)
    choice.initial = *llvm::max_element(
        choice.candidates, [](ActFormatAttr a, ActFormatAttr b) {
          return a.getPackedBytes(1 << 20) < b.getPackedBytes(1 << 20);
        });
  return choice;
}

LogicalResult CompressActivationsPass::runOnStep(func::FuncOp func,
                                                 const Choices &choices) {
  if (func->hasAttr(StrataDialect::getArenaBytesAttrName()))
    return emitError(func.getLoc())
           << "training step @" << func.getSymName()
           << ": already has buffers: run --strata-compress-activations "
              "before --strata-lower-to-plan";
  SavedValues saved(func);
  SmallVector<CompressOp> compressed;
  llvm::SmallPtrSet<Operation *, 16> sensitiveCompresses;
  int64_t sensitiveTensors = 0, candidates = 0, candidateBytes = 0;
  for (Value value : saved.getActivations()) {
    if (!isCompressible(value, minElements))
      continue;
    bool isSensitive = isErrorSensitive(value);
    const FormatChoice &choice =
        isSensitive ? choices.sensitive : choices.ordinary;
    SmallVector<Operation *> users = backwardUsers(value);
    if (users.empty())
      continue;
    ++candidates;
    candidateBytes += getTensorBytes(value.getType());
    sensitiveTensors += isSensitive;
    if (!choice.initial)
      continue;
    compressed.push_back(compressValue(value, users, choice));
    if (isSensitive)
      sensitiveCompresses.insert(compressed.back());
  }
  // Earliest last, so that fitRematBudget undoes those first.
  std::reverse(compressed.begin(), compressed.end());
  FailureOr<int64_t> undone = fitRematBudget(func, compressed);
  if (failed(undone))
    return failure();
  int64_t before = 0, after = 0, tensors = compressed.size();
  int64_t sensitiveCompressed = 0; // those fitRematBudget left compressed
  for (CompressOp compress : compressed) {
    before += getTensorBytes(compress.getInput().getType());
    after += getTensorBytes(compress.getResult().getType());
    sensitiveCompressed += sensitiveCompresses.contains(compress);
  }
  SmallVector<std::string> names;
  for (ActFormatAttr format : choices.ordinary.candidates)
    names.push_back(format.getName().str());
  InFlightDiagnostic remark = mlir::emitRemark(func.getLoc());
  remark << "compressed " << tensors << " saved activations from " << before
         << " to " << after << " bytes (" << llvm::join(names, ", ") << ")";
  if (!sensitive.empty() && choices.sensitive.initial)
    remark << "; " << sensitiveCompressed << " of them error-sensitive, in "
           << choices.sensitive.initial.getName();
  else if (!sensitive.empty())
    remark << "; " << sensitiveTensors << " error-sensitive ones left f32";
  remark << "; of " << candidates << " compressible saved activations, "
         << candidateBytes << " bytes as f32";
  remark.report();
  if (*undone > 0)
    mlir::emitRemark(func.getLoc())
        << "left " << *undone
        << " saved activations uncompressed: compressing them raised the "
           "planned arena above the --strata-remat budget of "
        << func->getAttrOfType<RematPlanAttr>(
                   StrataDialect::getRematPlanAttrName())
               .getBudget()
        << " bytes";
  return success();
}

} // namespace
