//===- CudaBackend.h - The CUDA device backend (private) ---------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CUDA_BACKEND_H
#define STRATA_RT_CUDA_BACKEND_H

#include "CudaKernels.h"

#include "strata-rt/Device.h"
#include "strata-rt/Plan.h"

#include <functional>

namespace strata::rt::cuda {

/// "what: <CUDA error string>" as a failure.
Status cudaFailure(const std::string &what, cudaError_t error);

/// Pipelines: NCCL matches the transfers of a link in the order they are
/// issued and ignores tags, so a send is issued only once every send that
/// its receiver receives before it has been. Fills sendsAt[i] for each send
/// instruction i of `program` with the sends (instruction indices) it
/// issues: those held back until it, in the receiver's order, itself
/// included unless it is held back in turn. A send's input is not written
/// again before the next in-place update or the end of the step
/// (docs/plan-format.md), so holding it back until then is safe; fails when
/// a send would have to wait longer.
Status orderPipelineSends(const Plan &plan,
                          const std::vector<Instruction> &program,
                          std::vector<std::vector<size_t>> &sendsAt);

/// One GPU: a device arena mirroring the host arena, three streams (compute,
/// copy, communication), cuBLAS on the compute stream, and a pair of timing
/// events per instruction.
class CudaBackend final : public DeviceBackend {
public:
  ~CudaBackend() override;
  static Status create(const DeviceOptions &options,
                       std::unique_ptr<DeviceBackend> &backend);

  std::string describe() const override;
  Status allocateHost(size_t bytes, void **host) override;
  void freeHost(void *host) override;
  Status prepare(const Plan &plan, const std::vector<Instruction> &program,
                 void *hostBase) override;
  void setCommunicators(Communicator *comm,
                        const std::vector<Communicator *> &groups) override;
  void setStageRanks(const std::vector<int> &stageRanks) override;
  void setCompression(CompressionState *compression) override;
  void setEvaluation(bool evaluation) override;
  Status upload(const std::vector<int64_t> &buffers) override;
  Status download(const std::vector<int64_t> &buffers) override;
  Status enqueue(size_t index) override;
  Status skip(size_t index) override;
  Status finish(std::vector<InstructionTime> &times, int64_t originNs) override;

  int ordinal() const { return ordinal_; }
  cudaStream_t computeStream() const { return compute_; }
  cudaStream_t commStream() const { return comm_; }
  /// Makes the device current on the calling thread.
  Status activate() const;
  /// Called while waiting for the device: returns a failure when a
  /// communicator reports an asynchronous error (a dead peer).
  void addHealthCheck(std::function<Status()> check) {
    healthChecks_.push_back(std::move(check));
  }
  /// Called when waiting timed out, to abort communicators.
  void addAbort(std::function<void()> abort) {
    aborts_.push_back(std::move(abort));
  }

private:
  CudaBackend() = default;
  /// Waits for `stream`, bounded by the timeout, polling the health checks.
  Status waitFor(cudaStream_t stream, const char *what);
  /// Makes the compute stream wait for the sends in flight (device-side).
  Status orderAfterSends();

  int ordinal_ = 0;
  std::string name_;
  int smCount_ = 0;
  size_t memoryBytes_ = 0;
  DeviceOptions options_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr, comm_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cudaEvent_t copied_ = nullptr, computed_ = nullptr, base_ = nullptr;
  std::vector<cudaEvent_t> starts_, ends_;
  std::vector<size_t> enqueued_;
  int64_t baseNs_ = 0;
  bool baseRecorded_ = false;

  const Plan *plan_ = nullptr;
  const std::vector<Instruction> *program_ = nullptr;
  char *hostBase_ = nullptr;
  char *deviceBase_ = nullptr;
  void *scratch_ = nullptr;
  size_t scratchBytes_ = 0;
  std::vector<Tensor> tensors_;
  std::vector<CudaKernelFn> kernels_;
  /// Multi-tensor groups launched as one: groupSize_[i] is the size of the
  /// group instruction i starts (1: none) and 0 for the group's later
  /// members, which enqueue only records.
  std::vector<size_t> groupSize_;
  /// The sends each send instruction issues (orderPipelineSends).
  std::vector<std::vector<size_t>> sendsAt_;
  CudaContext context_;
  std::vector<std::function<Status()>> healthChecks_;
  std::vector<std::function<void()>> aborts_;
  /// DeviceOptions::timeoutSeconds (0: wait forever).
  double timeoutSeconds_ = 0;
};

} // namespace strata::rt::cuda

#endif // STRATA_RT_CUDA_BACKEND_H
