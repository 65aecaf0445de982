//===- GemmBf16Internal.h - bf16 GEMM internals for tests -------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Not installed: the instruction-set hooks of the bf16 conversions and GEMM,
// used by the unit tests and the benchmark to run every path on one machine,
// and the AVX-512 rounding that the conversions and the GEMM's packers
// share.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_GEMMBF16INTERNAL_H
#define STRATA_RT_CPU_GEMMBF16INTERNAL_H

#include "GemmInternal.h"
#include "strata-rt/Bf16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata::rt::detail {

/// bf16 GEMM paths, from slowest to fastest. Fallback rounds nothing itself:
/// it widens the bf16 inputs to f32 and runs the f32 GEMM (whose products of
/// bf16 values are exact).
enum class Bf16Isa { Fallback, Avx512Bf16, Amx };

/// "fallback", "avx512bf16", "amx".
const char *bf16IsaName(Bf16Isa isa);
/// Whether this CPU (and, for AMX, the OS) can run `isa`. Asks the kernel for
/// the AMX tile state (arch_prctl) the first time AMX is queried.
bool bf16IsaSupported(Bf16Isa isa);
/// The path gemmBf16() uses: the best supported one, unless the environment
/// variable STRATA_GEMM_BF16_ISA (fallback|avx512bf16|amx, read once) asks for
/// a slower one.
Bf16Isa defaultBf16Isa();

/// gemmBf16() on an explicit path (an unsupported one runs the fallback), an
/// optional pool (nullptr: the calling thread only) and an optional tiling
/// (nullptr or an invalid one: the path's defaults); with `epilogue`, a
/// fused matmul's epilogue is applied to each tile of C once it is complete.
void gemmBf16WithIsa(Bf16Isa isa, ThreadPool *pool, bool transA, bool transB,
                     int64_t m, int64_t n, int64_t k, float alpha,
                     Bf16Operand a, Bf16Operand b, float beta, float *c,
                     int64_t ldc,
                     const strata_plan::GemmTiling *tiling = nullptr,
                     const GemmEpilogue *epilogue = nullptr);

/// The blocking path `isa` runs without a tiling: its cache blocks and its
/// register tile (the fallback's is the f32 GEMM's default tiling).
strata_plan::GemmTiling bf16DefaultTiling(Bf16Isa isa);

/// Conversion kernels, from slowest to fastest: the scalar reference, AVX-512F
/// integer rounding, AVX512-BF16 (vcvtne2ps2bf16 with subnormal lanes fixed
/// up). Every one gives the scalar reference's bits.
enum class Bf16ConvertIsa { Scalar, Avx512, Avx512Bf16 };

const char *bf16ConvertIsaName(Bf16ConvertIsa isa);
bool bf16ConvertIsaSupported(Bf16ConvertIsa isa);
/// The best supported conversion kernel.
Bf16ConvertIsa defaultBf16ConvertIsa();
void convertF32ToBf16WithIsa(Bf16ConvertIsa isa, const float *in, uint16_t *out,
                             int64_t n);
void convertBf16ToF32WithIsa(Bf16ConvertIsa isa, const uint16_t *in, float *out,
                             int64_t n);

#if defined(__x86_64__)
/// f32ToBf16 of 16 lanes (AVX-512F integer rounding), as 32-bit lanes
/// holding the bf16 bits in their low half (the high half zero). Call it
/// from functions with target avx512f only.
__attribute__((target("avx512f"))) inline __m512i roundLanesToBf16(__m512i x) {
  const __m512i absMask = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i inf = _mm512_set1_epi32(0x7F800000);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, absMask), inf);
  __m512i hi = _mm512_srli_epi32(x, 16);
  __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), lsb);
  __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
  __m512i quiet = _mm512_or_si512(hi, _mm512_set1_epi32(0x0040));
  return _mm512_mask_mov_epi32(rounded, nan, quiet);
}
#endif

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_GEMMBF16INTERNAL_H
