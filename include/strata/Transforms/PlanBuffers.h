//===- PlanBuffers.h - Measuring a step's planned arena ---------*- C++ -*-===//
//
// What --strata-plan-buffers would make of a step, without writing it:
// --strata-remat measures each candidate rewrite this way.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_PLANBUFFERS_H
#define STRATA_TRANSFORMS_PLANBUFFERS_H

#include "strata/Analysis/BufferPacking.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::strata {

struct PlannedArena {
  /// The packed arena's bytes.
  int64_t bytes = 0;
  /// Bytes of the buffers live over the whole step (parameters, gradients,
  /// optimizer states, inputs, the loss), each rounded up to the alignment:
  /// no rewrite of the activations gets the arena below this.
  int64_t persistentBytes = 0;
};

/// Lowers a copy of `func` (a training step without buffers) and packs its
/// buffers with `strategy`; `func` itself is not changed.
FailureOr<PlannedArena> measurePlannedArena(func::FuncOp func,
                                            PackStrategy strategy);

} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_PLANBUFFERS_H
