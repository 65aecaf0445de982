//===- CudaKernelsCopy.cu - Activation swapping on the GPU ----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `swap_out` records the slot's `ready` event on the compute stream, makes
// the copy stream wait for it, enqueues the device-to-host copy of its input
// into the slot's pinned host memory on the copy stream and records the
// slot's `done` event there; the host returns at once and later kernels
// overlap the copy. `swap_out_wait` makes the compute stream wait for `done`
// (the host does not block), after which later kernels may overwrite the
// buffer. `swap_in` and `swap_in_wait` are the same with a host-to-device
// copy into the output. The backend allocates the slots (CudaBackend::
// prepare) and waits for the copy stream at the end of every step.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include <stdexcept>
#include <string>

namespace strata::rt::cuda::detail {
namespace {

CudaSwapSlot &swapSlot(CudaContext &ctx, const OpAttrs &attrs, int64_t bytes,
                       const char *op) {
  auto it = ctx.swapSlots.find(attrs.slot);
  if (it == ctx.swapSlots.end() || !ctx.copyStream)
    throw std::runtime_error(std::string(op) + ": no host swap slot " +
                             std::to_string(attrs.slot));
  if (static_cast<int64_t>(it->second.bytes) != bytes)
    throw std::runtime_error(std::string(op) + ": host swap slot " +
                             std::to_string(attrs.slot) + " holds " +
                             std::to_string(it->second.bytes) +
                             " bytes, the buffer has " + std::to_string(bytes));
  return it->second;
}

/// Enqueues one copy of the slot on the copy stream, after the work already
/// on the compute stream.
void startCopy(CudaContext &ctx, CudaSwapSlot &slot, void *dst, const void *src,
               size_t bytes, cudaMemcpyKind kind, const char *op) {
  if (slot.inFlight)
    throw std::runtime_error(std::string(op) + ": the slot is still busy");
  STRATA_CUDA_CHECK(cudaEventRecord(slot.ready, ctx.stream));
  STRATA_CUDA_CHECK(cudaStreamWaitEvent(ctx.copyStream, slot.ready, 0));
  if (bytes > 0)
    STRATA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, ctx.copyStream));
  STRATA_CUDA_CHECK(cudaEventRecord(slot.done, ctx.copyStream));
  slot.inFlight = true;
}

void runSwapOut(CudaContext &ctx, const Tensors &inputs, const Tensors &,
                const OpAttrs &attrs) {
  const Tensor &in = inputs[0];
  CudaSwapSlot &slot = swapSlot(ctx, attrs, in.desc.bytes(), "swap_out");
  startCopy(ctx, slot, slot.host, in.data, slot.bytes, cudaMemcpyDeviceToHost,
            "swap_out");
}

void runSwapIn(CudaContext &ctx, const Tensors &, const Tensors &outputs,
               const OpAttrs &attrs) {
  const Tensor &out = outputs[0];
  CudaSwapSlot &slot = swapSlot(ctx, attrs, out.desc.bytes(), "swap_in");
  startCopy(ctx, slot, out.data, slot.host, slot.bytes, cudaMemcpyHostToDevice,
            "swap_in");
}

void runSwapWait(CudaContext &ctx, const Tensors &inputs, const Tensors &,
                 const OpAttrs &attrs) {
  CudaSwapSlot &slot =
      swapSlot(ctx, attrs, inputs[0].desc.bytes(), "swap wait");
  if (!slot.inFlight)
    throw std::runtime_error("slot " + std::to_string(attrs.slot) +
                             " has no copy in flight to wait for");
  STRATA_CUDA_CHECK(cudaStreamWaitEvent(ctx.stream, slot.done, 0));
  slot.inFlight = false;
}

} // namespace

void appendCopyCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::SwapOut, runSwapOut});
  kernels.push_back({OpCode::SwapOutWait, runSwapWait});
  kernels.push_back({OpCode::SwapIn, runSwapIn});
  kernels.push_back({OpCode::SwapInWait, runSwapWait});
}

} // namespace strata::rt::cuda::detail
