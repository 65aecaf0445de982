//===- GemmInternal.h - GEMM internals for kernels and tests ------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Not installed: used by the kernels (serial GEMMs inside parallel loops) and
// by the unit tests (forcing an instruction set).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_GEMMINTERNAL_H
#define STRATA_RT_CPU_GEMMINTERNAL_H

#include "strata-rt/Kernels.h"

namespace strata::rt::detail {

/// Micro-kernel instruction sets, from slowest to fastest.
enum class GemmIsa { Scalar, Avx2, Avx512 };

/// "scalar", "avx2", "avx512".
const char *gemmIsaName(GemmIsa isa);
/// Whether this CPU can run `isa`.
bool gemmIsaSupported(GemmIsa isa);
/// The instruction set gemm() uses: the best one this CPU supports, unless
/// the environment variable STRATA_GEMM_ISA (scalar|avx2|avx512, read once)
/// asks for a slower one.
GemmIsa defaultGemmIsa();

/// gemm() with an explicit instruction set (which must be supported) and an
/// optional pool; with `pool == nullptr` everything runs on the calling
/// thread. The result depends only on the ISA and the tiling's kc, never on
/// the pool or the other tiling parameters.
void gemmWithIsa(GemmIsa isa, ThreadPool *pool, const GemmTiling &tiling,
                 bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc);

/// gemm() on the calling thread only, with the default instruction set.
inline void gemmSerial(const GemmTiling &tiling, bool transA, bool transB,
                       int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb,
                       float beta, float *c, int64_t ldc) {
  gemmWithIsa(defaultGemmIsa(), nullptr, tiling, transA, transB, m, n, k, alpha,
              a, lda, b, ldb, beta, c, ldc);
}

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_GEMMINTERNAL_H
