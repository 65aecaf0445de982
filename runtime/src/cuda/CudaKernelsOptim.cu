//===- CudaKernelsOptim.cu - Optimizer update kernels ---------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Updates run in place (outputs are the buffers of the parameter and state
// inputs); every element is updated by one thread with the CPU kernel's
// arithmetic. adam_update reads the step counter (an i32 scalar in device
// memory) in the kernel, so nothing is copied to the host.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

namespace strata::rt::cuda::detail {
namespace {

/// v = momentum v + (g + decay p); p -= lr v.
__global__ void sgdKernel(const float *p, const float *g, const float *vel,
                          float *pOut, float *velOut, int64_t n, float lr,
                          float momentum, float decay) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float pi = p[i];
    float vi = momentum * vel[i] + (g[i] + decay * pi);
    velOut[i] = vi;
    pOut[i] = pi - lr * vi;
  }
}

void runSgd(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
            const OpAttrs &attrs) {
  int64_t n = inputs[0].numel();
  if (n == 0)
    return;
  sgdKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), outputs[0].f32(),
      outputs[1].f32(), n, (float)attrs.lr, (float)attrs.momentum,
      (float)attrs.weightDecay);
  STRATA_CUDA_CHECK_LAUNCH();
}

struct AdamParams {
  double beta1, beta2;
  float lr, epsilon, decay;
  bool decoupled;
  /// Update `update` of `updates` per step: t = (step - 1) updates +
  /// update + 1 (asynchronous pipeline schedules; 0 of 1 otherwise).
  int64_t update, updates;
};

/// Adam(W). The bias corrections are computed once per block, in double as
/// on the CPU, from the step counter in device memory. A step below 1
/// (which the CPU kernel rejects; the executor always sets 1, 2, ...)
/// leaves the tensors unchanged.
__global__ void adamKernel(const float *p, const float *g, const float *m,
                           const float *v, const int32_t *step, float *pOut,
                           float *mOut, float *vOut, int64_t n, AdamParams a) {
  __shared__ float invBc[2];
  if (*step < 1)
    return;
  int64_t t = ((int64_t)*step - 1) * a.updates + a.update + 1;
  if (threadIdx.x == 0) {
    invBc[0] = (float)(1.0 / (1.0 - pow(a.beta1, (double)t)));
    invBc[1] = (float)(1.0 / (1.0 - pow(a.beta2, (double)t)));
  }
  __syncthreads();
  const float invBc1 = invBc[0], invBc2 = invBc[1];
  const float b1 = (float)a.beta1, b2 = (float)a.beta2;
  const float c1 = (float)(1.0 - a.beta1), c2 = (float)(1.0 - a.beta2);
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float pi = p[i], gi = g[i];
    if (a.decoupled)
      pi = pi - a.lr * a.decay * pi;
    else
      gi = gi + a.decay * pi;
    float mi = b1 * m[i] + c1 * gi;
    float vi = b2 * v[i] + c2 * gi * gi;
    mOut[i] = mi;
    vOut[i] = vi;
    pOut[i] = pi - a.lr * (mi * invBc1) / (sqrtf(vi * invBc2) + a.epsilon);
  }
}

void runAdam(CudaContext &ctx, const Tensors &inputs, const Tensors &outputs,
             const OpAttrs &attrs) {
  int64_t n = inputs[0].numel();
  if (n == 0)
    return;
  AdamParams a;
  a.beta1 = attrs.beta1;
  a.beta2 = attrs.beta2;
  a.lr = (float)attrs.lr;
  a.epsilon = (float)attrs.epsilon;
  a.decay = (float)attrs.weightDecay;
  a.decoupled = attrs.decoupled;
  a.update = attrs.update;
  a.updates = attrs.updates;
  adamKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), inputs[3].f32(),
      inputs[4].i32(), outputs[0].f32(), outputs[1].f32(), outputs[2].f32(), n,
      a);
  STRATA_CUDA_CHECK_LAUNCH();
}

/// A weight version kept for the asynchronous pipeline schedules: input 0
/// into the buffer of input 1 (the output's).
void runCopyInto(CudaContext &ctx, const Tensors &inputs,
                 const Tensors &outputs, const OpAttrs &) {
  copyDevice(ctx, outputs[0].f32(), inputs[0].f32(),
             inputs[0].numel() * (int64_t)sizeof(float));
}

} // namespace

void appendOptimCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::SgdUpdate, runSgd});
  kernels.push_back({OpCode::AdamUpdate, runAdam});
  kernels.push_back({OpCode::CopyInto, runCopyInto});
}

} // namespace strata::rt::cuda::detail
