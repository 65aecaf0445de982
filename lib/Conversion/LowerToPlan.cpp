//===- LowerToPlan.cpp - Place every value of a training step in the arena ===//

#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::strata {
#define GEN_PASS_DEF_LOWERTOPLANPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

BufferAttr mlir::strata::getBuffer(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func)
      return {};
    return func.getArgAttrOfType<BufferAttr>(
        arg.getArgNumber(), StrataDialect::getBufferAttrName());
  }
  auto result = cast<OpResult>(value);
  auto buffers = result.getOwner()->getAttrOfType<ArrayAttr>(
      StrataDialect::getBuffersAttrName());
  if (!buffers || buffers.size() <= result.getResultNumber())
    return {};
  return dyn_cast<BufferAttr>(buffers[result.getResultNumber()]);
}

LogicalResult mlir::strata::assignBuffers(func::FuncOp func) {
  MLIRContext *context = func.getContext();
  int64_t nextId = 0, offset = 0;
  auto allocate = [&](Value value) -> FailureOr<BufferAttr> {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.hasStaticShape())
      return failure();
    int64_t bytes = getTensorBytes(type);
    auto buffer = BufferAttr::get(context, nextId++, offset, bytes);
    offset += llvm::alignTo(std::max<int64_t>(bytes, 1), kBufferAlignment);
    return buffer;
  };

  for (BlockArgument arg : func.getArguments()) {
    FailureOr<BufferAttr> buffer = allocate(arg);
    if (failed(buffer))
      return func.emitOpError() << "argument #" << arg.getArgNumber()
                                << " is not a statically shaped tensor";
    func.setArgAttr(arg.getArgNumber(), StrataDialect::getBufferAttrName(),
                    *buffer);
  }
  WalkResult walk = func.walk([&](Operation *op) {
    if (op->getNumResults() == 0)
      return WalkResult::advance();
    SmallVector<Attribute> buffers;
    auto inPlace = dyn_cast<InPlaceOpInterface>(op);
    for (OpResult result : op->getResults()) {
      if (inPlace) {
        buffers.push_back(
            getBuffer(inPlace.getUpdatedOperand(result.getResultNumber())));
        continue;
      }
      FailureOr<BufferAttr> buffer = allocate(result);
      if (failed(buffer)) {
        op->emitOpError() << "result #" << result.getResultNumber()
                          << " is not a statically shaped tensor";
        return WalkResult::interrupt();
      }
      buffers.push_back(*buffer);
    }
    op->setAttr(StrataDialect::getBuffersAttrName(),
                ArrayAttr::get(context, buffers));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  func->setAttr(StrataDialect::getArenaBytesAttrName(),
                IntegerAttr::get(IntegerType::get(context, 64), offset));
  return success();
}

namespace {
struct LowerToPlanPass
    : public strata::impl::LowerToPlanPassBase<LowerToPlanPass> {
  void runOnOperation() override {
    bool found = false;
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(StrataDialect::getTrainStepAttrName()))
        continue;
      found = true;
      if (failed(assignBuffers(func)))
        return signalPassFailure();
    }
    if (!found) {
      emitError(getOperation().getLoc())
          << "no training step to lower (run --strata-autodiff first)";
      signalPassFailure();
    }
  }
};
} // namespace
