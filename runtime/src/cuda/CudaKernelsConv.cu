//===- CudaKernelsConv.cu - Convolution and pooling kernels ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// conv2d and its gradients lower to GEMMs (detail::gemm, so cuBLAS or
// strataGemm; gemmBf16, cuBLAS on bf16 tensor cores, for a `bf16`
// convolution) over im2col matrices in CudaContext::scratch, as on the CPU:
// - conv2d: y[n] = W col[n], batched over as many images as scratch holds
//   (W broadcast, stride 0);
// - conv2d_grad_input: dcol[n] = W^T dy[n], then a gather col2im (one
//   thread per input cell adds its window cells in (i, j) order, as the
//   CPU);
// - conv2d_grad_filter: per-image products dy[n] col[n]^T into scratch,
//   then added in image order; with scratch for one image only, one GEMM
//   per image accumulating into dw (beta 1).
// A 1x1, stride-1, unpadded convolution uses the images themselves. When
// scratch holds less than one image's column matrix, each image is split
// into ranges of output columns (at least C KH KW floats of scratch). See
// cudaScratchBytes in CudaKernels.h for the sizes.
//
// Pooling: one thread per output (forward) or per input cell (gradients,
// a gather in the CPU's order), so nothing needs atomics.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <stdexcept>

namespace strata::rt::cuda::detail {
namespace {

/// Geometry of a 2-D window operation over NCHW.
struct Window {
  int64_t n, c, h, w; // input
  int64_t kh, kw;     // window
  int64_t sh, sw;     // strides
  int64_t ph, pw;     // padding
  int64_t oh, ow;     // output
  __host__ __device__ int64_t cols() const { return oh * ow; }
  __host__ __device__ int64_t rows() const { return c * kh * kw; }
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

/// Preferred im2col scratch: the whole batch, capped at 64 MiB unless one
/// image alone is more.
constexpr size_t kPreferredScratch = size_t(64) << 20;

//===----------------------------------------------------------------------===//
// im2col / col2im
//===----------------------------------------------------------------------===//

/// col[b][r][q] = x[b][c][oy sh - ph + i][ox sw - pw + j] (0 in the padding)
/// for images b in [0, images), r = (c kh + i) kw + j, output position
/// p = p0 + q = oy ow + ox, q in [0, width).
__global__ void im2colKernel(const float *__restrict__ x, Window g,
                             int64_t images, int64_t p0, int64_t width,
                             float *__restrict__ col) {
  int64_t k = g.rows();
  int64_t total = images * k * width;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t q = e % width, t = e / width;
    int64_t r = t % k, b = t / k;
    int64_t p = p0 + q;
    int64_t oy = p / g.ow, ox = p % g.ow;
    int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, j = r % g.kw;
    int64_t iy = oy * g.sh - g.ph + i, ix = ox * g.sw - g.pw + j;
    float v = 0.0f;
    if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
      v = x[((b * g.c + c) * g.h + iy) * g.w + ix];
    col[e] = v;
  }
}

void im2col(CudaContext &ctx, const float *x, const Window &g, int64_t images,
            int64_t p0, int64_t width, float *col) {
  int64_t total = images * g.rows() * width;
  if (total == 0)
    return;
  im2colKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(x, g, images, p0,
                                                            width, col);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// dx[b][c][iy][ix] (+)= sum over window cells (i, j), in that order, of the
/// dcol cell that read it, for output positions in [p0, p0 + width).
__global__ void col2imKernel(const float *__restrict__ dcol, Window g,
                             int64_t images, int64_t p0, int64_t width,
                             bool accumulate, float *__restrict__ dx) {
  int64_t k = g.rows();
  int64_t total = images * g.c * g.h * g.w;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ix = e % g.w, iy = e / g.w % g.h;
    int64_t c = e / (g.w * g.h) % g.c, b = e / (g.w * g.h * g.c);
    const float *src = dcol + b * k * width;
    float acc = 0.0f;
    for (int64_t i = 0; i < g.kh; ++i) {
      int64_t ty = iy + g.ph - i;
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh)
        continue;
      int64_t oy = ty / g.sh;
      for (int64_t j = 0; j < g.kw; ++j) {
        int64_t tx = ix + g.pw - j;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow)
          continue;
        int64_t q = oy * g.ow + tx / g.sw - p0;
        if (q < 0 || q >= width)
          continue;
        acc += src[((c * g.kh + i) * g.kw + j) * width + q];
      }
    }
    dx[e] = accumulate ? dx[e] + acc : acc;
  }
}

void col2im(CudaContext &ctx, const float *dcol, const Window &g,
            int64_t images, int64_t p0, int64_t width, bool accumulate,
            float *dx) {
  int64_t total = images * g.c * g.h * g.w;
  if (total == 0)
    return;
  col2imKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      dcol, g, images, p0, width, accumulate, dx);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// How an im2col-based kernel walks the batch with `floats` of scratch
/// available for column matrices of K x cols floats per image: `images`
/// whole images per pass, or (images == 1, width < cols) ranges of `width`
/// output columns of one image.
struct ColumnPlan {
  int64_t images = 1;
  int64_t width = 0;
};

ColumnPlan planColumns(const ScratchArena &arena, int64_t n, int64_t k,
                       int64_t cols, const char *op) {
  // Whole alignment units only, so that the buffer (rounded up to one) fits.
  size_t usable = arena.available() / kScratchAlign * kScratchAlign;
  int64_t floats = (int64_t)(usable / sizeof(float));
  ColumnPlan plan;
  if (k * cols == 0) {
    plan.images = std::max<int64_t>(n, 1);
    plan.width = std::max<int64_t>(cols, 1);
    return plan;
  }
  if (floats >= k * cols) {
    plan.images = std::max<int64_t>(1, std::min(n, floats / (k * cols)));
    plan.width = cols;
    return plan;
  }
  plan.width = floats / k;
  if (plan.width < 1)
    throw std::runtime_error(
        std::string(op) + ": needs at least " +
        std::to_string(alignUp(k * sizeof(float))) +
        " bytes of CUDA scratch for its im2col columns (see "
        "cudaScratchBytes), the context has " +
        std::to_string(arena.available()));
  return plan;
}

/// `floats` of scratch that planColumns promised.
float *takeColumns(ScratchArena &arena, int64_t floats) {
  float *p = arena.take<float>(floats);
  if (!p && floats > 0)
    throw std::logic_error("im2col scratch does not fit its plan");
  return p;
}

/// Bytes for `images` column matrices of `floats` each, capped as
/// cudaScratchBytes documents.
size_t columnScratch(int64_t n, int64_t floatsPerImage) {
  if (floatsPerImage == 0 || n == 0)
    return 0;
  size_t perImage = floatsPerImage * sizeof(float);
  int64_t images = std::max<int64_t>(
      1, std::min<int64_t>(n, (int64_t)(kPreferredScratch / perImage)));
  return alignUp(images * perImage);
}

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

size_t convScratch(const Descs &inputs, const Descs &, const OpAttrs &attrs) {
  const Shape &ws = inputs[1].shape;
  Window g = makeWindow(inputs[0].shape, ws[2], ws[3], attrs);
  return g.identity() ? 0 : columnScratch(g.n, g.rows() * g.cols());
}

void runConv(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &attrs) {
  // A bf16 convolution: cuBLAS on bf16-rounded operands, f32 sums.
  auto *product = attrs.bf16 ? &gemmBf16 : &gemm;
  const Shape &ws = inputs[1].shape();
  Window g = makeWindow(inputs[0].shape(), ws[2], ws[3], attrs);
  const float *x = inputs[0].f32(), *w = inputs[1].f32();
  float *y = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  if (g.n == 0 || f == 0 || cols == 0)
    return;
  if (g.identity()) {
    product(ctx, false, false, f, cols, k, 1.0f, w, k, 0, x, cols, xImage, 0.0f,
            y, cols, yImage, g.n);
    return;
  }
  ScratchArena arena(ctx);
  ColumnPlan plan = planColumns(arena, g.n, k, cols, "conv2d");
  float *col = takeColumns(arena, plan.images * k * plan.width);
  for (int64_t n0 = 0; n0 < g.n; n0 += plan.images) {
    int64_t images = std::min(plan.images, g.n - n0);
    for (int64_t p0 = 0; p0 < cols; p0 += plan.width) {
      int64_t width = std::min(plan.width, cols - p0);
      im2col(ctx, x + n0 * xImage, g, images, p0, width, col);
      product(ctx, false, false, f, width, k, 1.0f, w, k, 0, col, width,
              k * width, 0.0f, y + n0 * yImage + p0, cols, yImage, images);
    }
  }
}

//===----------------------------------------------------------------------===//
// conv2d_grad_input
//===----------------------------------------------------------------------===//

size_t convGradInputScratch(const Descs &inputs, const Descs &outputs,
                            const OpAttrs &attrs) {
  const Shape &ws = inputs[1].shape;
  Window g = makeWindow(outputs[0].shape, ws[2], ws[3], attrs);
  return g.identity() ? 0 : columnScratch(g.n, g.rows() * g.cols());
}

void runConvGradInput(CudaContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &attrs) {
  // A bf16 convolution: cuBLAS on bf16-rounded operands, f32 sums.
  auto *product = attrs.bf16 ? &gemmBf16 : &gemm;
  const Shape &ws = inputs[1].shape();
  Window g = makeWindow(outputs[0].shape(), ws[2], ws[3], attrs);
  const float *dy = inputs[0].f32(), *w = inputs[1].f32();
  float *dx = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  if (outputs[0].numel() == 0)
    return;
  if (g.identity()) {
    // dx[n] = W^T dy[n] (k == C, cols == H W).
    product(ctx, true, false, k, cols, f, 1.0f, w, k, 0, dy, cols, yImage, 0.0f,
            dx, cols, xImage, g.n);
    return;
  }
  ScratchArena arena(ctx);
  ColumnPlan plan = planColumns(arena, g.n, k, cols, "conv2d_grad_input");
  float *dcol = takeColumns(arena, plan.images * k * plan.width);
  for (int64_t n0 = 0; n0 < g.n; n0 += plan.images) {
    int64_t images = std::min(plan.images, g.n - n0);
    for (int64_t p0 = 0; p0 < cols; p0 += plan.width) {
      int64_t width = std::min(plan.width, cols - p0);
      product(ctx, true, false, k, width, f, 1.0f, w, k, 0,
              dy + n0 * yImage + p0, cols, yImage, 0.0f, dcol, width, k * width,
              images);
      col2im(ctx, dcol, g, images, p0, width, p0 > 0, dx + n0 * xImage);
    }
  }
}

//===----------------------------------------------------------------------===//
// conv2d_grad_filter
//===----------------------------------------------------------------------===//

/// dw[e] = (first ? 0 : dw[e]) + partial[0][e] + ... + partial[images-1][e],
/// in image order.
__global__ void addPartialsKernel(const float *__restrict__ partial,
                                  int64_t images, int64_t size, bool first,
                                  float *__restrict__ dw) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < size;
       e += (int64_t)gridDim.x * blockDim.x) {
    float acc = first ? partial[e] : dw[e] + partial[e];
    for (int64_t b = 1; b < images; ++b)
      acc += partial[b * size + e];
    dw[e] = acc;
  }
}

/// Images per pass of the batched filter gradient (each needs a column
/// matrix of `colFloats` and a partial product of `partialFloats`), or 1
/// when fewer than two fit in `bytes`.
int64_t filterImages(size_t bytes, int64_t n, int64_t colFloats,
                     int64_t partialFloats) {
  size_t perImage = (colFloats + partialFloats) * sizeof(float);
  int64_t images = std::min<int64_t>(n, (int64_t)(bytes / perImage));
  while (images > 1 && alignUp(images * colFloats * sizeof(float)) +
                               alignUp(images * partialFloats * sizeof(float)) >
                           bytes)
    --images;
  return std::max<int64_t>(images, 1);
}

size_t convGradFilterScratch(const Descs &inputs, const Descs &outputs,
                             const OpAttrs &attrs) {
  const Shape &ws = outputs[0].shape;
  Window g = makeWindow(inputs[1].shape, ws[2], ws[3], attrs);
  int64_t colFloats = g.identity() ? 0 : g.rows() * g.cols();
  int64_t partialFloats = ws[0] * g.rows();
  if (g.n == 0 || partialFloats == 0)
    return 0;
  size_t perImage = (colFloats + partialFloats) * sizeof(float);
  int64_t images = std::max<int64_t>(
      1, std::min<int64_t>(g.n, (int64_t)(kPreferredScratch / perImage)));
  if (images < 2)
    return alignUp(colFloats * sizeof(float));
  return alignUp(images * colFloats * sizeof(float)) +
         alignUp(images * partialFloats * sizeof(float));
}

void runConvGradFilter(CudaContext &ctx, const Tensors &inputs,
                       const Tensors &outputs, const OpAttrs &attrs) {
  // A bf16 convolution: cuBLAS on bf16-rounded operands, f32 sums.
  auto *product = attrs.bf16 ? &gemmBf16 : &gemm;
  const Shape &ws = outputs[0].shape();
  Window g = makeWindow(inputs[1].shape(), ws[2], ws[3], attrs);
  const float *dy = inputs[0].f32(), *x = inputs[1].f32();
  float *dw = outputs[0].f32();
  int64_t f = ws[0], k = g.rows(), cols = g.cols();
  int64_t xImage = g.c * g.h * g.w, yImage = f * cols;
  if (outputs[0].numel() == 0)
    return;
  if (g.n == 0 || cols == 0) {
    STRATA_CUDA_CHECK(
        cudaMemsetAsync(dw, 0, (size_t)outputs[0].desc.bytes(), ctx.stream));
    return;
  }
  bool identity = g.identity();
  int64_t colFloats = identity ? 0 : k * cols;
  ScratchArena arena(ctx);
  int64_t images = filterImages(arena.available(), g.n, colFloats, f * k);
  if (images >= 2) {
    // Per-image products side by side, then added in image order.
    float *col = identity ? nullptr : arena.take<float>(images * colFloats);
    float *partial = arena.take<float>(images * f * k);
    for (int64_t n0 = 0; n0 < g.n; n0 += images) {
      int64_t count = std::min(images, g.n - n0);
      const float *b = x + n0 * xImage;
      if (!identity) {
        im2col(ctx, x + n0 * xImage, g, count, 0, cols, col);
        b = col;
      }
      product(ctx, false, true, f, k, cols, 1.0f, dy + n0 * yImage, cols,
              yImage, b, cols, identity ? xImage : colFloats, 0.0f, partial, k,
              f * k, count);
      addPartialsKernel<<<gridFor(f * k), kThreads, 0, ctx.stream>>>(
          partial, count, f * k, n0 == 0, dw);
      STRATA_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  // One GEMM per image (or column range), accumulating into dw.
  if (identity) {
    for (int64_t n = 0; n < g.n; ++n)
      product(ctx, false, true, f, k, cols, 1.0f, dy + n * yImage, cols, 0,
              x + n * xImage, cols, 0, n == 0 ? 0.0f : 1.0f, dw, k, 0, 1);
    return;
  }
  ColumnPlan plan = planColumns(arena, 1, k, cols, "conv2d_grad_filter");
  float *col = takeColumns(arena, k * plan.width);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t p0 = 0; p0 < cols; p0 += plan.width) {
      int64_t width = std::min(plan.width, cols - p0);
      im2col(ctx, x + n * xImage, g, 1, p0, width, col);
      product(ctx, false, true, f, k, width, 1.0f, dy + n * yImage + p0, cols,
              0, col, width, 0, n == 0 && p0 == 0 ? 0.0f : 1.0f, dw, k, 0, 1);
    }
}

//===----------------------------------------------------------------------===//
// max_pool2d
//===----------------------------------------------------------------------===//

/// Index within the plane of the first maximum of output cell (oy, ox)'s
/// window in row-major order; padding never wins.
__device__ __forceinline__ int64_t argMax(const Window &g, const float *plane,
                                          int64_t oy, int64_t ox) {
  int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  int64_t ya = maxI64(y0, 0), yb = minI64(y0 + g.kh, g.h);
  int64_t xa = maxI64(x0, 0), xb = minI64(x0 + g.kw, g.w);
  int64_t best = ya * g.w + xa;
  float bestValue = plane[best];
  for (int64_t iy = ya; iy < yb; ++iy)
    for (int64_t ix = xa; ix < xb; ++ix) {
      float v = plane[iy * g.w + ix];
      if (v > bestValue) {
        bestValue = v;
        best = iy * g.w + ix;
      }
    }
  return best;
}

__global__ void maxPoolKernel(const float *__restrict__ x, Window g,
                              float *__restrict__ y, int64_t total) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ox = e % g.ow, oy = e / g.ow % g.oh, p = e / (g.ow * g.oh);
    const float *plane = x + p * g.h * g.w;
    y[e] = plane[argMax(g, plane, oy, ox)];
  }
}

void runMaxPool(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
                const OpAttrs &attrs) {
  const std::vector<int64_t> &kernel = attrs.kernel;
  Window g = makeWindow(inputs[0].shape(), kernel[0], kernel[1], attrs);
  int64_t total = outputs[0].numel();
  if (total == 0)
    return;
  maxPoolKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), g, outputs[0].f32(), total);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// dx cell = sum, in row-major order of the output cells whose window holds
/// it, of dy over those whose first maximum it is (the CPU's scatter order).
__global__ void maxPoolGradKernel(const float *__restrict__ dy,
                                  const float *__restrict__ x, Window g,
                                  float *__restrict__ dx, int64_t total) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ix = e % g.w, iy = e / g.w % g.h, p = e / (g.w * g.h);
    const float *plane = x + p * g.h * g.w;
    const float *d = dy + p * g.oh * g.ow;
    int64_t cell = iy * g.w + ix;
    // Output rows oy with oy sh - ph <= iy <= oy sh - ph + kh - 1.
    int64_t lowY = iy + g.ph - g.kh + 1, lowX = ix + g.pw - g.kw + 1;
    int64_t oyA = lowY <= 0 ? 0 : (lowY + g.sh - 1) / g.sh;
    int64_t oyB = minI64(g.oh - 1, (iy + g.ph) / g.sh);
    int64_t oxA = lowX <= 0 ? 0 : (lowX + g.sw - 1) / g.sw;
    int64_t oxB = minI64(g.ow - 1, (ix + g.pw) / g.sw);
    float acc = 0.0f;
    for (int64_t oy = oyA; oy <= oyB; ++oy)
      for (int64_t ox = oxA; ox <= oxB; ++ox)
        if (argMax(g, plane, oy, ox) == cell)
          acc += d[oy * g.ow + ox];
    dx[e] = acc;
  }
}

void runMaxPoolGrad(CudaContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  const std::vector<int64_t> &kernel = attrs.kernel;
  Window g = makeWindow(inputs[1].shape(), kernel[0], kernel[1], attrs);
  int64_t total = outputs[0].numel();
  if (total == 0)
    return;
  maxPoolGradKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), g, outputs[0].f32(), total);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// global_avg_pool
//===----------------------------------------------------------------------===//

/// y[p] = mean of plane p; a warp (or block) per plane.
template <int TPR>
__global__ void globalAvgPoolKernel(const float *__restrict__ x,
                                    float *__restrict__ y, int64_t planes,
                                    int64_t hw) {
  constexpr int kPerBlock = kThreads / TPR;
  const int lane = threadIdx.x % TPR;
  for (int64_t p = blockIdx.x * (int64_t)kPerBlock + threadIdx.x / TPR;
       p < planes; p += (int64_t)gridDim.x * kPerBlock) {
    const float *xp = x + p * hw;
    float sum = 0.0f;
    for (int64_t i = lane; i < hw; i += TPR)
      sum += xp[i];
    sum = groupSum<TPR>(sum);
    if (lane == 0)
      y[p] = hw ? sum / (float)hw : 0.0f;
  }
}

void runGlobalAvgPool(CudaContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  int64_t planes = outputs[0].numel();
  int64_t hw = inputs[0].dim(2) * inputs[0].dim(3);
  if (planes == 0)
    return;
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  if (hw <= kWarpRowLimit) {
    unsigned blocks =
        (unsigned)std::min<int64_t>(ceilDiv(planes, kThreads / 32), kMaxBlocks);
    globalAvgPoolKernel<32>
        <<<blocks, kThreads, 0, ctx.stream>>>(x, y, planes, hw);
  } else {
    unsigned blocks = (unsigned)std::min<int64_t>(planes, kMaxBlocks);
    globalAvgPoolKernel<kThreads>
        <<<blocks, kThreads, 0, ctx.stream>>>(x, y, planes, hw);
  }
  STRATA_CUDA_CHECK_LAUNCH();
}

__global__ void globalAvgPoolGradKernel(const float *__restrict__ dy,
                                        float *__restrict__ dx, int64_t total,
                                        int64_t hw) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x)
    dx[e] = dy[e / hw] / (float)hw;
}

void runGlobalAvgPoolGrad(CudaContext &ctx, const Tensors &inputs,
                          const Tensors &outputs, const OpAttrs &) {
  int64_t total = outputs[0].numel();
  int64_t hw = outputs[0].dim(2) * outputs[0].dim(3);
  if (total == 0)
    return;
  globalAvgPoolGradKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), outputs[0].f32(), total, hw);
  STRATA_CUDA_CHECK_LAUNCH();
}

} // namespace

void appendConvCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::Conv2d, runConv, convScratch});
  kernels.push_back(
      {OpCode::Conv2dGradInput, runConvGradInput, convGradInputScratch});
  kernels.push_back(
      {OpCode::Conv2dGradFilter, runConvGradFilter, convGradFilterScratch});
  kernels.push_back({OpCode::MaxPool2d, runMaxPool});
  kernels.push_back({OpCode::MaxPool2dGrad, runMaxPoolGrad});
  kernels.push_back({OpCode::GlobalAvgPool, runGlobalAvgPool});
  kernels.push_back({OpCode::GlobalAvgPoolGrad, runGlobalAvgPoolGrad});
}

} // namespace strata::rt::cuda::detail
