//===- CudaKernelsDense.cu - matmul, element-wise and layout kernels ------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// matmul goes through detail::gemm (cuBLAS or strataGemm); a batched product
// with a broadcast B and no transposed A is one tall GEMM, as on the CPU.
// Element-wise kernels are grid-stride loops over float4 when every operand
// is 16-byte aligned (arena buffers are), scalar otherwise. bias_add_grad
// reduces columns in two passes over fixed chunks (no atomics). transpose
// drops unit dimensions and merges dimensions that stay adjacent, then runs
// a 32x32 shared-memory tile kernel when what is left is a batched 2-D
// transpose, else a gather kernel.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include "strata-rt/MatmulLayout.h"
#include "strata-rt/PlanFormat.h"

#include <cstring>
#include <stdexcept>

namespace strata::rt::cuda::detail {
namespace {

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

/// Tiling attributes mc/nc/kc/mr/nr of matmul instructions are for the CPU
/// GEMM and are ignored here; a bf16 matmul goes through gemmBf16.
void runProduct(CudaContext &ctx, const Tensors &inputs, float *c,
                const OpAttrs &attrs) {
  bool ta = attrs.transposeA, tb = attrs.transposeB;
  bool ha = attrs.headsA, hb = attrs.headsB, hc = attrs.headsC;
  const Shape &as = inputs[0].shape(), &bs = inputs[1].shape();
  // The logical shapes (MatmulLayout.h).
  Shape la = logicalMatmulShape(as, ha), lb = logicalMatmulShape(bs, hb);
  int64_t r = la.size();
  int64_t batch = 1;
  for (int64_t i = 0; i + 2 < r; ++i)
    batch *= la[i];
  int64_t m = ta ? la[r - 1] : la[r - 2];
  int64_t k = ta ? la[r - 2] : la[r - 1];
  int64_t n = tb ? lb[lb.size() - 2] : lb[lb.size() - 1];
  const float *a = inputs[0].f32(), *b = inputs[1].f32();
  bool shared = bs.size() == 2, heads = ha || hb || hc;
  auto *product = attrs.bf16 ? &gemmBf16 : &gemm;
  if (!heads && (batch == 1 || (shared && !ta))) {
    product(ctx, ta, tb, batch * m, n, k, 1.0f, a, as.back(), 0, b, bs.back(),
            0, 0.0f, c, n, 0, 1);
    return;
  }
  // One strided batched GEMM per group of products (the heads of one outer
  // index; a single group without a heads layout).
  int64_t group = heads ? la[r - 3] : batch;
  Shape lc(la.begin(), la.end() - 2);
  lc.push_back(m);
  lc.push_back(n);
  MatrixLayout pa = matrixLayout(as, ha, false, group),
               pb = matrixLayout(bs, hb, shared, group),
               pc = matrixLayout(logicalMatmulShape(lc, hc), hc, false, group);
  for (int64_t first = 0; first < batch; first += group)
    product(ctx, ta, tb, m, n, k, 1.0f, a + pa.offset(first), pa.ld, pa.inner,
            b + pb.offset(first), pb.ld, pb.inner, 0.0f, c + pc.offset(first),
            pc.ld, pc.inner, group);
}

void runMatmul(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
               const OpAttrs &attrs) {
  runProduct(ctx, inputs, outputs[0].f32(), attrs);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

constexpr float kGeluC = 0.7978845608f; // sqrt(2 / pi)
constexpr float kGeluA = 0.044715f;

/// gelu(v) = 0.5 v (1 + tanh u) = v sigmoid(2u), u = c (v + a v^3).
__device__ __forceinline__ float geluValue(float v) {
  float u = kGeluC * v * (1.0f + kGeluA * v * v);
  return v / (1.0f + expf(-2.0f * u));
}

struct ReluOp {
  __device__ float operator()(float x) const { return x > 0.0f ? x : 0.0f; }
};
struct GeluOp {
  __device__ float operator()(float x) const { return geluValue(x); }
};
struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct ReluGradOp {
  __device__ float operator()(float dy, float x) const {
    return x > 0.0f ? dy : 0.0f;
  }
};
struct GeluGradOp {
  __device__ float operator()(float dy, float v) const {
    float u = kGeluC * v * (1.0f + kGeluA * v * v);
    float s = 1.0f / (1.0f + expf(-2.0f * u));
    float du = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
    // 0.5 (1 + tanh u) = s and 1 - tanh^2 u = 4 s (1 - s).
    return dy * (s + 2.0f * v * s * (1.0f - s) * du);
  }
};

template <typename Op>
__global__ void unaryKernel(const float *__restrict__ x, float *__restrict__ y,
                            int64_t n, bool vec, Op op) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    int64_t n4 = n / 4;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float4 *y4 = reinterpret_cast<float4 *>(y);
    for (int64_t j = i; j < n4; j += stride) {
      float4 v = x4[j];
      y4[j] = make_float4(op(v.x), op(v.y), op(v.z), op(v.w));
    }
    done = n4 * 4;
  }
  for (int64_t j = done + i; j < n; j += stride)
    y[j] = op(x[j]);
}

template <typename Op>
__global__ void binaryKernel(const float *__restrict__ a,
                             const float *__restrict__ b, float *__restrict__ c,
                             int64_t n, bool vec, Op op) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t done = 0;
  if (vec) {
    int64_t n4 = n / 4;
    const float4 *a4 = reinterpret_cast<const float4 *>(a);
    const float4 *b4 = reinterpret_cast<const float4 *>(b);
    float4 *c4 = reinterpret_cast<float4 *>(c);
    for (int64_t j = i; j < n4; j += stride) {
      float4 u = a4[j], v = b4[j];
      c4[j] =
          make_float4(op(u.x, v.x), op(u.y, v.y), op(u.z, v.z), op(u.w, v.w));
    }
    done = n4 * 4;
  }
  for (int64_t j = done + i; j < n; j += stride)
    c[j] = op(a[j], b[j]);
}

template <typename Op>
void launchUnary(CudaContext &ctx, const Tensors &inputs,
                 const Tensors &outputs) {
  const float *x = inputs[0].f32();
  float *y = outputs[0].f32();
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  bool vec = aligned16({x, y});
  unaryKernel<<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, ctx.stream>>>(
      x, y, n, vec, Op());
  STRATA_CUDA_CHECK_LAUNCH();
}

template <typename Op>
void launchBinary(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs) {
  const float *a = inputs[0].f32(), *b = inputs[1].f32();
  float *c = outputs[0].f32();
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  bool vec = aligned16({a, b, c});
  binaryKernel<<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, ctx.stream>>>(
      a, b, c, n, vec, Op());
  STRATA_CUDA_CHECK_LAUNCH();
}

void runAdd(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &) {
  launchBinary<AddOp>(ctx, inputs, outputs);
}
void runRelu(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  launchUnary<ReluOp>(ctx, inputs, outputs);
}
void runReluGrad(CudaContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  launchBinary<ReluGradOp>(ctx, inputs, outputs);
}
void runGelu(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  launchUnary<GeluOp>(ctx, inputs, outputs);
}
void runGeluGrad(CudaContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  launchBinary<GeluGradOp>(ctx, inputs, outputs);
}

//===----------------------------------------------------------------------===//
// fused_matmul: the product, then one epilogue kernel
//===----------------------------------------------------------------------===//

/// The epilogue of a fused_matmul over the `total` elements of C (rows of
/// `n`), with the functors of the unfused kernels (bias_add's sum, ReluOp,
/// geluValue, ReluGradOp, GeluGradOp). bias_relu / bias_gelu with `act`:
/// C keeps the sum and the activation goes to `act`.
__global__ void epilogueKernel(float *__restrict__ c,
                               const float *__restrict__ bias,
                               const float *__restrict__ aux,
                               float *__restrict__ act, int64_t total,
                               int64_t n, int kind) {
  using strata_plan::Epilogue;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < total;
       j += stride) {
    float x = c[j];
    switch (static_cast<Epilogue>(kind)) {
    case Epilogue::Bias:
    case Epilogue::BiasRelu:
    case Epilogue::BiasGelu: {
      float s = x + bias[j % n];
      float y = s;
      if (kind == (int)Epilogue::BiasRelu)
        y = ReluOp()(s);
      else if (kind == (int)Epilogue::BiasGelu)
        y = GeluOp()(s);
      if (act) {
        c[j] = s;
        act[j] = y;
      } else {
        c[j] = y;
      }
      break;
    }
    case Epilogue::ReluGrad:
      c[j] = ReluGradOp()(x, aux[j]);
      break;
    case Epilogue::GeluGrad:
      c[j] = GeluGradOp()(x, aux[j]);
      break;
    case Epilogue::Residual:
      c[j] = x + aux[j];
      break;
    case Epilogue::BiasResidual: {
      float s = x + bias[j % n];
      c[j] = s + aux[j];
      break;
    }
    }
  }
}

/// cuBLAS (or strataGemm) has no epilogue of Strata's, so the product is
/// followed by one element-wise kernel: no intermediate tensor is written
/// besides the product itself.
void runFusedMatmul(CudaContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  auto kind = static_cast<strata_plan::Epilogue>(attrs.epilogue);
  bool pre = outputs.size() == 2;
  float *c = pre ? outputs[1].f32() : outputs[0].f32();
  runProduct(ctx, inputs, c, attrs);
  int64_t total = outputs[0].numel(), n = outputs[0].shape().back();
  if (total == 0)
    return;
  bool hasBias = strata_plan::epilogueHasBias(kind);
  bool hasAux = !hasBias || strata_plan::epilogueHasResidual(kind);
  epilogueKernel<<<gridFor(total), kThreads, 0, ctx.stream>>>(
      c, hasBias ? inputs[2].f32() : nullptr,
      hasAux ? inputs.back().f32() : nullptr, pre ? outputs[0].f32() : nullptr,
      total, n, static_cast<int>(kind));
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// bias_add
//===----------------------------------------------------------------------===//

/// y = x + bias[(i / inner) % d]. `vec`: float4 groups, which never straddle
/// two bias entries (inner % 4 == 0) or read 4 consecutive ones (inner == 1,
/// d % 4 == 0).
__global__ void biasAddKernel(const float *__restrict__ x,
                              const float *__restrict__ bias,
                              float *__restrict__ y, int64_t n, int64_t d,
                              int64_t inner, bool vec) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  if (vec) {
    const float4 *x4 = reinterpret_cast<const float4 *>(x);
    float4 *y4 = reinterpret_cast<float4 *>(y);
    for (int64_t j = i; j < n / 4; j += stride) {
      float4 v = x4[j];
      int64_t e = j * 4;
      float4 b;
      if (inner == 1) {
        b = *reinterpret_cast<const float4 *>(bias + e % d);
      } else {
        float s = bias[e / inner % d];
        b = make_float4(s, s, s, s);
      }
      y4[j] = make_float4(v.x + b.x, v.y + b.y, v.z + b.z, v.w + b.w);
    }
    return;
  }
  for (int64_t j = i; j < n; j += stride)
    y[j] = x[j] + bias[j / inner % d];
}

void runBiasAdd(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
                const OpAttrs &attrs) {
  int64_t axis = normaliseAxis(attrs.axis, inputs[0].rank());
  AxisView view = axisView(inputs[0].shape(), axis);
  const float *x = inputs[0].f32(), *bias = inputs[1].f32();
  float *y = outputs[0].f32();
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  bool vec = aligned16({x, bias, y}) &&
             (view.inner == 1 ? view.dim % 4 == 0 : view.inner % 4 == 0);
  biasAddKernel<<<gridFor(vec ? n / 4 : n), kThreads, 0, ctx.stream>>>(
      x, bias, y, n, view.dim, view.inner, vec);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// bias_add_grad: deterministic two-pass column sums
//===----------------------------------------------------------------------===//

/// Chunks of the outer dimension when each bias entry sums outer x inner.
int64_t outerChunks(int64_t outer, int64_t d) {
  int64_t chunks = std::min(outer, ceilDiv(2048, std::max<int64_t>(d, 1)));
  return std::max<int64_t>(1, std::min<int64_t>(chunks, 256));
}

/// Pass 1, inner == 1: block (32, 8) sums rows [c R, (c+1) R) of 32 columns;
/// thread (x, y) sums rows y, y+8, ... in order, then row y == 0 adds the 8
/// partial sums in order. out[c * chunkStride + j].
__global__ void columnSumKernel(const float *__restrict__ dy, int64_t rows,
                                int64_t cols, int64_t rowsPerChunk,
                                float *__restrict__ out, int64_t chunkStride) {
  __shared__ float partial[8][33];
  int64_t j = blockIdx.x * 32 + threadIdx.x;
  int64_t r0 = blockIdx.y * rowsPerChunk;
  int64_t r1 = minI64(rows, r0 + rowsPerChunk);
  float acc = 0.0f;
  if (j < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
      acc += dy[r * cols + j];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || j >= cols)
    return;
  float total = partial[0][threadIdx.x];
#pragma unroll
  for (int t = 1; t < 8; ++t)
    total += partial[t][threadIdx.x];
  out[blockIdx.y * chunkStride + j] = total;
}

/// Pass 1, inner > 1: block (j, c) sums dy[o, j, :] for o in chunk c.
__global__ void axisSumKernel(const float *__restrict__ dy, int64_t outer,
                              int64_t d, int64_t inner, int64_t outerPerChunk,
                              float *__restrict__ out, int64_t chunkStride) {
  int64_t j = blockIdx.x;
  int64_t o0 = blockIdx.y * outerPerChunk;
  int64_t o1 = minI64(outer, o0 + outerPerChunk);
  float acc = 0.0f;
  for (int64_t o = o0; o < o1; ++o) {
    const float *row = dy + (o * d + j) * inner;
    for (int64_t i = threadIdx.x; i < inner; i += kThreads)
      acc += row[i];
  }
  float total = groupSum<kThreads>(acc);
  if (threadIdx.x == 0)
    out[blockIdx.y * chunkStride + j] = total;
}

/// Pass 2: out[j] = sum over chunks, in order, of partial[c cols + j].
__global__ void sumChunksKernel(const float *__restrict__ partial,
                                int64_t chunks, int64_t cols,
                                float *__restrict__ out) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < cols;
       j += (int64_t)gridDim.x * blockDim.x) {
    float acc = partial[j];
    for (int64_t c = 1; c < chunks; ++c)
      acc += partial[c * cols + j];
    out[j] = acc;
  }
}

} // namespace

int64_t columnChunks(int64_t rows, int64_t cols) {
  int64_t strips = std::max<int64_t>(1, ceilDiv(cols, 32));
  int64_t chunks = std::min(ceilDiv(rows, 32), ceilDiv(4096, strips));
  return std::max<int64_t>(1, std::min<int64_t>(chunks, 256));
}

void sumChunks(CudaContext &ctx, const float *partial, int64_t chunks,
               int64_t cols, float *out) {
  if (cols == 0)
    return;
  sumChunksKernel<<<gridFor(cols), kThreads, 0, ctx.stream>>>(partial, chunks,
                                                              cols, out);
  STRATA_CUDA_CHECK_LAUNCH();
}

namespace {

size_t biasAddGradScratch(const Descs &inputs, const Descs &,
                          const OpAttrs &attrs) {
  const Shape &s = inputs[0].shape;
  AxisView v = axisView(s, normaliseAxis(attrs.axis, s.size()));
  int64_t chunks =
      v.inner == 1 ? columnChunks(v.outer, v.dim) : outerChunks(v.outer, v.dim);
  return chunks > 1 ? alignUp(chunks * v.dim * sizeof(float)) : 0;
}

void runBiasAddGrad(CudaContext &ctx, const Tensors &inputs,
                    const Tensors &outputs, const OpAttrs &attrs) {
  int64_t axis = normaliseAxis(attrs.axis, inputs[0].rank());
  AxisView v = axisView(inputs[0].shape(), axis);
  const float *dy = inputs[0].f32();
  float *db = outputs[0].f32();
  if (v.dim == 0)
    return;
  int64_t chunks =
      v.inner == 1 ? columnChunks(v.outer, v.dim) : outerChunks(v.outer, v.dim);
  ScratchArena arena(ctx);
  chunks = std::min(chunks, arena.maxCount(v.dim * sizeof(float)));
  float *partial = chunks > 1 ? arena.take<float>(chunks * v.dim) : nullptr;
  if (!partial)
    chunks = 1;
  float *dst = chunks > 1 ? partial : db;
  if (v.inner == 1) {
    int64_t rowsPerChunk = ceilDiv(v.outer, chunks);
    dim3 grid((unsigned)ceilDiv(v.dim, 32), (unsigned)chunks);
    columnSumKernel<<<grid, dim3(32, 8), 0, ctx.stream>>>(
        dy, v.outer, v.dim, std::max<int64_t>(rowsPerChunk, 1), dst, v.dim);
  } else {
    int64_t perChunk = ceilDiv(v.outer, chunks);
    dim3 grid((unsigned)v.dim, (unsigned)chunks);
    axisSumKernel<<<grid, kThreads, 0, ctx.stream>>>(
        dy, v.outer, v.dim, v.inner, std::max<int64_t>(perChunk, 1), dst,
        v.dim);
  }
  STRATA_CUDA_CHECK_LAUNCH();
  if (chunks > 1)
    sumChunks(ctx, partial, chunks, v.dim, db);
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

void runCopy(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &) {
  if (inputs[0].data == outputs[0].data)
    return; // a view (Buffer::viewOf)
  copyDevice(ctx, outputs[0].data, inputs[0].data, outputs[0].desc.bytes());
}

constexpr int kMaxTransposeRank = 8;

struct TransposeParams {
  int rank;
  int64_t outSize[kMaxTransposeRank];
  /// Input stride of each output dimension.
  int64_t inStride[kMaxTransposeRank];
};

/// y[i] = x[offset of output coordinate i]; 4-byte elements of any type.
__global__ void transposeGatherKernel(const uint32_t *__restrict__ x,
                                      uint32_t *__restrict__ y, int64_t n,
                                      TransposeParams p) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rem = i, offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t idx = rem % p.outSize[d];
      rem /= p.outSize[d];
      offset += idx * p.inStride[d];
    }
    y[i] = x[offset];
  }
}

constexpr int kTile = 32;

/// x [batch, rows, cols] -> y [batch, cols, rows] through a padded 32x32
/// shared tile: reads and writes are both coalesced. Block (32, 8).
__global__ void transposeTileKernel(const uint32_t *__restrict__ x,
                                    uint32_t *__restrict__ y, int64_t batch,
                                    int64_t rows, int64_t cols) {
  __shared__ uint32_t tile[kTile][kTile + 1];
  int64_t c0 = blockIdx.x * (int64_t)kTile, r0 = blockIdx.y * (int64_t)kTile;
  for (int64_t z = blockIdx.z; z < batch; z += gridDim.z) {
    const uint32_t *xz = x + z * rows * cols;
    uint32_t *yz = y + z * rows * cols;
    for (int t = threadIdx.y; t < kTile; t += 8) {
      int64_t r = r0 + t, c = c0 + threadIdx.x;
      if (r < rows && c < cols)
        tile[t][threadIdx.x] = xz[r * cols + c];
    }
    __syncthreads();
    for (int t = threadIdx.y; t < kTile; t += 8) {
      int64_t c = c0 + t, r = r0 + threadIdx.x;
      if (r < rows && c < cols)
        yz[c * rows + r] = tile[threadIdx.x][t];
    }
    __syncthreads();
  }
}

void runTranspose(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const std::vector<int64_t> &perm = attrs.permutation;
  const Shape &xs = inputs[0].shape();
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  // Drop unit dimensions: the remaining input dims and the permutation of
  // them.
  int64_t rank = xs.size();
  std::vector<int64_t> newIndex(rank, -1);
  Shape in;
  for (int64_t d = 0; d < rank; ++d)
    if (xs[d] != 1) {
      newIndex[d] = in.size();
      in.push_back(xs[d]);
    }
  std::vector<int64_t> p;
  for (int64_t d : perm)
    if (newIndex[d] >= 0)
      p.push_back(newIndex[d]);
  // Merge runs of output dims that read consecutive input dims.
  std::vector<std::vector<int64_t>> groups;
  for (int64_t d : p) {
    if (!groups.empty() && groups.back().back() + 1 == d)
      groups.back().push_back(d);
    else
      groups.push_back({d});
  }
  // Merged input dims, in input order.
  std::vector<int64_t> order(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    order[g] = g;
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return groups[a][0] < groups[b][0]; });
  int64_t r = groups.size();
  std::vector<int64_t> mergedPerm(r), mergedIn(r);
  for (int64_t pos = 0; pos < r; ++pos) {
    int64_t size = 1;
    for (int64_t d : groups[order[pos]])
      size *= in[d];
    mergedIn[pos] = size;
  }
  for (int64_t g = 0; g < r; ++g)
    for (int64_t pos = 0; pos < r; ++pos)
      if (order[pos] == g)
        mergedPerm[g] = pos;
  const uint32_t *x = static_cast<const uint32_t *>(inputs[0].data);
  uint32_t *y = static_cast<uint32_t *>(outputs[0].data);
  bool identity = true;
  for (int64_t g = 0; g < r; ++g)
    identity = identity && mergedPerm[g] == g;
  if (identity) {
    copyDevice(ctx, y, x, n * 4);
    return;
  }
  bool batched2d =
      r >= 2 && mergedPerm[r - 1] == r - 2 && mergedPerm[r - 2] == r - 1;
  for (int64_t g = 0; g + 2 < r; ++g)
    batched2d = batched2d && mergedPerm[g] == g;
  if (batched2d) {
    int64_t rows = mergedIn[r - 2], cols = mergedIn[r - 1];
    int64_t batch = n / (rows * cols);
    int64_t tilesR = ceilDiv(rows, kTile);
    if (tilesR <= 65535) {
      dim3 grid((unsigned)ceilDiv(cols, kTile), (unsigned)tilesR,
                (unsigned)std::min<int64_t>(batch, 65535));
      transposeTileKernel<<<grid, dim3(kTile, 8), 0, ctx.stream>>>(x, y, batch,
                                                                   rows, cols);
      STRATA_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  if (r > kMaxTransposeRank)
    throw std::runtime_error(
        "transpose: more than " + std::to_string(kMaxTransposeRank) +
        " dimensions remain after merging, which the CUDA kernel does not "
        "support");
  TransposeParams params;
  params.rank = (int)r;
  std::vector<int64_t> stride(r, 1);
  for (int64_t d = r - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * mergedIn[d + 1];
  for (int64_t g = 0; g < r; ++g) {
    params.outSize[g] = mergedIn[mergedPerm[g]];
    params.inStride[g] = stride[mergedPerm[g]];
  }
  transposeGatherKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(x, y, n,
                                                                 params);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// fill
//===----------------------------------------------------------------------===//

__global__ void fillKernel(uint32_t *__restrict__ y, int64_t n, uint32_t bits) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = bits;
}

__global__ void scaleKernel(const float *x, float *y, int64_t n, float factor) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[i] * factor;
}

void runScale(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
              const OpAttrs &attrs) {
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  scaleKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), outputs[0].f32(), n, static_cast<float>(attrs.factor));
  STRATA_CUDA_CHECK_LAUNCH();
}

/// Block `index` of the rows: one contiguous stream-ordered copy.
void runMicroBatch(CudaContext &ctx, const Tensors &inputs,
                   const Tensors &outputs, const OpAttrs &attrs) {
  int64_t bytes = outputs[0].desc.bytes();
  copyDevice(ctx, outputs[0].data,
             static_cast<const char *>(inputs[0].data) + attrs.index * bytes,
             bytes);
}

void runFill(CudaContext &ctx, const Tensors &, const Tensors &outputs,
             const OpAttrs &attrs) {
  double value = attrs.value;
  int64_t n = outputs[0].numel();
  if (n == 0)
    return;
  uint32_t bits;
  if (outputs[0].desc.dtype == DType::I32) {
    int32_t v = (int32_t)value;
    std::memcpy(&bits, &v, 4);
  } else {
    float v = (float)value;
    std::memcpy(&bits, &v, 4);
  }
  if (bits == 0) {
    STRATA_CUDA_CHECK(
        cudaMemsetAsync(outputs[0].data, 0, (size_t)n * 4, ctx.stream));
    return;
  }
  fillKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      static_cast<uint32_t *>(outputs[0].data), n, bits);
  STRATA_CUDA_CHECK_LAUNCH();
}

} // namespace

void appendDenseCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::Matmul, runMatmul});
  kernels.push_back({OpCode::FusedMatmul, runFusedMatmul});
  kernels.push_back({OpCode::Add, runAdd});
  kernels.push_back({OpCode::Relu, runRelu});
  kernels.push_back({OpCode::ReluGrad, runReluGrad});
  kernels.push_back({OpCode::Gelu, runGelu});
  kernels.push_back({OpCode::GeluGrad, runGeluGrad});
  kernels.push_back({OpCode::BiasAdd, runBiasAdd});
  kernels.push_back({OpCode::BiasAddGrad, runBiasAddGrad, biasAddGradScratch});
  kernels.push_back({OpCode::Reshape, runCopy});
  kernels.push_back({OpCode::Flatten, runCopy});
  // copy_into: input 0 into the buffer of input 1 (the output).
  kernels.push_back({OpCode::CopyInto, runCopy});
  kernels.push_back({OpCode::Transpose, runTranspose});
  kernels.push_back({OpCode::Fill, runFill});
  kernels.push_back({OpCode::Scale, runScale});
  kernels.push_back({OpCode::MicroBatch, runMicroBatch});
}

} // namespace strata::rt::cuda::detail
