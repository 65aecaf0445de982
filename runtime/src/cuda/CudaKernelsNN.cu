//===- CudaKernelsNN.cu - softmax, layer/batch norm, embeddings, losses --===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Row-wise kernels (softmax, layer_norm, the cross-entropy gradient) give
// each row to a warp when it has at most kWarpRowLimit elements, else to a
// block, and reduce with the fixed-order warp/block sums of
// CudaKernelsInternal.h. Reductions across rows never use atomics:
// - dgamma/dbeta: per-row statistics in scratch, then two-pass column sums;
// - batch_norm(_grad): one block per channel, block sums in double;
// - losses: per-block partial sums in double over fixed ranges (the block
//   count depends only on the shape), then one block adds them in order;
// - embedding_grad: a stable radix sort of the ids (CUB) groups equal ids in
//   index order and one thread per column adds each group's rows in that
//   order, exactly as the CPU kernel does; without scratch, one block per
//   table row scans the ids with warp ballots, in the same order (same
//   bits);
// - position_embedding_grad: one thread per table element adds the batch in
//   order.
// Out-of-range ids and labels (rejected on the host before launch) never
// read out of bounds: they give NaN rows and losses, or are skipped by the
// gradients.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <stdexcept>

namespace strata::rt::cuda::detail {
namespace {

constexpr float kNaN = __builtin_nanf("");

/// Row r of the rows kernels: each group of TPR threads owns one row at a
/// time; a block holds kThreads / TPR groups.
template <int TPR> struct RowLoop {
  static constexpr int kRowsPerBlock = kThreads / TPR;
  __device__ static int lane() { return threadIdx.x % TPR; }
  __device__ static int64_t first() {
    return blockIdx.x * (int64_t)kRowsPerBlock + threadIdx.x / TPR;
  }
  __device__ static int64_t step() {
    return (int64_t)gridDim.x * kRowsPerBlock;
  }
  static unsigned blocks(int64_t rows) {
    return (unsigned)std::max<int64_t>(
        1, std::min<int64_t>(ceilDiv(rows, kRowsPerBlock), kMaxBlocks));
  }
};

/// Launches kernel<32> or kernel<kThreads> over `rows` rows of `len`.
#define STRATA_LAUNCH_ROWS(kernel, rows, len, stream, ...)                     \
  do {                                                                         \
    if ((len) <= kWarpRowLimit)                                                \
      kernel<32>                                                               \
          <<<RowLoop<32>::blocks(rows), kThreads, 0, stream>>>(__VA_ARGS__);   \
    else                                                                       \
      kernel<kThreads>                                                         \
          <<<RowLoop<kThreads>::blocks(rows), kThreads, 0, stream>>>(          \
              __VA_ARGS__);                                                    \
    STRATA_CUDA_CHECK_LAUNCH();                                                \
  } while (0)

//===----------------------------------------------------------------------===//
// softmax
//===----------------------------------------------------------------------===//

/// softmax(scale x) over rows of `len`; causal rows r keep columns
/// [0, r % len].
template <int TPR>
__global__ void softmaxKernel(const float *__restrict__ x,
                              float *__restrict__ y, int64_t rows, int64_t len,
                              float scale, bool causal) {
  using L = RowLoop<TPR>;
  const int lane = L::lane();
  for (int64_t r = L::first(); r < rows; r += L::step()) {
    const float *xr = x + r * len;
    float *yr = y + r * len;
    int64_t valid = causal ? r % len + 1 : len;
    float mx = -INFINITY;
    for (int64_t j = lane; j < valid; j += TPR)
      mx = fmaxf(mx, scale * xr[j]);
    mx = groupMax<TPR>(mx);
    float sum = 0.0f;
    for (int64_t j = lane; j < valid; j += TPR)
      sum += expf(scale * xr[j] - mx);
    float inv = 1.0f / groupSum<TPR>(sum);
    for (int64_t j = lane; j < len; j += TPR)
      yr[j] = j < valid ? expf(scale * xr[j] - mx) * inv : 0.0f;
  }
}

void runSoftmax(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
                const OpAttrs &attrs) {
  int64_t len = inputs[0].dim(-1);
  if (len == 0 || inputs[0].numel() == 0)
    return;
  int64_t rows = inputs[0].numel() / len;
  float scale = (float)attrs.scale;
  bool causal = attrs.causal;
  STRATA_LAUNCH_ROWS(softmaxKernel, rows, len, ctx.stream, inputs[0].f32(),
                     outputs[0].f32(), rows, len, scale, causal);
}

/// dx = scale y (dy - sum_j dy_j y_j) per row.
template <int TPR>
__global__ void softmaxGradKernel(const float *__restrict__ dy,
                                  const float *__restrict__ y,
                                  float *__restrict__ dx, int64_t rows,
                                  int64_t len, float scale) {
  using L = RowLoop<TPR>;
  const int lane = L::lane();
  for (int64_t r = L::first(); r < rows; r += L::step()) {
    const float *dyr = dy + r * len, *yr = y + r * len;
    float *dxr = dx + r * len;
    float dot = 0.0f;
    for (int64_t j = lane; j < len; j += TPR)
      dot += dyr[j] * yr[j];
    dot = groupSum<TPR>(dot);
    for (int64_t j = lane; j < len; j += TPR)
      dxr[j] = scale * yr[j] * (dyr[j] - dot);
  }
}

void runSoftmaxGrad(CudaContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  int64_t len = inputs[0].dim(-1);
  if (len == 0 || inputs[0].numel() == 0)
    return;
  int64_t rows = inputs[0].numel() / len;
  float scale = (float)attrs.scale;
  STRATA_LAUNCH_ROWS(softmaxGradKernel, rows, len, ctx.stream, inputs[0].f32(),
                     inputs[1].f32(), outputs[0].f32(), rows, len, scale);
}

//===----------------------------------------------------------------------===//
// layer_norm
//===----------------------------------------------------------------------===//

/// Mean and 1 / sqrt(biased variance + epsilon) of one row (two passes).
template <int TPR>
__device__ __forceinline__ void rowStats(const float *xr, int64_t h,
                                         float epsilon, int lane, float &mean,
                                         float &rstd) {
  float sum = 0.0f;
  for (int64_t j = lane; j < h; j += TPR)
    sum += xr[j];
  mean = groupSum<TPR>(sum) / (float)h;
  float sq = 0.0f;
  for (int64_t j = lane; j < h; j += TPR) {
    float d = xr[j] - mean;
    sq += d * d;
  }
  float var = groupSum<TPR>(sq) / (float)h;
  rstd = 1.0f / sqrtf(var + epsilon);
}

template <int TPR>
__global__ void
layerNormKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                const float *__restrict__ beta, float *__restrict__ y,
                int64_t rows, int64_t h, float epsilon) {
  using L = RowLoop<TPR>;
  const int lane = L::lane();
  for (int64_t r = L::first(); r < rows; r += L::step()) {
    const float *xr = x + r * h;
    float *yr = y + r * h;
    float mean, rstd;
    rowStats<TPR>(xr, h, epsilon, lane, mean, rstd);
    for (int64_t j = lane; j < h; j += TPR)
      yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
  }
}

void runLayerNorm(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  int64_t h = inputs[0].dim(-1);
  if (h == 0 || inputs[0].numel() == 0)
    return;
  int64_t rows = inputs[0].numel() / h;
  float epsilon = (float)attrs.epsilon;
  STRATA_LAUNCH_ROWS(layerNormKernel, rows, h, ctx.stream, inputs[0].f32(),
                     inputs[1].f32(), inputs[2].f32(), outputs[0].f32(), rows,
                     h, epsilon);
}

/// dx per row (with xhat = (x - mean) rstd and g = dy gamma,
/// dx = rstd (g - mean(g) - xhat mean(g xhat))); saves mean and rstd.
template <int TPR>
__global__ void
layerNormGradKernel(const float *__restrict__ dy, const float *__restrict__ x,
                    const float *__restrict__ gamma, float *__restrict__ dx,
                    float *__restrict__ means, float *__restrict__ rstds,
                    int64_t rows, int64_t h, float epsilon) {
  using L = RowLoop<TPR>;
  const int lane = L::lane();
  for (int64_t r = L::first(); r < rows; r += L::step()) {
    const float *xr = x + r * h, *dyr = dy + r * h;
    float *dxr = dx + r * h;
    float mean, rstd;
    rowStats<TPR>(xr, h, epsilon, lane, mean, rstd);
    float sumG = 0.0f, sumGX = 0.0f;
    for (int64_t j = lane; j < h; j += TPR) {
      float g = dyr[j] * gamma[j];
      sumG += g;
      sumGX += g * ((xr[j] - mean) * rstd);
    }
    float meanG = groupSum<TPR>(sumG) / (float)h;
    float meanGX = groupSum<TPR>(sumGX) / (float)h;
    for (int64_t j = lane; j < h; j += TPR) {
      float xhat = (xr[j] - mean) * rstd;
      dxr[j] = rstd * (dyr[j] * gamma[j] - meanG - xhat * meanGX);
    }
    if (lane == 0) {
      means[r] = mean;
      rstds[r] = rstd;
    }
  }
}

/// Pass 1 of dgamma and dbeta, as columnSumKernel (CudaKernelsDense.cu).
__global__ void layerNormColumnsKernel(
    const float *__restrict__ dy, const float *__restrict__ x,
    const float *__restrict__ means, const float *__restrict__ rstds,
    int64_t rows, int64_t h, int64_t rowsPerChunk, float *__restrict__ dgamma,
    float *__restrict__ dbeta, int64_t chunkStride) {
  __shared__ float partialG[8][33], partialB[8][33];
  int64_t j = blockIdx.x * 32 + threadIdx.x;
  int64_t r0 = blockIdx.y * rowsPerChunk;
  int64_t r1 = minI64(rows, r0 + rowsPerChunk);
  float accG = 0.0f, accB = 0.0f;
  if (j < h)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
      float d = dy[r * h + j];
      accG += d * ((x[r * h + j] - means[r]) * rstds[r]);
      accB += d;
    }
  partialG[threadIdx.y][threadIdx.x] = accG;
  partialB[threadIdx.y][threadIdx.x] = accB;
  __syncthreads();
  if (threadIdx.y != 0 || j >= h)
    return;
  float g = partialG[0][threadIdx.x], b = partialB[0][threadIdx.x];
#pragma unroll
  for (int t = 1; t < 8; ++t) {
    g += partialG[t][threadIdx.x];
    b += partialB[t][threadIdx.x];
  }
  dgamma[blockIdx.y * chunkStride + j] = g;
  dbeta[blockIdx.y * chunkStride + j] = b;
}

size_t layerNormGradScratch(const Descs &inputs, const Descs &,
                            const OpAttrs &) {
  int64_t h = inputs[1].shape.back();
  int64_t rows = h ? inputs[1].numel() / h : 0;
  int64_t chunks = columnChunks(rows, h);
  return 2 * alignUp(rows * sizeof(float)) +
         (chunks > 1 ? 2 * alignUp(chunks * h * sizeof(float)) : 0);
}

void runLayerNormGrad(CudaContext &ctx, const Tensors &inputs,
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
  ScratchArena arena(ctx);
  float *means = arena.take<float>(rows), *rstds = arena.take<float>(rows);
  if (rows > 0 && (!means || !rstds))
    throw std::runtime_error(
        "layer_norm_grad: needs at least " +
        std::to_string(2 * alignUp(rows * sizeof(float))) +
        " bytes of CUDA scratch (see cudaScratchBytes), the context has " +
        std::to_string(ctx.scratch ? ctx.scratchBytes : 0));
  if (rows > 0)
    STRATA_LAUNCH_ROWS(layerNormGradKernel, rows, h, ctx.stream, dy, x, gamma,
                       dx, means, rstds, rows, h, epsilon);
  int64_t chunks =
      std::min(columnChunks(rows, h), arena.maxCount(h * sizeof(float), 2));
  float *partialG = nullptr, *partialB = nullptr;
  if (chunks > 1) {
    partialG = arena.take<float>(chunks * h);
    partialB = arena.take<float>(chunks * h);
  }
  if (!partialG || !partialB)
    chunks = 1;
  dim3 grid((unsigned)ceilDiv(h, 32), (unsigned)chunks);
  layerNormColumnsKernel<<<grid, dim3(32, 8), 0, ctx.stream>>>(
      dy, x, means, rstds, rows, h, std::max<int64_t>(ceilDiv(rows, chunks), 1),
      chunks > 1 ? partialG : dgamma, chunks > 1 ? partialB : dbeta, h);
  STRATA_CUDA_CHECK_LAUNCH();
  if (chunks > 1) {
    sumChunks(ctx, partialG, chunks, h, dgamma);
    sumChunks(ctx, partialB, chunks, h, dbeta);
  }
}

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

/// Element k of channel c of an [N, C, inner] tensor (k < N · inner).
__device__ __forceinline__ int64_t channelIndex(int64_t c, int64_t k,
                                                int64_t channels,
                                                int64_t inner) {
  return ((k / inner) * channels + c) * inner + k % inner;
}

/// One block per channel (grid-stride over channels): batch statistics in
/// double with the block's fixed-order sums, as the CPU kernel computes
/// them (same sums, another order).
__global__ void
batchNormKernel(const float *__restrict__ x, const float *__restrict__ gamma,
                const float *__restrict__ beta, const float *runMean,
                const float *runVar, float *__restrict__ y,
                float *__restrict__ mean, float *__restrict__ invStd,
                float *newMean, float *newVar, int64_t channels, int64_t inner,
                int64_t m, double epsilon, double momentum, bool evaluation) {
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double mu, rstd;
    if (evaluation) {
      mu = runMean[c];
      rstd = 1.0 / sqrt((double)runVar[c] + epsilon);
    } else {
      double sum = 0;
      for (int64_t k = threadIdx.x; k < m; k += blockDim.x)
        sum += x[channelIndex(c, k, channels, inner)];
      mu = groupSum<kThreads>(sum) / (double)m;
      double squares = 0;
      for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
        double d = (double)x[channelIndex(c, k, channels, inner)] - mu;
        squares += d * d;
      }
      squares = groupSum<kThreads>(squares);
      rstd = 1.0 / sqrt(squares / (double)m + epsilon);
      if (threadIdx.x == 0) {
        // Read before written: the new statistics may be the old buffers.
        double oldMean = runMean[c], oldVar = runVar[c];
        newMean[c] = (float)((1 - momentum) * oldMean + momentum * mu);
        newVar[c] = (float)((1 - momentum) * oldVar +
                            momentum * squares / (double)(m - 1));
      }
    }
    if (evaluation && threadIdx.x == 0 && newMean != runMean) {
      newMean[c] = runMean[c];
      newVar[c] = runVar[c];
    }
    if (threadIdx.x == 0) {
      mean[c] = (float)mu;
      invStd[c] = (float)rstd;
    }
    float alpha = (float)(gamma[c] * rstd);
    float shift = (float)(beta[c] - mu * gamma[c] * rstd);
    for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
      int64_t i = channelIndex(c, k, channels, inner);
      y[i] = x[i] * alpha + shift;
    }
  }
}

/// The [N, C, inner] view of a batch norm input.
void channelShape(const Tensor &x, int64_t &channels, int64_t &inner,
                  int64_t &m) {
  channels = x.dim(1);
  inner = 1;
  for (int64_t i = 2; i < x.rank(); ++i)
    inner *= x.dim(i);
  m = x.dim(0) * inner;
}

void runBatchNorm(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  int64_t channels, inner, m;
  channelShape(inputs[0], channels, inner, m);
  if (channels == 0 || m == 0)
    return;
  unsigned blocks = (unsigned)std::min<int64_t>(channels, kMaxBlocks);
  batchNormKernel<<<blocks, kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), inputs[3].f32(),
      inputs[4].f32(), outputs[0].f32(), outputs[1].f32(), outputs[2].f32(),
      outputs[3].f32(), outputs[4].f32(), channels, inner, m, attrs.epsilon,
      attrs.momentum, ctx.evaluation);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// One block per channel: dbeta = Σ dy, dgamma = Σ dy x̂ (double), then
/// dx = gamma inv_std (dy - dbeta / m - x̂ dgamma / m).
__global__ void
batchNormGradKernel(const float *__restrict__ dy, const float *__restrict__ x,
                    const float *__restrict__ gamma,
                    const float *__restrict__ mean,
                    const float *__restrict__ invStd, float *__restrict__ dx,
                    float *__restrict__ dgamma, float *__restrict__ dbeta,
                    int64_t channels, int64_t inner, int64_t m) {
  for (int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
    double mu = mean[c], rstd = invStd[c];
    double sumDy = 0, sumDyX = 0;
    for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
      int64_t i = channelIndex(c, k, channels, inner);
      double g = dy[i];
      sumDy += g;
      sumDyX += g * (((double)x[i] - mu) * rstd);
    }
    sumDy = groupSum<kThreads>(sumDy);
    sumDyX = groupSum<kThreads>(sumDyX);
    if (threadIdx.x == 0) {
      dbeta[c] = (float)sumDy;
      dgamma[c] = (float)sumDyX;
    }
    double meanDy = sumDy / (double)m, meanDyX = sumDyX / (double)m;
    double scale = gamma[c] * rstd;
    for (int64_t k = threadIdx.x; k < m; k += blockDim.x) {
      int64_t i = channelIndex(c, k, channels, inner);
      double xhat = ((double)x[i] - mu) * rstd;
      dx[i] = (float)(scale * ((double)dy[i] - meanDy - xhat * meanDyX));
    }
  }
}

void runBatchNormGrad(CudaContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  int64_t channels, inner, m;
  channelShape(inputs[1], channels, inner, m);
  if (channels == 0 || m == 0)
    return;
  unsigned blocks = (unsigned)std::min<int64_t>(channels, kMaxBlocks);
  batchNormGradKernel<<<blocks, kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), inputs[3].f32(),
      inputs[4].f32(), outputs[0].f32(), outputs[1].f32(), outputs[2].f32(),
      channels, inner, m);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

/// y[i, :] = table[ids[i], :] in float4 columns when `vec` (h % 4 == 0).
__global__ void embeddingKernel(const float *__restrict__ table,
                                const int32_t *__restrict__ ids,
                                float *__restrict__ y, int64_t n, int64_t h,
                                int64_t vocab, bool vec) {
  int64_t width = vec ? h / 4 : h;
  int64_t total = n * width;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = e / width, j = e % width;
    int32_t id = ids[i];
    bool ok = id >= 0 && id < vocab;
    if (vec) {
      float4 v = ok ? reinterpret_cast<const float4 *>(table)[id * width + j]
                    : make_float4(kNaN, kNaN, kNaN, kNaN);
      reinterpret_cast<float4 *>(y)[e] = v;
    } else {
      y[e] = ok ? table[id * width + j] : kNaN;
    }
  }
}

void runEmbedding(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &) {
  const float *table = inputs[0].f32();
  float *y = outputs[0].f32();
  int64_t vocab = inputs[0].dim(0), h = inputs[0].dim(1);
  int64_t n = inputs[1].numel();
  if (n == 0 || h == 0)
    return;
  bool vec = h % 4 == 0 && aligned16({table, y});
  embeddingKernel<<<gridFor(vec ? n * h / 4 : n * h), kThreads, 0,
                    ctx.stream>>>(table, inputs[1].i32(), y, n, h, vocab, vec);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// Bits that hold every id in [0, vocab).
int idBits(int64_t vocab) {
  int bits = 1;
  while (bits < 31 && (int64_t(1) << bits) < vocab)
    ++bits;
  return bits;
}

/// Device buffers of the sorted path of embedding_grad, carved from scratch.
struct SortBuffers {
  uint32_t *keys = nullptr;
  int32_t *positions = nullptr, *sortedPositions = nullptr;
  void *temp = nullptr;
  size_t tempBytes = 0;
};

size_t cubSortTempBytes(int64_t n, int bits) {
  size_t bytes = 0;
  STRATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
      (const int32_t *)nullptr, (int32_t *)nullptr, (int)n, 0, bits));
  return bytes;
}

size_t sortScratchBytes(int64_t n, int bits) {
  return alignUp(n * sizeof(uint32_t)) + 2 * alignUp(n * sizeof(int32_t)) +
         alignUp(cubSortTempBytes(n, bits));
}

__global__ void iotaKernel(int32_t *__restrict__ p, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    p[i] = (int32_t)i;
}

/// Block (p, column tile): when sorted position p starts a run of equal ids,
/// dtable[id, j] = sum of the run's dy rows in index order (the sort is
/// stable).
__global__ void embeddingGradSortedKernel(const float *__restrict__ dy,
                                          const uint32_t *__restrict__ keys,
                                          const int32_t *__restrict__ pos,
                                          int64_t n, int64_t h, int64_t vocab,
                                          float *__restrict__ dtable) {
  int64_t p = blockIdx.x;
  uint32_t key = keys[p];
  if ((p > 0 && keys[p - 1] == key) || key >= vocab)
    return;
  int64_t j = blockIdx.y * (int64_t)blockDim.x + threadIdx.x;
  if (j >= h)
    return;
  float acc = 0.0f;
  for (int64_t q = p; q < n && keys[q] == key; ++q)
    acc += dy[(int64_t)pos[q] * h + j];
  dtable[key * h + j] = acc;
}

/// Without scratch: block v (grid-stride) owns table row v; every warp scans
/// the ids 32 at a time and adds, in index order, the dy rows whose id is v.
__global__ void embeddingGradScanKernel(const float *__restrict__ dy,
                                        const int32_t *__restrict__ ids,
                                        int64_t n, int64_t h, int64_t vocab,
                                        float *__restrict__ dtable) {
  const int lane = threadIdx.x % 32;
  for (int64_t v = blockIdx.x; v < vocab; v += gridDim.x) {
    for (int64_t j0 = 0; j0 < h; j0 += blockDim.x) {
      int64_t j = j0 + threadIdx.x;
      float acc = 0.0f;
      for (int64_t i0 = 0; i0 < n; i0 += 32) {
        int64_t i = i0 + lane;
        bool hit = i < n && ids[i] == v;
        unsigned mask = __ballot_sync(0xffffffffu, hit);
        while (mask) {
          int b = __ffs(mask) - 1;
          mask &= mask - 1;
          if (j < h)
            acc += dy[(i0 + b) * h + j];
        }
      }
      if (j < h)
        dtable[v * h + j] = acc;
    }
  }
}

size_t embeddingGradScratch(const Descs &inputs, const Descs &outputs,
                            const OpAttrs &) {
  int64_t n = inputs[1].numel();
  if (n == 0)
    return 0;
  return sortScratchBytes(n, idBits(outputs[0].shape[0]));
}

void runEmbeddingGrad(CudaContext &ctx, const Tensors &inputs,
                      const Tensors &outputs, const OpAttrs &) {
  const float *dy = inputs[0].f32();
  const int32_t *ids = inputs[1].i32();
  float *dtable = outputs[0].f32();
  int64_t vocab = outputs[0].dim(0), h = outputs[0].dim(1);
  int64_t n = inputs[1].numel();
  if (vocab == 0 || h == 0)
    return;
  STRATA_CUDA_CHECK(
      cudaMemsetAsync(dtable, 0, (size_t)outputs[0].desc.bytes(), ctx.stream));
  if (n == 0)
    return;
  int bits = idBits(vocab);
  SortBuffers sb;
  ScratchArena arena(ctx);
  if (n <= INT32_MAX && ceilDiv(h, kThreads) <= 65535) {
    sb.tempBytes = cubSortTempBytes(n, bits);
    sb.keys = arena.take<uint32_t>(n);
    sb.positions = arena.take<int32_t>(n);
    sb.sortedPositions = arena.take<int32_t>(n);
    sb.temp = arena.take<char>(sb.tempBytes);
  }
  if (!sb.keys || !sb.positions || !sb.sortedPositions || !sb.temp) {
    int threads = (int)std::min<int64_t>(kThreads, ceilDiv(h, 32) * 32);
    embeddingGradScanKernel<<<(unsigned)std::min<int64_t>(vocab, kMaxBlocks),
                              threads, 0, ctx.stream>>>(dy, ids, n, h, vocab,
                                                        dtable);
    STRATA_CUDA_CHECK_LAUNCH();
    return;
  }
  iotaKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(sb.positions, n);
  STRATA_CUDA_CHECK_LAUNCH();
  STRATA_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      sb.temp, sb.tempBytes, reinterpret_cast<const uint32_t *>(ids), sb.keys,
      sb.positions, sb.sortedPositions, (int)n, 0, bits, ctx.stream));
  dim3 grid((unsigned)n, (unsigned)ceilDiv(h, kThreads));
  embeddingGradSortedKernel<<<grid, kThreads, 0, ctx.stream>>>(
      dy, sb.keys, sb.sortedPositions, n, h, vocab, dtable);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// y[b, s, :] = x[b, s, :] + table[s, :]: element i reads table[i % (S H)].
__global__ void positionEmbeddingKernel(const float *__restrict__ x,
                                        const float *__restrict__ table,
                                        float *__restrict__ y, int64_t n,
                                        int64_t period, bool vec) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  if (vec) {
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    const float4 *t4 = reinterpret_cast<const float4 *>(table);
    float4 *y4 = reinterpret_cast<float4 *>(y);
    for (int64_t e = i; e < n / 4; e += stride) {
      float4 a = x4[e], b = t4[e % (period / 4)];
      y4[e] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    return;
  }
  for (int64_t e = i; e < n; e += stride)
    y[e] = x[e] + table[e % period];
}

void runPositionEmbedding(CudaContext &ctx, const Tensors &inputs,
                          const Tensors &outputs, const OpAttrs &) {
  const float *x = inputs[0].f32(), *table = inputs[1].f32();
  float *y = outputs[0].f32();
  int64_t n = outputs[0].numel();
  int64_t period = inputs[0].dim(1) * inputs[0].dim(2);
  if (n == 0)
    return;
  bool vec = period % 4 == 0 && aligned16({x, table, y});
  positionEmbeddingKernel<<<gridFor(vec ? n / 4 : n), kThreads, 0,
                            ctx.stream>>>(x, table, y, n, period, vec);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// dtable[r, j] = sum over b, in order, of dy[b, r, j] (rows r >= S: 0).
__global__ void positionEmbeddingGradKernel(const float *__restrict__ dy,
                                            float *__restrict__ dtable,
                                            int64_t batch, int64_t seq,
                                            int64_t h, int64_t total) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = e / h;
    float acc = 0.0f;
    if (r < seq)
      for (int64_t b = 0; b < batch; ++b)
        acc += dy[b * seq * h + e];
    dtable[e] = acc;
  }
}

void runPositionEmbeddingGrad(CudaContext &ctx, const Tensors &inputs,
                              const Tensors &outputs, const OpAttrs &) {
  int64_t total = outputs[0].numel();
  if (total == 0)
    return;
  positionEmbeddingGradKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), outputs[0].f32(), inputs[0].dim(0), inputs[0].dim(1),
      inputs[0].dim(2), total);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// Blocks of the first pass of a loss over `items` (rows or elements): at
/// most 1024, each with at least `perBlock` items; fewer when scratch holds
/// fewer partial sums. One block writes the mean itself.
int64_t lossBlocks(int64_t items, int64_t perBlock) {
  return std::max<int64_t>(1,
                           std::min<int64_t>(ceilDiv(items, perBlock), 1024));
}

/// out = (float)(sum of partial[0, count) / divisor), one block of kThreads:
/// thread t adds partial[t], partial[t + kThreads], ..., then a block sum.
__global__ void finishMeanKernel(const double *__restrict__ partial,
                                 int64_t count, double divisor,
                                 float *__restrict__ out) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += kThreads)
    acc += partial[i];
  double total = groupSum<kThreads>(acc);
  if (threadIdx.x == 0)
    out[0] = (float)(total / divisor);
}

/// Rows per block of the cross-entropy kernels' first pass.
constexpr int64_t kLossRowsPerBlock = kThreads / 32;
/// Elements per block of mse_loss's first pass.
constexpr int64_t kMseItemsPerBlock = 8192;

/// Scratch for `blocks` double partial sums, or nullptr for one block.
double *lossPartials(CudaContext &ctx, int64_t &blocks) {
  ScratchArena arena(ctx);
  blocks = std::min(blocks, arena.maxCount(sizeof(double)));
  double *partial = blocks > 1 ? arena.take<double>(blocks) : nullptr;
  if (!partial)
    blocks = 1;
  return partial;
}

/// Block g sums the losses of rows [g R, (g+1) R): warp w takes rows
/// w, w + 8, ... of the range, lse in double as on the CPU; then the 8 warp
/// sums in order. Writes partial[g], or the mean when there is one block.
__global__ void crossEntropyKernel(const float *__restrict__ logits,
                                   const int32_t *__restrict__ labels,
                                   int64_t rows, int64_t c,
                                   int64_t rowsPerBlock,
                                   double *__restrict__ partial,
                                   float *__restrict__ out) {
  __shared__ double warpTotals[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t r0 = blockIdx.x * rowsPerBlock;
  int64_t r1 = minI64(rows, r0 + rowsPerBlock);
  double total = 0.0;
  for (int64_t r = r0 + warp; r < r1; r += kThreads / 32) {
    const float *xr = logits + r * c;
    float mx = -INFINITY;
    for (int64_t j = lane; j < c; j += 32)
      mx = fmaxf(mx, xr[j]);
    mx = warpMax(mx);
    double sum = 0.0;
    for (int64_t j = lane; j < c; j += 32)
      sum += (double)expf(xr[j] - mx);
    sum = warpSum(sum);
    int32_t label = labels[r];
    double loss = label >= 0 && label < c
                      ? log(sum) + (double)mx - (double)xr[label]
                      : (double)kNaN;
    total += loss;
  }
  if (lane == 0)
    warpTotals[warp] = total;
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  double sum = warpTotals[0];
  for (int w = 1; w < kThreads / 32; ++w)
    sum += warpTotals[w];
  if (partial)
    partial[blockIdx.x] = sum;
  else
    out[0] = (float)(sum / (double)rows);
}

size_t crossEntropyScratch(const Descs &inputs, const Descs &,
                           const OpAttrs &) {
  int64_t blocks = lossBlocks(inputs[1].numel(), kLossRowsPerBlock);
  return blocks > 1 ? alignUp(blocks * sizeof(double)) : 0;
}

void runCrossEntropy(CudaContext &ctx, const Tensors &inputs,
                     const Tensors &outputs, const OpAttrs &) {
  int64_t c = inputs[0].dim(-1), rows = inputs[1].numel();
  float *out = outputs[0].f32();
  if (rows == 0) {
    STRATA_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), ctx.stream));
    return;
  }
  int64_t blocks = lossBlocks(rows, kLossRowsPerBlock);
  double *partial = lossPartials(ctx, blocks);
  crossEntropyKernel<<<(unsigned)blocks, kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].i32(), rows, c, ceilDiv(rows, blocks), partial,
      out);
  STRATA_CUDA_CHECK_LAUNCH();
  if (partial) {
    finishMeanKernel<<<1, kThreads, 0, ctx.stream>>>(partial, blocks,
                                                     (double)rows, out);
    STRATA_CUDA_CHECK_LAUNCH();
  }
}

/// dlogits = (softmax(x) - onehot(label)) dloss / rows, per row.
template <int TPR>
__global__ void crossEntropyGradKernel(const float *__restrict__ logits,
                                       const int32_t *__restrict__ labels,
                                       const float *__restrict__ dloss,
                                       float *__restrict__ dx, int64_t rows,
                                       int64_t c) {
  using L = RowLoop<TPR>;
  const int lane = L::lane();
  const float f = (float)((double)dloss[0] / (double)rows);
  for (int64_t r = L::first(); r < rows; r += L::step()) {
    const float *xr = logits + r * c;
    float *dxr = dx + r * c;
    float mx = -INFINITY;
    for (int64_t j = lane; j < c; j += TPR)
      mx = fmaxf(mx, xr[j]);
    mx = groupMax<TPR>(mx);
    double sum = 0.0;
    for (int64_t j = lane; j < c; j += TPR)
      sum += (double)expf(xr[j] - mx);
    sum = groupSum<TPR>(sum);
    float lse = (float)(log(sum) + (double)mx);
    int32_t label = labels[r];
    bool ok = label >= 0 && label < c;
    for (int64_t j = lane; j < c; j += TPR) {
      float v = expf(xr[j] - lse) * f;
      dxr[j] = !ok ? kNaN : j == label ? v - f : v;
    }
  }
}

void runCrossEntropyGrad(CudaContext &ctx, const Tensors &inputs,
                         const Tensors &outputs, const OpAttrs &) {
  int64_t c = inputs[0].dim(-1), rows = inputs[1].numel();
  if (rows == 0 || c == 0)
    return;
  STRATA_LAUNCH_ROWS(crossEntropyGradKernel, rows, c, ctx.stream,
                     inputs[0].f32(), inputs[1].i32(), inputs[2].f32(),
                     outputs[0].f32(), rows, c);
}

/// Block g sums (x - t)^2 in double over elements [g P, (g+1) P).
__global__ void mseKernel(const float *__restrict__ x,
                          const float *__restrict__ t, int64_t n,
                          int64_t perBlock, double *__restrict__ partial,
                          float *__restrict__ out) {
  int64_t i0 = blockIdx.x * perBlock, i1 = minI64(n, i0 + perBlock);
  double acc = 0.0;
  for (int64_t i = i0 + threadIdx.x; i < i1; i += kThreads) {
    double d = (double)x[i] - (double)t[i];
    acc += d * d;
  }
  double total = groupSum<kThreads>(acc);
  if (threadIdx.x != 0)
    return;
  if (partial)
    partial[blockIdx.x] = total;
  else
    out[0] = (float)(total / (double)n);
}

size_t mseScratch(const Descs &inputs, const Descs &, const OpAttrs &) {
  int64_t blocks = lossBlocks(inputs[0].numel(), kMseItemsPerBlock);
  return blocks > 1 ? alignUp(blocks * sizeof(double)) : 0;
}

void runMse(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &) {
  int64_t n = inputs[0].numel();
  float *out = outputs[0].f32();
  if (n == 0) {
    STRATA_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), ctx.stream));
    return;
  }
  int64_t blocks = lossBlocks(n, kMseItemsPerBlock);
  double *partial = lossPartials(ctx, blocks);
  mseKernel<<<(unsigned)blocks, kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), n, ceilDiv(n, blocks), partial, out);
  STRATA_CUDA_CHECK_LAUNCH();
  if (partial) {
    finishMeanKernel<<<1, kThreads, 0, ctx.stream>>>(partial, blocks, (double)n,
                                                     out);
    STRATA_CUDA_CHECK_LAUNCH();
  }
}

/// dx = 2 (x - t) dloss / n.
__global__ void mseGradKernel(const float *__restrict__ x,
                              const float *__restrict__ t,
                              const float *__restrict__ dloss,
                              float *__restrict__ dx, int64_t n) {
  const float factor = (float)(2.0 * (double)dloss[0] / (double)n);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = (x[i] - t[i]) * factor;
}

void runMseGrad(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
                const OpAttrs &) {
  int64_t n = inputs[0].numel();
  if (n == 0)
    return;
  mseGradKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), outputs[0].f32(), n);
  STRATA_CUDA_CHECK_LAUNCH();
}

} // namespace

void appendNNCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::Softmax, runSoftmax});
  kernels.push_back({OpCode::SoftmaxGrad, runSoftmaxGrad});
  kernels.push_back({OpCode::LayerNorm, runLayerNorm});
  kernels.push_back(
      {OpCode::LayerNormGrad, runLayerNormGrad, layerNormGradScratch});
  kernels.push_back({OpCode::BatchNorm, runBatchNorm});
  kernels.push_back({OpCode::BatchNormGrad, runBatchNormGrad});
  kernels.push_back({OpCode::Embedding, runEmbedding});
  kernels.push_back(
      {OpCode::EmbeddingGrad, runEmbeddingGrad, embeddingGradScratch});
  kernels.push_back({OpCode::PositionEmbedding, runPositionEmbedding});
  kernels.push_back({OpCode::PositionEmbeddingGrad, runPositionEmbeddingGrad});
  kernels.push_back(
      {OpCode::SoftmaxCrossEntropy, runCrossEntropy, crossEntropyScratch});
  kernels.push_back({OpCode::SoftmaxCrossEntropyGrad, runCrossEntropyGrad});
  kernels.push_back({OpCode::MseLoss, runMse, mseScratch});
  kernels.push_back({OpCode::MseLossGrad, runMseGrad});
}

} // namespace strata::rt::cuda::detail
