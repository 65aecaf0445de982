//===- OptimInternal.h - Optimizer loops for kernels and tests -*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Not installed. The element loops of sgd_update and adam_update for one
// instruction set, used by the kernels (one instruction, or a multi-tensor
// group of them) and by the unit tests (every instruction set against the
// scalar loop, bit for bit).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_OPTIMINTERNAL_H
#define STRATA_RT_CPU_OPTIMINTERNAL_H

#include "GemmInternal.h"

#include <cstdint>

namespace strata::rt::detail {

/// The float constants of one sgd_update instruction.
struct SgdConstants {
  float lr, momentum, decay;
};
SgdConstants sgdConstants(const OpAttrs &attrs);

/// The bias-correction count t of an adam_update at 1-based `step` (its
/// step input): (step - 1) U + u + 1 for `update u of U` (the asynchronous
/// pipeline schedules update U times per step), `step` without them.
int64_t adamUpdateCount(const OpAttrs &attrs, int32_t step);

/// The float constants of one adam_update instruction at 1-based `step`, its
/// step input (t is adamUpdateCount's; the bias corrections 1 / (1 - beta^t)
/// are computed in double: 1 - beta^t loses digits in float).
struct AdamConstants {
  float lr, epsilon, decay, lrDecay;
  float b1, b2, c1, c2, invBc1, invBc2;
  bool decoupled;
};
AdamConstants adamConstants(const OpAttrs &attrs, int32_t step);

/// vel' = momentum vel + (g + decay p); p' = p - lr vel'. Outputs may be
/// the inputs' arrays (the update runs in place).
void sgdLoop(GemmIsa isa, const SgdConstants &k, const float *p, const float *g,
             const float *vel, float *pOut, float *velOut, int64_t n);

/// Adam(W) as docs/plan-format.md gives it. Every instruction set computes
/// the same IEEE operations in the same order (no fused multiply-add), so
/// the results are bit-identical to the scalar loop's.
void adamLoop(GemmIsa isa, const AdamConstants &k, const float *p,
              const float *g, const float *m, const float *v, float *pOut,
              float *mOut, float *vOut, int64_t n);

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_OPTIMINTERNAL_H
