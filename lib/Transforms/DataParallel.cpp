//===- DataParallel.cpp - Replicate a training step over ranks ------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/OptionLimits.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::strata {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

/// Inserts `all_reduce mean` of `value` before `user`, in `user`'s layer.
static Value averageBefore(OpBuilder &builder, Operation *user, Value value,
                           int64_t replicas, std::optional<Phase> phase) {
  builder.setInsertionPoint(user);
  auto reduce = AllReduceOp::create(builder, value.getLoc(), value,
                                    /*mean=*/true, replicas);
  if (std::optional<int64_t> layer = getLayer(user))
    setLayer(reduce, *layer);
  if (phase)
    reduce->setAttr(StrataDialect::getPhaseAttrName(),
                    PhaseAttr::get(builder.getContext(), *phase));
  return reduce.getResult();
}

namespace {
struct DataParallelPass
    : public strata::impl::DataParallelPassBase<DataParallelPass> {
  using Base::Base;

  /// Averages the gradients and the loss of `func` over the replicas.
  LogicalResult replicate(func::FuncOp func) {
    if (func->hasAttr(StrataDialect::getReplicasAttrName()))
      return func.emitOpError() << "is already data-parallel";
    OpBuilder builder(func.getContext());
    // Each update averages its gradient first.
    SmallVector<InPlaceOpInterface> updates;
    func.walk([&](InPlaceOpInterface op) { updates.push_back(op); });
    for (InPlaceOpInterface update : updates) {
      OpOperand &grad = update.getGradientMutable();
      grad.set(averageBefore(builder, update, grad.get(), replicas,
                             Phase::backward));
    }
    // The reported loss is the mean over the replicas.
    Operation *ret = func.getBody().front().getTerminator();
    unsigned last = ret->getNumOperands() - 1;
    Value loss = ret->getOperand(last);
    Value mean = averageBefore(builder, ret, loss, replicas,
                               /*phase=*/std::nullopt);
    if (Operation *def = loss.getDefiningOp())
      if (std::optional<int64_t> layer = getLayer(def))
        setLayer(mean.getDefiningOp(), *layer);
    ret->setOperand(last, mean);
    func->setAttr(StrataDialect::getReplicasAttrName(),
                  builder.getI64IntegerAttr(replicas));
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptionRange(module.getLoc(), getArgument(), "replicas",
                                replicas, 1, kMaxReplicas)))
      return signalPassFailure();
    if (failed(forEachTrainStep(
            module,
            "no training step to replicate (run --strata-autodiff first)",
            [&](func::FuncOp func) { return replicate(func); })))
      signalPassFailure();
  }
};
} // namespace
