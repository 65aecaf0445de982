//===- TileGemm.h - GEMMs of matmuls ----------------------------*- C++ -*-===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_TILEGEMM_H
#define STRATA_TRANSFORMS_TILEGEMM_H

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Target/TuningDatabase.h"

namespace mlir::strata {

/// The GEMM the runtime runs for `op` (its key in a tuning database).
GemmKey getGemmKey(MatmulOp op);
/// A fused matmul's GEMM: its matmul's.
GemmKey getGemmKey(FusedMatmulOp op);

} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_TILEGEMM_H
