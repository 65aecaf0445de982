//===- MixedPrecision.cpp - Compute matmuls and convolutions in bf16 ------===//
//
// Part of the Strata project.
//
// --strata-mixed-precision: widens bf16 tensors to f32 (Bf16Tensors.h), then
// marks (compute=bf16) or unmarks (compute=f32) every op of
// MixedPrecisionOpInterface. The tensors stay f32; the runtime's GEMM rounds
// the operands as it packs them (see MatmulOp's description).
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Bf16Tensors.h"
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
    ModuleOp module = getOperation();
    int64_t widened = widenBf16Tensors(module);
    if (compute == ComputePrecision::Model) {
      numMarked += widened;
      return;
    }
    bool bf16 = compute == ComputePrecision::BF16;
    module.walk([&](MixedPrecisionOpInterface op) {
      op.setComputesInBf16(bf16);
      if (bf16)
        ++numMarked;
    });
  }
};
} // namespace
