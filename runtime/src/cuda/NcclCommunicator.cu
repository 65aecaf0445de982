//===- NcclCommunicator.cu - The NCCL engine for GPU ranks ----------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Rank 0 of the bootstrap (MPI) communicator creates the NCCL unique id and
// broadcasts it; every rank then joins with ncclCommInitRank on its device.
// An operation is enqueued on the device's communication stream after an
// event recorded on the compute stream (so it sees every result computed so
// far); its request's wait() makes the compute stream wait for the
// operation's completion event, so the host never blocks and computation
// enqueued in between overlaps the transfer. A dead or hung peer surfaces as
// an asynchronous NCCL error or as the device wait timing out; either aborts
// the communicator (CudaBackend::waitFor).
//
// NCCL has no message tags: send/recv between two ranks match in the order
// they are issued (the tag is ignored).
//
// Point-to-point links (pipelines): NCCL runs the operations of one
// communicator on one stream in issue order, and a send or recv holds its
// stream until the peer posts the matching call, so two ranks that send to
// each other before receiving (activations forward, gradients backward)
// deadlock on a shared stream. openNcclLinks therefore gives every directed
// link (from, to) its own two-rank communicator (ncclCommSplit of this one)
// and its own stream on both ends: the link carries only `from`'s sends to
// `to` and `to`'s receives from `from`, matched first to first. Operations
// on different links never wait for one another; see docs/plan-format.md
// (Pipelines on GPUs) for why the plan's order then cannot deadlock.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "strata-rt/Comm.h"

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace strata::rt {

namespace {

Status ncclFailure(const std::string &what, ncclResult_t result) {
  return Status::failure("nccl " + what + ": " + ncclGetErrorString(result));
}

class NcclRequest final : public Request {
public:
  NcclRequest(cudaEvent_t done, cudaStream_t compute)
      : done_(done), compute_(compute) {}
  ~NcclRequest() override { cudaEventDestroy(done_); }
  Status wait() override {
    cudaError_t error = cudaStreamWaitEvent(compute_, done_, 0);
    if (error != cudaSuccess)
      return cuda::cudaFailure("nccl request", error);
    return Status::success();
  }
  bool test() override { return cudaEventQuery(done_) == cudaSuccess; }

private:
  cudaEvent_t done_;
  cudaStream_t compute_;
};

class FailedRequest final : public Request {
public:
  explicit FailedRequest(Status status) : status_(std::move(status)) {}
  Status wait() override { return status_; }
  bool test() override { return true; }

private:
  Status status_;
};

class NcclCommunicator final : public Communicator {
public:
  /// `bootstrap` is null for a group (createGroup), whose barrier is an
  /// empty all-reduce.
  NcclCommunicator(ncclComm_t comm, int rank, int size,
                   cuda::CudaBackend &device, Communicator *bootstrap)
      : comm_(comm), rank_(rank), size_(size), device_(device),
        bootstrap_(bootstrap) {}
  ~NcclCommunicator() override {
    for (auto &[key, link] : links_) {
      cudaStreamSynchronize(link.stream);
      if (!aborted_)
        ncclCommDestroy(link.comm);
      cudaStreamDestroy(link.stream);
    }
    if (!aborted_)
      ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *engine() const override { return "nccl"; }

  /// A failure when NCCL reported an asynchronous error (on this
  /// communicator or one of its links).
  Status health() {
    if (Status status = health(comm_); !status.ok())
      return status;
    for (auto &[key, link] : links_)
      if (Status status = health(link.comm); !status.ok())
        return status;
    return Status::success();
  }
  void abort() {
    if (!aborted_) {
      aborted_ = true;
      for (auto &[key, link] : links_)
        ncclCommAbort(link.comm);
      ncclCommAbort(comm_);
    }
  }

  /// See openNcclLinks. Every rank calls it with the same links.
  Status openLinks(const std::vector<std::pair<int, int>> &links) {
    if (Status status = device_.activate(); !status.ok())
      return status;
    std::set<std::pair<int, int>> unique(links.begin(), links.end());
    for (auto [from, to] : unique) {
      if (from < 0 || from >= size_ || to < 0 || to >= size_ || from == to)
        return Status::failure("nccl: link " + std::to_string(from) + " -> " +
                               std::to_string(to) + " is not a link between " +
                               "two of the " + std::to_string(size_) +
                               " ranks");
      bool member = rank_ == from || rank_ == to;
      if (!member) {
        // Still collective: every rank of this communicator takes part.
        ncclComm_t none = nullptr;
        ncclResult_t result =
            ncclCommSplit(comm_, NCCL_SPLIT_NOCOLOR, 0, &none, nullptr);
        if (result != ncclSuccess)
          return ncclFailure("ncclCommSplit", result);
        continue;
      }
      Link link;
      // `from` is rank 0 of the link, `to` rank 1.
      ncclResult_t result =
          ncclCommSplit(comm_, 0, rank_ == from ? 0 : 1, &link.comm, nullptr);
      if (result != ncclSuccess)
        return ncclFailure("ncclCommSplit (link " + std::to_string(from) +
                               " -> " + std::to_string(to) + ")",
                           result);
      link.peer = rank_ == from ? 1 : 0;
      cudaError_t error =
          cudaStreamCreateWithFlags(&link.stream, cudaStreamNonBlocking);
      if (error != cudaSuccess) {
        ncclCommDestroy(link.comm);
        return cuda::cudaFailure("nccl link stream", error);
      }
      if (auto it = links_.find({from, to}); it != links_.end()) {
        // Opened again: the new link replaces the old one.
        cudaStreamSynchronize(it->second.stream);
        cudaStreamDestroy(it->second.stream);
        ncclCommDestroy(it->second.comm);
      }
      links_[{from, to}] = link;
    }
    return Status::success();
  }

  std::unique_ptr<Request> startAllReduce(float *data, int64_t count,
                                          ReduceOp op) override {
    return run("all-reduce", device_.commStream(), [&](cudaStream_t s) {
      return ncclAllReduce(data, data, count, ncclFloat,
                           op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_, s);
    });
  }
  /// Device buffers: NCCL reduces out of place itself.
  std::unique_ptr<Request> startAllReduceInto(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp op) override {
    return run("all-reduce", device_.commStream(), [&](cudaStream_t s) {
      return ncclAllReduce(input, output, count, ncclFloat,
                           op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_, s);
    });
  }
  std::unique_ptr<Request> startBroadcast(float *data, int64_t count,
                                          int root) override {
    if (root < 0 || root >= size_)
      return fail("broadcast root " + std::to_string(root) + " out of range");
    return run("broadcast", device_.commStream(), [&](cudaStream_t s) {
      return ncclBroadcast(data, data, count, ncclFloat, root, comm_, s);
    });
  }
  std::unique_ptr<Request> startSend(const float *data, int64_t count, int peer,
                                     int) override {
    if (peer < 0 || peer >= size_)
      return fail("send peer " + std::to_string(peer) + " out of range");
    if (auto it = links_.find({rank_, peer}); it != links_.end()) {
      const Link &link = it->second;
      return run("send", link.stream, [&](cudaStream_t s) {
        return ncclSend(data, count, ncclFloat, link.peer, link.comm, s);
      });
    }
    return run("send", device_.commStream(), [&](cudaStream_t s) {
      return ncclSend(data, count, ncclFloat, peer, comm_, s);
    });
  }
  std::unique_ptr<Request> startRecv(float *data, int64_t count, int peer,
                                     int) override {
    if (peer < 0 || peer >= size_)
      return fail("recv peer " + std::to_string(peer) + " out of range");
    if (auto it = links_.find({peer, rank_}); it != links_.end()) {
      const Link &link = it->second;
      return run("recv", link.stream, [&](cudaStream_t s) {
        return ncclRecv(data, count, ncclFloat, link.peer, link.comm, s);
      });
    }
    return run("recv", device_.commStream(), [&](cudaStream_t s) {
      return ncclRecv(data, count, ncclFloat, peer, comm_, s);
    });
  }
  std::unique_ptr<Request> startReduceScatter(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp op) override {
    return run("reduce-scatter", device_.commStream(), [&](cudaStream_t s) {
      return ncclReduceScatter(input, output, count, ncclFloat,
                               op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_,
                               s);
    });
  }
  std::unique_ptr<Request> startAllGather(const float *input, float *output,
                                          int64_t count) override {
    return run("all-gather", device_.commStream(), [&](cudaStream_t s) {
      return ncclAllGather(input, output, count, ncclFloat, comm_, s);
    });
  }
  Status barrier() override {
    if (bootstrap_)
      return bootstrap_->barrier();
    // A group: an all-reduce of one float, waited for on the host.
    float *one = nullptr;
    cudaError_t error = cudaMalloc(&one, sizeof(float));
    if (error != cudaSuccess)
      return cuda::cudaFailure("nccl barrier", error);
    Status status = startAllReduce(one, 1, ReduceOp::Sum)->wait();
    if (status.ok()) {
      error = cudaStreamSynchronize(device_.computeStream());
      if (error != cudaSuccess)
        status = cuda::cudaFailure("nccl barrier", error);
    }
    cudaFree(one);
    return status;
  }

  /// A communicator over `ranks` through ncclCommSplit (collective over
  /// every rank of this one).
  Status createGroup(const std::vector<int> &ranks,
                     std::unique_ptr<Communicator> &group) override {
    group.reset();
    if (Status status = device_.activate(); !status.ok())
      return status;
    auto at = std::find(ranks.begin(), ranks.end(), rank_);
    bool member = at != ranks.end();
    ncclComm_t handle = nullptr;
    ncclResult_t result = ncclCommSplit(
        comm_, member ? 0 : NCCL_SPLIT_NOCOLOR,
        member ? static_cast<int>(at - ranks.begin()) : 0, &handle, nullptr);
    if (result != ncclSuccess)
      return ncclFailure("ncclCommSplit (group)", result);
    if (!member)
      return Status::success();
    auto sub = std::make_unique<NcclCommunicator>(
        handle, static_cast<int>(at - ranks.begin()),
        static_cast<int>(ranks.size()), device_, nullptr);
    NcclCommunicator *raw = sub.get();
    device_.addHealthCheck([raw] { return raw->health(); });
    device_.addAbort([raw] { raw->abort(); });
    group = std::move(sub);
    return Status::success();
  }

private:
  /// A directed point-to-point link: a two-rank communicator and a stream.
  struct Link {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    /// The other end's rank in `comm`.
    int peer = 0;
  };

  Status health(ncclComm_t comm) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t result = ncclCommGetAsyncError(comm, &async);
    if (result != ncclSuccess)
      return ncclFailure("ncclCommGetAsyncError", result);
    if (async != ncclSuccess && async != ncclInProgress)
      return ncclFailure("rank " + std::to_string(rank_) +
                             ": a collective failed (a peer died?)",
                         async);
    return Status::success();
  }

  static std::unique_ptr<Request> fail(const std::string &what) {
    return std::make_unique<FailedRequest>(Status::failure("nccl: " + what));
  }

  /// Enqueues an operation on `stream` after the work enqueued so far on
  /// the compute stream.
  template <typename Enqueue>
  std::unique_ptr<Request> run(const char *what, cudaStream_t stream,
                               Enqueue enqueue) {
    if (Status status = device_.activate(); !status.ok())
      return std::make_unique<FailedRequest>(status);
    cudaEvent_t ready = nullptr, done = nullptr;
    cudaError_t error =
        cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    if (error == cudaSuccess)
      error = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    if (error == cudaSuccess)
      error = cudaEventRecord(ready, device_.computeStream());
    if (error == cudaSuccess)
      error = cudaStreamWaitEvent(stream, ready, 0);
    if (ready)
      cudaEventDestroy(ready); // Released once the wait is satisfied.
    if (error != cudaSuccess) {
      if (done)
        cudaEventDestroy(done);
      return std::make_unique<FailedRequest>(
          cuda::cudaFailure(std::string("nccl ") + what, error));
    }
    ncclResult_t result = enqueue(stream);
    if (result != ncclSuccess) {
      cudaEventDestroy(done);
      return std::make_unique<FailedRequest>(ncclFailure(what, result));
    }
    error = cudaEventRecord(done, stream);
    if (error != cudaSuccess) {
      cudaEventDestroy(done);
      return std::make_unique<FailedRequest>(
          cuda::cudaFailure(std::string("nccl ") + what, error));
    }
    return std::make_unique<NcclRequest>(done, device_.computeStream());
  }

  ncclComm_t comm_;
  int rank_, size_;
  cuda::CudaBackend &device_;
  Communicator *bootstrap_;
  bool aborted_ = false;
  std::map<std::pair<int, int>, Link> links_;
};

} // namespace

Status createNcclCommunicator(Communicator &bootstrap, DeviceBackend &device,
                              std::unique_ptr<Communicator> &comm) {
  comm.reset();
  auto *cudaDevice = dynamic_cast<cuda::CudaBackend *>(&device);
  if (!cudaDevice)
    return Status::failure("nccl: the device is not a CUDA device");
  if (Status status = cudaDevice->activate(); !status.ok())
    return status;
  // The 128-byte unique id travels as 32 floats (bit-exact over MPI).
  static_assert(sizeof(ncclUniqueId) % sizeof(float) == 0, "id size");
  float id[sizeof(ncclUniqueId) / sizeof(float)] = {};
  ncclUniqueId unique;
  if (bootstrap.rank() == 0) {
    ncclResult_t result = ncclGetUniqueId(&unique);
    if (result != ncclSuccess)
      return ncclFailure("ncclGetUniqueId", result);
    std::memcpy(id, &unique, sizeof(unique));
  }
  Status status =
      bootstrap
          .startBroadcast(id, static_cast<int64_t>(sizeof(id) / sizeof(float)),
                          0)
          ->wait();
  if (!status.ok())
    return Status::failure("nccl: broadcasting the unique id: " +
                           status.message());
  std::memcpy(&unique, id, sizeof(unique));
  ncclComm_t handle = nullptr;
  ncclResult_t result =
      ncclCommInitRank(&handle, bootstrap.size(), unique, bootstrap.rank());
  if (result != ncclSuccess)
    return ncclFailure("ncclCommInitRank (rank " +
                           std::to_string(bootstrap.rank()) + ")",
                       result);
  auto nccl = std::make_unique<NcclCommunicator>(
      handle, bootstrap.rank(), bootstrap.size(), *cudaDevice, &bootstrap);
  NcclCommunicator *raw = nccl.get();
  cudaDevice->addHealthCheck([raw] { return raw->health(); });
  cudaDevice->addAbort([raw] { raw->abort(); });
  comm = std::move(nccl);
  return Status::success();
}

Status openNcclLinks(Communicator &comm,
                     const std::vector<std::pair<int, int>> &links) {
  auto *nccl = dynamic_cast<NcclCommunicator *>(&comm);
  if (!nccl)
    return Status::failure(std::string("nccl links need an nccl "
                                       "communicator, got ") +
                           comm.engine());
  return nccl->openLinks(links);
}

} // namespace strata::rt
