//===- Remat.cpp - Keep, swap or recompute saved activations --------------===//
//
// --strata-remat: reads the step into the model of strata/Analysis/Remat.h
// (StepModel), lets a solver choose, rewrites a copy of the step
// (applyChoices), measures its planned arena, and tightens the limit until
// the arena fits the budget; then rewrites the step itself.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Remat.h"
#include "strata/Analysis/SavedValues.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TargetDescription.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/PlanBuffers.h"
#include "strata/Transforms/TargetResolution.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>

namespace mlir::strata {
#define GEN_PASS_DEF_REMATPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

bool hasPhase(Operation *op) {
  return op->hasAttr(StrataDialect::getPhaseAttrName());
}

/// Whether `op` may be cloned into the backward pass: a forward op with
/// neither regions nor side effects that the cost model knows.
bool isRecomputable(Operation *op) {
  return op && !hasPhase(op) && op->getNumRegions() == 0 &&
         isa<CostOpInterface>(op) && isMemoryEffectFree(op);
}

/// The step as the remat model sees it.
struct StepModel {
  /// Saved activations that may be dropped, in forward order.
  SmallVector<Value> candidates;
  /// Per candidate: the forward ops to clone to recompute it (its producer
  /// last), in program order; the candidates they read (its dependencies).
  SmallVector<SmallVector<Operation *>> chains;
  SmallVector<SmallVector<unsigned>> deps;
  /// Per candidate: its last forward user (or producer) and its first
  /// backward user.
  SmallVector<Operation *> lastForwardUse, firstBackwardUse;
  /// Forward ops in order with their end times; backward ops (everything
  /// with a phase) with their start times.
  SmallVector<Operation *> forwardOps, backwardOps;
  SmallVector<double> forwardEnd, backwardStart;
  DenseMap<Operation *, unsigned> backwardIndex;
  /// The problem the solvers see (on a CPU target every copy is exposed).
  RematProblem problem;
  /// The real copy release times, which place the swap ops.
  SmallVector<double> outRelease;
  /// Per candidate, the pipeline device whose program computes it (0 when
  /// the step is not pipelined).
  SmallVector<int64_t> rank;
  /// A pipelined step: forward and backward passes of micro-batches
  /// interleave in each device's program, so copies are placed by program
  /// order alone (out: waited by the next swap of the device; in: started
  /// just before the use) and priced as exposed.
  bool pipelined = false;
};

/// An error at the step's location that does not print the whole step.
InFlightDiagnostic stepError(func::FuncOp func) {
  return mlir::emitError(func.getLoc())
         << "training step @" << func.getSymName() << ": ";
}

/// The pipeline device of `op` in a step scheduled on `devices` devices.
int64_t rankOf(Operation *op, int64_t devices) {
  auto stage =
      op->getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
  return devices > 0 && stage ? stage.getInt() % devices : 0;
}

double opSeconds(Operation *op, const TargetDescription &target) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost ? cost.estimateSeconds(target) : 0.0;
}

/// Times of the forward and backward ops.
void timeOps(func::FuncOp func, const TargetDescription &target,
             StepModel &model) {
  double forward = 0, backward = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    double seconds = opSeconds(&op, target);
    if (!hasPhase(&op)) {
      forward += seconds;
      model.forwardOps.push_back(&op);
      model.forwardEnd.push_back(forward);
      continue;
    }
    model.backwardIndex[&op] = model.backwardOps.size();
    model.backwardOps.push_back(&op);
    model.backwardStart.push_back(backward);
    backward += seconds;
  }
  model.problem.forwardSeconds = forward;
}

/// The chain of ops that recompute candidate `index` of `model`.
void buildChain(unsigned index, const DenseMap<Value, unsigned> &candidateOf,
                StepModel &model) {
  Value value = model.candidates[index];
  llvm::SetVector<Operation *> chain;
  llvm::SetVector<unsigned> deps;
  SmallVector<Operation *> work = {value.getDefiningOp()};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!chain.insert(op))
      continue;
    for (Value operand : op->getOperands()) {
      auto it = candidateOf.find(operand);
      if (it != candidateOf.end()) {
        deps.insert(it->second);
        continue;
      }
      Operation *producer = operand.getDefiningOp();
      if (isRecomputable(producer))
        work.push_back(producer);
      // Else an argument or a value the step keeps anyway (received from
      // another stage, say): read as it is.
    }
  }
  SmallVector<Operation *> ordered(chain.begin(), chain.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  model.chains[index] = std::move(ordered);
  model.deps[index].assign(deps.begin(), deps.end());
}

/// The first backward user and last forward user of `value`.
std::pair<Operation *, Operation *> usesOf(Value value) {
  Operation *firstBackward = nullptr;
  Operation *lastForward = value.getDefiningOp();
  for (Operation *user : value.getUsers()) {
    if (hasPhase(user)) {
      if (!firstBackward || user->isBeforeInBlock(firstBackward))
        firstBackward = user;
    } else if (lastForward->isBeforeInBlock(user)) {
      lastForward = user;
    }
  }
  return {firstBackward, lastForward};
}

StepModel buildModel(func::FuncOp func, const TargetDescription &target) {
  StepModel model;
  timeOps(func, target, model);
  SavedValues saved(func);
  DenseMap<Value, unsigned> candidateOf;
  for (Value value : saved.getActivations()) {
    auto [firstBackward, lastForward] = usesOf(value);
    if (!isRecomputable(value.getDefiningOp()) || !firstBackward)
      continue;
    candidateOf[value] = model.candidates.size();
    model.candidates.push_back(value);
    model.firstBackwardUse.push_back(firstBackward);
    model.lastForwardUse.push_back(lastForward);
  }
  size_t n = model.candidates.size();
  model.chains.resize(n);
  model.deps.resize(n);
  DenseMap<Operation *, double> endOf;
  for (auto [op, end] : llvm::zip(model.forwardOps, model.forwardEnd))
    endOf[op] = end;
  // On a CPU target the copy thread competes with the compute threads for
  // the cores and the memory bandwidth: copies do not hide behind compute.
  int64_t devices = 0;
  if (auto schedule = func->getAttrOfType<PipelineScheduleAttr>(
          StrataDialect::getPipelineScheduleAttrName()))
    devices = schedule.getDevices();
  model.pipelined = devices > 0;
  bool copiesOverlap = target.device.kind != "cpu" && !model.pipelined;
  for (unsigned i = 0; i < n; ++i) {
    buildChain(i, candidateOf, model);
    Value value = model.candidates[i];
    RematCandidate c;
    c.bytes = getTensorBytes(value.getType());
    for (Operation *op : model.chains[i])
      c.recomputeSeconds += opSeconds(op, target);
    c.copySeconds = target.host.transferSeconds(static_cast<double>(c.bytes));
    c.outRelease = endOf.lookup(value.getDefiningOp());
    model.outRelease.push_back(c.outRelease);
    model.rank.push_back(rankOf(value.getDefiningOp(), devices));
    c.inDeadline = model.backwardStart[model.backwardIndex.lookup(
        model.firstBackwardUse[i])];
    if (!copiesOverlap) {
      // Every copy is exposed: released at the end of the forward pass and
      // due at the start of the backward pass.
      c.outRelease = model.problem.forwardSeconds;
      c.inDeadline = 0;
    }
    c.layer = getLayer(value.getDefiningOp()).value_or(-1);
    model.problem.candidates.push_back(c);
  }
  return model;
}

/// Per candidate, the backward op before which it must be back: its first
/// backward use, or earlier when a recompute that reads it comes first.
SmallVector<Operation *> neededBefore(const StepModel &model,
                                      ArrayRef<RematChoice> choices) {
  SmallVector<Operation *> need(model.firstBackwardUse);
  for (unsigned a = model.candidates.size(); a-- > 0;) {
    if (choices[a] != RematChoice::Recompute)
      continue;
    for (unsigned b : model.deps[a])
      if (need[a]->isBeforeInBlock(need[b]))
        need[b] = need[a];
  }
  return need;
}

/// The first forward op that ends at or after `seconds` (the last forward op
/// when none does).
Operation *forwardOpEndingBy(const StepModel &model, double seconds) {
  auto it = llvm::lower_bound(model.forwardEnd, seconds);
  size_t index = std::min<size_t>(it - model.forwardEnd.begin(),
                                  model.forwardOps.size() - 1);
  return model.forwardOps[index];
}

/// The latest backward op that starts at or before `seconds`, no later than
/// `limit`.
Operation *backwardOpStartingBy(const StepModel &model, double seconds,
                                Operation *limit) {
  auto it = llvm::upper_bound(model.backwardStart, seconds);
  size_t index =
      it == model.backwardStart.begin()
          ? 0
          : static_cast<size_t>(it - model.backwardStart.begin()) - 1;
  Operation *op = model.backwardOps[index];
  return limit->isBeforeInBlock(op) ? limit : op;
}

/// Per swapped candidate, when its copy out ends (the FIFO of Remat.h).
DenseMap<unsigned, double> outFinish(const StepModel &model,
                                     ArrayRef<RematChoice> choices) {
  DenseMap<unsigned, double> finish;
  double t = 0;
  for (unsigned i = 0; i < choices.size(); ++i)
    if (choices[i] == RematChoice::Swap) {
      const RematCandidate &c = model.problem.candidates[i];
      t = std::max(t, model.outRelease[i]) + c.copySeconds;
      finish[i] = t;
    }
  return finish;
}

/// Per swapped candidate, the latest time its copy back may start so that
/// the FIFO (in the order the backward pass needs them) meets every
/// deadline.
DenseMap<unsigned, double> inStart(const StepModel &model,
                                   ArrayRef<RematChoice> choices,
                                   ArrayRef<Operation *> need) {
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < choices.size(); ++i)
    if (choices[i] == RematChoice::Swap)
      order.push_back(i);
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    return need[a]->isBeforeInBlock(need[b]);
  });
  auto startOf = [&](Operation *op) {
    return model.backwardStart[model.backwardIndex.lookup(op)];
  };
  DenseMap<unsigned, double> start;
  double next = INFINITY;
  for (unsigned k = order.size(); k-- > 0;) {
    unsigned i = order[k];
    const RematCandidate &c = model.problem.candidates[i];
    double begin =
        std::max(0.0, std::min(startOf(need[i]), next) - c.copySeconds);
    // Prefetch one tensor ahead at most: a copy back starts no earlier than
    // the previous swapped tensor is needed, so copies too slow to hide do
    // not bring every tensor back at once.
    if (k > 0)
      begin = std::max(begin, startOf(need[order[k - 1]]));
    start[i] = begin;
    next = begin;
  }
  return start;
}

/// Swaps candidate `i` out after its last forward use (no earlier than its
/// copy can end) and back in before `need`; returns the value backward ops
/// read.
Value swapCandidate(const StepModel &model, unsigned i, int64_t slot,
                    double outEnd, Operation *waitBy, double inBegin,
                    Operation *need) {
  Value value = model.candidates[i];
  Location loc = value.getLoc();
  OpBuilder builder(value.getContext());
  Operation *producer = value.getDefiningOp();
  builder.setInsertionPointAfterValue(value);
  auto out = SwapOutOp::create(builder, loc, value, slot);
  copyPlacement(producer, out);
  Operation *waitAfter = model.pipelined ? model.lastForwardUse[i]
                                         : forwardOpEndingBy(model, outEnd);
  // At most about one copy out in flight: wait by the time the next swapped
  // tensor is produced, so copies too slow to hide still free memory.
  if (waitBy && waitBy->isBeforeInBlock(waitAfter))
    waitAfter = waitBy;
  if (waitAfter->isBeforeInBlock(model.lastForwardUse[i]) ||
      waitAfter == value.getDefiningOp())
    waitAfter = model.lastForwardUse[i];
  builder.setInsertionPointAfter(waitAfter);
  auto outWait = SwapOutWaitOp::create(builder, loc, value, slot);
  copyPlacement(producer, outWait);

  builder.setInsertionPoint(
      model.pipelined ? need : backwardOpStartingBy(model, inBegin, need));
  auto in = SwapInOp::create(builder, loc, value.getType(), slot);
  setPhase(in, Phase::backward);
  copyPlacement(need, in);
  builder.setInsertionPoint(need);
  auto wait = SwapInWaitOp::create(builder, loc, in.getResult(), slot);
  setPhase(wait, Phase::backward);
  copyPlacement(need, wait);
  return in.getResult();
}

/// Whether `op` writes `value`'s buffer in place (an optimizer update or a
/// stateful op such as strata.copy_into replacing it).
bool overwrites(Operation *op, Value value) {
  for (unsigned r = 0, e = op->getNumResults(); r < e; ++r)
    if (getReplacedOperand(op, r) == value)
      return true;
  return false;
}

/// A value holding what `value` holds, readable at `at`: `value` itself
/// unless an op before `at` overwrote its buffer in place, else the newest
/// strata.copy_into of it made before that overwrite (the asynchronous
/// pipeline schedules keep the weight versions that forward passes read
/// for the backward passes so). Null when none survives until `at`.
Value liveVersion(Value value, Operation *at) {
  for (int hops = 0; value && hops < 64; ++hops) {
    Operation *overwrite = nullptr;
    for (Operation *user : value.getUsers())
      if (user->getBlock() == at->getBlock() && user->isBeforeInBlock(at) &&
          overwrites(user, value) &&
          (!overwrite || user->isBeforeInBlock(overwrite)))
        overwrite = user;
    if (!overwrite)
      return value;
    Operation *copy = nullptr;
    for (Operation *user : value.getUsers())
      if (auto into = dyn_cast<CopyIntoOp>(user);
          into && into.getSource() == value &&
          into->isBeforeInBlock(overwrite) &&
          (!copy || copy->isBeforeInBlock(into)))
        copy = into;
    value = copy ? copy->getResult(0) : Value();
  }
  return {};
}

/// Clones the chain of candidate `i` before `need`, reading the candidates
/// it depends on from `available`; returns the recomputed value, or null
/// when a value the chain reads (a weight version) no longer exists there.
Value recomputeCandidate(const StepModel &model, unsigned i,
                         ArrayRef<Value> available, Operation *need) {
  IRMapping mapping;
  for (unsigned dep : model.deps[i])
    mapping.map(model.candidates[dep], available[dep]);
  OpBuilder builder(need);
  for (Operation *op : model.chains[i]) {
    // The forward pass read these values; read what holds them now.
    for (Value operand : op->getOperands()) {
      if (mapping.contains(operand))
        continue;
      Value live = liveVersion(operand, need);
      if (!live)
        return {};
      if (live != operand)
        mapping.map(operand, live);
    }
    Operation *clone = builder.clone(*op, mapping);
    setPhase(clone, Phase::recompute);
  }
  return mapping.lookup(model.candidates[i]);
}

/// Rewrites the step of `model` for `choices`.
LogicalResult applyChoices(const StepModel &model,
                           ArrayRef<RematChoice> choices) {
  SmallVector<Operation *> need = neededBefore(model, choices);
  DenseMap<unsigned, double> outEnd = outFinish(model, choices);
  DenseMap<unsigned, double> inBegin = inStart(model, choices, need);
  SmallVector<Value> available(model.candidates);
  // Slots number each device's swaps from 0.
  DenseMap<int64_t, int64_t> nextSlot;
  // Per candidate, the producer of the next swapped candidate on its device
  // (its copy out is waited for by then).
  SmallVector<Operation *> nextSwapProducer(choices.size(), nullptr);
  DenseMap<int64_t, Operation *> laterSwap;
  for (unsigned i = choices.size(); i-- > 0;) {
    nextSwapProducer[i] = laterSwap.lookup(model.rank[i]);
    if (choices[i] == RematChoice::Swap)
      laterSwap[model.rank[i]] = model.candidates[i].getDefiningOp();
  }
  for (unsigned i = 0; i < model.candidates.size(); ++i) {
    Value value = model.candidates[i];
    if (choices[i] == RematChoice::Keep)
      continue;
    Operation *waitBy = nextSwapProducer[i];
    Value replacement = choices[i] == RematChoice::Swap
                            ? swapCandidate(model, i, nextSlot[model.rank[i]]++,
                                            outEnd.lookup(i), waitBy,
                                            inBegin.lookup(i), need[i])
                            : recomputeCandidate(model, i, available, need[i]);
    if (!replacement)
      return need[i]->emitOpError()
             << "would recompute a saved activation from a weight version "
                "that an update overwrote before this backward pass, and no "
                "copy of it survives";
    Operation *producer = replacement.getDefiningOp();
    value.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return hasPhase(user) && user != producer && !isa<SwapInWaitOp>(user);
    });
    available[i] = replacement;
  }
  return success();
}

/// Parses `budget=`: bytes with an optional K/M/G (binary) suffix, or a
/// fraction in (0, 1] of `unconstrained`.
FailureOr<int64_t> parseBudget(StringRef text, int64_t unconstrained,
                               Location loc) {
  StringRef number = text.trim();
  int64_t scale = 1;
  if (!number.empty() && StringRef("KMG").contains(number.back())) {
    scale = number.back() == 'K'   ? 1024
            : number.back() == 'M' ? 1 << 20
                                   : 1 << 30;
    number = number.drop_back();
  }
  double value;
  if (number.getAsDouble(value) || !std::isfinite(value) || value <= 0)
    return emitError(loc) << "--strata-remat needs budget=BYTES (K/M/G "
                             "suffixes) or a fraction in (0, 1], got '"
                          << text << "'";
  if (scale == 1 && value <= 1.0)
    return static_cast<int64_t>(value * static_cast<double>(unconstrained));
  double bytes = value * static_cast<double>(scale);
  if (bytes > static_cast<double>(int64_t(1) << 60))
    return emitError(loc) << "--strata-remat budget " << text
                          << " is over 2^60 bytes";
  return static_cast<int64_t>(bytes);
}

struct RematPass : public strata::impl::RematPassBase<RematPass> {
  using Base::Base;

  LogicalResult runOnStep(func::FuncOp func, const TargetDescription &target);
  FailureOr<int64_t> resolveBudget(func::FuncOp func, int64_t unconstrained,
                                   const TargetDescription &target);
  /// Applies `choices` to a copy of `func` and measures its arena.
  FailureOr<PlannedArena> measure(func::FuncOp func,
                                  const TargetDescription &target,
                                  ArrayRef<RematChoice> choices);
  /// Solves and measures until the arena fits `budgetBytes`; returns the
  /// arena, or failure (no diagnostic) when no solution fits.
  FailureOr<int64_t> solveWithinBudget(func::FuncOp func,
                                       const TargetDescription &target,
                                       int64_t budgetBytes, int64_t fixedBytes,
                                       const RematOptions &options,
                                       RematProblem &problem,
                                       RematSolution &solution);
  /// When the model's rounds miss (recomputes hold memory the model does not
  /// count), the cheaper of "swap every candidate" and "recompute every
  /// candidate" that fits; failure when neither does.
  FailureOr<int64_t>
  uniformFallback(func::FuncOp func, const TargetDescription &target,
                  int64_t budgetBytes, const RematProblem &problem,
                  RematSolution &solution, int64_t &smallest);
  /// The error for a budget no choice meets; `smallest` is the least arena
  /// uniformFallback measured.
  LogicalResult reportInfeasible(func::FuncOp func, int64_t budgetBytes,
                                 int64_t persistent, int64_t smallest);

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(timeLimit >= 0 && timeLimit <= 3600)) {
      emitError(module.getLoc())
          << "--strata-remat needs 0 <= time-limit <= 3600 (seconds), got "
          << static_cast<double>(timeLimit);
      return signalPassFailure();
    }
    std::string name = getTargetName(targetName, module);
    if (name.empty())
      name = "cpu-local";
    FailureOr<TargetDescription> target =
        loadTarget(name, [&] { return emitError(module.getLoc()); });
    if (failed(target))
      return signalPassFailure();
    if (failed(forEachTrainStep(
            module,
            "no training step to rematerialise (run --strata-autodiff "
            "first)",
            [&](func::FuncOp func) { return runOnStep(func, *target); })))
      signalPassFailure();
  }
};

FailureOr<int64_t> RematPass::resolveBudget(func::FuncOp func,
                                            int64_t unconstrained,
                                            const TargetDescription &target) {
  if (!budget.empty())
    return parseBudget(budget, unconstrained, func.getLoc());
  return static_cast<int64_t>(target.memoryCapacity());
}

FailureOr<PlannedArena> RematPass::measure(func::FuncOp func,
                                           const TargetDescription &target,
                                           ArrayRef<RematChoice> choices) {
  OwningOpRef<func::FuncOp> copy(func.clone());
  StepModel model = buildModel(*copy, target);
  if (failed(applyChoices(model, choices)))
    return failure();
  return measurePlannedArena(*copy, PackStrategy::BestFit);
}

FailureOr<int64_t>
RematPass::uniformFallback(func::FuncOp func, const TargetDescription &target,
                           int64_t budgetBytes, const RematProblem &problem,
                           RematSolution &solution, int64_t &smallest) {
  std::optional<std::pair<RematSolution, int64_t>> best;
  smallest = INT64_MAX;
  for (RematChoice all : {RematChoice::Swap, RematChoice::Recompute}) {
    RematSolution uniform;
    uniform.choices.assign(problem.candidates.size(), all);
    uniform.cost = evaluateRemat(problem, uniform.choices);
    uniform.solver = all == RematChoice::Swap ? "all-swap" : "all-recompute";
    uniform.fits = true;
    FailureOr<PlannedArena> arena = measure(func, target, uniform.choices);
    if (failed(arena))
      continue;
    smallest = std::min(smallest, arena->bytes);
    if (arena->bytes > budgetBytes)
      continue;
    if (!best || uniform.cost.added() < best->first.cost.added())
      best = std::make_pair(uniform, arena->bytes);
  }
  if (!best)
    return failure();
  solution = best->first;
  return best->second;
}

LogicalResult RematPass::reportInfeasible(func::FuncOp func,
                                          int64_t budgetBytes,
                                          int64_t persistent,
                                          int64_t smallest) {
  if (smallest == INT64_MAX)
    return failure(); // measuring reported why
  return stepError(func)
         << "cannot fit a memory budget of " << budgetBytes
         << " bytes: parameters, gradients, optimizer states, inputs and the "
            "loss alone take "
         << persistent << " bytes; the smallest budget --strata-remat meets "
         << "is " << smallest
         << " bytes (every saved activation swapped or recomputed)";
}

FailureOr<int64_t>
RematPass::solveWithinBudget(func::FuncOp func, const TargetDescription &target,
                             int64_t budgetBytes, int64_t fixedBytes,
                             const RematOptions &options, RematProblem &problem,
                             RematSolution &solution) {
  problem.keptBytesLimit = budgetBytes - fixedBytes;
  // `time-limit` bounds the MILP over all rounds: each round gets what is
  // left, and once nothing is, the rounds use dp.
  auto started = std::chrono::steady_clock::now();
  for (int attempt = 0; attempt < 12 && problem.keptBytesLimit >= 0;
       ++attempt) {
    RematOptions round = options;
    round.timeLimitSeconds = options.timeLimitSeconds -
                             std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - started)
                                 .count();
    if (round.timeLimitSeconds < 0.05)
      round.solver = RematSolver::Dp;
    solution = solveRemat(problem, round);
    if (!solution.error.empty()) {
      stepError(func) << "--strata-remat " << solution.solver << ": "
                      << solution.error;
      return failure();
    }
    if (!solution.fits)
      return failure();
    FailureOr<PlannedArena> arena = measure(func, target, solution.choices);
    if (failed(arena))
      return failure();
    if (arena->bytes <= budgetBytes)
      return arena->bytes;
    // Over: the model missed by the excess; ask for that much less than
    // this solution kept.
    problem.keptBytesLimit =
        std::min(problem.keptBytesLimit, solution.cost.keptBytes) -
        std::max<int64_t>(arena->bytes - budgetBytes, 64);
  }
  return failure();
}

LogicalResult RematPass::runOnStep(func::FuncOp func,
                                   const TargetDescription &target) {
  if (func->hasAttr(StrataDialect::getArenaBytesAttrName()))
    return stepError(func) << "already has buffers: run --strata-remat "
                              "before --strata-lower-to-plan";
  auto started = std::chrono::steady_clock::now();
  FailureOr<PlannedArena> before =
      measurePlannedArena(func, PackStrategy::BestFit);
  if (failed(before))
    return failure();
  FailureOr<int64_t> budgetBytes = resolveBudget(func, before->bytes, target);
  if (failed(budgetBytes))
    return failure();

  StepModel model = buildModel(func, target);
  RematProblem problem = model.problem;
  int64_t total = 0;
  for (const RematCandidate &c : problem.candidates)
    total += c.bytes;
  RematOptions options;
  options.solver = solver;
  options.timeLimitSeconds = timeLimit;

  RematSolution solution;
  solution.choices.assign(problem.candidates.size(), RematChoice::Keep);
  solution.solver = "none";
  solution.fits = true;
  solution.gap = 0;
  bool baseline = options.solver == RematSolver::Sqrt ||
                  options.solver == RematSolver::Layer;
  int64_t after = before->bytes;
  if (baseline) {
    // A fixed strategy: applied whatever the budget, then checked.
    solution = solveRemat(problem, options);
    FailureOr<PlannedArena> arena = measure(func, target, solution.choices);
    if (failed(arena))
      return failure();
    after = arena->bytes;
    if (after > *budgetBytes)
      return stepError(func)
             << "--strata-remat solver=" << solution.solver
             << " plans an arena of " << after << " bytes, over the budget of "
             << *budgetBytes
             << " bytes (the baselines ignore the budget; try solver=auto)";
    if (failed(applyChoices(model, solution.choices)))
      return failure();
  } else if (before->bytes > *budgetBytes) {
    FailureOr<int64_t> met =
        solveWithinBudget(func, target, *budgetBytes, before->bytes - total,
                          options, problem, solution);
    if (failed(met) && !solution.error.empty())
      return failure();
    int64_t smallest = INT64_MAX;
    if (failed(met))
      met = uniformFallback(func, target, *budgetBytes, problem, solution,
                            smallest);
    if (failed(met))
      return reportInfeasible(func, *budgetBytes, before->persistentBytes,
                              smallest);
    after = *met;
    if (failed(applyChoices(model, solution.choices)))
      return failure();
  }

  RematCost cost = solution.cost;
  int64_t counts[3] = {0, 0, 0};
  for (RematChoice choice : solution.choices)
    ++counts[static_cast<int>(choice)];
  func->setAttr(
      StrataDialect::getRematPlanAttrName(),
      RematPlanAttr::get(
          func.getContext(), *budgetBytes, before->bytes, after,
          solution.solver, counts[0], counts[1], counts[2], cost.swappedBytes,
          llvm::APFloat(cost.recomputeSeconds), llvm::APFloat(cost.copySeconds),
          llvm::APFloat(cost.exposedCopySeconds), llvm::APFloat(solution.gap)));
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  // What the fast solver predicts for the limit the MILP solved, so its gap
  // to the optimum is visible.
  std::string dpComparison;
  if (solution.solver == "milp") {
    RematOptions dpOptions;
    dpOptions.solver = RematSolver::Dp;
    RematSolution dp = solveRemat(problem, dpOptions);
    dpComparison = dp.fits ? llvm::formatv("; dp on the same limit: {0:e} s",
                                           dp.cost.added())
                                 .str()
                           : "; dp finds nothing within the same limit";
  }
  emitRemark(func.getLoc()) << llvm::formatv(
      "remat with {0}: arena {1} -> {2} bytes (budget {3}); of {4} saved "
      "activations kept {5}, swapped {6} ({7} bytes), recomputed {8}; added "
      "compute {9:e} s, copies {10:e} s of which {11:e} s exposed; predicted "
      "added time {12:e} s{13}{15} in {14:F3} s",
      solution.solver, before->bytes, after, *budgetBytes,
      solution.choices.size(), counts[0], counts[1], cost.swappedBytes,
      counts[2], cost.recomputeSeconds, cost.copySeconds,
      cost.exposedCopySeconds, cost.added(),
      solution.optimal ? " (optimal)"
      : solution.gap > 0
          ? llvm::formatv(" (time limit hit, gap {0:P})", solution.gap).str()
          : std::string(),
      seconds, dpComparison);
  return success();
}

} // namespace
