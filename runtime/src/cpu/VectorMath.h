//===- VectorMath.h - Vectorised transcendental loops -------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// exp and GELU, the branch-free add, relu and relu_grad loops of the
// element-wise kernels and the GEMM epilogues, and the column sums of
// bias_add_grad and layer_norm_grad, over arrays with
// AVX-512 / AVX2 code picked at run time (the instruction set of
// detail::defaultGemmIsa()), else the C library. Every element goes through
// the same lane arithmetic whatever n and its position (tails are masked or
// padded), so results do not depend on how a parallel loop splits an array.
// Accuracy: about 2 ulp for exp; add, relu and relu_grad are exact and equal
// on every instruction set.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CPU_VECTORMATH_H
#define STRATA_RT_CPU_VECTORMATH_H

#include "GemmInternal.h"

#include <cstdint>

namespace strata::rt::detail {

/// The operands of normColumnSums: dy and x are [rows][ld] (row r starts
/// at r * ld), mean and rstd one value per row.
struct NormColumns {
  const float *dy, *x, *mean, *rstd;
  int64_t rows, ld;
  float *dgamma, *dbeta;
};

/// The loops for one instruction set.
struct VectorMath {
  void (*exp)(const float *x, float *y, int64_t n);
  void (*gelu)(const float *x, float *y, int64_t n);
  void (*geluGrad)(const float *dy, const float *x, float *dx, int64_t n);
  void (*add)(const float *a, const float *b, float *c, int64_t n);
  void (*relu)(const float *x, float *y, int64_t n);
  void (*reluGrad)(const float *dy, const float *x, float *dx, int64_t n);
  void (*columnSums)(const float *x, int64_t rows, int64_t ld, float *sum,
                     int64_t n);
  void (*normColumnSums)(const NormColumns &cols, int64_t n);
};

/// The loops of `isa` (the C library for GemmIsa::Scalar); `isa` must be
/// supported by this CPU. The functions below use defaultGemmIsa()'s.
const VectorMath &vectorMath(GemmIsa isa);

/// y[i] = exp(x[i]); x and y may be the same array. Results below FLT_MIN
/// flush to 0, above FLT_MAX give inf, NaN stays NaN.
void expArray(const float *x, float *y, int64_t n);

/// y = gelu(x) of the tanh form, computed as x * sigmoid(2u) with
/// u = sqrt(2/pi) (x + 0.044715 x^3) (0.5 (1 + tanh u) == sigmoid(2u)).
void geluArray(const float *x, float *y, int64_t n);

/// dx = dy * gelu'(x) of the same form.
void geluGradArray(const float *dy, const float *x, float *dx, int64_t n);

/// c[i] = a[i] + b[i] (add, bias_add); the arrays may be the same.
void addArray(const float *a, const float *b, float *c, int64_t n);

/// y[i] = x[i] > 0 ? x[i] : 0 (relu; NaN and -0 give +0), without branches.
void reluArray(const float *x, float *y, int64_t n);

/// dx[i] = x[i] > 0 ? dy[i] : 0 (relu_grad), without branches.
void reluGradArray(const float *dy, const float *x, float *dx, int64_t n);

/// sum[j] = x[0][j] + x[1][j] + ... + x[rows-1][j] for j < n, rows at
/// x + r * ld, each column summed from 0 in row order (the order of the
/// scalar loop, so the result does not depend on the instruction set or on
/// how a parallel loop splits the columns).
void columnSumsArray(const float *x, int64_t rows, int64_t ld, float *sum,
                     int64_t n);

/// layer_norm_grad's column sums over the first n columns, in row order:
/// dgamma[j] = sum_r dy[r][j] * ((x[r][j] - mean[r]) * rstd[r]) (a product
/// and a sum, never fused) and dbeta[j] = sum_r dy[r][j].
void normColumnSumsArray(const NormColumns &cols, int64_t n);

} // namespace strata::rt::detail

#endif // STRATA_RT_CPU_VECTORMATH_H
