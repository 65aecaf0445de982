//===- ReferenceOps.h - Float64 reference implementations --------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Straightforward double-precision versions of the plan ops (the semantics of
// docs/plan-format.md), used to check the f32 kernels' forward results and,
// through finite differences, their gradients.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TEST_CPU_REFERENCEOPS_H
#define STRATA_RT_TEST_CPU_REFERENCEOPS_H

#include "strata-rt/Tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace strata::rt::test::ref {

using Vec = std::vector<double>;

inline Vec matmul(const Vec &a, const Shape &as, const Vec &b, const Shape &bs,
                  bool ta, bool tb) {
  int64_t r = as.size();
  int64_t batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i)
    batch *= as[i];
  int64_t m = ta ? as[r - 1] : as[r - 2], k = ta ? as[r - 2] : as[r - 1];
  int64_t n = tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
  bool broadcast = bs.size() == 2;
  Vec c(batch * m * n, 0.0);
  for (int64_t q = 0; q < batch; ++q) {
    const double *A = a.data() + q * m * k;
    const double *B = b.data() + (broadcast ? 0 : q * k * n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p)
          s += (ta ? A[p * m + i] : A[i * k + p]) *
               (tb ? B[j * k + p] : B[p * n + j]);
        c[(q * m + i) * n + j] = s;
      }
  }
  return c;
}

inline Vec biasAdd(const Vec &x, const Shape &xs, const Vec &b, int64_t axis) {
  if (axis < 0)
    axis += xs.size();
  int64_t inner = 1;
  for (size_t i = axis + 1; i < xs.size(); ++i)
    inner *= xs[i];
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    y[e] = x[e] + b[(e / inner) % xs[axis]];
  return y;
}

inline Vec relu(const Vec &x) {
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    y[e] = x[e] > 0 ? x[e] : 0;
  return y;
}

inline Vec gelu(const Vec &x) {
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    double v = x[e];
    y[e] = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
  }
  return y;
}

inline Vec softmax(const Vec &x, const Shape &s, double scale, bool causal) {
  int64_t len = s.back(), rows = x.size() / len;
  Vec y(x.size(), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t valid = causal ? r % len + 1 : len;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < valid; ++j)
      mx = std::max(mx, scale * x[r * len + j]);
    double sum = 0;
    for (int64_t j = 0; j < valid; ++j)
      sum += std::exp(scale * x[r * len + j] - mx);
    for (int64_t j = 0; j < valid; ++j)
      y[r * len + j] = std::exp(scale * x[r * len + j] - mx) / sum;
  }
  return y;
}

inline Vec layerNorm(const Vec &x, const Shape &s, const Vec &gamma,
                     const Vec &beta, double eps) {
  int64_t h = s.back(), rows = x.size() / h;
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < h; ++j)
      mean += x[r * h + j];
    mean /= h;
    for (int64_t j = 0; j < h; ++j)
      var += (x[r * h + j] - mean) * (x[r * h + j] - mean);
    var /= h;
    for (int64_t j = 0; j < h; ++j)
      y[r * h + j] =
          (x[r * h + j] - mean) / std::sqrt(var + eps) * gamma[j] + beta[j];
  }
  return y;
}

/// Batch statistics of x [N, C, d...] per channel: mean and biased
/// variance over the N · Π d values.
inline void batchStats(const Vec &x, const Shape &s, Vec &mean, Vec &var) {
  int64_t n = s[0], c = s[1], inner = 1;
  for (size_t i = 2; i < s.size(); ++i)
    inner *= s[i];
  mean.assign(c, 0.0);
  var.assign(c, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i)
        mean[ch] += x[(b * c + ch) * inner + i];
  for (double &m : mean)
    m /= (double)(n * inner);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < inner; ++i) {
        double d = x[(b * c + ch) * inner + i] - mean[ch];
        var[ch] += d * d;
      }
  for (double &v : var)
    v /= (double)(n * inner);
}

/// Batch normalisation of x [N, C, d...] with per-channel `mean` and `var`
/// (the batch's in training mode, the running ones in evaluation).
inline Vec batchNormWith(const Vec &x, const Shape &s, const Vec &gamma,
                         const Vec &beta, const Vec &mean, const Vec &var,
                         double eps) {
  int64_t c = s[1], inner = 1;
  for (size_t i = 2; i < s.size(); ++i)
    inner *= s[i];
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e) {
    int64_t ch = (e / inner) % c;
    y[e] = (x[e] - mean[ch]) / std::sqrt(var[ch] + eps) * gamma[ch] + beta[ch];
  }
  return y;
}

/// Training-mode batch normalisation (the batch's own statistics).
inline Vec batchNorm(const Vec &x, const Shape &s, const Vec &gamma,
                     const Vec &beta, double eps) {
  Vec mean, var;
  batchStats(x, s, mean, var);
  return batchNormWith(x, s, gamma, beta, mean, var, eps);
}

/// x[..., offset : offset + size, ...] along dimension `axis`.
inline Vec slice(const Vec &x, const Shape &s, int64_t axis, int64_t offset,
                 int64_t size) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d)
    inner *= s[d];
  Vec y;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = offset; r < offset + size; ++r)
      for (int64_t i = 0; i < inner; ++i)
        y.push_back(x[(o * s[axis] + r) * inner + i]);
  return y;
}

inline Vec embedding(const Vec &table, int64_t h,
                     const std::vector<int32_t> &ids) {
  Vec y(ids.size() * h);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t j = 0; j < h; ++j)
      y[i * h + j] = table[ids[i] * h + j];
  return y;
}

inline Vec positionEmbedding(const Vec &x, const Shape &xs, const Vec &table) {
  int64_t s = xs[1], h = xs[2];
  Vec y(x.size());
  for (size_t e = 0; e < x.size(); ++e)
    y[e] = x[e] + table[(e / h) % s * h + e % h];
  return y;
}

inline Vec transpose(const Vec &x, const Shape &xs,
                     const std::vector<int64_t> &perm) {
  int64_t rank = xs.size();
  Shape ys(rank);
  for (int64_t i = 0; i < rank; ++i)
    ys[i] = xs[perm[i]];
  Vec y(x.size());
  std::vector<int64_t> idx(rank);
  for (size_t e = 0; e < y.size(); ++e) {
    int64_t rem = e;
    for (int64_t i = rank - 1; i >= 0; --i) {
      idx[i] = rem % ys[i];
      rem /= ys[i];
    }
    // Output index idx: input coordinate perm[i] is idx[i].
    std::vector<int64_t> xi(rank);
    for (int64_t i = 0; i < rank; ++i)
      xi[perm[i]] = idx[i];
    int64_t off = 0;
    for (int64_t i = 0; i < rank; ++i)
      off = off * xs[i] + xi[i];
    y[e] = x[off];
  }
  return y;
}

struct Conv {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0;
};

inline Vec conv2d(const Vec &x, const Shape &xs, const Vec &w, const Shape &ws,
                  Conv c) {
  int64_t n = xs[0], ch = xs[1], h = xs[2], wd = xs[3];
  int64_t f = ws[0], kh = ws[2], kw = ws[3];
  int64_t oh = (h + 2 * c.ph - kh) / c.sh + 1,
          ow = (wd + 2 * c.pw - kw) / c.sw + 1;
  Vec y(n * f * oh * ow, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < f; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double s = 0;
          for (int64_t cc = 0; cc < ch; ++cc)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iy = oy * c.sh - c.ph + i, ix = ox * c.sw - c.pw + j;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                  continue;
                s += x[((b * ch + cc) * h + iy) * wd + ix] *
                     w[((o * ch + cc) * kh + i) * kw + j];
              }
          y[((b * f + o) * oh + oy) * ow + ox] = s;
        }
  return y;
}

inline Vec maxPool(const Vec &x, const Shape &xs, int64_t kh, int64_t kw,
                   Conv c) {
  int64_t planes = xs[0] * xs[1], h = xs[2], w = xs[3];
  int64_t oh = (h + 2 * c.ph - kh) / c.sh + 1,
          ow = (w + 2 * c.pw - kw) / c.sw + 1;
  Vec y(planes * oh * ow);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            int64_t iy = oy * c.sh - c.ph + i, ix = ox * c.sw - c.pw + j;
            if (iy >= 0 && iy < h && ix >= 0 && ix < w)
              mx = std::max(mx, x[(p * h + iy) * w + ix]);
          }
        y[(p * oh + oy) * ow + ox] = mx;
      }
  return y;
}

inline Vec globalAvgPool(const Vec &x, const Shape &xs) {
  int64_t planes = xs[0] * xs[1], hw = xs[2] * xs[3];
  Vec y(planes, 0.0);
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t e = 0; e < hw; ++e)
      y[p] += x[p * hw + e];
    y[p] /= hw;
  }
  return y;
}

inline double crossEntropy(const Vec &logits, int64_t c,
                           const std::vector<int32_t> &labels) {
  double total = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    const double *x = logits.data() + r * c;
    double mx = *std::max_element(x, x + c), sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(x[j] - mx);
    total += std::log(sum) + mx - x[labels[r]];
  }
  return total / labels.size();
}

inline double mse(const Vec &x, const Vec &t) {
  double total = 0;
  for (size_t e = 0; e < x.size(); ++e)
    total += (x[e] - t[e]) * (x[e] - t[e]);
  return total / x.size();
}

} // namespace strata::rt::test::ref

#endif // STRATA_RT_TEST_CPU_REFERENCEOPS_H
