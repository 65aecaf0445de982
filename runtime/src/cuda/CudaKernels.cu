//===- CudaKernels.cu - CUDA kernel registry and shared helpers -----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <climits>
#include <cstring>
#include <stdexcept>

namespace strata::rt::cuda {
namespace detail {

void throwCudaError(cudaError_t error, const char *what, const char *file,
                    int line) {
  throw std::runtime_error(std::string(what) + " failed at " + file + ":" +
                           std::to_string(line) + ": " +
                           cudaGetErrorString(error));
}

void throwCublasError(cublasStatus_t status, const char *what, const char *file,
                      int line) {
  throw std::runtime_error(std::string(what) + " failed at " + file + ":" +
                           std::to_string(line) + ": " +
                           cublasGetStatusString(status));
}

AxisView axisView(const Shape &shape, int64_t axis) {
  AxisView view;
  for (int64_t i = 0; i < (int64_t)shape.size(); ++i) {
    if (i < axis)
      view.outer *= shape[i];
    else if (i == axis)
      view.dim = shape[i];
    else
      view.inner *= shape[i];
  }
  return view;
}

void copyDevice(CudaContext &ctx, void *y, const void *x, int64_t bytes) {
  if (x == y || bytes == 0)
    return;
  STRATA_CUDA_CHECK(cudaMemcpyAsync(y, x, (size_t)bytes,
                                    cudaMemcpyDeviceToDevice, ctx.stream));
}

/// cuBLAS is column-major: the row-major C = op(A) op(B) is the column-major
/// C^T = op(B)^T op(A)^T, i.e. the same call with A and B (and m and n)
/// swapped, each operand read with its row-major leading dimension.
static void cublasGemm(CudaContext &ctx, bool transA, bool transB, int64_t m,
                       int64_t n, int64_t k, float alpha, const float *a,
                       int64_t lda, int64_t strideA, const float *b,
                       int64_t ldb, int64_t strideB, float beta, float *c,
                       int64_t ldc, int64_t strideC, int64_t batch) {
  if (!ctx.cublas)
    throw std::runtime_error("matmul: the CUDA context has no cuBLAS handle");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX || batch > INT_MAX)
    throw std::runtime_error("matmul: sizes must fit in 31 bits for cuBLAS");
  STRATA_CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
  STRATA_CUBLAS_CHECK(
      cublasSetMathMode(ctx.cublas, ctx.allowTf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                  : CUBLAS_DEFAULT_MATH));
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batch == 1) {
    STRATA_CUBLAS_CHECK(cublasSgemm(ctx.cublas, opB, opA, (int)n, (int)m,
                                    (int)k, &alpha, b, (int)ldb, a, (int)lda,
                                    &beta, c, (int)ldc));
    return;
  }
  STRATA_CUBLAS_CHECK(cublasSgemmStridedBatched(
      ctx.cublas, opB, opA, (int)n, (int)m, (int)k, &alpha, b, (int)ldb,
      (long long)strideB, a, (int)lda, (long long)strideA, &beta, c, (int)ldc,
      (long long)strideC, (int)batch));
}

/// C = beta C for `batch` m x n matrices (a GEMM with k == 0).
__global__ void scaleMatricesKernel(float *c, int64_t m, int64_t n, int64_t ldc,
                                    int64_t strideC, int64_t batch,
                                    float beta) {
  int64_t total = batch * m * n;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t z = i / (m * n), r = i / n % m, col = i % n;
    float *p = c + z * strideC + r * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

void gemmBf16(CudaContext &ctx, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, float alpha, const float *a, int64_t lda,
              int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
              float beta, float *c, int64_t ldc, int64_t strideC,
              int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0) // C = beta C, as the f32 path computes it.
    return gemm(ctx, transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb,
                strideB, beta, c, ldc, strideC, batch);
  if (!ctx.cublas)
    throw std::runtime_error("matmul: the CUDA context has no cuBLAS handle");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX || batch > INT_MAX)
    throw std::runtime_error("matmul: sizes must fit in 31 bits for cuBLAS");
  STRATA_CUBLAS_CHECK(cublasSetStream(ctx.cublas, ctx.stream));
  cublasOperation_t opA = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // f32 in and out; the tensor cores take the operands rounded to bf16 and
  // accumulate in f32.
  constexpr cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_16BF;
  if (batch == 1) {
    STRATA_CUBLAS_CHECK(cublasGemmEx(ctx.cublas, opB, opA, (int)n, (int)m,
                                     (int)k, &alpha, b, CUDA_R_32F, (int)ldb, a,
                                     CUDA_R_32F, (int)lda, &beta, c, CUDA_R_32F,
                                     (int)ldc, compute, CUBLAS_GEMM_DEFAULT));
    return;
  }
  STRATA_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      ctx.cublas, opB, opA, (int)n, (int)m, (int)k, &alpha, b, CUDA_R_32F,
      (int)ldb, (long long)strideB, a, CUDA_R_32F, (int)lda, (long long)strideA,
      &beta, c, CUDA_R_32F, (int)ldc, (long long)strideC, (int)batch, compute,
      CUBLAS_GEMM_DEFAULT));
}

void gemm(CudaContext &ctx, bool transA, bool transB, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t lda, int64_t strideA,
          const float *b, int64_t ldb, int64_t strideB, float beta, float *c,
          int64_t ldc, int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (k == 0) {
    // Both engines would too, but BLAS libraries differ on k == 0 corner
    // cases; be explicit.
    scaleMatricesKernel<<<gridFor(batch * m * n), kThreads, 0, ctx.stream>>>(
        c, m, n, ldc, strideC, batch, beta);
    STRATA_CUDA_CHECK_LAUNCH();
    return;
  }
  if (ctx.gemm == GemmEngine::Strata) {
    CudaGemmTiling tiling =
        cudaGemmTilingFor(ctx.tiling, m, n, k, batch, ctx.multiprocessors);
    strataGemm(ctx.stream, tiling, transA, transB, m, n, k, alpha, a, lda,
               strideA, b, ldb, strideB, beta, c, ldc, strideC, batch);
    return;
  }
  cublasGemm(ctx, transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb,
             strideB, beta, c, ldc, strideC, batch);
}

} // namespace detail

namespace {

const std::vector<detail::CudaKernelEntry> &registry() {
  static const std::vector<detail::CudaKernelEntry> kernels = [] {
    std::vector<detail::CudaKernelEntry> all;
    detail::appendDenseCudaKernels(all);
    detail::appendNNCudaKernels(all);
    detail::appendConvCudaKernels(all);
    detail::appendOptimCudaKernels(all);
    detail::appendCommCudaKernels(all);
    detail::appendAsyncCudaKernels(all);
    detail::appendCopyCudaKernels(all);
    detail::appendCompressCudaKernels(all);
    detail::appendSliceCudaKernels(all);
    std::sort(all.begin(), all.end(),
              [](const detail::CudaKernelEntry &a,
                 const detail::CudaKernelEntry &b) { return a.op < b.op; });
    return all;
  }();
  return kernels;
}

const detail::CudaKernelEntry *lookupEntry(OpCode op) {
  const std::vector<detail::CudaKernelEntry> &all = registry();
  auto it = std::lower_bound(
      all.begin(), all.end(), op,
      [](const detail::CudaKernelEntry &k, OpCode o) { return k.op < o; });
  if (it == all.end() || it->op != op)
    return nullptr;
  return &*it;
}

} // namespace

CudaKernelFn lookupCudaKernel(OpCode op) {
  const detail::CudaKernelEntry *entry = lookupEntry(op);
  return entry ? entry->run : nullptr;
}

CudaGroupKernelFn lookupCudaGroupKernel(OpCode op) {
  const detail::CudaKernelEntry *entry = lookupEntry(op);
  return entry ? entry->group : nullptr;
}

CudaKernelFn lookupCudaKernel(const std::string &name) {
  OpCode op;
  return lookupOpCode(name, op) ? lookupCudaKernel(op) : nullptr;
}

std::vector<std::string> cudaKernelNames() {
  std::vector<std::string> names;
  for (const detail::CudaKernelEntry &k : registry())
    names.push_back(opName(k.op));
  return names;
}

size_t cudaScratchBytes(OpCode op, const std::vector<TensorDesc> &inputs,
                        const std::vector<TensorDesc> &outputs,
                        const OpAttrs &attrs) {
  const detail::CudaKernelEntry *entry = lookupEntry(op);
  if (!entry || !entry->scratch)
    return 0;
  return entry->scratch(inputs, outputs, attrs);
}

} // namespace strata::rt::cuda
