//===- CudaKernelsInternal.h - Shared helpers of the CUDA kernels -*- C++ -*-=//
//
// Part of the Strata runtime, which never includes an MLIR header. Included
// only by the CUDA kernel sources (.cu): error checks, launch configuration,
// deterministic reductions, scratch carving, the GEMM dispatch shared by
// matmul and the convolutions, and the per-file kernel tables that
// CudaKernels.cu gathers into the registry.
//
// Determinism: no kernel uses floating-point atomics. Every reduction runs
// in a fixed order that depends only on the shapes (and, for chunked
// reductions, on the scratch size), so a kernel gives the same bits run to
// run on a given device.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CUDA_KERNELSINTERNAL_H
#define STRATA_RT_CUDA_KERNELSINTERNAL_H

#include "CudaKernels.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace strata::rt::cuda::detail {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Throws std::runtime_error "<what> failed at <file>:<line>: <error string>".
[[noreturn]] void throwCudaError(cudaError_t error, const char *what,
                                 const char *file, int line);
[[noreturn]] void throwCublasError(cublasStatus_t status, const char *what,
                                   const char *file, int line);

/// Checks a CUDA runtime call; throws with cudaGetErrorString on failure.
#define STRATA_CUDA_CHECK(expr)                                                \
  do {                                                                         \
    cudaError_t strataCudaError = (expr);                                      \
    if (strataCudaError != cudaSuccess)                                        \
      ::strata::rt::cuda::detail::throwCudaError(strataCudaError, #expr,       \
                                                 __FILE__, __LINE__);          \
  } while (0)

/// Checks a cuBLAS call; throws with cublasGetStatusString on failure.
#define STRATA_CUBLAS_CHECK(expr)                                              \
  do {                                                                         \
    cublasStatus_t strataCublasStatus = (expr);                                \
    if (strataCublasStatus != CUBLAS_STATUS_SUCCESS)                           \
      ::strata::rt::cuda::detail::throwCublasError(strataCublasStatus, #expr,  \
                                                   __FILE__, __LINE__);        \
  } while (0)

/// Checks the launch just made (bad configuration, missing kernel image).
#define STRATA_CUDA_CHECK_LAUNCH() STRATA_CUDA_CHECK(cudaGetLastError())

//===----------------------------------------------------------------------===//
// Launch configuration
//===----------------------------------------------------------------------===//

/// Threads per block of the element-wise and row kernels.
constexpr int kThreads = 256;
/// Grid-stride kernels launch at most this many blocks (enough to fill any
/// current GPU several times over).
constexpr int64_t kMaxBlocks = 1 << 16;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// min/max usable in device code (std:: ones are host-only constexpr).
__host__ __device__ __forceinline__ int64_t minI64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__host__ __device__ __forceinline__ int64_t maxI64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/// Blocks of `threads` threads for a grid-stride loop over n items.
inline unsigned gridFor(int64_t n, int threads = kThreads) {
  return (unsigned)std::max<int64_t>(
      1, std::min<int64_t>(ceilDiv(n, threads), kMaxBlocks));
}

/// Whether every pointer is 16-byte aligned (float4 access).
inline bool aligned16(std::initializer_list<const void *> pointers) {
  for (const void *p : pointers)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Deterministic reductions
//===----------------------------------------------------------------------===//

/// Butterfly sum over a warp; every lane gets the same bits (each step adds
/// the same two values, in either order, on both partner lanes).
template <typename T> __device__ __forceinline__ T warpSum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <typename T> __device__ __forceinline__ T warpMax(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    T other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

/// Sum over a group of TPR threads that handle one row: a warp (TPR == 32)
/// or the whole block (TPR == blockDim.x, a multiple of 32). Every thread of
/// the group gets the same bits. With TPR == blockDim.x every thread of the
/// block must call it (it synchronises).
template <int TPR, typename T> __device__ __forceinline__ T groupSum(T v) {
  v = warpSum(v);
  if constexpr (TPR == 32) {
    return v;
  } else {
    __shared__ T partial[TPR / 32];
    if (threadIdx.x % 32 == 0)
      partial[threadIdx.x / 32] = v;
    __syncthreads();
    T total = partial[0];
#pragma unroll
    for (int w = 1; w < TPR / 32; ++w)
      total += partial[w];
    __syncthreads(); // `partial` may be reused by the next call
    return total;
  }
}

template <int TPR, typename T> __device__ __forceinline__ T groupMax(T v) {
  v = warpMax(v);
  if constexpr (TPR == 32) {
    return v;
  } else {
    __shared__ T partial[TPR / 32];
    if (threadIdx.x % 32 == 0)
      partial[threadIdx.x / 32] = v;
    __syncthreads();
    T total = partial[0];
#pragma unroll
    for (int w = 1; w < TPR / 32; ++w)
      total = partial[w] > total ? partial[w] : total;
    __syncthreads();
    return total;
  }
}

/// Row kernels use a warp per row up to this length, else a block per row.
constexpr int64_t kWarpRowLimit = 1024;

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

/// Sub-buffers of scratch start at multiples of this.
constexpr size_t kScratchAlign = 256;

inline size_t alignUp(size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

/// Carves aligned sub-buffers out of CudaContext::scratch.
class ScratchArena {
public:
  explicit ScratchArena(const CudaContext &ctx)
      : base(static_cast<char *>(ctx.scratch)),
        size(ctx.scratch ? ctx.scratchBytes : 0) {}
  size_t available() const { return size - used; }
  /// The largest count such that `buffers` buffers of `count` elements of
  /// `elementBytes` each still fit.
  int64_t maxCount(size_t elementBytes, int buffers = 1) const {
    size_t each = available() / buffers / kScratchAlign * kScratchAlign;
    return (int64_t)(each / elementBytes);
  }
  /// `count` elements of T, or nullptr when they do not fit.
  template <typename T> T *take(size_t count) {
    size_t bytes = alignUp(count * sizeof(T));
    if (bytes > size - used)
      return nullptr;
    T *p = reinterpret_cast<T *>(base + used);
    used += bytes;
    return p;
  }

private:
  char *base;
  size_t size;
  size_t used = 0;
};

//===----------------------------------------------------------------------===//
// Shared pieces
//===----------------------------------------------------------------------===//

/// C = alpha op(A) op(B) + beta C (row-major, batched at element strides,
/// stride 0 broadcasts) with the engine of `ctx`: cuBLAS (FP32, TF32 only
/// when ctx.allowTf32) or strataGemm with ctx.tiling.
void gemm(CudaContext &ctx, bool transA, bool transB, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t lda, int64_t strideA,
          const float *b, int64_t ldb, int64_t strideB, float beta, float *c,
          int64_t ldc, int64_t strideC, int64_t batch);

/// gemm for a bf16 matmul: cuBLAS with f32 operands rounded to bf16 on the
/// tensor cores and f32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF), whatever
/// engine (--gemm) f32 products use.
void gemmBf16(CudaContext &ctx, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, float alpha, const float *a, int64_t lda,
              int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
              float beta, float *c, int64_t ldc, int64_t strideC,
              int64_t batch);

/// y = x for `bytes` bytes on ctx.stream (nothing when they are the same).
void copyDevice(CudaContext &ctx, void *y, const void *x, int64_t bytes);

/// Chunks of rows for the two-pass column sums of a [rows, cols] matrix:
/// enough blocks of 32 columns x one chunk to fill a GPU, chunks of at least
/// 32 rows, at most 256 chunks. Depends only on the shape.
int64_t columnChunks(int64_t rows, int64_t cols);

/// Pass 2 of the column sums: out[j] = sum over c, in order, of
/// partial[c cols + j].
void sumChunks(CudaContext &ctx, const float *partial, int64_t chunks,
               int64_t cols, float *out);

/// Normalises an axis attribute (negative counts from the end).
inline int64_t normaliseAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// [outer, dim, inner] view of a shape around `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};
AxisView axisView(const Shape &shape, int64_t axis);

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

/// Scratch bytes of the fastest path for these operands.
using CudaScratchFn = size_t (*)(const Descs &inputs, const Descs &outputs,
                                 const OpAttrs &attrs);

struct CudaKernelEntry {
  OpCode op;
  CudaKernelFn run;
  CudaScratchFn scratch = nullptr;
  CudaGroupKernelFn group = nullptr;
};

void appendDenseCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendNNCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendConvCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendOptimCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendCommCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendAsyncCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendCopyCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendCompressCudaKernels(std::vector<CudaKernelEntry> &kernels);
void appendSliceCudaKernels(std::vector<CudaKernelEntry> &kernels);

} // namespace strata::rt::cuda::detail

#endif // STRATA_RT_CUDA_KERNELSINTERNAL_H
