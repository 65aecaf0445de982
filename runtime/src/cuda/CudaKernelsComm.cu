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
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include "strata-rt/Comm.h"

#include <stdexcept>

namespace strata::rt::cuda::detail {
namespace {

void runAllReduce(CudaContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const Attrs &attrs) {
  const Tensor &in = inputs[0], &out = outputs[0];
  int64_t replicas = attrs.integer("replicas", 1);
  int64_t group = attrs.integer("group", 0);
  Communicator *comm = ctx.comm;
  if (!ctx.groups.empty()) {
    if (group < 0 || group >= static_cast<int64_t>(ctx.groups.size()) ||
        !ctx.groups[group])
      throw std::runtime_error("all_reduce over group " +
                               std::to_string(group) +
                               ", which this rank is not a member of");
    comm = ctx.groups[group];
  }
  int size = comm ? comm->size() : 1;
  if (replicas != size)
    throw std::runtime_error("all_reduce over " + std::to_string(replicas) +
                             " replicas, but the run has " +
                             std::to_string(size) + " ranks");
  copyDevice(ctx, out.data, in.data, in.desc.bytes());
  if (size == 1)
    return;
  ReduceOp op = attrs.flag("mean") ? ReduceOp::Mean : ReduceOp::Sum;
  Status status = comm->startAllReduce(out.f32(), out.numel(), op)->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

} // namespace

void appendCommCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({"all_reduce", runAllReduce});
}

} // namespace strata::rt::cuda::detail
