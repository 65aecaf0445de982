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

AdamParams adamParams(const OpAttrs &attrs) {
  AdamParams a;
  a.beta1 = attrs.beta1;
  a.beta2 = attrs.beta2;
  a.lr = (float)attrs.lr;
  a.epsilon = (float)attrs.epsilon;
  a.decay = (float)attrs.weightDecay;
  a.decoupled = attrs.decoupled;
  a.update = attrs.update;
  a.updates = attrs.updates;
  return a;
}

/// The bias-correction count t at 1-based `step` (the CPU's
/// adamUpdateCount).
__device__ __forceinline__ double adamUpdateCount(const AdamParams &a,
                                                  int32_t step) {
  return (double)(((int64_t)step - 1) * a.updates + a.update + 1);
}

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
  if (threadIdx.x == 0) {
    double t = adamUpdateCount(a, *step);
    invBc[0] = (float)(1.0 / (1.0 - pow(a.beta1, t)));
    invBc[1] = (float)(1.0 / (1.0 - pow(a.beta2, t)));
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
  AdamParams a = adamParams(attrs);
  adamKernel<<<gridFor(n), kThreads, 0, ctx.stream>>>(
      inputs[0].f32(), inputs[1].f32(), inputs[2].f32(), inputs[3].f32(),
      inputs[4].i32(), outputs[0].f32(), outputs[1].f32(), outputs[2].f32(), n,
      a);
  STRATA_CUDA_CHECK_LAUNCH();
}

//===----------------------------------------------------------------------===//
// Multi-tensor groups: one launch per up to kMaxGroupTensors tensors
//===----------------------------------------------------------------------===//

/// Tensors per launch: the argument tables below stay under the 4 KiB of
/// kernel parameters every architecture accepts.
constexpr int kMaxGroupTensors = 16;
/// Elements one block updates.
constexpr int64_t kGroupChunk = int64_t(1) << 16;

/// Block b of a launch updates chunk b - firstBlock[t] of tensor t, where
/// firstBlock[t] <= b < firstBlock[t + 1].
struct GroupBlocks {
  int count = 0;
  int64_t n[kMaxGroupTensors];
  int64_t firstBlock[kMaxGroupTensors + 1];

  /// Appends a tensor of `elements`; returns the blocks it takes.
  int64_t add(int64_t elements) {
    int64_t blocks = ceilDiv(elements, kGroupChunk);
    n[count] = elements;
    firstBlock[count + 1] = firstBlock[count] + blocks;
    ++count;
    return blocks;
  }
};

/// The tensor and the element range of this block.
__device__ __forceinline__ int groupTensor(const GroupBlocks &g, int64_t &begin,
                                           int64_t &end) {
  int64_t b = blockIdx.x;
  int t = 0;
  while (t + 1 < g.count && g.firstBlock[t + 1] <= b)
    ++t;
  begin = (b - g.firstBlock[t]) * kGroupChunk;
  end = min(g.n[t], begin + kGroupChunk);
  return t;
}

struct SgdTable {
  GroupBlocks blocks;
  const float *p[kMaxGroupTensors], *g[kMaxGroupTensors],
      *vel[kMaxGroupTensors];
  float *pOut[kMaxGroupTensors], *velOut[kMaxGroupTensors];
  float lr[kMaxGroupTensors], momentum[kMaxGroupTensors],
      decay[kMaxGroupTensors];
};

__global__ void sgdGroupKernel(SgdTable table) {
  int64_t begin, end;
  int t = groupTensor(table.blocks, begin, end);
  const float *p = table.p[t], *g = table.g[t], *vel = table.vel[t];
  float *pOut = table.pOut[t], *velOut = table.velOut[t];
  const float lr = table.lr[t], momentum = table.momentum[t],
              decay = table.decay[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    float pi = p[i];
    float vi = momentum * vel[i] + (g[i] + decay * pi);
    velOut[i] = vi;
    pOut[i] = pi - lr * vi;
  }
}

/// Launches `body(first, count)` for consecutive slices of at most
/// kMaxGroupTensors calls.
template <typename Body>
void forEachLaunch(const std::vector<CudaKernelCall> &calls, Body body) {
  for (size_t first = 0; first < calls.size(); first += kMaxGroupTensors)
    body(first, std::min<size_t>(kMaxGroupTensors, calls.size() - first));
}

void runSgdGroup(CudaContext &ctx, const std::vector<CudaKernelCall> &calls) {
  forEachLaunch(calls, [&](size_t first, size_t count) {
    SgdTable table;
    table.blocks.firstBlock[0] = 0;
    int64_t blocks = 0;
    for (size_t j = 0; j < count; ++j) {
      const CudaKernelCall &call = calls[first + j];
      int t = table.blocks.count;
      table.p[t] = call.inputs[0].f32();
      table.g[t] = call.inputs[1].f32();
      table.vel[t] = call.inputs[2].f32();
      table.pOut[t] = call.outputs[0].f32();
      table.velOut[t] = call.outputs[1].f32();
      table.lr[t] = (float)call.attrs->lr;
      table.momentum[t] = (float)call.attrs->momentum;
      table.decay[t] = (float)call.attrs->weightDecay;
      blocks += table.blocks.add(call.inputs[0].numel());
    }
    if (blocks == 0)
      return;
    sgdGroupKernel<<<(unsigned)blocks, kThreads, 0, ctx.stream>>>(table);
    STRATA_CUDA_CHECK_LAUNCH();
  });
}

struct AdamTable {
  GroupBlocks blocks;
  const float *p[kMaxGroupTensors], *g[kMaxGroupTensors], *m[kMaxGroupTensors],
      *v[kMaxGroupTensors];
  float *pOut[kMaxGroupTensors], *mOut[kMaxGroupTensors],
      *vOut[kMaxGroupTensors];
  const int32_t *step[kMaxGroupTensors];
  AdamParams params[kMaxGroupTensors];
};
static_assert(sizeof(AdamTable) <= 4096,
              "a kernel's parameters must fit in 4 KiB");

/// adamKernel's arithmetic, per tensor of the table.
__global__ void adamGroupKernel(AdamTable table) {
  __shared__ float invBc[2];
  int64_t begin, end;
  int t = groupTensor(table.blocks, begin, end);
  const AdamParams a = table.params[t];
  int32_t step = *table.step[t];
  if (step < 1)
    return;
  if (threadIdx.x == 0) {
    // Each member its own t (update u of U may differ within a group).
    double t = adamUpdateCount(a, step);
    invBc[0] = (float)(1.0 / (1.0 - pow(a.beta1, t)));
    invBc[1] = (float)(1.0 / (1.0 - pow(a.beta2, t)));
  }
  __syncthreads();
  const float invBc1 = invBc[0], invBc2 = invBc[1];
  const float b1 = (float)a.beta1, b2 = (float)a.beta2;
  const float c1 = (float)(1.0 - a.beta1), c2 = (float)(1.0 - a.beta2);
  const float *p = table.p[t], *g = table.g[t], *m = table.m[t],
              *v = table.v[t];
  float *pOut = table.pOut[t], *mOut = table.mOut[t], *vOut = table.vOut[t];
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
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

void runAdamGroup(CudaContext &ctx, const std::vector<CudaKernelCall> &calls) {
  forEachLaunch(calls, [&](size_t first, size_t count) {
    AdamTable table;
    table.blocks.firstBlock[0] = 0;
    int64_t blocks = 0;
    for (size_t j = 0; j < count; ++j) {
      const CudaKernelCall &call = calls[first + j];
      const OpAttrs &attrs = *call.attrs;
      int t = table.blocks.count;
      table.p[t] = call.inputs[0].f32();
      table.g[t] = call.inputs[1].f32();
      table.m[t] = call.inputs[2].f32();
      table.v[t] = call.inputs[3].f32();
      table.step[t] = call.inputs[4].i32();
      table.pOut[t] = call.outputs[0].f32();
      table.mOut[t] = call.outputs[1].f32();
      table.vOut[t] = call.outputs[2].f32();
      table.params[t] = adamParams(attrs);
      blocks += table.blocks.add(call.inputs[0].numel());
    }
    if (blocks == 0)
      return;
    adamGroupKernel<<<(unsigned)blocks, kThreads, 0, ctx.stream>>>(table);
    STRATA_CUDA_CHECK_LAUNCH();
  });
}

} // namespace

void appendOptimCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::SgdUpdate, runSgd, nullptr, runSgdGroup});
  kernels.push_back({OpCode::AdamUpdate, runAdam, nullptr, runAdamGroup});
}

} // namespace strata::rt::cuda::detail
