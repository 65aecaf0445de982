//===- Bf16.h - bfloat16 conversions and GEMM -------------------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// bfloat16 values are stored as their 16 bits (`uint16_t`): the upper half of
// the f32 with the same sign, exponent and leading 7 mantissa bits. The
// conversions round to nearest even, keep Inf, turn every NaN into a quiet
// NaN of the same sign and keep subnormals (no flush to zero).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_BF16_H
#define STRATA_RT_BF16_H

#include "strata-rt/PlanFormat.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace strata::rt {

class ThreadPool;

/// f32 -> bf16, round to nearest even (the scalar reference of the vector
/// conversions).
inline uint16_t f32ToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep sign and top payload
    return uint16_t((bits >> 16) | 0x0040u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

/// bf16 -> f32 (exact).
inline float bf16ToF32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &bits, sizeof(x));
  return x;
}

/// out[i] = f32ToBf16(in[i]) for i < n, vectorised where the CPU allows.
void convertF32ToBf16(const float *in, uint16_t *out, int64_t n);
/// out[i] = bf16ToF32(in[i]) for i < n, vectorised where the CPU allows.
void convertBf16ToF32(const uint16_t *in, float *out, int64_t n);

/// One input matrix of gemmBf16: row-major bf16 values, or f32 values that
/// the packing rounds to bf16 (f32ToBf16) on the fly.
struct Bf16Operand {
  const void *data = nullptr;
  int64_t ld = 0;
  bool isF32 = false;

  static Bf16Operand bf16(const uint16_t *p, int64_t ld) {
    return {p, ld, false};
  }
  static Bf16Operand f32(const float *p, int64_t ld) { return {p, ld, true}; }
};

/// C = alpha * op(A) * op(B) + beta * C with bf16 inputs, f32 accumulation
/// and an f32 row-major C; op(X) is X or its transpose (as for gemm()).
/// beta == 0 never reads C. Uses AMX tiles where the CPU and OS allow them,
/// else AVX512-BF16, else the f32 GEMM on converted inputs; the environment
/// variable STRATA_GEMM_BF16_ISA (amx|avx512bf16|fallback, read once) forces
/// a slower path. The bits depend on the path and kc, never on the thread
/// count. `tiling` sets the cache blocks mc, nc, kc (nullptr: the path's
/// defaults); each path keeps its own register tile, rounding mc down to a
/// multiple of its mr, nc up to whole 32-column panels and kc up to its k
/// group (the fallback runs the f32 GEMM with the tiling, its register tile
/// included when the f32 GEMM has it).
void gemmBf16(ThreadPool &pool, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, float alpha, Bf16Operand a, Bf16Operand b, float beta,
              float *c, int64_t ldc,
              const strata_plan::GemmTiling *tiling = nullptr);

/// Empty when `t` can block the bf16 GEMM (the tiling attributes of a bf16
/// matmul), else why not: all sizes positive, mr x nr a bf16 register tile
/// (32x32 of AMX, 12x32 of AVX512-BF16) or one of the f32 GEMM's (the
/// fallback's; verifyGemmTiling), mc a multiple of mr and nc of nr.
std::string verifyGemmBf16Tiling(const strata_plan::GemmTiling &t);

/// gemmBf16 with both inputs in bf16.
inline void gemmBf16(ThreadPool &pool, bool transA, bool transB, int64_t m,
                     int64_t n, int64_t k, float alpha, const uint16_t *a,
                     int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                     float *c, int64_t ldc) {
  gemmBf16(pool, transA, transB, m, n, k, alpha, Bf16Operand::bf16(a, lda),
           Bf16Operand::bf16(b, ldb), beta, c, ldc);
}

} // namespace strata::rt

#endif // STRATA_RT_BF16_H
