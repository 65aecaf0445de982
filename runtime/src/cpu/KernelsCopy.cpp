//===- KernelsCopy.cpp - Activation swapping as plan instructions ---------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `swap_out` queues a copy of its input's bytes into host slot `slot` of the
// executor's swap pool on the executor's copy thread (KernelContext::copies)
// and returns at once; `swap_out_wait` blocks until that copy is done, after
// which the buffer's bytes may be reused. `swap_in` queues the copy of the
// slot back into its output and returns; `swap_in_wait` blocks until it is
// done. The loader checks that each slot runs exactly swap_out,
// swap_out_wait, swap_in, swap_in_wait in that order with matching buffers.
// Any dtype: the copies move bytes.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include "strata-rt/CopyEngine.h"

#include <stdexcept>

namespace strata::rt::detail {

namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

std::string verifySwap(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs, size_t numInputs,
                       size_t numOutputs) {
  Verifier v(inputs, outputs, attrs);
  double slot = -1;
  if (v.counts(numInputs, numOutputs) && v.number("slot", true, slot) &&
      (slot < 0 || !isInt64(slot)))
    v.fail("attribute 'slot' must be a non-negative integer, got " +
           formatNumber(slot));
  return v.error();
}

std::string verifySwapOut(const Descs &inputs, const Descs &outputs,
                          const Attrs &attrs) {
  return verifySwap(inputs, outputs, attrs, 1, 0);
}
std::string verifySwapIn(const Descs &inputs, const Descs &outputs,
                         const Attrs &attrs) {
  return verifySwap(inputs, outputs, attrs, 0, 1);
}
std::string verifySwapWait(const Descs &inputs, const Descs &outputs,
                           const Attrs &attrs) {
  return verifySwap(inputs, outputs, attrs, 1, 0);
}

/// The host bytes of the instruction's slot, which must hold `bytes`.
char *hostSlot(const KernelContext &ctx, const OpAttrs &attrs, int64_t bytes,
               const char *op) {
  if (!ctx.copies || !ctx.swapPool)
    throw std::runtime_error(std::string(op) +
                             ": the executor has no copy engine (the "
                             "program has no swap_out)");
  int64_t size = 0;
  void *host = ctx.swapPool->slot(attrs.slot, size);
  if (!host)
    throw std::runtime_error(std::string(op) + ": no host swap slot " +
                             std::to_string(attrs.slot));
  if (size != bytes)
    throw std::runtime_error(std::string(op) + ": host swap slot " +
                             std::to_string(attrs.slot) + " holds " +
                             std::to_string(size) + " bytes, the buffer has " +
                             std::to_string(bytes));
  return static_cast<char *>(host);
}

void check(const Status &status) {
  if (!status.ok())
    throw std::runtime_error(status.message());
}

void runSwapOut(KernelContext &ctx, const Tensors &inputs, const Tensors &,
                const OpAttrs &attrs) {
  const Tensor &in = inputs[0];
  char *host = hostSlot(ctx, attrs, in.desc.bytes(), "swap_out");
  check(ctx.copies->startCopy(attrs.slot, "swap_out", host, in.data,
                              static_cast<size_t>(in.desc.bytes())));
}

void runSwapIn(KernelContext &ctx, const Tensors &, const Tensors &outputs,
               const OpAttrs &attrs) {
  const Tensor &out = outputs[0];
  char *host = hostSlot(ctx, attrs, out.desc.bytes(), "swap_in");
  check(ctx.copies->startCopy(attrs.slot, "swap_in", out.data, host,
                              static_cast<size_t>(out.desc.bytes())));
}

void runSwapWait(KernelContext &ctx, const Tensors &, const Tensors &,
                 const OpAttrs &attrs) {
  if (!ctx.copies)
    throw std::runtime_error("the executor has no copy engine (the program "
                             "has no swap_out)");
  check(ctx.copies->wait(attrs.slot));
}

} // namespace

void appendCopyKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::SwapOut, verifySwapOut, runSwapOut});
  kernels.push_back({OpCode::SwapOutWait, verifySwapWait, runSwapWait});
  kernels.push_back({OpCode::SwapIn, verifySwapIn, runSwapIn});
  kernels.push_back({OpCode::SwapInWait, verifySwapWait, runSwapWait});
}

} // namespace strata::rt::detail
