//===- MixedPrecision.cpp - Compute every matmul in bf16 ------------------===//
//
// Part of the Strata project.
//
// --strata-mixed-precision: marks (or, with compute=f32, unmarks) every
// strata.matmul with `bf16`. The tensors keep their types; the runtime's
// GEMM rounds the operands as it packs them (see MatmulOp's description).
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/Passes.h"

namespace mlir::strata {
#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {
struct MixedPrecisionPass
    : public strata::impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using MixedPrecisionPassBase::MixedPrecisionPassBase;

  void runOnOperation() override {
    bool bf16 = compute == ComputePrecision::BF16;
    getOperation().walk([&](MatmulOp op) {
      op.setBf16(bf16);
      if (bf16)
        ++numMarked;
    });
  }
};
} // namespace
