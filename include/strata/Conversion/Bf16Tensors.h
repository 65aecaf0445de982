//===- Bf16Tensors.h - bf16 tensors to f32 master copies --------*- C++ -*-===//
//
// The runtime keeps every floating-point tensor in f32 and computes bf16
// products on them (the bf16 GEMM rounds its operands as it packs them), so
// a model whose tensors are bf16 (strata-model --dtype bf16) becomes a mixed-
// precision step: f32 tensors (fp32 master weights), with every op that
// multiplied bf16 tensors (MixedPrecisionOpInterface) computing in bf16.
// --strata-mixed-precision and `--export-plan` use it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_CONVERSION_BF16TENSORS_H
#define STRATA_CONVERSION_BF16TENSORS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::strata {

/// Whether some function argument, result or op result of `module` is a
/// tensor of bf16.
bool hasBf16Tensors(ModuleOp module);

/// Rewrites every tensor of bf16 of `module`'s functions (arguments, op
/// results, function types) to the same tensor of f32, and marks every
/// MixedPrecisionOpInterface op that had a bf16 operand or result as
/// computing in bf16. Returns the number of ops it marked.
int64_t widenBf16Tensors(ModuleOp module);

} // namespace mlir::strata

#endif // STRATA_CONVERSION_BF16TENSORS_H
