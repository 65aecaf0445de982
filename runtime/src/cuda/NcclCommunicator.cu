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
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "strata-rt/Comm.h"

#include <nccl.h>

#include <cstring>

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
  NcclCommunicator(ncclComm_t comm, int rank, int size,
                   cuda::CudaBackend &device, Communicator &bootstrap)
      : comm_(comm), rank_(rank), size_(size), device_(device),
        bootstrap_(bootstrap) {}
  ~NcclCommunicator() override {
    if (!aborted_)
      ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *engine() const override { return "nccl"; }

  /// A failure when NCCL reported an asynchronous error.
  Status health() {
    ncclResult_t async = ncclSuccess;
    ncclResult_t result = ncclCommGetAsyncError(comm_, &async);
    if (result != ncclSuccess)
      return ncclFailure("ncclCommGetAsyncError", result);
    if (async != ncclSuccess && async != ncclInProgress)
      return ncclFailure("rank " + std::to_string(rank_) +
                             ": a collective failed (a peer died?)",
                         async);
    return Status::success();
  }
  void abort() {
    if (!aborted_) {
      aborted_ = true;
      ncclCommAbort(comm_);
    }
  }

  std::unique_ptr<Request> startAllReduce(float *data, int64_t count,
                                          ReduceOp op) override {
    return run("all-reduce", [&](cudaStream_t s) {
      return ncclAllReduce(data, data, count, ncclFloat,
                           op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_, s);
    });
  }
  std::unique_ptr<Request> startBroadcast(float *data, int64_t count,
                                          int root) override {
    if (root < 0 || root >= size_)
      return fail("broadcast root " + std::to_string(root) + " out of range");
    return run("broadcast", [&](cudaStream_t s) {
      return ncclBroadcast(data, data, count, ncclFloat, root, comm_, s);
    });
  }
  std::unique_ptr<Request> startSend(const float *data, int64_t count, int peer,
                                     int) override {
    if (peer < 0 || peer >= size_)
      return fail("send peer " + std::to_string(peer) + " out of range");
    return run("send", [&](cudaStream_t s) {
      return ncclSend(data, count, ncclFloat, peer, comm_, s);
    });
  }
  std::unique_ptr<Request> startRecv(float *data, int64_t count, int peer,
                                     int) override {
    if (peer < 0 || peer >= size_)
      return fail("recv peer " + std::to_string(peer) + " out of range");
    return run("recv", [&](cudaStream_t s) {
      return ncclRecv(data, count, ncclFloat, peer, comm_, s);
    });
  }
  std::unique_ptr<Request> startReduceScatter(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp op) override {
    return run("reduce-scatter", [&](cudaStream_t s) {
      return ncclReduceScatter(input, output, count, ncclFloat,
                               op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_,
                               s);
    });
  }
  std::unique_ptr<Request> startAllGather(const float *input, float *output,
                                          int64_t count) override {
    return run("all-gather", [&](cudaStream_t s) {
      return ncclAllGather(input, output, count, ncclFloat, comm_, s);
    });
  }
  Status barrier() override { return bootstrap_.barrier(); }

private:
  static std::unique_ptr<Request> fail(const std::string &what) {
    return std::make_unique<FailedRequest>(Status::failure("nccl: " + what));
  }

  template <typename Enqueue>
  std::unique_ptr<Request> run(const char *what, Enqueue enqueue) {
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
      error = cudaStreamWaitEvent(device_.commStream(), ready, 0);
    if (ready)
      cudaEventDestroy(ready); // Released once the wait is satisfied.
    if (error != cudaSuccess) {
      if (done)
        cudaEventDestroy(done);
      return std::make_unique<FailedRequest>(
          cuda::cudaFailure(std::string("nccl ") + what, error));
    }
    ncclResult_t result = enqueue(device_.commStream());
    if (result != ncclSuccess) {
      cudaEventDestroy(done);
      return std::make_unique<FailedRequest>(ncclFailure(what, result));
    }
    error = cudaEventRecord(done, device_.commStream());
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
  Communicator &bootstrap_;
  bool aborted_ = false;
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
      handle, bootstrap.rank(), bootstrap.size(), *cudaDevice, bootstrap);
  NcclCommunicator *raw = nccl.get();
  cudaDevice->addHealthCheck([raw] { return raw->health(); });
  cudaDevice->addAbort([raw] { raw->abort(); });
  comm = std::move(nccl);
  return Status::success();
}

} // namespace strata::rt
