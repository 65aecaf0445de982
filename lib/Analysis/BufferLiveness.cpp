//===- BufferLiveness.cpp - Lifetimes of a lowered step's buffers ---------===//

#include "strata/Analysis/BufferLiveness.h"
#include "strata/Dialect/Strata/StrataOps.h"

using namespace mlir;
using namespace mlir::strata;

FailureOr<SmallVector<SmallVector<Operation *>>>
mlir::strata::getRankPrograms(func::FuncOp func) {
  int64_t devices = 0;
  // The attribute's verifier guarantees at least one device.
  if (auto pipeline = func->getAttrOfType<PipelineScheduleAttr>(
          StrataDialect::getPipelineScheduleAttrName()))
    devices = pipeline.getDevices();
  SmallVector<SmallVector<Operation *>> programs(std::max<int64_t>(devices, 1));
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (devices == 0) {
      programs.front().push_back(&op);
      continue;
    }
    auto stage =
        op.getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
    if (!stage || stage.getInt() < 0)
      return op.emitOpError()
             << "has no strata.stage in a pipelined step; every op of a "
                "step that --strata-schedule-pipeline wrote belongs to a "
                "stage";
    programs[stage.getInt() % devices].push_back(&op);
  }
  return programs;
}

/// The pipeline stage of `op`, or -1 outside a pipeline.
static int64_t stageOf(Operation *op) {
  auto stage =
      op->getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
  return stage ? stage.getInt() : -1;
}

/// The values whose bytes an op writes in place or reads as an optimizer
/// update's gradient, and the values the step returns: no view may share
/// their bytes.
static DenseSet<Value> pinnedValues(func::FuncOp func) {
  DenseSet<Value> pinned;
  func.walk([&](Operation *op) {
    if (auto update = dyn_cast<InPlaceOpInterface>(op))
      pinned.insert(update.getGradient());
    for (OpResult result : op->getResults()) {
      if (Value replaced = getReplacedOperand(op, result.getResultNumber())) {
        pinned.insert(replaced);
        pinned.insert(result);
      }
    }
    if (isa<func::ReturnOp>(op))
      pinned.insert(op->operand_begin(), op->operand_end());
  });
  return pinned;
}

DenseMap<Value, Value> mlir::strata::chooseBufferViews(func::FuncOp func) {
  DenseSet<Value> pinned = pinnedValues(func);
  DenseMap<Value, Value> startOf;
  DenseSet<Value> rejected;
  // Ops in program order: a view's source is decided before the view.
  func.walk([&](ViewOpInterface view) {
    Value source = view.getViewSource();
    Value start = startOf.lookup(source);
    if (!start)
      start = source;
    Operation *producer = start.getDefiningOp();
    if (!producer || stageOf(producer) != stageOf(view))
      return;
    startOf[view->getResult(0)] = start;
    if (pinned.contains(start) || pinned.contains(view->getResult(0)))
      rejected.insert(start);
  });
  DenseMap<Value, Value> views;
  for (auto [view, start] : startOf)
    if (!rejected.contains(start))
      views[view] = start;
  return views;
}

DenseMap<Value, Value> mlir::strata::getBufferViews(func::FuncOp func) {
  DenseMap<Value, Value> views;
  func.walk([&](ViewOpInterface view) {
    Value source = view.getViewSource();
    BufferAttr from = getBuffer(source), to = getBuffer(view->getResult(0));
    if (!from || !to || from.getId() == to.getId() ||
        from.getOffset() != to.getOffset() || from.getBytes() != to.getBytes())
      return;
    Value start = views.lookup(source);
    views[view->getResult(0)] = start ? start : source;
  });
  return views;
}

/// The buffer id of `value` (verifyBuffers has checked that it has one).
static int64_t idOf(Value value) { return getBuffer(value).getId(); }

FailureOr<BufferLiveness> BufferLiveness::compute(func::FuncOp func) {
  FailureOr<SmallVector<SmallVector<Operation *>>> programs =
      getRankPrograms(func);
  if (failed(programs))
    return failure();
  BufferLiveness result;
  DenseMap<Value, Value> views = getBufferViews(func);
  // The buffer whose lifetime a value's uses extend.
  auto liveIdOf = [&](Value value) {
    Value start = views.lookup(value);
    return idOf(start ? start : value);
  };
  int64_t numBuffers = 0;
  auto note = [&](Value value) {
    BufferAttr buffer = getBuffer(value);
    numBuffers = std::max(numBuffers, buffer.getId() + 1);
  };
  for (BlockArgument arg : func.getArguments())
    note(arg);
  func.walk([&](Operation *op) {
    for (Value result : op->getResults())
      note(result);
  });
  result.bytes.assign(numBuffers, 0);
  result.persistent.assign(numBuffers, false);
  result.viewOf.assign(numBuffers, -1);
  for (auto [view, start] : views)
    result.viewOf[idOf(view)] = idOf(start);
  auto record = [&](Value value) {
    result.bytes[idOf(value)] = getBuffer(value).getBytes();
  };
  for (BlockArgument arg : func.getArguments()) {
    record(arg);
    result.persistent[idOf(arg)] = true;
  }
  // The exporter's buffer kinds: an update's operand 1 is the gradient, and
  // the step returns the loss last.
  std::vector<std::vector<::strata::rt::LiveInstruction>> livePrograms;
  for (ArrayRef<Operation *> program : *programs) {
    std::vector<::strata::rt::LiveInstruction> &live =
        livePrograms.emplace_back();
    for (Operation *op : program) {
      ::strata::rt::LiveInstruction &inst = live.emplace_back();
      for (Value operand : op->getOperands())
        inst.in.push_back(liveIdOf(operand));
      for (Value value : op->getResults()) {
        record(value);
        inst.out.push_back(liveIdOf(value));
      }
      auto update = dyn_cast<InPlaceOpInterface>(op);
      // Sends in flight complete before an optimizer update or a weight
      // version's copy (the runtime's OpInfo::waitsForSends), not before an
      // op that updates running statistics, which no send reads.
      auto stateful = dyn_cast<StatefulOpInterface>(op);
      inst.inPlace = update || (stateful && !stateful.updatesRankLocalState());
      inst.readsAfterReturn = isa<SendOp>(op);
      if (update)
        result.persistent[idOf(update.getGradient())] = true;
    }
    result.steps += static_cast<int64_t>(program.size());
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (ret.getNumOperands() > 0)
    result.persistent[idOf(ret.getOperands().back())] = true;
  result.intervals =
      ::strata::rt::computeLiveness(livePrograms, result.persistent);
  if (result.intervals.size() != result.bytes.size())
    return func.emitOpError() << "names a buffer id out of range";
  return result;
}

int64_t BufferLiveness::lowerBound(int64_t alignment) const {
  return ::strata::rt::liveBytesLowerBound(intervals, bytes, alignment);
}
