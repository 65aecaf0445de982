//===- KernelsNN.cpp - softmax, layer and batch norm, embeddings, losses --===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Row-wise kernels split rows across threads; reductions across rows
// (dgamma, dbeta, embedding gradients, losses) are split over their outputs
// or over fixed-size blocks, so every result is computed in an order that
// does not depend on the thread count. Exponentials use the vectorised
// expArray (VectorMath.h).
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"
#include "VectorMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace strata::rt::detail {
namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

bool checkSoftmaxAttrs(Verifier &v, const Attrs &attrs, Operand x) {
  double scale;
  if (!v.positiveNumber("scale", false, scale, 1.0))
    return false;
  if (!attrs.flag("causal"))
    return true;
  const Shape &s = v.shape(x);
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    return v.fail(x.name() +
                  " must end in a square [S, S] matrix for a causal softmax, "
                  "got " +
                  formatShape(s));
  return true;
}

std::string verifySoftmax(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(1, 1) && v.dtypes() && v.minRank(in(0), 1) &&
      v.sameShape(out(0), in(0)) && checkSoftmaxAttrs(v, attrs, in(0));
  return v.error();
}

void runSoftmax(KernelContext &ctx, const Tensors &inputs,
                const Tensors &outputs, const OpAttrs &attrs) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  int64_t len = inputs[0].dim(-1);
  if (len == 0)
    return;
  int64_t rows = inputs[0].numel() / len;
  float scale = (float)attrs.scale;
  bool causal = attrs.causal;
  parallelFor(ctx.pool, rows, 10 * len, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = x + r * len;
      float *yr = y + r * len;
      // Causal: row i of each trailing [S, S] block keeps columns 0..i.
      int64_t valid = causal ? r % len + 1 : len;
      for (int64_t j = 0; j < valid; ++j)
        yr[j] = scale * xr[j];
      float mx = maxFloats(yr, valid);
      for (int64_t j = 0; j < valid; ++j)
        yr[j] -= mx;
      expArray(yr, yr, valid);
      float inv = 1.0f / sumFloats(yr, valid);
      for (int64_t j = 0; j < valid; ++j)
        yr[j] *= inv;
      std::fill(yr + valid, yr + len, 0.0f);
    }
  });
}

std::string verifySoftmaxGrad(const Descs &inputs, const Descs &outputs,
                              const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes() && v.minRank(in(0), 1) &&
      v.sameShape(in(1), in(0)) && v.sameShape(out(0), in(0)) &&
      checkSoftmaxAttrs(v, attrs, in(0));
  return v.error();
}

void runSoftmaxGrad(KernelContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  const float *dy = inputs[0].f32(), *y = inputs[1].f32();
  float *dx = outputs[0].f32();
  int64_t len = inputs[0].dim(-1);
  if (len == 0)
    return;
  int64_t rows = inputs[0].numel() / len;
  float scale = (float)attrs.scale;
  // Masked (causal) entries have y == 0 and so get exactly 0.
  parallelFor(ctx.pool, rows, 4 * len, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *dyr = dy + r * len, *yr = y + r * len;
      float *dxr = dx + r * len;
      float dot = dotFloats(dyr, yr, len);
      for (int64_t j = 0; j < len; ++j)
        dxr[j] = scale * yr[j] * (dyr[j] - dot);
    }
  });
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

/// Mean and 1 / sqrt(biased variance + epsilon) of one row (two passes).
void rowStats(const float *x, int64_t n, float epsilon, float &mean,
              float &rstd) {
  mean = sumFloats(x, n) / (float)n;
  float acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) {
      float d = x[i + j] - mean;
      acc[j] += d * d;
    }
  for (int j = 0; i < n; ++i, ++j) {
    float d = x[i] - mean;
    acc[j] += d * d;
  }
  float var = (((acc[0] + acc[1]) + (acc[2] + acc[3])) +
               ((acc[4] + acc[5]) + (acc[6] + acc[7]))) /
              (float)n;
  rstd = 1.0f / std::sqrt(var + epsilon);
}

std::string verifyLayerNorm(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double epsilon;
  if (v.counts(3, 1) && v.dtypes() && v.minRank(in(0), 1)) {
    int64_t h = v.shape(in(0)).back();
    v.hasShape(in(1), {h}) && v.hasShape(in(2), {h}) &&
        v.sameShape(out(0), in(0)) &&
        v.positiveNumber("epsilon", false, epsilon, 1e-5);
  }
  return v.error();
}

void runLayerNorm(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const float *x = inputs[0].f32(), *gamma = inputs[1].f32(),
              *beta = inputs[2].f32();
  float *y = outputs[0].f32();
  int64_t h = inputs[0].dim(-1);
  if (h == 0)
    return;
  int64_t rows = inputs[0].numel() / h;
  float epsilon = (float)attrs.epsilon;
  parallelFor(ctx.pool, rows, 8 * h, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = x + r * h;
      float *yr = y + r * h;
      float mean, rstd;
      rowStats(xr, h, epsilon, mean, rstd);
      for (int64_t j = 0; j < h; ++j)
        yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    }
  });
}

std::string verifyLayerNormGrad(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double epsilon;
  if (v.counts(3, 3) && v.dtypes() && v.minRank(in(1), 1)) {
    int64_t h = v.shape(in(1)).back();
    v.sameShape(in(0), in(1)) && v.hasShape(in(2), {h}) &&
        v.sameShape(out(0), in(1)) && v.hasShape(out(1), {h}) &&
        v.hasShape(out(2), {h}) &&
        v.positiveNumber("epsilon", false, epsilon, 1e-5);
  }
  return v.error();
}

void runLayerNormGrad(KernelContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &attrs) {
  const float *dy = inputs[0].f32(), *x = inputs[1].f32(),
              *gamma = inputs[2].f32();
  float *dx = outputs[0].f32(), *dgamma = outputs[1].f32(),
        *dbeta = outputs[2].f32();
  int64_t h = inputs[1].dim(-1);
  if (h == 0)
    return;
  int64_t rows = inputs[1].numel() / h;
  float epsilon = (float)attrs.epsilon;
  std::vector<float> means(rows), rstds(rows);
  float *meanp = means.data(), *rstdp = rstds.data();
  // dx per row: with xhat = (x - mean) rstd and g = dy gamma,
  // dx = rstd (g - mean(g) - xhat mean(g xhat)).
  parallelFor(ctx.pool, rows, 12 * h, [=](int64_t begin, int64_t end) {
    std::vector<float> g(h), xhat(h);
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = x + r * h, *dyr = dy + r * h;
      float *dxr = dx + r * h;
      float mean, rstd;
      rowStats(xr, h, epsilon, mean, rstd);
      meanp[r] = mean;
      rstdp[r] = rstd;
      for (int64_t j = 0; j < h; ++j) {
        xhat[j] = (xr[j] - mean) * rstd;
        g[j] = dyr[j] * gamma[j];
      }
      float meanG = sumFloats(g.data(), h) / (float)h;
      float meanGX = dotFloats(g.data(), xhat.data(), h) / (float)h;
      for (int64_t j = 0; j < h; ++j)
        dxr[j] = rstd * (g[j] - meanG - xhat[j] * meanGX);
    }
  });
  // dgamma, dbeta: each thread owns a range of columns and sums rows in order.
  parallelFor(ctx.pool, h, 4 * rows, [=](int64_t begin, int64_t end) {
    normColumnSumsArray({dy + begin, x + begin, meanp, rstdp, rows, h,
                         dgamma + begin, dbeta + begin},
                        end - begin);
  });
}

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

/// The shape of a batch norm input [N, C, d...] as (N, C, inner = Π d).
struct ChannelShape {
  int64_t batch = 0, channels = 0, inner = 1;
  explicit ChannelShape(const Tensor &x) {
    batch = x.dim(0);
    channels = x.dim(1);
    for (int64_t i = 2; i < x.rank(); ++i)
      inner *= x.dim(i);
  }
  /// Values per channel.
  int64_t count() const { return batch * inner; }
};

/// Checks x [N, C, ...] (more than one value per channel) and the C-vectors
/// among `vectors`.
bool checkChannels(Verifier &v, const std::vector<Operand> &vectors) {
  if (!v.minRank(in(0), 2))
    return false;
  const Shape &x = v.shape(in(0));
  int64_t values = 1;
  for (size_t i = 0; i < x.size(); ++i)
    if (i != 1)
      values *= x[i];
  if (values < 2)
    return v.fail("input #0 " + formatShape(x) +
                  " has one value per channel; batch normalisation needs "
                  "more");
  for (Operand op : vectors)
    if (!v.hasShape(op, {x[1]}))
      return false;
  return true;
}

std::string verifyBatchNorm(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double epsilon, momentum;
  v.counts(5, 5) && v.dtypes() &&
      checkChannels(
          v, {in(1), in(2), in(3), in(4), out(1), out(2), out(3), out(4)}) &&
      v.sameShape(out(0), in(0)) &&
      v.positiveNumber("epsilon", false, epsilon, 1e-5) &&
      v.number("momentum", false, momentum, 0.1) &&
      (momentum >= 0 && momentum <= 1
           ? true
           : v.fail("attribute 'momentum' must lie in [0, 1], got " +
                    formatNumber(momentum)));
  return v.error();
}

/// Training mode: batch statistics per channel (sums in double, in a fixed
/// order), the normalised output and the running statistics' update (with
/// the unbiased variance). Evaluation: the running statistics normalise and
/// stay as they are. Channels are split across threads.
void runBatchNorm(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const float *x = inputs[0].f32(), *gamma = inputs[1].f32(),
              *beta = inputs[2].f32(), *runMean = inputs[3].f32(),
              *runVar = inputs[4].f32();
  float *y = outputs[0].f32(), *mean = outputs[1].f32(),
        *invStd = outputs[2].f32(), *newMean = outputs[3].f32(),
        *newVar = outputs[4].f32();
  ChannelShape s(inputs[0]);
  int64_t m = s.count(), inner = s.inner, channels = s.channels;
  double epsilon = attrs.epsilon, momentum = attrs.momentum;
  bool evaluation = ctx.evaluation;
  parallelFor(ctx.pool, channels, 8 * m, [=](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mu, rstd;
      if (evaluation) {
        mu = runMean[c];
        rstd = 1.0 / std::sqrt((double)runVar[c] + epsilon);
        newMean[c] = runMean[c];
        newVar[c] = runVar[c];
      } else {
        double sum = 0;
        for (int64_t n = 0; n < s.batch; ++n)
          sum += sumToDouble(x + (n * channels + c) * inner, inner);
        mu = sum / (double)m;
        double squares = 0;
        for (int64_t n = 0; n < s.batch; ++n) {
          const float *xr = x + (n * channels + c) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            double d = (double)xr[i] - mu;
            squares += d * d;
          }
        }
        double var = squares / (double)m;
        rstd = 1.0 / std::sqrt(var + epsilon);
        newMean[c] = (float)((1 - momentum) * runMean[c] + momentum * mu);
        newVar[c] = (float)((1 - momentum) * runVar[c] +
                            momentum * squares / (double)(m - 1));
      }
      mean[c] = (float)mu;
      invStd[c] = (float)rstd;
      // y = x · alpha + shift with alpha = gamma · inv_std.
      float alpha = (float)(gamma[c] * rstd);
      float shift = (float)(beta[c] - mu * gamma[c] * rstd);
      for (int64_t n = 0; n < s.batch; ++n) {
        const float *xr = x + (n * channels + c) * inner;
        float *yr = y + (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          yr[i] = xr[i] * alpha + shift;
      }
    }
  });
}

std::string verifyBatchNormGrad(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(5, 3) && v.dtypes() && v.minRank(in(1), 2)) {
    // Operand 1 is the input; checkChannels reads input #0, which has its
    // shape.
    v.sameShape(in(0), in(1)) &&
        checkChannels(v, {in(2), in(3), in(4), out(1), out(2)}) &&
        v.sameShape(out(0), in(1));
  }
  return v.error();
}

/// Per channel, with x̂ = (x - mean) inv_std: dbeta = Σ dy,
/// dgamma = Σ dy x̂, dx = gamma inv_std (dy - dbeta / m - x̂ dgamma / m).
/// Sums in double, channels split across threads.
void runBatchNormGrad(KernelContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32(), *x = inputs[1].f32(),
              *gamma = inputs[2].f32(), *mean = inputs[3].f32(),
              *invStd = inputs[4].f32();
  float *dx = outputs[0].f32(), *dgamma = outputs[1].f32(),
        *dbeta = outputs[2].f32();
  ChannelShape s(inputs[1]);
  int64_t m = s.count(), inner = s.inner, channels = s.channels;
  parallelFor(ctx.pool, channels, 10 * m, [=](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mu = mean[c], rstd = invStd[c];
      double sumDy = 0, sumDyX = 0;
      for (int64_t n = 0; n < s.batch; ++n) {
        int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double g = dy[base + i];
          sumDy += g;
          sumDyX += g * (((double)x[base + i] - mu) * rstd);
        }
      }
      dbeta[c] = (float)sumDy;
      dgamma[c] = (float)sumDyX;
      double meanDy = sumDy / (double)m, meanDyX = sumDyX / (double)m;
      double scale = gamma[c] * rstd;
      for (int64_t n = 0; n < s.batch; ++n) {
        int64_t base = (n * channels + c) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          double xhat = ((double)x[base + i] - mu) * rstd;
          dx[base + i] =
              (float)(scale * ((double)dy[base + i] - meanDy - xhat * meanDyX));
        }
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// Ids must index a table of `rows` rows; a bad one is a run-time error.
void checkIds(const char *op, const int32_t *ids, int64_t n, int64_t rows) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= rows)
      throw std::runtime_error(
          std::string(op) + ": id " + std::to_string(ids[i]) + " at index " +
          std::to_string(i) + " is outside [0, " + std::to_string(rows) + ")");
}

std::string verifyEmbedding(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(2, 1) && v.dtypes({in(1)}) && v.rank(in(0), 2)) {
    Shape expected = v.shape(in(1));
    expected.push_back(v.shape(in(0))[1]);
    v.hasShape(out(0), expected);
  }
  return v.error();
}

void runEmbedding(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &) {
  const float *table = inputs[0].f32();
  const int32_t *ids = inputs[1].i32();
  float *y = outputs[0].f32();
  int64_t rows = inputs[0].dim(0), h = inputs[0].dim(1);
  int64_t n = inputs[1].numel();
  checkIds("embedding", ids, n, rows);
  parallelFor(ctx.pool, n, h, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      std::memcpy(y + i * h, table + (int64_t)ids[i] * h, h * sizeof(float));
  });
}

std::string verifyEmbeddingGrad(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(2, 1) && v.dtypes({in(1)}) && v.rank(out(0), 2)) {
    Shape expected = v.shape(in(1));
    expected.push_back(v.shape(out(0))[1]);
    v.hasShape(in(0), expected);
  }
  return v.error();
}

void runEmbeddingGrad(KernelContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32();
  const int32_t *ids = inputs[1].i32();
  float *dtable = outputs[0].f32();
  int64_t rows = outputs[0].dim(0), h = outputs[0].dim(1);
  int64_t n = inputs[1].numel();
  checkIds("embedding_grad", ids, n, rows);
  // Each thread owns a range of columns and scans the ids in order, so
  // repeated ids accumulate in index order whatever the thread count.
  parallelFor(ctx.pool, h, rows + n, [=](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < rows; ++r)
      std::fill(dtable + r * h + begin, dtable + r * h + end, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      float *dst = dtable + (int64_t)ids[i] * h;
      const float *src = dy + i * h;
      for (int64_t j = begin; j < end; ++j)
        dst[j] += src[j];
    }
  });
}

std::string verifyPositionEmbedding(const Descs &inputs, const Descs &outputs,
                                    const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(2, 1) && v.dtypes() && v.rank(in(0), 3) && v.rank(in(1), 2)) {
    const Shape &x = v.shape(in(0)), &t = v.shape(in(1));
    v.dimEquals(in(1), 1, x[2], "hidden size, as input #0");
    if (v.ok() && t[0] < x[1])
      v.fail("input #1 must have at least " + std::to_string(x[1]) +
             " rows (the sequence length of input #0), got " +
             std::to_string(t[0]));
    v.sameShape(out(0), in(0));
  }
  return v.error();
}

void runPositionEmbedding(KernelContext &ctx, const Tensors &inputs,
                          const Tensors &outputs, const OpAttrs &) {
  const float *x = inputs[0].f32(), *table = inputs[1].f32();
  float *y = outputs[0].f32();
  int64_t s = inputs[0].dim(1), h = inputs[0].dim(2);
  int64_t rows = inputs[0].dim(0) * s;
  parallelFor(ctx.pool, rows, h, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *t = table + (r % s) * h;
      for (int64_t j = 0; j < h; ++j)
        y[r * h + j] = x[r * h + j] + t[j];
    }
  });
}

std::string verifyPositionEmbeddingGrad(const Descs &inputs,
                                        const Descs &outputs,
                                        const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(1, 1) && v.dtypes() && v.rank(in(0), 3) && v.rank(out(0), 2)) {
    const Shape &dy = v.shape(in(0)), &t = v.shape(out(0));
    v.dimEquals(out(0), 1, dy[2], "hidden size, as input #0");
    if (v.ok() && t[0] < dy[1])
      v.fail("output #0 must have at least " + std::to_string(dy[1]) +
             " rows (the sequence length of input #0), got " +
             std::to_string(t[0]));
  }
  return v.error();
}

void runPositionEmbeddingGrad(KernelContext &ctx, const Tensors &inputs,
                              const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32();
  float *dtable = outputs[0].f32();
  int64_t b = inputs[0].dim(0), s = inputs[0].dim(1), h = inputs[0].dim(2);
  int64_t p = outputs[0].dim(0);
  parallelFor(ctx.pool, p, b * h, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *dst = dtable + r * h;
      std::fill(dst, dst + h, 0.0f);
      if (r >= s)
        continue;
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < h; ++j)
          dst[j] += dy[(i * s + r) * h + j];
    }
  });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

bool checkLabels(Verifier &v, Operand logits, Operand labels) {
  if (!v.minRank(logits, 1))
    return false;
  const Shape &l = v.shape(logits);
  return v.hasShape(labels, Shape(l.begin(), l.end() - 1));
}

thread_local std::vector<float> rowScratch;

/// log(sum(exp(x - max))) + max over one row, the sum in double.
double logSumExp(const float *x, int64_t n) {
  float mx = maxFloats(x, n);
  if ((int64_t)rowScratch.size() < n)
    rowScratch.resize(n);
  float *e = rowScratch.data();
  for (int64_t j = 0; j < n; ++j)
    e[j] = x[j] - mx;
  expArray(e, e, n);
  return std::log(sumToDouble(e, n)) + mx;
}

std::string verifyCrossEntropy(const Descs &inputs, const Descs &outputs,
                               const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes({in(1)}) && checkLabels(v, in(0), in(1)) &&
      v.scalar(out(0));
  return v.error();
}

void runCrossEntropy(KernelContext &ctx, const Tensors &inputs,
                     const Tensors &outputs, const OpAttrs &) {
  const float *logits = inputs[0].f32();
  const int32_t *labels = inputs[1].i32();
  int64_t c = inputs[0].dim(-1), rows = inputs[1].numel();
  checkIds("softmax_cross_entropy", labels, rows, c);
  std::vector<double> rowLoss(rows);
  double *lossp = rowLoss.data();
  parallelFor(ctx.pool, rows, 10 * c, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = logits + r * c;
      lossp[r] = logSumExp(xr, c) - (double)xr[labels[r]];
    }
  });
  double total = 0;
  for (double l : rowLoss)
    total += l;
  outputs[0].f32()[0] = rows ? (float)(total / (double)rows) : 0.0f;
}

std::string verifyCrossEntropyGrad(const Descs &inputs, const Descs &outputs,
                                   const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(3, 1) && v.dtypes({in(1)}) && checkLabels(v, in(0), in(1)) &&
      v.scalar(in(2)) && v.sameShape(out(0), in(0));
  return v.error();
}

void runCrossEntropyGrad(KernelContext &ctx, const Tensors &inputs,
                         const Tensors &outputs, const OpAttrs &) {
  const float *logits = inputs[0].f32();
  const int32_t *labels = inputs[1].i32();
  float *dx = outputs[0].f32();
  int64_t c = inputs[0].dim(-1), rows = inputs[1].numel();
  checkIds("softmax_cross_entropy_grad", labels, rows, c);
  double factor = rows ? (double)inputs[2].f32()[0] / (double)rows : 0.0;
  parallelFor(ctx.pool, rows, 10 * c, [=](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float *xr = logits + r * c;
      float *dxr = dx + r * c;
      float lse = (float)logSumExp(xr, c);
      float f = (float)factor;
      for (int64_t j = 0; j < c; ++j)
        dxr[j] = xr[j] - lse;
      expArray(dxr, dxr, c);
      for (int64_t j = 0; j < c; ++j)
        dxr[j] *= f;
      dxr[labels[r]] -= f;
    }
  });
}

std::string verifyMse(const Descs &inputs, const Descs &outputs,
                      const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(2, 1) && v.dtypes() && v.sameShape(in(1), in(0)) && v.scalar(out(0));
  return v.error();
}

void runMse(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &) {
  const float *x = inputs[0].f32(), *t = inputs[1].f32();
  int64_t n = inputs[0].numel();
  // Fixed-size blocks summed in double, then the blocks in order: the same
  // bits for every thread count.
  constexpr int64_t kBlock = 4096;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(blocks);
  double *pp = partial.data();
  parallelFor(ctx.pool, blocks, 2 * kBlock, [=](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      double acc = 0;
      for (int64_t i = b * kBlock, e = std::min(n, i + kBlock); i < e; ++i) {
        double d = (double)x[i] - (double)t[i];
        acc += d * d;
      }
      pp[b] = acc;
    }
  });
  double total = 0;
  for (double p : partial)
    total += p;
  outputs[0].f32()[0] = n ? (float)(total / (double)n) : 0.0f;
}

std::string verifyMseGrad(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  v.counts(3, 1) && v.dtypes() && v.sameShape(in(1), in(0)) &&
      v.scalar(in(2)) && v.sameShape(out(0), in(0));
  return v.error();
}

void runMseGrad(KernelContext &ctx, const Tensors &inputs,
                const Tensors &outputs, const OpAttrs &) {
  const float *x = inputs[0].f32(), *t = inputs[1].f32();
  float *dx = outputs[0].f32();
  int64_t n = inputs[0].numel();
  float factor = n ? (float)(2.0 * inputs[2].f32()[0] / (double)n) : 0.0f;
  parallelFor(ctx.pool, n, 1, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dx[i] = (x[i] - t[i]) * factor;
  });
}

} // namespace

void appendNNKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::Softmax, verifySoftmax, runSoftmax});
  kernels.push_back({OpCode::SoftmaxGrad, verifySoftmaxGrad, runSoftmaxGrad});
  kernels.push_back({OpCode::LayerNorm, verifyLayerNorm, runLayerNorm});
  kernels.push_back(
      {OpCode::LayerNormGrad, verifyLayerNormGrad, runLayerNormGrad});
  kernels.push_back({OpCode::BatchNorm, verifyBatchNorm, runBatchNorm});
  kernels.push_back(
      {OpCode::BatchNormGrad, verifyBatchNormGrad, runBatchNormGrad});
  kernels.push_back({OpCode::Embedding, verifyEmbedding, runEmbedding});
  kernels.push_back(
      {OpCode::EmbeddingGrad, verifyEmbeddingGrad, runEmbeddingGrad});
  kernels.push_back({OpCode::PositionEmbedding, verifyPositionEmbedding,
                     runPositionEmbedding});
  kernels.push_back({OpCode::PositionEmbeddingGrad, verifyPositionEmbeddingGrad,
                     runPositionEmbeddingGrad});
  kernels.push_back(
      {OpCode::SoftmaxCrossEntropy, verifyCrossEntropy, runCrossEntropy});
  kernels.push_back({OpCode::SoftmaxCrossEntropyGrad, verifyCrossEntropyGrad,
                     runCrossEntropyGrad});
  kernels.push_back({OpCode::MseLoss, verifyMse, runMse});
  kernels.push_back({OpCode::MseLossGrad, verifyMseGrad, runMseGrad});
}

} // namespace strata::rt::detail
