//===- BufferLiveness.h - Lifetimes of a lowered step's buffers -*- C++ -*-===//
//
// The [first, last] instruction interval of every buffer of a training step
// after --strata-lower-to-plan, over the per-rank programs the plan will hold
// (getRankPrograms: one program, or one per pipeline device laid end to end).
// The rules are the runtime's (strata-rt/Liveness.h), which the plan loader
// applies to the exported plan, so compiler and runtime agree by
// construction.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_BUFFERLIVENESS_H
#define STRATA_ANALYSIS_BUFFERLIVENESS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"
#include "strata-rt/Liveness.h"

#include <vector>

namespace mlir::strata {

/// The ops of each rank program of `func` in program order: one program for
/// a step that is not pipelined, else one per pipeline device (an op of
/// stage s runs on device s mod devices of `strata.pipeline_schedule`).
/// Fails, with a diagnostic, on a pipelined op without `strata.stage`.
FailureOr<SmallVector<SmallVector<Operation *>>>
getRankPrograms(func::FuncOp func);

/// Decides which results of `ViewOpInterface` ops may lie in their source's
/// bytes (--strata-lower-to-plan gives them their own buffer id at their
/// source's offset). Each chosen result is mapped to the start of its chain
/// of views: a computed value with a buffer of its own. A chain is chosen
/// only where sharing bytes cannot change what any op reads: its start is no
/// function argument and is computed on the same pipeline stage as every
/// view of it, and no value of the chain is updated in place (an optimizer
/// update's parameter or state, a stateful op's operand or new version), is
/// an optimizer update's gradient, or is returned.
DenseMap<Value, Value> chooseBufferViews(func::FuncOp func);

/// The views of a function whose buffers are assigned, read from its buffer
/// attributes: each result of a `ViewOpInterface` op whose buffer has the
/// offset of its source's (a planner never places two distinct values that
/// are live together at one offset, and a view's source is live where the
/// view is written), mapped to the start of its chain of views.
DenseMap<Value, Value> getBufferViews(func::FuncOp func);

struct BufferLiveness {
  /// Indexed by buffer id.
  std::vector<::strata::rt::LiveInterval> intervals;
  /// The buffer id whose bytes a view's buffer shares, else -1
  /// (getBufferViews). A view has no interval of its own: its uses count as
  /// uses of that buffer, and a planner gives it that buffer's offset.
  std::vector<int64_t> viewOf;
  std::vector<int64_t> bytes;
  /// Parameters, optimizer states, inputs, gradients and the loss: the
  /// runtime touches them outside the programs.
  std::vector<bool> persistent;
  /// Time steps of the programs laid end to end.
  int64_t steps = 0;

  /// Lifetimes of the buffers of `func`, whose buffers must be assigned and
  /// pass `verifyBuffers`.
  static FailureOr<BufferLiveness> compute(func::FuncOp func);
  /// The largest total of simultaneously live bytes (each rounded up to
  /// `alignment`): no arena can be smaller.
  int64_t lowerBound(int64_t alignment) const;
};

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_BUFFERLIVENESS_H
