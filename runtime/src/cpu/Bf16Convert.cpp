//===- Bf16Convert.cpp - f32 <-> bf16 conversion kernels ------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Three f32 -> bf16 kernels giving the same bits as the scalar reference
// f32ToBf16 (Bf16.h: round to nearest even, NaN -> quiet NaN, subnormals
// kept): the reference itself, an AVX-512F version of its integer rounding,
// and an AVX512-BF16 one (vcvtne2ps2bf16, which flushes subnormal inputs to
// zero, so those lanes are redone with the integer rounding). bf16 -> f32 is
// a 16-bit shift (AVX-512F or scalar). The library is built without -march
// flags: the kernels carry target attributes and are picked at run time.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"

#include <initializer_list>

#if defined(__x86_64__)
#include <immintrin.h>
#define STRATA_BF16_X86 1
#else
#define STRATA_BF16_X86 0
#endif

namespace strata::rt {
namespace {

using detail::Bf16ConvertIsa;

void toBf16Scalar(const float *in, uint16_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f32ToBf16(in[i]);
}

void toF32Scalar(const uint16_t *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16ToF32(in[i]);
}

#if STRATA_BF16_X86

using detail::roundLanesToBf16;

__attribute__((target("avx512f"))) void toBf16Avx512(const float *in,
                                                     uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512i x = _mm512_loadu_si512(in + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i),
                        _mm512_cvtepi32_epi16(roundLanesToBf16(x)));
  }
  toBf16Scalar(in + i, out + i, n - i);
}

/// Lanes holding a nonzero subnormal f32.
__attribute__((target("avx512f"))) inline __mmask16 subnormalLanes(__m512i x) {
  __m512i mag = _mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF));
  return _mm512_cmplt_epu32_mask(mag, _mm512_set1_epi32(0x00800000)) &
         _mm512_test_epi32_mask(mag, mag);
}

__attribute__((target("avx512f,avx512bw,avx512bf16"))) void
toBf16Avx512Bf16(const float *in, uint16_t *out, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 lo = _mm512_loadu_ps(in + i);
    __m512 hi = _mm512_loadu_ps(in + i + 16);
    __m512i r = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    __m512i loBits = _mm512_castps_si512(lo);
    __m512i hiBits = _mm512_castps_si512(hi);
    __mmask32 sub = __mmask32(subnormalLanes(loBits)) |
                    __mmask32(subnormalLanes(hiBits)) << 16;
    if (sub) { // rare: redo those lanes with the integer rounding
      __m512i exact = _mm512_inserti64x4(
          _mm512_castsi256_si512(
              _mm512_cvtepi32_epi16(roundLanesToBf16(loBits))),
          _mm512_cvtepi32_epi16(roundLanesToBf16(hiBits)), 1);
      r = _mm512_mask_mov_epi16(r, sub, exact);
    }
    _mm512_storeu_si512(out + i, r);
  }
  toBf16Avx512(in + i, out + i, n - i);
}

__attribute__((target("avx512f"))) void toF32Avx512(const uint16_t *in,
                                                    float *out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i));
    __m512i x = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    _mm512_storeu_si512(out + i, x);
  }
  toF32Scalar(in + i, out + i, n - i);
}

#endif // STRATA_BF16_X86

} // namespace

namespace detail {

const char *bf16ConvertIsaName(Bf16ConvertIsa isa) {
  switch (isa) {
  case Bf16ConvertIsa::Scalar:
    return "scalar";
  case Bf16ConvertIsa::Avx512:
    return "avx512";
  case Bf16ConvertIsa::Avx512Bf16:
    return "avx512bf16";
  }
  return "unknown";
}

bool bf16ConvertIsaSupported(Bf16ConvertIsa isa) {
#if STRATA_BF16_X86
  switch (isa) {
  case Bf16ConvertIsa::Scalar:
    return true;
  case Bf16ConvertIsa::Avx512:
    return __builtin_cpu_supports("avx512f");
  case Bf16ConvertIsa::Avx512Bf16:
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == Bf16ConvertIsa::Scalar;
#endif
}

Bf16ConvertIsa defaultBf16ConvertIsa() {
  static const Bf16ConvertIsa isa = [] {
    for (Bf16ConvertIsa best :
         {Bf16ConvertIsa::Avx512Bf16, Bf16ConvertIsa::Avx512})
      if (bf16ConvertIsaSupported(best))
        return best;
    return Bf16ConvertIsa::Scalar;
  }();
  return isa;
}

void convertF32ToBf16WithIsa(Bf16ConvertIsa isa, const float *in, uint16_t *out,
                             int64_t n) {
#if STRATA_BF16_X86
  if (isa == Bf16ConvertIsa::Avx512Bf16 && bf16ConvertIsaSupported(isa))
    return toBf16Avx512Bf16(in, out, n);
  if (isa != Bf16ConvertIsa::Scalar &&
      bf16ConvertIsaSupported(Bf16ConvertIsa::Avx512))
    return toBf16Avx512(in, out, n);
#endif
  toBf16Scalar(in, out, n);
}

void convertBf16ToF32WithIsa(Bf16ConvertIsa isa, const uint16_t *in, float *out,
                             int64_t n) {
#if STRATA_BF16_X86
  if (isa != Bf16ConvertIsa::Scalar &&
      bf16ConvertIsaSupported(Bf16ConvertIsa::Avx512))
    return toF32Avx512(in, out, n);
#endif
  toF32Scalar(in, out, n);
}

} // namespace detail

void convertF32ToBf16(const float *in, uint16_t *out, int64_t n) {
  detail::convertF32ToBf16WithIsa(detail::defaultBf16ConvertIsa(), in, out, n);
}

void convertBf16ToF32(const uint16_t *in, float *out, int64_t n) {
  detail::convertBf16ToF32WithIsa(detail::defaultBf16ConvertIsa(), in, out, n);
}

} // namespace strata::rt
