//===- VectorMath.cpp - Vectorised transcendental loops -------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// exp(x) = 2^n e^r with n = round(x log2 e) and |r| <= ln2 / 2, e^r from the
// Cephes expf polynomial; 2^n is applied as two powers of two so that n = 128
// (x just below log FLT_MAX) does not overflow the exponent field.
//
//===----------------------------------------------------------------------===//

#include "VectorMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#define STRATA_VMATH_X86 1
#else
#define STRATA_VMATH_X86 0
#endif

namespace strata::rt::detail {
namespace {

constexpr float kExpLo = -87.33654f; // below: result under FLT_MIN, flush to 0
constexpr float kExpHi = 88.72283f;  // above: inf
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f,
                kP2 = 8.3334519073e-3f, kP3 = 4.1665795894e-2f,
                kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
constexpr float kGeluC = 0.7978845608f; // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

//===----------------------------------------------------------------------===//
// Scalar (C library)
//===----------------------------------------------------------------------===//

void expScalar(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = std::exp(x[i]);
}

void geluScalar(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float u = kGeluC * v * (1.0f + kGeluA * v * v);
    y[i] = v / (1.0f + std::exp(-2.0f * u));
  }
}

void geluGradScalar(const float *dy, const float *x, float *dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float u = kGeluC * v * (1.0f + kGeluA * v * v);
    float s = 1.0f / (1.0f + std::exp(-2.0f * u));
    float du = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    // 0.5 (1 + tanh u) = s and 1 - tanh^2 u = 4 s (1 - s).
    dx[i] = dy[i] * (s + 2.0f * v * s * (1.0f - s) * du);
  }
}

// The selections of relu and relu_grad: `x > 0 ? v : 0` (NaN and -0 compare
// false, so they give +0), and the sum of add and bias_add: one IEEE add.
// The vector versions compute exactly these, without branches.

void addScalar(const float *a, const float *b, float *c, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    c[i] = a[i] + b[i];
}

void reluScalar(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void reluGradScalar(const float *dy, const float *x, float *dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

// Column sums: one running sum per column from 0, rows in order; the vector
// versions keep a block of columns in registers over all rows and perform
// the same additions lane by lane.

void columnSumsScalar(const float *x, int64_t rows, int64_t ld, float *sum,
                      int64_t n) {
  std::fill(sum, sum + n, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      sum[j] += x[r * ld + j];
}

void normColumnSumsScalar(const NormColumns &c, int64_t n) {
  std::fill(c.dgamma, c.dgamma + n, 0.0f);
  std::fill(c.dbeta, c.dbeta + n, 0.0f);
  for (int64_t r = 0; r < c.rows; ++r) {
    const float *dyr = c.dy + r * c.ld, *xr = c.x + r * c.ld;
    float mean = c.mean[r], rstd = c.rstd[r];
    for (int64_t j = 0; j < n; ++j) {
      float xhat = (xr[j] - mean) * rstd;
      float product = dyr[j] * xhat; // its own statement: never an FMA
      c.dgamma[j] += product;
      c.dbeta[j] += dyr[j];
    }
  }
}

#if STRATA_VMATH_X86

//===----------------------------------------------------------------------===//
// AVX-512
//===----------------------------------------------------------------------===//

#define STRATA_AVX512 __attribute__((target("avx512f,avx2,fma")))

STRATA_AVX512 inline __m512 exp512(__m512 x) {
  const __m512 lo = _mm512_set1_ps(kExpLo), hi = _mm512_set1_ps(kExpHi);
  __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 c = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(kLog2e)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), c);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r),
                      _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512i ni = _mm512_cvtps_epi32(n);
  __m512i n1 = _mm512_srai_epi32(ni, 1);
  __m512i n2 = _mm512_sub_epi32(ni, n1);
  const __m512i bias = _mm512_set1_epi32(127);
  __m512 s1 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
  __m512 s2 =
      _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  y = _mm512_mask_blend_ps(under, y, _mm512_setzero_ps());
  y = _mm512_mask_blend_ps(
      over, y, _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  return _mm512_mask_blend_ps(nan, y, x);
}

STRATA_AVX512 inline __m512 sigmoid2u512(__m512 v) {
  __m512 v2 = _mm512_mul_ps(v, v);
  __m512 u = _mm512_mul_ps(
      _mm512_mul_ps(_mm512_set1_ps(kGeluC), v),
      _mm512_fmadd_ps(_mm512_set1_ps(kGeluA), v2, _mm512_set1_ps(1.0f)));
  __m512 e = exp512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u));
  return _mm512_div_ps(_mm512_set1_ps(1.0f),
                       _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

STRATA_AVX512 void expAvx512(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, exp512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, exp512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

STRATA_AVX512 inline __m512 gelu512(__m512 v) {
  return _mm512_mul_ps(v, sigmoid2u512(v));
}

STRATA_AVX512 inline __m512 geluGrad512(__m512 g, __m512 v) {
  __m512 s = sigmoid2u512(v);
  __m512 du =
      _mm512_mul_ps(_mm512_set1_ps(kGeluC),
                    _mm512_fmadd_ps(_mm512_set1_ps(3.0f * kGeluA),
                                    _mm512_mul_ps(v, v), _mm512_set1_ps(1.0f)));
  __m512 t =
      _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(2.0f), v),
                    _mm512_mul_ps(s, _mm512_sub_ps(_mm512_set1_ps(1.0f), s)));
  return _mm512_mul_ps(g, _mm512_fmadd_ps(t, du, s));
}

STRATA_AVX512 void geluAvx512(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, gelu512(_mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, gelu512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

STRATA_AVX512 void geluGradAvx512(const float *dy, const float *x, float *dx,
                                  int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(
        dx + i, geluGrad512(_mm512_loadu_ps(dy + i), _mm512_loadu_ps(x + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dx + i, m,
                          geluGrad512(_mm512_maskz_loadu_ps(m, dy + i),
                                      _mm512_maskz_loadu_ps(m, x + i)));
  }
}

/// The mask of the first `n - i` lanes (all 16 when at least 16 are left).
inline __mmask16 tailMask(int64_t i, int64_t n) {
  return n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
}

STRATA_AVX512 void addAvx512(const float *a, const float *b, float *c,
                             int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tailMask(i, n);
    _mm512_mask_storeu_ps(c + i, m,
                          _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i),
                                        _mm512_maskz_loadu_ps(m, b + i)));
  }
}

STRATA_AVX512 void reluAvx512(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tailMask(i, n);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __mmask16 pos = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_mask_storeu_ps(y + i, m, _mm512_maskz_mov_ps(pos, v));
  }
}

STRATA_AVX512 void reluGradAvx512(const float *dy, const float *x, float *dx,
                                  int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = tailMask(i, n);
    __mmask16 pos = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, x + i),
                                       _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_maskz_loadu_ps(pos & m, dy + i));
  }
}

/// Sums of columns [j, j + 16 kVecs) over all rows in kVecs registers.
/// The column sums go over groups of columns and, within a group, chunks
/// of rows: a chunk of `arrays` arrays (rows x group width) stays in the L1
/// cache (about 32 KiB) while every block of its columns is summed over
/// it, so the arrays are read from memory once and each running sum is
/// loaded and stored once per chunk of at least 8 rows.
constexpr int64_t kChunkFloats = 8192;
inline int64_t groupColumns(int arrays) { return kChunkFloats / 8 / arrays; }
inline int64_t chunkRows(int64_t width, int arrays) {
  return std::max<int64_t>(8,
                           kChunkFloats / std::max<int64_t>(1, width * arrays));
}

/// Adds rows [r0, r1) of columns [j, j + 16 kVecs) to sum, in registers.
template <int kVecs>
STRATA_AVX512 void columnBlock512(const float *x, int64_t r0, int64_t r1,
                                  int64_t ld, float *sum, int64_t j,
                                  int64_t n) {
  __m512 acc[kVecs];
  __mmask16 m[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    m[v] = j + 16 * v < n ? tailMask(j + 16 * v, n) : (__mmask16)0;
    acc[v] = _mm512_maskz_loadu_ps(m[v], sum + j + 16 * v);
  }
  for (int64_t r = r0; r < r1; ++r) {
    const float *xr = x + r * ld + j;
    for (int v = 0; v < kVecs; ++v)
      acc[v] = _mm512_add_ps(acc[v], _mm512_maskz_loadu_ps(m[v], xr + 16 * v));
  }
  for (int v = 0; v < kVecs; ++v)
    _mm512_mask_storeu_ps(sum + j + 16 * v, m[v], acc[v]);
}

STRATA_AVX512 void columnSumsAvx512(const float *x, int64_t rows, int64_t ld,
                                    float *sum, int64_t n) {
  std::fill(sum, sum + n, 0.0f);
  const int64_t group = groupColumns(1); // a multiple of the 128-column block
  for (int64_t g = 0; g < n; g += group) {
    int64_t end = std::min(n, g + group);
    int64_t chunk = chunkRows(end - g, 1);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk)
      for (int64_t j = g; j < end; j += 128)
        columnBlock512<8>(x, r0, std::min(rows, r0 + chunk), ld, sum, j, n);
  }
}

/// normColumnSums over rows [r0, r1) of columns [j, j + 64).
STRATA_AVX512 void normColumnBlock512(const NormColumns &c, int64_t r0,
                                      int64_t r1, int64_t j, int64_t n) {
  constexpr int kVecs = 4;
  __m512 dg[kVecs], db[kVecs];
  __mmask16 m[kVecs];
  for (int v = 0; v < kVecs; ++v) {
    m[v] = j + 16 * v < n ? tailMask(j + 16 * v, n) : (__mmask16)0;
    dg[v] = _mm512_maskz_loadu_ps(m[v], c.dgamma + j + 16 * v);
    db[v] = _mm512_maskz_loadu_ps(m[v], c.dbeta + j + 16 * v);
  }
  for (int64_t r = r0; r < r1; ++r) {
    const float *dyr = c.dy + r * c.ld + j, *xr = c.x + r * c.ld + j;
    __m512 mean = _mm512_set1_ps(c.mean[r]), rstd = _mm512_set1_ps(c.rstd[r]);
    for (int v = 0; v < kVecs; ++v) {
      __m512 g = _mm512_maskz_loadu_ps(m[v], dyr + 16 * v);
      __m512 xhat = _mm512_mul_ps(
          _mm512_sub_ps(_mm512_maskz_loadu_ps(m[v], xr + 16 * v), mean), rstd);
      dg[v] = _mm512_add_ps(dg[v], _mm512_mul_ps(g, xhat));
      db[v] = _mm512_add_ps(db[v], g);
    }
  }
  for (int v = 0; v < kVecs; ++v) {
    _mm512_mask_storeu_ps(c.dgamma + j + 16 * v, m[v], dg[v]);
    _mm512_mask_storeu_ps(c.dbeta + j + 16 * v, m[v], db[v]);
  }
}

STRATA_AVX512 void normColumnSumsAvx512(const NormColumns &c, int64_t n) {
  std::fill(c.dgamma, c.dgamma + n, 0.0f);
  std::fill(c.dbeta, c.dbeta + n, 0.0f);
  const int64_t group = groupColumns(2); // a multiple of the 64-column block
  for (int64_t g = 0; g < n; g += group) {
    int64_t end = std::min(n, g + group);
    int64_t chunk = chunkRows(end - g, 2);
    for (int64_t r0 = 0; r0 < c.rows; r0 += chunk)
      for (int64_t j = g; j < end; j += 64)
        normColumnBlock512(c, r0, std::min(c.rows, r0 + chunk), j, n);
  }
}

//===----------------------------------------------------------------------===//
// AVX2
//===----------------------------------------------------------------------===//

#define STRATA_AVX2 __attribute__((target("avx2,fma")))

STRATA_AVX2 inline __m256 exp256(__m256 x) {
  const __m256 lo = _mm256_set1_ps(kExpLo), hi = _mm256_set1_ps(kExpHi);
  __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  __m256 c = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), c);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r),
                      _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1);
  __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), under);
  y = _mm256_blendv_ps(
      y, _mm256_set1_ps(std::numeric_limits<float>::infinity()), over);
  return _mm256_blendv_ps(y, x, nan);
}

STRATA_AVX2 inline __m256 sigmoid2u256(__m256 v) {
  __m256 v2 = _mm256_mul_ps(v, v);
  __m256 u = _mm256_mul_ps(
      _mm256_mul_ps(_mm256_set1_ps(kGeluC), v),
      _mm256_fmadd_ps(_mm256_set1_ps(kGeluA), v2, _mm256_set1_ps(1.0f)));
  __m256 e = exp256(_mm256_mul_ps(_mm256_set1_ps(-2.0f), u));
  return _mm256_div_ps(_mm256_set1_ps(1.0f),
                       _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

STRATA_AVX2 inline __m256 gelu256(__m256 v) {
  return _mm256_mul_ps(v, sigmoid2u256(v));
}

STRATA_AVX2 inline __m256 geluGrad256(__m256 g, __m256 v) {
  __m256 s = sigmoid2u256(v);
  __m256 du =
      _mm256_mul_ps(_mm256_set1_ps(kGeluC),
                    _mm256_fmadd_ps(_mm256_set1_ps(3.0f * kGeluA),
                                    _mm256_mul_ps(v, v), _mm256_set1_ps(1.0f)));
  __m256 t =
      _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(2.0f), v),
                    _mm256_mul_ps(s, _mm256_sub_ps(_mm256_set1_ps(1.0f), s)));
  return _mm256_mul_ps(g, _mm256_fmadd_ps(t, du, s));
}

/// Tails go through a zero-padded block so that they use the vector code.
STRATA_AVX2 void expAvx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, exp256(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float block[8] = {};
    std::memcpy(block, x + i, (n - i) * sizeof(float));
    _mm256_store_ps(block, exp256(_mm256_load_ps(block)));
    std::memcpy(y + i, block, (n - i) * sizeof(float));
  }
}

STRATA_AVX2 void geluAvx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, gelu256(_mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float block[8] = {};
    std::memcpy(block, x + i, (n - i) * sizeof(float));
    _mm256_store_ps(block, gelu256(_mm256_load_ps(block)));
    std::memcpy(y + i, block, (n - i) * sizeof(float));
  }
}

STRATA_AVX2 void geluGradAvx2(const float *dy, const float *x, float *dx,
                              int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        dx + i, geluGrad256(_mm256_loadu_ps(dy + i), _mm256_loadu_ps(x + i)));
  if (i < n) {
    alignas(32) float g[8] = {}, v[8] = {};
    std::memcpy(g, dy + i, (n - i) * sizeof(float));
    std::memcpy(v, x + i, (n - i) * sizeof(float));
    _mm256_store_ps(g, geluGrad256(_mm256_load_ps(g), _mm256_load_ps(v)));
    std::memcpy(dx + i, g, (n - i) * sizeof(float));
  }
}

/// The 8-lane selections and sums; tails through the scalar loops (which
/// compute the same values: no rounding is involved).
STRATA_AVX2 void addAvx2(const float *a, const float *b, float *c, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(
        c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  addScalar(a + i, b + i, c + i, n - i);
}

STRATA_AVX2 void reluAvx2(const float *x, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 pos = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_storeu_ps(y + i, _mm256_and_ps(pos, v));
  }
  reluScalar(x + i, y + i, n - i);
}

STRATA_AVX2 void reluGradAvx2(const float *dy, const float *x, float *dx,
                              int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 pos =
        _mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_GT_OQ);
    _mm256_storeu_ps(dx + i, _mm256_and_ps(pos, _mm256_loadu_ps(dy + i)));
  }
  reluGradScalar(dy + i, x + i, dx + i, n - i);
}

/// Whole 8-column blocks in registers; the last n % 8 columns through the
/// scalar loops (the same additions).
STRATA_AVX2 void columnSumsAvx2(const float *x, int64_t rows, int64_t ld,
                                float *sum, int64_t n) {
  constexpr int kVecs = 8;
  int64_t j = 0;
  while (j + 8 <= n) {
    int vecs = (int)std::min<int64_t>(kVecs, (n - j) / 8);
    __m256 acc[kVecs];
    for (int v = 0; v < kVecs; ++v)
      acc[v] = _mm256_setzero_ps();
    for (int64_t r = 0; r < rows; ++r)
      for (int v = 0; v < vecs; ++v)
        acc[v] = _mm256_add_ps(acc[v], _mm256_loadu_ps(x + r * ld + j + 8 * v));
    for (int v = 0; v < vecs; ++v)
      _mm256_storeu_ps(sum + j + 8 * v, acc[v]);
    j += 8 * vecs;
  }
  if (j < n)
    columnSumsScalar(x + j, rows, ld, sum + j, n - j);
}

STRATA_AVX2 void normColumnSumsAvx2(const NormColumns &c, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 dg = _mm256_setzero_ps(), db = _mm256_setzero_ps();
    for (int64_t r = 0; r < c.rows; ++r) {
      __m256 g = _mm256_loadu_ps(c.dy + r * c.ld + j);
      __m256 xhat =
          _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(c.x + r * c.ld + j),
                                      _mm256_set1_ps(c.mean[r])),
                        _mm256_set1_ps(c.rstd[r]));
      dg = _mm256_add_ps(dg, _mm256_mul_ps(g, xhat));
      db = _mm256_add_ps(db, g);
    }
    _mm256_storeu_ps(c.dgamma + j, dg);
    _mm256_storeu_ps(c.dbeta + j, db);
  }
  if (j < n) {
    NormColumns rest = c;
    rest.dy += j;
    rest.x += j;
    rest.dgamma += j;
    rest.dbeta += j;
    normColumnSumsScalar(rest, n - j);
  }
}

#endif // STRATA_VMATH_X86

} // namespace

const VectorMath &vectorMath(GemmIsa isa) {
  static const VectorMath scalar{
      expScalar,  geluScalar,     geluGradScalar,   addScalar,
      reluScalar, reluGradScalar, columnSumsScalar, normColumnSumsScalar};
#if STRATA_VMATH_X86
  static const VectorMath avx2{expAvx2,        geluAvx2,          geluGradAvx2,
                               addAvx2,        reluAvx2,          reluGradAvx2,
                               columnSumsAvx2, normColumnSumsAvx2};
  static const VectorMath avx512{
      expAvx512,  geluAvx512,     geluGradAvx512,   addAvx512,
      reluAvx512, reluGradAvx512, columnSumsAvx512, normColumnSumsAvx512};
  switch (isa) {
  case GemmIsa::Avx512:
    return avx512;
  case GemmIsa::Avx2:
    return avx2;
  case GemmIsa::Scalar:
    return scalar;
  }
#endif
  (void)isa;
  return scalar;
}

namespace {
const VectorMath &defaultMath() {
  static const VectorMath &math = vectorMath(defaultGemmIsa());
  return math;
}
} // namespace

void expArray(const float *x, float *y, int64_t n) {
  defaultMath().exp(x, y, n);
}

void geluArray(const float *x, float *y, int64_t n) {
  defaultMath().gelu(x, y, n);
}

void geluGradArray(const float *dy, const float *x, float *dx, int64_t n) {
  defaultMath().geluGrad(dy, x, dx, n);
}

void addArray(const float *a, const float *b, float *c, int64_t n) {
  defaultMath().add(a, b, c, n);
}

void reluArray(const float *x, float *y, int64_t n) {
  defaultMath().relu(x, y, n);
}

void reluGradArray(const float *dy, const float *x, float *dx, int64_t n) {
  defaultMath().reluGrad(dy, x, dx, n);
}

void columnSumsArray(const float *x, int64_t rows, int64_t ld, float *sum,
                     int64_t n) {
  defaultMath().columnSums(x, rows, ld, sum, n);
}

void normColumnSumsArray(const NormColumns &cols, int64_t n) {
  defaultMath().normColumnSums(cols, n);
}

} // namespace strata::rt::detail
