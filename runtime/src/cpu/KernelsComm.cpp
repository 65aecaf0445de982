//===- KernelsComm.cpp - Collectives as plan instructions -----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `all_reduce` sums (or averages, with `mean`) its input over the ranks of a
// communicator group (attribute `group`, default 0) through the executor's
// communicators. With one rank it is a copy.
//
// `all_reduce_start` packs a bucket of tensors into the bucket's staging
// buffer (KernelContext::buckets), starts one asynchronous all-reduce on it
// and returns; the communicator's progress thread moves it while later
// instructions compute. `all_reduce_wait` of the same bucket waits for it
// and unpacks the reduced tensors into its outputs.
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include "strata-rt/Comm.h"

#include <chrono>
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

/// The communicator of the collective's group; checks `replicas`.
Communicator *resolveGroup(KernelContext &ctx, const Attrs &attrs,
                           const char *op) {
  int64_t replicas = attrs.integer("replicas", 1);
  int64_t group = attrs.integer("group", 0);
  Communicator *comm = ctx.comm;
  if (!ctx.groups.empty()) {
    if (group < 0 || group >= static_cast<int64_t>(ctx.groups.size()) ||
        !ctx.groups[group])
      throw std::runtime_error(std::string(op) + " over group " +
                               std::to_string(group) +
                               ", which this rank is not a member of");
    comm = ctx.groups[group];
  }
  int size = comm ? comm->size() : 1;
  if (replicas != size)
    throw std::runtime_error(
        std::string(op) + " over " + std::to_string(replicas) +
        " replicas, but the run has " + std::to_string(size) + " ranks");
  return comm;
}

void runAllReduce(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const Attrs &attrs) {
  const Tensor &in = inputs[0], &out = outputs[0];
  if (in.data != out.data)
    std::memcpy(out.data, in.data, static_cast<size_t>(in.desc.bytes()));
  Communicator *comm = resolveGroup(ctx, attrs, "all_reduce");
  int size = comm ? comm->size() : 1;
  if (size == 1)
    return;
  ReduceOp op = attrs.flag("mean") ? ReduceOp::Mean : ReduceOp::Sum;
  Status status = comm->startAllReduce(out.f32(), out.numel(), op)->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

/// A bucket: at least one f32 tensor in; for the wait, as many outputs of the
/// same shapes.
std::string verifyBucket(const Descs &inputs, const Descs &outputs,
                         const Attrs &attrs, bool start) {
  Verifier v(inputs, outputs, attrs);
  if (inputs.empty())
    v.fail("expected at least one input");
  else if (start && !outputs.empty())
    v.fail("expected no outputs, got " + std::to_string(outputs.size()));
  else if (!start && outputs.size() != inputs.size())
    v.fail("expected one output per input (" + std::to_string(inputs.size()) +
           "), got " + std::to_string(outputs.size()));
  double bucket = -1;
  if (v.dtypes() && v.number("bucket", true, bucket) &&
      (bucket < 0 ||
       bucket != static_cast<double>(static_cast<int64_t>(bucket))))
    v.fail("attribute 'bucket' must be a non-negative integer");
  if (!start)
    for (size_t i = 0; v.ok() && i < inputs.size(); ++i)
      v.sameShape(out(static_cast<int>(i)), in(static_cast<int>(i)));
  double replicas = 1;
  if (start && v.ok() && v.number("replicas", true, replicas) && replicas < 1)
    v.fail("attribute 'replicas' must be at least 1");
  return v.error();
}

std::string verifyAllReduceStart(const Descs &inputs, const Descs &outputs,
                                 const Attrs &attrs) {
  return verifyBucket(inputs, outputs, attrs, /*start=*/true);
}

std::string verifyAllReduceWait(const Descs &inputs, const Descs &outputs,
                                const Attrs &attrs) {
  return verifyBucket(inputs, outputs, attrs, /*start=*/false);
}

void runAllReduceStart(KernelContext &ctx, const Tensors &inputs,
                       const Tensors &, const Attrs &attrs) {
  int64_t bucket = attrs.integer("bucket", 0);
  Communicator *comm = resolveGroup(ctx, attrs, "all_reduce_start");
  BucketTransfer &transfer = ctx.buckets[bucket];
  if (transfer.inFlight)
    throw std::runtime_error("bucket " + std::to_string(bucket) +
                             " is already in flight");
  int64_t count = 0;
  for (const Tensor &t : inputs)
    count += t.numel();
  transfer.staging.resize(static_cast<size_t>(count));
  float *packed = transfer.staging.data();
  for (const Tensor &t : inputs) {
    std::memcpy(packed, t.data, static_cast<size_t>(t.desc.bytes()));
    packed += t.numel();
  }
  transfer.inFlight = true;
  transfer.startNs = steadyNowNs();
  transfer.doneNs = 0;
  if (!comm || comm->size() == 1)
    return;
  ReduceOp op = attrs.flag("mean") ? ReduceOp::Mean : ReduceOp::Sum;
  transfer.request = comm->startAllReduce(transfer.staging.data(), count, op);
}

void runAllReduceWait(KernelContext &ctx, const Tensors &,
                      const Tensors &outputs, const Attrs &attrs) {
  int64_t bucket = attrs.integer("bucket", 0);
  auto it = ctx.buckets.find(bucket);
  if (it == ctx.buckets.end() || !it->second.inFlight)
    throw std::runtime_error("bucket " + std::to_string(bucket) +
                             " was not started");
  BucketTransfer &transfer = it->second;
  transfer.inFlight = false;
  if (transfer.request) {
    Status status = transfer.request->wait();
    transfer.request.reset();
    if (!status.ok())
      throw std::runtime_error(status.message());
  }
  if (transfer.doneNs == 0)
    transfer.doneNs = steadyNowNs();
  const float *packed = transfer.staging.data();
  int64_t bytes = 0;
  for (const Tensor &t : outputs) {
    std::memcpy(t.data, packed, static_cast<size_t>(t.desc.bytes()));
    packed += t.numel();
    bytes += t.desc.bytes();
  }
  ctx.spans.push_back({bucket, bytes, transfer.startNs, transfer.doneNs});
}

} // namespace

void appendCommKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({"all_reduce", 1, 1, verifyAllReduce, runAllReduce});
  kernels.push_back(
      {"all_reduce_start", -1, 0, verifyAllReduceStart, runAllReduceStart});
  kernels.push_back(
      {"all_reduce_wait", -1, -1, verifyAllReduceWait, runAllReduceWait});
}

} // namespace strata::rt::detail

int64_t strata::rt::steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
