//===- LowerToPlan.cpp - Place every value of a training step in the arena ===//

#include "strata/Analysis/BufferLiveness.h"
#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::strata {
#define GEN_PASS_DEF_LOWERTOPLANPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

/// An op that writes a value's buffer in place ends that value: no op of the
/// same pipeline stage may read it afterwards (it would read the new
/// contents). Passes that move or clone ops must keep this.
static LogicalResult checkInPlaceUses(func::FuncOp func) {
  auto stageOf = [](Operation *op) -> int64_t {
    auto stage =
        op->getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
    return stage ? stage.getInt() : -1;
  };
  WalkResult walk = func.walk([&](Operation *op) {
    for (unsigned r = 0, e = op->getNumResults(); r < e; ++r) {
      Value replaced = getReplacedOperand(op, r);
      if (!replaced)
        continue;
      for (Operation *user : replaced.getUsers()) {
        if (user == op || user->getBlock() != op->getBlock() ||
            !op->isBeforeInBlock(user) || isa<func::ReturnOp>(user))
          continue;
        int64_t a = stageOf(op), b = stageOf(user);
        if (a >= 0 && b >= 0 && a != b)
          continue;
        InFlightDiagnostic diag =
            user->emitOpError()
            << "reads a value that an earlier op overwrote in place";
        diag.attachNote(op->getLoc()) << "overwritten here";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult mlir::strata::assignBuffers(func::FuncOp func) {
  if (failed(checkInPlaceUses(func)))
    return failure();
  MLIRContext *context = func.getContext();
  // A view gets an id of its own and the bytes of the start of its chain.
  DenseMap<Value, Value> views = chooseBufferViews(func);
  int64_t nextId = 0, offset = 0;
  auto allocate = [&](Value value) -> FailureOr<BufferAttr> {
    if (!isSizedTensorType(value.getType()))
      return failure();
    int64_t bytes = getTensorBytes(value.getType());
    auto buffer = BufferAttr::get(context, nextId++, offset, bytes);
    std::optional<int64_t> end = llvm::checkedAdd(
        offset, static_cast<int64_t>(llvm::alignTo(bytes, kBufferAlignment)));
    if (!end)
      return failure();
    offset = *end;
    return buffer;
  };

  SmallVector<Attribute> argBuffers;
  for (BlockArgument arg : func.getArguments()) {
    FailureOr<BufferAttr> buffer = allocate(arg);
    if (failed(buffer))
      return func.emitOpError() << "argument #" << arg.getArgNumber()
                                << " is not a statically shaped tensor of "
                                   "at most 2^48 bytes, or the arena overflows";
    argBuffers.push_back(*buffer);
  }
  setArgAttrOfAll(func, StrataDialect::getBufferAttrName(), argBuffers);
  WalkResult walk = func.walk([&](Operation *op) {
    if (op->getNumResults() == 0)
      return WalkResult::advance();
    SmallVector<Attribute> buffers;
    for (OpResult result : op->getResults()) {
      // An in-place update's new version of an operand (parameter, state,
      // running statistics, kept weight version) takes its buffer.
      if (Value updated = getReplacedOperand(op, result.getResultNumber())) {
        buffers.push_back(getBuffer(updated));
        continue;
      }
      if (Value start = views.lookup(result)) {
        BufferAttr shared = getBuffer(start);
        buffers.push_back(BufferAttr::get(context, nextId++, shared.getOffset(),
                                          shared.getBytes()));
        continue;
      }
      FailureOr<BufferAttr> buffer = allocate(result);
      if (failed(buffer)) {
        op->emitOpError() << "result #" << result.getResultNumber()
                          << " is not a statically shaped tensor of at "
                             "most 2^48 bytes, or the arena overflows";
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

/// Checks one value's buffer against its type and the arena; `seen` maps
/// each id to the first buffer carrying it.
static LogicalResult verifyBuffer(Value value, BufferAttr buffer,
                                  int64_t arenaBytes, Operation *where,
                                  DenseMap<int64_t, BufferAttr> &seen) {
  auto describe = [&]() {
    InFlightDiagnostic diag = where->emitOpError();
    if (auto arg = dyn_cast<BlockArgument>(value))
      diag << "argument #" << arg.getArgNumber();
    else
      diag << "result #" << cast<OpResult>(value).getResultNumber();
    return diag;
  };
  if (!buffer)
    return describe() << " has no buffer (run --strata-lower-to-plan)";
  if (buffer.getId() < 0 || buffer.getOffset() < 0 ||
      buffer.getOffset() % kBufferAlignment != 0)
    return describe() << " has buffer " << buffer
                      << " with a negative id or an offset that is not a "
                         "non-negative multiple of "
                      << kBufferAlignment;
  if (!isSizedTensorType(value.getType()) ||
      buffer.getBytes() != getTensorBytes(value.getType()))
    return describe() << " has buffer " << buffer
                      << " whose bytes do not match " << value.getType();
  std::optional<int64_t> end =
      llvm::checkedAdd(buffer.getOffset(), buffer.getBytes());
  if (!end || *end > arenaBytes)
    return describe() << " has buffer " << buffer
                      << " that ends past the arena of " << arenaBytes
                      << " bytes";
  auto [it, inserted] = seen.try_emplace(buffer.getId(), buffer);
  if (!inserted && it->second != buffer)
    return describe() << " has buffer " << buffer << ", but buffer id "
                      << buffer.getId() << " is also " << it->second;
  return success();
}

LogicalResult mlir::strata::verifyBuffers(func::FuncOp func) {
  auto arena =
      func->getAttrOfType<IntegerAttr>(StrataDialect::getArenaBytesAttrName());
  if (!arena || arena.getInt() < 0)
    return func.emitOpError() << "has no non-negative strata.arena_bytes (run "
                                 "--strata-lower-to-plan)";
  DenseMap<int64_t, BufferAttr> seen;
  for (BlockArgument arg : func.getArguments())
    if (failed(verifyBuffer(arg, getBuffer(arg), arena.getInt(), func, seen)))
      return failure();
  WalkResult walk = func.walk([&](Operation *op) {
    for (OpResult result : op->getResults())
      if (failed(verifyBuffer(result, getBuffer(result), arena.getInt(), op,
                              seen)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

namespace {
struct LowerToPlanPass
    : public mlir::strata::impl::LowerToPlanPassBase<LowerToPlanPass> {
  void runOnOperation() override {
    if (failed(forEachTrainStep(
            getOperation(),
            "no training step to lower (run --strata-autodiff first)",
            [](func::FuncOp func) { return assignBuffers(func); })))
      signalPassFailure();
  }
};
} // namespace
