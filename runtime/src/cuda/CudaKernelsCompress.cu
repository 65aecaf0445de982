//===- CudaKernelsCompress.cu - Activation codecs on the GPU --------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// compress: one warp per format block (8 per thread block, grid-stride over
// the blocks). Each lane loads up to two elements into shared memory, the
// warp reduces the block's largest magnitude, lane 0 picks bfp-outlier's
// outliers (the CPU's serial rule: K passes, ties to the lowest index), the
// lanes encode their elements with the CPU's per-element functions
// (cpu/CompressCodec.h) and then assemble the packed bytes, one byte per
// lane. decompress: one thread per element (grid-stride), which reads its
// block's scale byte and its code.
//
// No floating-point atomics and no reductions whose order matters (the
// largest magnitude is an integer maximum): the bytes are the CPU's.
//
//===----------------------------------------------------------------------===//

#include "CudaCompress.h"
#include "CudaKernelsInternal.h"

#include "strata-rt/Compression.h"
#include "strata-rt/ThreadPool.h"

#include <stdexcept>
#include <vector>

#include "cpu/CompressCodec.h"

using namespace strata_plan;

namespace strata::rt::cuda {
namespace {
using namespace strata::rt::codec;

constexpr int kWarpsPerBlock = 8;

/// Format parameters, computed on the host.
struct CodecArgs {
  ActFormat f;
  int bits;           // code bits per element
  int codesBytes;     // bytes of the codes region of a block
  int64_t blockBytes; // bytes of a packed block
  int64_t blocks;     // format blocks
};

__device__ __forceinline__ uint32_t warpMaxU32(uint32_t v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}

__global__ void compressKernel(CodecArgs a, const float *in, int64_t n,
                               uint8_t *out, uint64_t seed) {
  __shared__ uint32_t xs[kWarpsPerBlock][64];
  __shared__ uint16_t codes[kWarpsPerBlock][64];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int B = a.f.block;
  uint32_t *x = xs[warp];
  uint16_t *c = codes[warp];
  for (int64_t b = int64_t(blockIdx.x) * kWarpsPerBlock + warp; b < a.blocks;
       b += int64_t(gridDim.x) * kWarpsPerBlock) {
    const int64_t first = b * B;
    uint8_t *dst = out + b * a.blockBytes;
    uint32_t amax = 0;
    for (int i = lane; i < B; i += 32) {
      x[i] = first + i < n ? floatBits(in[first + i]) : 0u;
      amax = max(amax, x[i] & 0x7FFFFFFFu);
    }
    amax = warpMaxU32(amax);
    __syncwarp();
    if (amax >= 0x7F800000u) { // NaN or Inf: a NaN block
      for (int64_t j = lane; j < a.blockBytes; j += 32)
        dst[j] = j == 0 ? kNanScale : 0;
      __syncwarp();
      continue;
    }
    if (a.f.kind == ActKind::BfpOutlier) {
      if (lane == 0) {
        uint8_t *triples = dst + 1 + a.codesBytes;
        uint64_t taken = 0;
        for (int k = 0; k < a.f.outliers; ++k) {
          int best = 0;
          int64_t bestMag = -1;
          for (int i = 0; i < B; ++i) {
            int64_t m = (taken >> i) & 1 ? -1 : int64_t(x[i] & 0x7FFFFFFFu);
            if (m > bestMag) {
              best = i;
              bestMag = m;
            }
          }
          uint16_t h = bf16Encode(x[best]);
          triples[3 * k] = uint8_t(best);
          triples[3 * k + 1] = uint8_t(h & 0xFF);
          triples[3 * k + 2] = uint8_t(h >> 8);
          taken |= uint64_t(1) << best;
        }
        for (int i = 0; i < B; ++i)
          if ((taken >> i) & 1)
            x[i] = 0; // encodes as code 0, out of the exponent
      }
      __syncwarp();
      amax = 0;
      for (int i = lane; i < B; i += 32)
        amax = max(amax, x[i] & 0x7FFFFFFFu);
      amax = warpMaxU32(amax);
    }
    int scale;
    if (a.f.kind == ActKind::Bf16) {
      scale = 0; // the flag byte 127: not a NaN block
      for (int i = lane; i < B; i += 32)
        c[i] = bf16Encode(x[i]);
    } else if (a.f.kind == ActKind::Mx) {
      const MxSpec sp = mxSpec(a.f.element);
      scale = mxScaleExp(amax, sp, a.f.scale);
      for (int i = lane; i < B; i += 32)
        c[i] = uint16_t(mxEncode(x[i], scale, sp));
    } else if (a.f.kind == ActKind::BfpNonUniform) {
      scale = bfpNuExp(amax);
      for (int i = lane; i < B; i += 32)
        c[i] = uint16_t(bfpNuEncode(x[i], scale, a.f.mantissaBits));
    } else {
      scale = bfpExp(amax);
      const bool stochastic = a.f.rounding == ActRounding::Stochastic;
      const uint32_t key =
          stochastic ? randomKey(seed, uint32_t(uint64_t(first) >> 32)) : 0u;
      for (int i = lane; i < B; i += 32) {
        uint32_t r =
            stochastic ? random24(key, uint32_t(first) + uint32_t(i)) : 0u;
        c[i] =
            uint16_t(bfpEncode(x[i], scale, a.f.mantissaBits, stochastic, r));
      }
    }
    __syncwarp();
    if (lane == 0)
      dst[0] = uint8_t(scale + 127);
    for (int j = lane; j < a.codesBytes; j += 32)
      dst[1 + j] = packedByte(c, B, a.bits, j);
    __syncwarp();
  }
}

__global__ void decompressKernel(CodecArgs a, const uint8_t *in, int64_t n,
                                 float *out) {
  const int B = a.f.block;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = idx / B;
    const int i = int(idx - b * B);
    const uint8_t *src = in + b * a.blockBytes;
    if (src[0] == kNanScale) {
      out[idx] = bitsFloat(kQuietNan);
      continue;
    }
    const int scale = int(src[0]) - 127;
    const uint32_t code = unpackCode(src + 1, a.bits, i);
    float v;
    if (a.f.kind == ActKind::Bf16)
      v = bf16Decode(uint16_t(code));
    else if (a.f.kind == ActKind::Mx)
      v = mxDecode(code, mxSpec(a.f.element)) * pow2f(scale);
    else if (a.f.kind == ActKind::BfpNonUniform)
      v = bfpNuDecode(code, scale, a.f.mantissaBits);
    else
      v = bfpDecode(code, scale, a.f.mantissaBits);
    if (a.f.kind == ActKind::BfpOutlier) {
      const uint8_t *triples = src + 1 + a.codesBytes;
      for (int k = 0; k < a.f.outliers; ++k)
        if (triples[3 * k] == i)
          v = bf16Decode(
              uint16_t(triples[3 * k + 1] | triples[3 * k + 2] << 8));
    }
    out[idx] = v;
  }
}

CodecArgs codecArgs(const ActFormat &f, int64_t n) {
  CodecArgs a;
  a.f = f;
  a.bits = actElementBits(f);
  a.codesBytes = (f.block * a.bits + 7) / 8;
  a.blockBytes = actBlockBytes(f);
  a.blocks = (n + f.block - 1) / f.block;
  return a;
}

} // namespace

void compressActivations(cudaStream_t stream, const ActFormat &f,
                         const float *in, int64_t n, uint8_t *out,
                         uint64_t seed) {
  if (n <= 0)
    return;
  if (f.isNone()) {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(out, in, size_t(n) * 4,
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  CodecArgs a = codecArgs(f, n);
  unsigned grid = unsigned(std::max<int64_t>(
      1, std::min<int64_t>(detail::ceilDiv(a.blocks, kWarpsPerBlock),
                           detail::kMaxBlocks)));
  compressKernel<<<grid, 32 * kWarpsPerBlock, 0, stream>>>(a, in, n, out, seed);
  STRATA_CUDA_CHECK_LAUNCH();
}

void decompressActivations(cudaStream_t stream, const ActFormat &f,
                           const uint8_t *in, int64_t n, float *out) {
  if (n <= 0)
    return;
  if (f.isNone()) {
    STRATA_CUDA_CHECK(cudaMemcpyAsync(out, in, size_t(n) * 4,
                                      cudaMemcpyDeviceToDevice, stream));
    return;
  }
  CodecArgs a = codecArgs(f, n);
  decompressKernel<<<detail::gridFor(n), detail::kThreads, 0, stream>>>(a, in,
                                                                        n, out);
  STRATA_CUDA_CHECK_LAUNCH();
}

namespace detail {
namespace {

/// The plan ops: the site's format in use (strata-rt/Compression.h). A
/// measurement step copies the input to the host and measures every
/// candidate with the CPU codecs (every --compress-every steps only).
void runCompress(CudaContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &attrs) {
  if (!ctx.compression)
    throw std::runtime_error("compress: the executor has no compression "
                             "sites");
  CompressionSite &site = ctx.compression->site(attrs.site, "compress");
  uint64_t seed = ctx.compression->siteSeed(attrs.site);
  const Tensor &in = inputs[0];
  if (ctx.compression->isMeasuring() && site.budget > 0) {
    std::vector<float> host(static_cast<size_t>(in.numel()));
    STRATA_CUDA_CHECK(cudaMemcpyAsync(host.data(), in.data, in.desc.bytes(),
                                      cudaMemcpyDeviceToHost, ctx.stream));
    STRATA_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    ThreadPool pool(1);
    ctx.compression->choose(
        attrs.site,
        measureCandidates(pool, site, host.data(), in.numel(), seed));
  }
  compressActivations(ctx.stream, site.format(), in.f32(), in.numel(),
                      outputs[0].bytes(), seed);
}

void runDecompress(CudaContext &ctx, const Tensors &inputs,
                   const Tensors &outputs, const OpAttrs &attrs) {
  if (!ctx.compression)
    throw std::runtime_error("decompress: the executor has no compression "
                             "sites");
  CompressionSite &site = ctx.compression->site(attrs.site, "decompress");
  decompressActivations(ctx.stream, site.format(), inputs[0].bytes(),
                        outputs[0].numel(), outputs[0].f32());
}

} // namespace

void appendCompressCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::Compress, runCompress});
  kernels.push_back({OpCode::Decompress, runDecompress});
}

} // namespace detail

} // namespace strata::rt::cuda
