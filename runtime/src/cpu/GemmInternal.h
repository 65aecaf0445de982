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

#include <cstdint>

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

/// A fused_matmul's epilogue (strata_plan::Epilogue) as the GEMM drivers
/// apply it: to each block of rows of C (an mc block over a thread's column
/// panels) once the last kc slice has been accumulated into it, so every
/// element is final and still in cache, with exactly the arithmetic of the
/// unfused kernels (bias_add, relu, gelu, relu_grad, gelu_grad). A fused
/// GEMM is therefore bit-identical to the GEMM followed by those kernels.
struct GemmEpilogue {
  strata_plan::Epilogue kind = strata_plan::Epilogue::Bias;
  /// Bias epilogues: one value per column of C.
  const float *bias = nullptr;
  /// relu_grad / gelu_grad: the tensor (of C's shape, leading dimension
  /// ldaux) whose sign or gelu' gates each element; residual,
  /// bias_residual: the tensor added to C.
  const float *aux = nullptr;
  int64_t ldaux = 0;
  /// bias_relu / bias_gelu: where the activation goes (leading dimension
  /// ldact) while C keeps the pre-activation; nullptr: the activation
  /// overwrites C.
  float *act = nullptr;
  int64_t ldact = 0;

  /// Applies the epilogue to rows [i0, i0 + rows) and columns [j0, j0 +
  /// cols) of C, whose element (i0, j0) is at `c`.
  void apply(int64_t i0, int64_t j0, int64_t rows, int64_t cols, float *c,
             int64_t ldc) const;
  /// The epilogue of a product whose C starts `offset` elements further into
  /// the aux and act tensors (the products of a batched matmul).
  GemmEpilogue shifted(int64_t offset) const;
};

/// gemm() with an explicit instruction set (which must be supported) and an
/// optional pool; with `pool == nullptr` everything runs on the calling
/// thread. The result depends only on the ISA and the tiling's kc, never on
/// the pool or the other tiling parameters.
void gemmWithIsa(GemmIsa isa, ThreadPool *pool, const GemmTiling &tiling,
                 bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc,
                 const GemmEpilogue *epilogue = nullptr);

/// gemm() on the calling thread only, with the default instruction set.
inline void gemmSerial(const GemmTiling &tiling, bool transA, bool transB,
                       int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb,
                       float beta, float *c, int64_t ldc,
                       const GemmEpilogue *epilogue = nullptr) {
  gemmWithIsa(defaultGemmIsa(), nullptr, tiling, transA, transB, m, n, k, alpha,
              a, lda, b, ldb, beta, c, ldc, epilogue);
}

/// Asks for the cache lines of the `bytes` from `p` (a row the GEMMs read
/// next: the hardware prefetchers do not see a new row's start coming).
inline void prefetchBytes(const void *p, int64_t bytes) {
  uintptr_t line = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(63);
  uintptr_t end = reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes);
  for (; line < end; line += 64)
    __builtin_prefetch(reinterpret_cast<const void *>(line));
}

/// Whether the f32 GEMM has a register tile of `mr` x `nr`.
bool isGemmRegisterTile(int64_t mr, int64_t nr);

/// The cache-block rules every GEMM tiling follows (f32 and bf16): mc a
/// multiple of mr, nc of nr; "" when they hold, else why not.
std::string verifyGemmBlocks(const GemmTiling &t);

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_GEMMINTERNAL_H
