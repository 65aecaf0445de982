//===- CudaKernelsComm.cu - Collectives as plan instructions --------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `all_reduce` sums (or, with `mean`, averages) its input over the ranks of a
// communicator group (attribute `group`, default 0; ctx.groups, or ctx.comm
// when there are none), whose buffers are device pointers (NCCL). The device
// communicator (createNcclCommunicator) orders every operation after the work
// already enqueued on the device's compute stream - ctx.stream, which
// produced the input - and its Request::wait makes that stream wait for the
// result, so the host neither blocks nor synchronises here and the collective
// is stream-ordered like any kernel. With one rank it is a stream-ordered
// copy.
//
// Pipelines: `send` and `recv` move a tensor between the ranks that run two
// stages of one replica (ctx.stageRanks), through the communicator's
// point-to-point links (openNcclLinks: a stream and an NCCL communicator per
// directed link, so that crossed transfers cannot deadlock). A send is
// enqueued after the kernel that produced its input and does not hold up
// the compute stream; its request goes to ctx.pendingSends, which the
// backend orders before the next in-place update and the end of the step.
// A recv is enqueued after the work that may still read its output, and
// the compute stream waits for it, so its consumers see the data. NCCL
// ignores the tag: the transfers of one link match in issue order, which
// the runtime checks before it opens the links.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include "strata-rt/Comm.h"
#include "strata-rt/Kernels.h"

#include <stdexcept>

namespace strata::rt::cuda::detail {
namespace {

void runAllReduce(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const Tensor &in = inputs[0], &out = outputs[0];
  Communicator *comm =
      resolveCollectiveGroup(ctx.comm, ctx.groups, attrs, "all_reduce");
  int size = comm ? comm->size() : 1;
  copyDevice(ctx, out.data, in.data, in.desc.bytes());
  if (size == 1)
    return;
  ReduceOp op = attrs.mean ? ReduceOp::Mean : ReduceOp::Sum;
  Status status = comm->startAllReduce(out.f32(), out.numel(), op)->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

void runSend(CudaContext &ctx, const Tensors &inputs, const Tensors &,
             const OpAttrs &attrs) {
  int peer = pipelinePeerRank(ctx.stageRanks, ctx.comm, attrs, "send");
  int tag = static_cast<int>(attrs.tag);
  std::unique_ptr<Request> request =
      ctx.comm->startSend(inputs[0].f32(), inputs[0].numel(), peer, tag);
  // A request that failed to start reports it at once (test() is true and
  // wait() returns the failure without touching the device).
  if (request->test())
    if (Status status = request->wait(); !status.ok())
      throw std::runtime_error(status.message());
  ctx.pendingSends.push_back(std::move(request));
}

void runRecv(CudaContext &ctx, const Tensors &, const Tensors &outputs,
             const OpAttrs &attrs) {
  int peer = pipelinePeerRank(ctx.stageRanks, ctx.comm, attrs, "recv");
  int tag = static_cast<int>(attrs.tag);
  Status status =
      ctx.comm->startRecv(outputs[0].f32(), outputs[0].numel(), peer, tag)
          ->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

} // namespace

void appendCommCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::AllReduce, runAllReduce});
  kernels.push_back({OpCode::Send, runSend});
  kernels.push_back({OpCode::Recv, runRecv});
}

} // namespace strata::rt::cuda::detail
