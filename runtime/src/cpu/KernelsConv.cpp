//===- KernelsConv.cpp - Convolution and pooling kernels ------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// conv2d and its gradients lower to GEMMs over an im2col matrix per image
// (a 1x1, stride-1, unpadded convolution uses the image itself). Batches are
// split across threads image by image when they divide well, else each
// image's GEMM is parallel; GEMMs are bit-identical however they are split
// and col2im accumulates every input cell in a fixed order, so the results
// do not depend on the thread count. The filter gradient sums images in
// order, one GEMM each. A `bf16` convolution and its gradients run the
// bf16 GEMM (operands rounded to bf16 as they are packed, f32 sums) on the
// same f32 im2col matrices.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"
#include "GemmInternal.h"
#include "KernelsInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace strata::rt::detail {
namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

/// Geometry of a 2-D window operation over NCHW.
struct Window {
  int64_t n, c, h, w; // input
  int64_t kh, kw;     // window
  int64_t sh, sw;     // strides
  int64_t ph, pw;     // padding
  int64_t oh, ow;     // output
  int64_t cols() const { return oh * ow; }
  int64_t rows() const { return c * kh * kw; }
  bool identity() const {
    return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
  }
};

Window makeWindow(const Shape &x, int64_t kh, int64_t kw,
                  const OpAttrs &attrs) {
  const std::vector<int64_t> &s = attrs.strides;
  const std::vector<int64_t> &p = attrs.padding;
  Window g{x[0], x[1], x[2], x[3], kh, kw, s[0], s[1], p[0], p[1], 0, 0};
  g.oh = (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  return g;
}

/// Checks strides/padding and that a kh x kw window fits the padded input
/// `x`; returns the output spatial size.
bool checkWindow(Verifier &v, Operand x, int64_t kh, int64_t kw,
                 std::vector<int64_t> &strides, std::vector<int64_t> &padding,
                 int64_t &oh, int64_t &ow) {
  if (!v.pair("strides", 1, strides) || !v.pair("padding", 0, padding))
    return false;
  const Shape &s = v.shape(x);
  int64_t h = s[2] + 2 * padding[0], w = s[3] + 2 * padding[1];
  if (kh > h || kw > w)
    return v.fail("window " + std::to_string(kh) + "x" + std::to_string(kw) +
                  " is larger than the padded " + x.name() + " (" +
                  std::to_string(h) + "x" + std::to_string(w) + ")");
  oh = (h - kh) / strides[0] + 1;
  ow = (w - kw) / strides[1] + 1;
  return true;
}

/// Chooses between whole images per thread and a parallel GEMM per image.
bool splitImages(ThreadPool &pool, int64_t images) {
  int threads = pool.size();
  return threads > 1 && (images >= 4 * threads || images % threads == 0);
}

/// The output columns [oxa, oxb) whose window column j lands inside the
/// input: 0 <= ox sw - pw + j < w.
inline void validColumns(const Window &g, int64_t j, int64_t &oxa,
                         int64_t &oxb) {
  int64_t first = g.pw - j; // ox sw >= first
  oxa = first <= 0 ? 0 : (first + g.sw - 1) / g.sw;
  int64_t last = g.w - 1 + g.pw - j; // ox sw <= last
  oxb = last < 0 ? 0 : std::min(g.ow, last / g.sw + 1);
  oxa = std::min(oxa, oxb);
}

/// col[(c kh + i) kw + j][oy ow + ox] = x[c][oy sh - ph + i][ox sw - pw + j].
void im2col(const Window &g, const float *x, float *col, int64_t rowBegin,
            int64_t rowEnd) {
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, j = r % g.kw;
    const float *plane = x + c * g.h * g.w;
    float *dst = col + r * g.cols();
    for (int64_t oy = 0; oy < g.oh; ++oy) {
      int64_t iy = oy * g.sh - g.ph + i;
      float *d = dst + oy * g.ow;
      if (iy < 0 || iy >= g.h) {
        std::fill(d, d + g.ow, 0.0f);
        continue;
      }
      int64_t oxa, oxb;
      validColumns(g, j, oxa, oxb);
      const float *src = plane + iy * g.w + (oxa * g.sw - g.pw + j);
      std::fill(d, d + oxa, 0.0f);
      if (g.sw == 1)
        std::memcpy(d + oxa, src, (oxb - oxa) * sizeof(float));
      else
        for (int64_t ox = oxa; ox < oxb; ++ox)
          d[ox] = src[(ox - oxa) * g.sw];
      std::fill(d + oxb, d + g.ow, 0.0f);
    }
  }
}

/// dx[c] = sum of the dcol cells that read it, for channels [cBegin, cEnd);
/// each cell accumulates in (i, j, oy, ox) order.
void col2im(const Window &g, const float *dcol, float *dx, int64_t cBegin,
            int64_t cEnd) {
  for (int64_t c = cBegin; c < cEnd; ++c) {
    float *plane = dx + c * g.h * g.w;
    std::fill(plane, plane + g.h * g.w, 0.0f);
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        const float *src = dcol + ((c * g.kh + i) * g.kw + j) * g.cols();
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          int64_t iy = oy * g.sh - g.ph + i;
          if (iy < 0 || iy >= g.h)
            continue;
          int64_t oxa, oxb;
          validColumns(g, j, oxa, oxb);
          float *d = plane + iy * g.w + (oxa * g.sw - g.pw + j);
          const float *s = src + oy * g.ow;
          for (int64_t ox = oxa; ox < oxb; ++ox)
            d[(ox - oxa) * g.sw] += s[ox];
        }
      }
    }
  }
}

/// C = op(A) op(B) + beta C for one image's GEMM on `pool` (nullptr: the
/// calling thread): the f32 GEMM with the context's tiling, or for a `bf16`
/// convolution the bf16 GEMM.
void convGemm(const KernelContext &ctx, ThreadPool *pool, bool bf16,
              bool transA, bool transB, int64_t m, int64_t n, int64_t k,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              float beta, float *c, int64_t ldc) {
  if (bf16) {
    gemmBf16WithIsa(defaultBf16Isa(), pool, transA, transB, m, n, k, 1.0f,
                    Bf16Operand::f32(a, lda), Bf16Operand::f32(b, ldb), beta, c,
                    ldc);
    return;
  }
  gemmWithIsa(defaultGemmIsa(), pool, ctx.gemm, transA, transB, m, n, k, 1.0f,
              a, lda, b, ldb, beta, c, ldc);
}

thread_local std::vector<float> colScratch;

float *scratch(int64_t floats) {
  if ((int64_t)colScratch.size() < floats)
    colScratch.resize(floats);
  return colScratch.data();
}

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

std::string verifyConv(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  std::vector<int64_t> strides, padding;
  int64_t oh, ow;
  if (v.counts(2, 1) && v.dtypes() && v.rank(in(0), 4) && v.rank(in(1), 4) &&
      v.dimEquals(in(1), 1, v.shape(in(0))[1], "channels, as input #0")) {
    const Shape &x = v.shape(in(0)), &w = v.shape(in(1));
    if (checkWindow(v, in(0), w[2], w[3], strides, padding, oh, ow))
      v.hasShape(out(0), {x[0], w[0], oh, ow});
  }
  return v.error();
}

void runConv(KernelContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &attrs) {
  const Shape &ws = inputs[1].shape();
  Window g = makeWindow(inputs[0].shape(), ws[2], ws[3], attrs);
  const float *x = inputs[0].f32(), *w = inputs[1].f32();
  float *y = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  if (splitImages(ctx.pool, g.n)) {
    ctx.pool.parallelFor(g.n, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        const float *col = x + n * xImage;
        if (!g.identity()) {
          float *buffer = scratch(k * cols);
          im2col(g, x + n * xImage, buffer, 0, k);
          col = buffer;
        }
        convGemm(ctx, nullptr, attrs.bf16, false, false, f, cols, k, w, k, col,
                 cols, 0.0f, y + n * yImage, cols);
      }
    });
    return;
  }
  std::vector<float> buffer(g.identity() ? 0 : k * cols);
  for (int64_t n = 0; n < g.n; ++n) {
    const float *col = x + n * xImage;
    if (!g.identity()) {
      parallelFor(ctx.pool, k, cols, [&](int64_t begin, int64_t end) {
        im2col(g, x + n * xImage, buffer.data(), begin, end);
      });
      col = buffer.data();
    }
    convGemm(ctx, &ctx.pool, attrs.bf16, false, false, f, cols, k, w, k, col,
             cols, 0.0f, y + n * yImage, cols);
  }
}

std::string verifyConvGradInput(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  std::vector<int64_t> strides, padding;
  int64_t oh, ow;
  if (v.counts(2, 1) && v.dtypes() && v.rank(in(0), 4) && v.rank(in(1), 4) &&
      v.rank(out(0), 4)) {
    const Shape &dy = v.shape(in(0)), &w = v.shape(in(1)),
                &dx = v.shape(out(0));
    v.dimEquals(out(0), 0, dy[0], "batch, as input #0") &&
        v.dimEquals(out(0), 1, w[1], "channels, as input #1") &&
        checkWindow(v, out(0), w[2], w[3], strides, padding, oh, ow) &&
        v.hasShape(in(0), {dx[0], w[0], oh, ow});
  }
  return v.error();
}

void runConvGradInput(KernelContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &attrs) {
  const Shape &ws = inputs[1].shape();
  Window g = makeWindow(outputs[0].shape(), ws[2], ws[3], attrs);
  const float *dy = inputs[0].f32(), *w = inputs[1].f32();
  float *dx = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  // dcol = w^T dy[n], then col2im.
  if (splitImages(ctx.pool, g.n)) {
    ctx.pool.parallelFor(g.n, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        float *dcol = g.identity() ? dx + n * xImage : scratch(k * cols);
        convGemm(ctx, nullptr, attrs.bf16, true, false, k, cols, f, w, k,
                 dy + n * yImage, cols, 0.0f, dcol, cols);
        if (!g.identity())
          col2im(g, dcol, dx + n * xImage, 0, g.c);
      }
    });
    return;
  }
  std::vector<float> buffer(g.identity() ? 0 : k * cols);
  for (int64_t n = 0; n < g.n; ++n) {
    float *dcol = g.identity() ? dx + n * xImage : buffer.data();
    convGemm(ctx, &ctx.pool, attrs.bf16, true, false, k, cols, f, w, k,
             dy + n * yImage, cols, 0.0f, dcol, cols);
    if (!g.identity())
      parallelFor(ctx.pool, g.c, g.kh * g.kw * cols,
                  [&](int64_t begin, int64_t end) {
                    col2im(g, dcol, dx + n * xImage, begin, end);
                  });
  }
}

std::string verifyConvGradFilter(const Descs &inputs, const Descs &outputs,
                                 const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  std::vector<int64_t> strides, padding;
  int64_t oh, ow;
  if (v.counts(2, 1) && v.dtypes() && v.rank(in(0), 4) && v.rank(in(1), 4) &&
      v.rank(out(0), 4)) {
    const Shape &x = v.shape(in(1)), &dw = v.shape(out(0));
    v.dimEquals(out(0), 1, x[1], "channels, as input #1") &&
        checkWindow(v, in(1), dw[2], dw[3], strides, padding, oh, ow) &&
        v.hasShape(in(0), {x[0], dw[0], oh, ow});
  }
  return v.error();
}

void runConvGradFilter(KernelContext &ctx, const Tensors &inputs,
                       const Tensors &outputs, const OpAttrs &attrs) {
  const Shape &ws = outputs[0].shape();
  Window g = makeWindow(inputs[1].shape(), ws[2], ws[3], attrs);
  const float *dy = inputs[0].f32(), *x = inputs[1].f32();
  float *dw = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  if (g.n == 0) {
    std::fill(dw, dw + outputs[0].numel(), 0.0f);
    return;
  }
  // dw = sum over images, in order, of dy[n] col[n]^T.
  std::vector<float> buffer(g.identity() ? 0 : k * cols);
  for (int64_t n = 0; n < g.n; ++n) {
    const float *col = x + n * xImage;
    if (!g.identity()) {
      parallelFor(ctx.pool, k, cols, [&](int64_t begin, int64_t end) {
        im2col(g, x + n * xImage, buffer.data(), begin, end);
      });
      col = buffer.data();
    }
    convGemm(ctx, &ctx.pool, attrs.bf16, false, true, f, k, cols,
             dy + n * yImage, cols, col, cols, n == 0 ? 0.0f : 1.0f, dw, k);
  }
}

//===----------------------------------------------------------------------===//
// max_pool2d
//===----------------------------------------------------------------------===//

bool checkPool(Verifier &v, const Attrs &attrs, Operand x, int64_t &oh,
               int64_t &ow) {
  std::vector<int64_t> kernel, strides, padding;
  if (!v.pair("kernel", 1, kernel) ||
      !checkWindow(v, x, kernel[0], kernel[1], strides, padding, oh, ow))
    return false;
  if (padding[0] >= kernel[0] || padding[1] >= kernel[1])
    return v.fail("attribute 'padding' must be smaller than 'kernel', got " +
                  formatShape(padding) + " and " + formatShape(kernel));
  return true;
}

std::string verifyMaxPool(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  int64_t oh, ow;
  if (v.counts(1, 1) && v.dtypes() && v.rank(in(0), 4) &&
      checkPool(v, attrs, in(0), oh, ow)) {
    const Shape &x = v.shape(in(0));
    v.hasShape(out(0), {x[0], x[1], oh, ow});
  }
  return v.error();
}

/// Index within the plane of the first maximum of output cell (oy, ox)'s
/// window in row-major order; padding never wins (padding < kernel, so
/// every window holds a real cell).
inline int64_t argMax(const Window &g, const float *plane, int64_t oy,
                      int64_t ox) {
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  int64_t ya = std::max<int64_t>(y0, 0), yb = std::min(y0 + g.kh, g.h);
  int64_t xa = std::max<int64_t>(x0, 0), xb = std::min(x0 + g.kw, g.w);
  int64_t best = ya * g.w + xa;
  float bestValue = plane[best];
  for (int64_t iy = ya; iy < yb; ++iy)
    for (int64_t ix = xa; ix < xb; ++ix)
      if (plane[iy * g.w + ix] > bestValue) {
        bestValue = plane[iy * g.w + ix];
        best = iy * g.w + ix;
      }
  return best;
}

void runMaxPool(KernelContext &ctx, const Tensors &inputs,
                const Tensors &outputs, const OpAttrs &attrs) {
  const std::vector<int64_t> &kernel = attrs.kernel;
  Window g = makeWindow(inputs[0].shape(), kernel[0], kernel[1], attrs);
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  parallelFor(ctx.pool, g.n * g.c, g.cols() * g.kh * g.kw,
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const float *plane = x + p * g.h * g.w;
                  float *out = y + p * g.cols();
                  for (int64_t oy = 0; oy < g.oh; ++oy)
                    for (int64_t ox = 0; ox < g.ow; ++ox)
                      out[oy * g.ow + ox] = plane[argMax(g, plane, oy, ox)];
                }
              });
}

std::string verifyMaxPoolGrad(const Descs &inputs, const Descs &outputs,
                              const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  int64_t oh, ow;
  if (v.counts(2, 1) && v.dtypes() && v.rank(in(1), 4) &&
      checkPool(v, attrs, in(1), oh, ow)) {
    const Shape &x = v.shape(in(1));
    v.hasShape(in(0), {x[0], x[1], oh, ow}) && v.sameShape(out(0), in(1));
  }
  return v.error();
}

void runMaxPoolGrad(KernelContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  const std::vector<int64_t> &kernel = attrs.kernel;
  Window g = makeWindow(inputs[1].shape(), kernel[0], kernel[1], attrs);
  const float *dy = inputs[0].f32(), *x = inputs[1].f32();
  float *dx = outputs[0].f32();
  parallelFor(ctx.pool, g.n * g.c, g.cols() * g.kh * g.kw,
              [&](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p) {
                  const float *plane = x + p * g.h * g.w;
                  const float *d = dy + p * g.cols();
                  float *out = dx + p * g.h * g.w;
                  std::fill(out, out + g.h * g.w, 0.0f);
                  for (int64_t oy = 0; oy < g.oh; ++oy)
                    for (int64_t ox = 0; ox < g.ow; ++ox)
                      out[argMax(g, plane, oy, ox)] += d[oy * g.ow + ox];
                }
              });
}

//===----------------------------------------------------------------------===//
// global_avg_pool
//===----------------------------------------------------------------------===//

std::string verifyGlobalAvgPool(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(1, 1) && v.dtypes() && v.rank(in(0), 4)) {
    const Shape &x = v.shape(in(0));
    v.hasShape(out(0), {x[0], x[1]});
  }
  return v.error();
}

void runGlobalAvgPool(KernelContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  int64_t hw = inputs[0].dim(2) * inputs[0].dim(3);
  parallelFor(ctx.pool, outputs[0].numel(), hw,
              [=](int64_t begin, int64_t end) {
                for (int64_t p = begin; p < end; ++p)
                  y[p] = hw ? sumFloats(x + p * hw, hw) / (float)hw : 0.0f;
              });
}

std::string verifyGlobalAvgPoolGrad(const Descs &inputs, const Descs &outputs,
                                    const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  if (v.counts(1, 1) && v.dtypes() && v.rank(in(0), 2) && v.rank(out(0), 4)) {
    const Shape &dx = v.shape(out(0));
    v.hasShape(in(0), {dx[0], dx[1]});
  }
  return v.error();
}

void runGlobalAvgPoolGrad(KernelContext &ctx, const Tensors &inputs,
                          const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32();
  float *dx = outputs[0].f32();
  int64_t hw = outputs[0].dim(2) * outputs[0].dim(3);
  parallelFor(ctx.pool, inputs[0].numel(), hw, [=](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      std::fill(dx + p * hw, dx + (p + 1) * hw, dy[p] / (float)hw);
  });
}

} // namespace

void appendConvKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::Conv2d, verifyConv, runConv});
  kernels.push_back(
      {OpCode::Conv2dGradInput, verifyConvGradInput, runConvGradInput});
  kernels.push_back(
      {OpCode::Conv2dGradFilter, verifyConvGradFilter, runConvGradFilter});
  kernels.push_back({OpCode::MaxPool2d, verifyMaxPool, runMaxPool});
  kernels.push_back({OpCode::MaxPool2dGrad, verifyMaxPoolGrad, runMaxPoolGrad});
  kernels.push_back(
      {OpCode::GlobalAvgPool, verifyGlobalAvgPool, runGlobalAvgPool});
  kernels.push_back({OpCode::GlobalAvgPoolGrad, verifyGlobalAvgPoolGrad,
                     runGlobalAvgPoolGrad});
}

} // namespace strata::rt::detail
