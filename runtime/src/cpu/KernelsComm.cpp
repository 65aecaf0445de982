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
// and unpacks the reduced tensors into its outputs. With lagging gradients
// (KernelContext::deferCollectives) none of them communicates: the lagging
// aggregator moves the packed buckets (Lagging.h).
//
//===----------------------------------------------------------------------===//

#include "KernelsInternal.h"

#include "strata-rt/Comm.h"

#include <algorithm>
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

void runAllReduce(KernelContext &ctx, const Tensors &inputs,
                  const Tensors &outputs, const OpAttrs &attrs) {
  const Tensor &in = inputs[0], &out = outputs[0];
  Communicator *comm =
      resolveCollectiveGroup(ctx.comm, ctx.groups, attrs, "all_reduce");
  int size = comm ? comm->size() : 1;
  if (size == 1 || ctx.deferCollectives) {
    if (in.data != out.data)
      std::memcpy(out.data, in.data, static_cast<size_t>(in.desc.bytes()));
    return;
  }
  ReduceOp op = attrs.mean ? ReduceOp::Mean : ReduceOp::Sum;
  // Out of place: the engine reads the input (MPI: no copy first).
  Status status =
      comm->startAllReduceInto(in.f32(), out.f32(), out.numel(), op)->wait();
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
      (bucket < 0 || !isInt64(bucket)))
    v.fail("attribute 'bucket' must be a non-negative integer");
  if (!start)
    for (size_t i = 0; v.ok() && i < inputs.size(); ++i)
      v.sameShape(out(static_cast<int>(i)), in(static_cast<int>(i)));
  double replicas = 1;
  if (start && v.ok() && v.number("replicas", true, replicas) && replicas < 1)
    v.fail("attribute 'replicas' must be at least 1");
  double chunk = 0;
  if (start && v.ok() && v.number("chunk_bytes", false, chunk, 1 << 20) &&
      chunk < 4)
    v.fail("attribute 'chunk_bytes' must be at least 4");
  double staleness = 0;
  if (start && v.ok() && v.number("staleness", false, staleness, 0) &&
      (staleness < 0 || !isInt64(staleness)))
    v.fail("attribute 'staleness' must be a non-negative integer");
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

/// Host accumulation (`host` attribute): the bucket travels chunk by chunk
/// to rank 0, the host that accumulates it (a reduce per chunk), and the
/// accumulated chunks go back to every rank (a broadcast per chunk; Mean
/// divides on the host first). Nonblocking collectives must be issued in the
/// same order on every rank, so the broadcasts are issued only at points of
/// the program every rank reaches in the same order: the next bucket's
/// start (`advance`, so they overlap the computation after it) or this
/// bucket's wait, never from a timing-dependent poll.
class HostAccumulation final : public Request {
public:
  HostAccumulation(Communicator &comm, float *data, int64_t count,
                   int64_t chunk, bool mean)
      : comm_(comm), data_(data), mean_(mean) {
    for (int64_t begin = 0; begin < count; begin += chunk) {
      int64_t n = std::min(chunk, count - begin);
      chunks_.push_back({begin, n,
                         comm.startReduce(data + begin, n, ReduceOp::Sum, 0),
                         nullptr});
    }
  }

  /// Completes the reduces and issues the broadcasts (once).
  Status advance() {
    if (advanced_)
      return status_;
    advanced_ = true;
    for (Chunk &c : chunks_) {
      status_ = c.reduce->wait();
      if (!status_.ok())
        return status_;
    }
    for (Chunk &c : chunks_) {
      float *chunk = data_ + c.begin;
      if (mean_ && comm_.rank() == 0) {
        float scale = 1.0f / static_cast<float>(comm_.size());
        for (int64_t i = 0; i < c.count; ++i)
          chunk[i] *= scale;
      }
      c.broadcast = comm_.startBroadcast(chunk, c.count, 0);
    }
    return status_;
  }

  Status wait() override {
    if (Status s = advance(); !s.ok())
      return s;
    for (Chunk &c : chunks_)
      if (Status s = c.broadcast->wait(); !s.ok())
        return s;
    return Status::success();
  }

  bool test() override {
    if (!advanced_)
      return false;
    for (Chunk &c : chunks_)
      if (!c.broadcast || !c.broadcast->test())
        return false;
    return true;
  }

private:
  struct Chunk {
    int64_t begin, count;
    std::unique_ptr<Request> reduce, broadcast;
  };

  Communicator &comm_;
  float *data_;
  bool mean_;
  bool advanced_ = false;
  Status status_;
  std::vector<Chunk> chunks_;
};

void runAllReduceStart(KernelContext &ctx, const Tensors &inputs,
                       const Tensors &, const OpAttrs &attrs) {
  int64_t bucket = attrs.bucket;
  Communicator *comm =
      resolveCollectiveGroup(ctx.comm, ctx.groups, attrs, "all_reduce_start");
  BucketTransfer &transfer = ctx.buckets[bucket];
  if (transfer.inFlight && !ctx.deferCollectives)
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
  if (!comm || comm->size() == 1 || ctx.deferCollectives)
    return;
  if (attrs.host) {
    // Earlier host buckets send their sums back now (same point on every
    // rank).
    for (auto &[id, other] : ctx.buckets)
      if (auto *host = dynamic_cast<HostAccumulation *>(other.request.get()))
        if (Status s = host->advance(); !s.ok())
          throw std::runtime_error(s.message());
    int64_t chunk = std::max<int64_t>(attrs.chunkBytes / 4, 1);
    transfer.request = std::make_unique<HostAccumulation>(
        *comm, transfer.staging.data(), count, chunk, attrs.mean);
    return;
  }
  ReduceOp op = attrs.mean ? ReduceOp::Mean : ReduceOp::Sum;
  transfer.request = comm->startAllReduce(transfer.staging.data(), count, op);
}

void runAllReduceWait(KernelContext &ctx, const Tensors &,
                      const Tensors &outputs, const OpAttrs &attrs) {
  int64_t bucket = attrs.bucket;
  auto it = ctx.buckets.find(bucket);
  if (it == ctx.buckets.end() ||
      (!it->second.inFlight && !ctx.deferCollectives))
    throw std::runtime_error("bucket " + std::to_string(bucket) +
                             " was not started");
  BucketTransfer &transfer = it->second;
  transfer.inFlight = false;
  if (transfer.request) {
    Status status = transfer.request->wait();
    // The engine's completion time, where it records one (the executor
    // only sees a completion between instructions).
    if (int64_t done = transfer.request->completedNs(); done > 0)
      transfer.doneNs = done;
    transfer.request.reset();
    if (!status.ok())
      throw std::runtime_error(status.message());
  }
  if (transfer.doneNs == 0)
    transfer.doneNs = steadyNowNs();
  int64_t count = 0;
  for (const Tensor &t : outputs)
    count += t.numel();
  if (static_cast<int64_t>(transfer.staging.size()) != count)
    throw std::runtime_error("bucket " + std::to_string(bucket) + " holds " +
                             std::to_string(transfer.staging.size()) +
                             " floats, the wait unpacks " +
                             std::to_string(count));
  const float *packed = transfer.staging.data();
  int64_t bytes = 0;
  for (const Tensor &t : outputs) {
    std::memcpy(t.data, packed, static_cast<size_t>(t.desc.bytes()));
    packed += t.numel();
    bytes += t.desc.bytes();
  }
  ctx.spans.push_back({bucket, bytes, transfer.startNs, transfer.doneNs});
}

/// MPI tags of pipeline transfers: the plan's tag plus this base, below the
/// MPI minimum of 32767 that every implementation supports.
constexpr int kPipelineTagBase = 16384;
constexpr int64_t kMaxPipelineTag = 16383;

/// Pipelines: `send` (one input, no output) and `recv` (one output) name
/// the peer stage and a tag; f32 tensors only.
std::string verifyPointToPoint(const Descs &inputs, const Descs &outputs,
                               const Attrs &attrs, bool send) {
  Verifier v(inputs, outputs, attrs);
  double peer = -1, tag = -1;
  if (v.counts(send ? 1 : 0, send ? 0 : 1) && v.dtypes() &&
      v.number("peer", true, peer) && v.number("tag", true, tag) &&
      (peer < 0 || tag < 0 || !isInt64(peer) || !isInt64(tag) ||
       tag >= kMaxPipelineTag))
    v.fail("attributes 'peer' and 'tag' must be integers in [0, " +
           std::to_string(kMaxPipelineTag) + ")");
  return v.error();
}

std::string verifySend(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs) {
  return verifyPointToPoint(inputs, outputs, attrs, /*send=*/true);
}
std::string verifyRecv(const Descs &inputs, const Descs &outputs,
                       const Attrs &attrs) {
  return verifyPointToPoint(inputs, outputs, attrs, /*send=*/false);
}

void runSend(KernelContext &ctx, const Tensors &inputs, const Tensors &,
             const OpAttrs &attrs) {
  int peer = pipelinePeerRank(ctx.stageRanks, ctx.comm, attrs, "send");
  int tag = kPipelineTagBase + static_cast<int>(attrs.tag);
  ctx.pendingSends.push_back(
      ctx.comm->startSend(inputs[0].f32(), inputs[0].numel(), peer, tag));
}

void runRecv(KernelContext &ctx, const Tensors &, const Tensors &outputs,
             const OpAttrs &attrs) {
  int peer = pipelinePeerRank(ctx.stageRanks, ctx.comm, attrs, "recv");
  int tag = kPipelineTagBase + static_cast<int>(attrs.tag);
  Status status =
      ctx.comm->startRecv(outputs[0].f32(), outputs[0].numel(), peer, tag)
          ->wait();
  if (!status.ok())
    throw std::runtime_error(status.message());
}

} // namespace

void appendCommKernels(std::vector<OpKernel> &kernels) {
  kernels.push_back({OpCode::AllReduce, verifyAllReduce, runAllReduce});
  kernels.push_back({OpCode::Send, verifySend, runSend});
  kernels.push_back({OpCode::Recv, verifyRecv, runRecv});
  kernels.push_back(
      {OpCode::AllReduceStart, verifyAllReduceStart, runAllReduceStart});
  kernels.push_back(
      {OpCode::AllReduceWait, verifyAllReduceWait, runAllReduceWait});
}

} // namespace strata::rt::detail

int strata::rt::pipelinePeerRank(const std::vector<int> &stageRanks,
                                 bool haveComm, const OpAttrs &attrs,
                                 const char *op) {
  int64_t peer = attrs.peer;
  if (!haveComm || peer < 0 ||
      peer >= static_cast<int64_t>(stageRanks.size()) || stageRanks[peer] < 0)
    throw std::runtime_error(std::string(op) + " to pipeline stage " +
                             std::to_string(peer) +
                             ", which no rank of this run holds");
  return stageRanks[peer];
}

strata::rt::Communicator *
strata::rt::resolveCollectiveGroup(Communicator *world,
                                   const std::vector<Communicator *> &groups,
                                   const OpAttrs &attrs, const char *op) {
  int64_t replicas = attrs.replicas;
  int64_t group = attrs.group;
  Communicator *comm = world;
  if (!groups.empty()) {
    if (group < 0 || group >= static_cast<int64_t>(groups.size()) ||
        !groups[group])
      throw std::runtime_error(std::string(op) + " over group " +
                               std::to_string(group) +
                               ", which this rank is not a member of");
    comm = groups[group];
  }
  int size = comm ? comm->size() : 1;
  if (replicas != size)
    throw std::runtime_error(
        std::string(op) + " over " + std::to_string(replicas) +
        " replicas, but the run has " + std::to_string(size) + " ranks");
  return comm;
}
