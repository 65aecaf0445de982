//===- KernelsComm.cpp - Collectives as plan instructions -----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `all_reduce` sums (or averages, with `mean`) its input over the ranks of a
// communicator group (attribute `group`, default 0) through the executor's
// communicators. With one rank it is a copy.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include "strata-rt/Comm.h"

#include <cstring>
#include <stdexcept>

namespace strata::rt::detail {

namespace {

using Descs = std::vector<TensorDesc>;
using Tensors = std::vector<Tensor>;

std::string verifyAllReduce(const Descs &inputs, const Descs &outputs,
                            const Attrs &attrs) {
  Verifier v(inputs, outputs, attrs);
  double replicas = 1;
  if (v.counts(1, 1) && v.dtypes() && v.sameShape(out(0), in(0)) &&
      v.number("replicas", true, replicas) && replicas < 1)
    v.fail("attribute 'replicas' must be at least 1");
  return v.error();
}

void runAllReduce(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const Attrs &attrs) {
  const Tensor &in = inputs[0], &out = outputs[0];
  if (in.data != out.data)
    std::memcpy(out.data, in.data, static_cast<size_t>(in.desc.bytes()));
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
  if (size == 1)
    return;
  ReduceOp op = attrs.flag("mean") ? ReduceOp::Mean : ReduceOp::Sum;
  Status status = comm->startAllReduce(out.f32(), out.numel(), op)->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

} // namespace

void appendCommKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({"all_reduce", 1, 1, verifyAllReduce, runAllReduce});
}

} // namespace strata::rt::detail
