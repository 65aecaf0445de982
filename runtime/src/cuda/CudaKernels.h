//===- CudaKernels.h - CUDA kernels of the plan's instructions --*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header. Only the
// CUDA backend (built where nvcc is found) includes this header.
//
// One CUDA implementation per plan op, with exactly the semantics of the CPU
// kernel of the same name (docs/plan-format.md). Instructions were verified
// by the CPU kernels' `verify` when the plan was loaded, so a CUDA kernel
// assumes valid shapes and attributes. Tensors hold device pointers into the
// rank's device arena. Every kernel is enqueued on `ctx.stream` and returns
// without synchronising; it throws std::runtime_error (with the CUDA or
// cuBLAS error string) when a launch or library call fails.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CUDA_KERNELS_H
#define STRATA_RT_CUDA_KERNELS_H

#include "strata-rt/Comm.h"
#include "strata-rt/PlanOps.h"
#include "strata-rt/Tensor.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata::rt {
class CompressionState;
} // namespace strata::rt

namespace strata::rt::cuda {

/// How matmul instructions are computed.
enum class GemmEngine {
  /// cuBLAS (cublasSgemmStridedBatched, FP32; TF32 tensor cores when
  /// `allowTf32`).
  Cublas,
  /// Strata's own tiled CUDA GEMM (block/warp/thread tiles, k-step).
  Strata,
};

/// Tiling of Strata's own CUDA GEMM: a thread block computes a
/// blockM x blockN tile of C, stepping over k by kStep; each thread computes
/// a threadM x threadN register tile. Legal when blockM % threadM == 0,
/// blockN % threadN == 0, (blockM/threadM)*(blockN/threadN) is a multiple of
/// 32 and at most 1024, and the shared-memory tiles (blockM + blockN) * kStep
/// floats fit in 48 KiB.
///
/// `splitK` > 1 slices k into at most that many ranges of whole float4s
/// (split-K; ceil(k / splitK) rounded up to a multiple of 4 each, the last
/// shorter): each range's product is a batch entry of its own, written to a
/// stream-ordered device workspace (cudaMallocAsync, outside the planned
/// arena; the memory pool may hand it back at each synchronisation), and a
/// second kernel sums the slices in slice order and applies alpha and beta.
/// This fills the SMs when m x n has few tiles; results stay deterministic
/// but are not the unsliced bits. From 1 to 64. The product runs unsliced
/// when it is batched, when k fits one slice, or when the workspace would
/// pass 1 GiB or cannot be allocated.
struct CudaGemmTiling {
  int blockM = 128;
  int blockN = 128;
  int kStep = 16;
  int threadM = 8;
  int threadN = 8;
  int splitK = 1;
};
/// Empty when `t` is legal, else why not.
std::string verifyCudaGemmTiling(const CudaGemmTiling &t);
/// "BMxBNxK/TMxTN", with "/sS" for S > 1 k slices (messages, benchmarks).
std::string cudaGemmTilingName(const CudaGemmTiling &t);
/// The compiled tiling that strataGemm runs for the legal tiling `t`. The
/// kernel is instantiated for 128x128x16/8x8 (the default), 128x64x16/8x8,
/// 64x64x16/8x8, 64x64x16/4x8, 64x64x16/4x4, 128x128x8/8x8, 128x64x8/8x8,
/// 64x128x8/8x8, 64x64x8/4x4 and 32x32x8/2x2; any other legal tiling runs
/// the nearest of those (smallest sum over the five parameters of
/// |log2(asked / compiled)|, ties to the earlier in that list). Register
/// tiles in multiples of 4 take a vectorised kernel (float4 loads and
/// stores) when the operands are 16-byte aligned with leading dimensions
/// and batch strides in whole float4s (each element of C is still summed by
/// one thread in k order). `splitK` is kept as asked.
CudaGemmTiling compiledCudaGemmTiling(const CudaGemmTiling &t);
/// The tiling strataGemm runs for an m x n x k product (`batch` of them)
/// when `asked` is the default tiling on a device of `multiprocessors` SMs:
/// the default when its 128x128 blocks fill three quarters of the SMs;
/// else, for a single product, the default sliced along k into as many
/// ranges as fill two blocks per SM, each at least kCudaGemmMinSliceK deep
/// (1024^3 on 132 SMs: 4 slices); else the first of 128x64x16 and
/// 64x64x16 (8x8 register tiles) whose blocks fill three quarters of the
/// SMs, else the last (bench/gpu.md has the measurements). Any other
/// `asked` tiling is kept.
CudaGemmTiling cudaGemmTilingFor(const CudaGemmTiling &asked, int64_t m,
                                 int64_t n, int64_t k, int64_t batch,
                                 int multiprocessors);
/// The shallowest k range cudaGemmTilingFor slices a product into.
constexpr int64_t kCudaGemmMinSliceK = 256;

/// A host swap slot of activation swapping: pinned host memory of the
/// slot's swapped buffer, and the events that order its copies: `ready` is
/// recorded on the compute stream before a copy (the copy stream waits for
/// it), `done` on the copy stream after it (the wait makes the compute
/// stream wait for it).
struct CudaSwapSlot {
  void *host = nullptr;
  size_t bytes = 0;
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
  /// A copy was started and not yet waited for.
  bool inFlight = false;
};

/// What CUDA kernels get besides their operands.
struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  GemmEngine gemm = GemmEngine::Cublas;
  CudaGemmTiling tiling;
  /// The device's SM count (0: unknown). With the default `tiling`, a
  /// product whose 128x128 tiles would leave SMs idle runs with k sliced or
  /// smaller tiles (cudaGemmTilingFor).
  int multiprocessors = 0;
  bool allowTf32 = false;
  /// Device scratch of `scratchBytes` bytes that a kernel may use for the
  /// duration of its launch sequence (reductions, im2col, sorting);
  /// stream-ordered, aligned to 256 bytes. Size it with cudaScratchBytes.
  void *scratch = nullptr;
  size_t scratchBytes = 0;
  /// The ranks of a multi-rank run (an NCCL communicator whose buffers are
  /// device pointers), or nullptr for one rank.
  Communicator *comm = nullptr;
  /// Communicators of the plan's groups (collectives' `group` attribute),
  /// nullptr where this rank is not a member; empty: group 0 is `comm`. As
  /// KernelContext::groups.
  std::vector<Communicator *> groups = {};
  /// Pipelines: the rank of `comm` that runs each stage in this rank's
  /// replica (send and recv name stages); empty when not a pipeline.
  std::vector<int> stageRanks = {};
  /// Sends started this step whose completion later work has not been
  /// ordered after yet. The backend makes the compute stream wait for them
  /// (device-side; the host does not block) before an instruction that
  /// updates a buffer in place and at the end of the step.
  std::vector<std::unique_ptr<Request>> pendingSends = {};
  /// Activation swapping: the stream host copies run on (the backend's copy
  /// stream) and the host slots by slot number (owned by the backend).
  cudaStream_t copyStream = nullptr;
  std::map<int64_t, CudaSwapSlot> swapSlots = {};
  /// Compressed activations (compress, decompress): the executor's sites
  /// (not owned); nullptr when the program has none.
  CompressionState *compression = nullptr;
  /// Evaluation (inference mode): batch_norm normalises with its running
  /// statistics and leaves them unchanged. As KernelContext::evaluation.
  bool evaluation = false;
};

using CudaKernelFn = void (*)(CudaContext &ctx,
                              const std::vector<Tensor> &inputs,
                              const std::vector<Tensor> &outputs,
                              const OpAttrs &attrs);

/// The CUDA kernel of plan op `op`, or nullptr when there is none.
/// One instruction of a multi-tensor group (device tensors).
struct CudaKernelCall {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const OpAttrs *attrs = nullptr;
};

/// Runs a multi-tensor group (multiTensorRuns in Plan.h) with as few
/// launches as the kernel's argument table allows.
using CudaGroupKernelFn = void (*)(CudaContext &ctx,
                                   const std::vector<CudaKernelCall> &calls);

CudaKernelFn lookupCudaKernel(OpCode op);
/// The multi-tensor form of `op`, or nullptr when it has none.
CudaGroupKernelFn lookupCudaGroupKernel(OpCode op);
/// As above, by mnemonic.
CudaKernelFn lookupCudaKernel(const std::string &name);
/// Names of every op that has a CUDA kernel, sorted.
std::vector<std::string> cudaKernelNames();

/// Bytes of CudaContext::scratch with which the CUDA kernel of `op` takes its
/// fastest path for these operands (0 for ops that need none or unknown ops);
/// a backend sizes its scratch as the maximum over a plan's instructions.
/// With less, every kernel still runs, on a slower path:
/// - conv2d, conv2d_grad_input: im2col of the whole batch (N C KH KW OH OW
///   floats), at most 64 MiB or one image; with less, fewer images per GEMM,
///   then column ranges of one image (at least C KH KW floats).
/// - conv2d_grad_filter: per image C KH KW (OH OW + F) floats, same limits.
/// - layer_norm_grad, bias_add_grad, mse_loss, softmax_cross_entropy: per-row
///   statistics or per-chunk partial sums (kilobytes to a few MiB); with
///   less, fewer chunks (results stay deterministic for a given scratch
///   size). layer_norm_grad needs 8 bytes per row at least.
/// - embedding_grad: a stable radix sort of the ids (CUB temporary storage
///   plus 3 ids-sized i32 arrays); with less, a scan kernel that gives the
///   same bits. Asking for embedding_grad queries CUB and so needs a device.
size_t cudaScratchBytes(OpCode op, const std::vector<TensorDesc> &inputs,
                        const std::vector<TensorDesc> &outputs,
                        const OpAttrs &attrs);

/// C = alpha * op(A) * op(B) + beta * C, row-major, with Strata's own tiled
/// kernel, for `batch` matrices at the given element strides (stride 0
/// broadcasts). Enqueued on `stream`.
void strataGemm(cudaStream_t stream, const CudaGemmTiling &tiling, bool transA,
                bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, int64_t strideA, const float *b,
                int64_t ldb, int64_t strideB, float beta, float *c, int64_t ldc,
                int64_t strideC, int64_t batch);

} // namespace strata::rt::cuda

#endif // STRATA_RT_CUDA_KERNELS_H
