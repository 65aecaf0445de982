//===- PlanBuffers.cpp - Reuse arena bytes across buffer lifetimes --------===//
//
// --strata-plan-buffers: lifetimes from BufferLiveness, offsets from the
// packer (strata/Analysis/BufferPacking.h), one check, then the new offsets
// are written into the buffer attributes.
//
//===----------------------------------------------------------------------===//

#include "strata/Transforms/PlanBuffers.h"
#include "strata/Analysis/BufferLiveness.h"
#include "strata/Analysis/BufferPacking.h"
#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::strata {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

/// The packing problem of `liveness`: one buffer per id that a program
/// touches, its size rounded to the arena alignment, live on [first,
/// last + 1). Ids no program touches get offset 0 and take no room.
static std::vector<PackBuffer> packingProblem(const BufferLiveness &liveness) {
  std::vector<PackBuffer> buffers;
  for (size_t id = 0; id < liveness.intervals.size(); ++id) {
    const ::strata::rt::LiveInterval &live = liveness.intervals[id];
    if (!live.live() || liveness.bytes[id] == 0)
      continue;
    PackBuffer buffer;
    buffer.id = static_cast<int64_t>(id);
    buffer.start = live.first;
    buffer.end = live.last + 1;
    buffer.size = liveness.bytes[id];
    buffers.push_back(buffer);
  }
  return buffers;
}

FailureOr<PlannedArena>
mlir::strata::measurePlannedArena(func::FuncOp func, PackStrategy strategy) {
  OwningOpRef<func::FuncOp> copy(func.clone());
  if (failed(assignBuffers(*copy)))
    return failure();
  FailureOr<BufferLiveness> liveness = BufferLiveness::compute(*copy);
  if (failed(liveness))
    return failure();
  std::vector<PackBuffer> problem = packingProblem(*liveness);
  PackOptions options;
  options.strategy = strategy;
  options.alignment = kBufferAlignment;
  PackResult packed = packBuffers(problem, options);
  if (!packed.ok())
    return func.emitOpError() << "cannot plan its buffers: " << packed.error;
  PlannedArena arena;
  arena.bytes = packed.peak;
  for (size_t id = 0; id < liveness->bytes.size(); ++id)
    if (liveness->persistent[id] && liveness->intervals[id].live())
      arena.persistentBytes += static_cast<int64_t>(
          llvm::alignTo(liveness->bytes[id], kBufferAlignment));
  return arena;
}

/// Rewrites every buffer attribute of `func` to its id's offset in `offsets`
/// and sets the arena size.
static void writeOffsets(func::FuncOp func, ArrayRef<int64_t> offsets,
                         int64_t arenaBytes) {
  MLIRContext *context = func.getContext();
  auto moved = [&](BufferAttr buffer) {
    return BufferAttr::get(context, buffer.getId(), offsets[buffer.getId()],
                           buffer.getBytes());
  };
  SmallVector<Attribute> argBuffers;
  for (BlockArgument arg : func.getArguments())
    argBuffers.push_back(moved(getBuffer(arg)));
  setArgAttrOfAll(func, StrataDialect::getBufferAttrName(), argBuffers);
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 0)
      return;
    SmallVector<Attribute> buffers;
    for (Value result : op->getResults())
      buffers.push_back(moved(getBuffer(result)));
    op->setAttr(StrataDialect::getBuffersAttrName(),
                ArrayAttr::get(context, buffers));
  });
  func->setAttr(StrataDialect::getArenaBytesAttrName(),
                IntegerAttr::get(IntegerType::get(context, 64), arenaBytes));
}

namespace {
struct PlanBuffersPass
    : public mlir::strata::impl::PlanBuffersPassBase<PlanBuffersPass> {
  using Base::Base;

  LogicalResult planFunction(func::FuncOp func);

  void runOnOperation() override {
    if (!(timeLimit >= 0 && timeLimit <= 3600)) {
      emitError(getOperation().getLoc())
          << "--strata-plan-buffers needs 0 <= time-limit <= 3600 (seconds), "
             "got "
          << static_cast<double>(timeLimit);
      return signalPassFailure();
    }
    if (failed(forEachTrainStep(
            getOperation(),
            "no training step to plan (run --strata-autodiff first)",
            [&](func::FuncOp func) { return planFunction(func); })))
      signalPassFailure();
  }
};
} // namespace

LogicalResult PlanBuffersPass::planFunction(func::FuncOp func) {
  if (!func->hasAttr(StrataDialect::getArenaBytesAttrName()) &&
      failed(assignBuffers(func)))
    return failure();
  if (failed(verifyBuffers(func)))
    return failure();
  FailureOr<BufferLiveness> liveness = BufferLiveness::compute(func);
  if (failed(liveness))
    return failure();
  int64_t unplanned =
      func->getAttrOfType<IntegerAttr>(StrataDialect::getArenaBytesAttrName())
          .getInt();

  std::vector<PackBuffer> problem = packingProblem(*liveness);
  PackOptions options;
  options.strategy = strategy;
  options.alignment = kBufferAlignment;
  options.timeLimitSeconds = timeLimit;
  PackResult packed = packBuffers(problem, options);
  if (!packed.ok())
    return func.emitOpError() << "cannot plan its buffers: " << packed.error;

  std::vector<int64_t> offsets(liveness->bytes.size(), 0);
  for (auto [buffer, offset] : llvm::zip(problem, packed.offsets))
    offsets[buffer.id] = offset;
  // A view lies in the bytes of the buffer it views.
  for (auto [id, viewed] : llvm::enumerate(liveness->viewOf))
    if (viewed >= 0)
      offsets[id] = offsets[viewed];
  // The one check every strategy's packing passes before it is written: the
  // runtime's, over the runtime's lifetimes.
  std::string overlap = ::strata::rt::checkNoLiveOverlap(
      liveness->intervals, offsets, liveness->bytes);
  if (!overlap.empty())
    return func.emitOpError() << "internal error: the " << packed.strategy
                              << " packing is invalid: " << overlap;
  if (auto remat = func->getAttrOfType<RematPlanAttr>(
          StrataDialect::getRematPlanAttrName());
      remat && packed.peak > remat.getBudget())
    return func.emitOpError()
           << "planned arena of " << packed.peak
           << " bytes exceeds the memory budget of " << remat.getBudget()
           << " bytes that --strata-remat planned for";
  int64_t lowerBound = liveness->lowerBound(kBufferAlignment);
  writeOffsets(func, offsets, packed.peak);
  func->setAttr(StrataDialect::getMemoryPlanAttrName(),
                MemoryPlanAttr::get(func.getContext(), packed.peak, lowerBound,
                                    unplanned, packed.strategy,
                                    packed.optimal));
  emitRemark(func.getLoc()) << llvm::formatv(
      "planned {0} buffers: arena {1} bytes (lower bound {2}, ratio {3:F4}; "
      "{4} bytes unplanned) with {5}{6} in {7:F3} s",
      problem.size(), packed.peak, lowerBound,
      lowerBound ? static_cast<double>(packed.peak) / lowerBound : 1.0,
      unplanned, packed.strategy,
      packed.timedOut ? " (time limit hit: best packing found)" : "",
      packed.seconds);
  return verifyBuffers(func);
}
