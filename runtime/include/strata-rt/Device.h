//===- Device.h - Devices that run a rank's program ---------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The executor runs a rank's program either on the host CPU (its own
// threaded kernels on a host arena) or through a DeviceBackend: the CUDA
// backend, built where nvcc is found. A backend owns the device arena (one
// per device, the same layout as the host arena), a compute stream for the
// kernels, a copy stream for host/device transfers and a communication
// stream for collectives, ordered with events. The executor keeps a pinned
// host arena as the host view of every buffer: data is filled, parameters are
// initialised and checkpoints are read and written there, and the executor
// moves buffers between the two arenas when needed.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_DEVICE_H
#define STRATA_RT_DEVICE_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::rt {

class Communicator;
class CompressionState;
struct Instruction;
struct Plan;

/// When one instruction ran, in microseconds since the executor was created.
struct InstructionTime {
  double startUs = 0;
  double durationUs = 0;
};

struct DeviceOptions {
  /// Which GPU of this machine (-1: the process's local MPI rank modulo the
  /// number of GPUs).
  int ordinal = -1;
  /// matmul through Strata's own tiled CUDA GEMM instead of cuBLAS.
  bool strataGemm = false;
  /// Let cuBLAS use TF32 tensor cores (results then differ from FP32).
  bool allowTf32 = false;
  /// How long to wait for the device before declaring a step hung (a dead
  /// peer in a collective); 0 waits forever.
  double timeoutSeconds = 0;
};

class DeviceBackend {
public:
  virtual ~DeviceBackend();
  /// E.g. "cuda:0 (NVIDIA H100 80GB HBM3, 132 SMs)".
  virtual std::string describe() const = 0;

  /// Pinned host memory of `bytes` bytes, zeroed (the executor's host arena;
  /// pinned so that copies are asynchronous DMA).
  virtual Status allocateHost(size_t bytes, void **host) = 0;
  virtual void freeHost(void *host) = 0;

  /// Allocates and zeroes the device arena of `program`'s rank and sizes the
  /// kernels' scratch; `hostBase` is the host arena.
  virtual Status prepare(const Plan &plan,
                         const std::vector<Instruction> &program,
                         void *hostBase) = 0;
  /// Communication of the program: `comm` connects every rank of the run
  /// (nullptr for one rank; sends and receives), `groups[g]` is the
  /// communicator of plan group g (nullptr where this rank is not a member;
  /// empty: group 0 is `comm`). Not owned.
  virtual void setCommunicators(Communicator *comm,
                                const std::vector<Communicator *> &groups) = 0;
  /// Pipelines: the rank of the run's communicator that runs each stage in
  /// this rank's replica (send and recv name stages); empty otherwise.
  virtual void setStageRanks(const std::vector<int> &stageRanks) = 0;
  /// Compressed activations: the sites and the formats they use now (not
  /// owned; nullptr when the program has none).
  virtual void setCompression(CompressionState *compression) = 0;
  /// Evaluation mode (Executor::setEvaluation) for the instructions
  /// enqueued from now on.
  virtual void setEvaluation(bool evaluation) = 0;

  /// Enqueues host-to-device copies of these buffers on the copy stream;
  /// instructions enqueued later wait for them.
  virtual Status upload(const std::vector<int64_t> &buffers) = 0;
  /// Copies these buffers device-to-host after everything enqueued so far,
  /// and waits for them.
  virtual Status download(const std::vector<int64_t> &buffers) = 0;
  /// Enqueues instruction `index` of the prepared program.
  virtual Status enqueue(size_t index) = 0;
  /// Instruction `index` does not run in this step (a step part, or the
  /// previous step's instructions of a pipeline not in flight): keeps the
  /// order it would impose on what follows (an update waits for the sends
  /// in flight, and the buffers they read may be reused after it).
  virtual Status skip(size_t index) { return Status::success(); }
  /// Waits for everything enqueued, reports the start and duration of every
  /// instruction enqueued since the last finish (from device events) into
  /// `times` (indexed like the program; others untouched), relative to
  /// `originNs` on the steady clock.
  virtual Status finish(std::vector<InstructionTime> &times,
                        int64_t originNs) = 0;
};

/// Whether this runtime was built with the CUDA backend.
bool haveCudaBackend();
/// The number of usable CUDA devices (0 without a driver or without the
/// backend); `why` says why there are none.
int cudaDeviceCount(std::string *why = nullptr);
/// Creates the CUDA backend on one device. Fails with a clear message when
/// the backend was not built or no device can be used.
Status createCudaBackend(const DeviceOptions &options,
                         std::unique_ptr<DeviceBackend> &backend);

/// An NCCL communicator over the same ranks as `bootstrap` (an MPI
/// communicator whose rank 0 creates the NCCL unique id and broadcasts it),
/// whose operations take device pointers and run on `device`'s
/// communication stream, ordered after the work already enqueued on its
/// compute stream; Request::wait makes later compute work wait for it.
Status createNcclCommunicator(Communicator &bootstrap, DeviceBackend &device,
                              std::unique_ptr<Communicator> &comm);

/// Pipelines on GPUs: gives each directed link (from, to) of `links` (ranks
/// of `comm`, which createNcclCommunicator made) its own two-rank NCCL
/// communicator (ncclCommSplit) and its own stream on both ends. Afterwards
/// comm.startSend to `to` on rank `from` and comm.startRecv from `from` on
/// rank `to` run on that link, matched in the order they are issued (NCCL
/// ignores tags), and never wait for operations on other links or for
/// collectives. Collective: every rank of `comm` calls it with the same
/// links. Sends and receives between ranks without a link share the
/// communication stream, where crossed transfers can deadlock.
Status openNcclLinks(Communicator &comm,
                     const std::vector<std::pair<int, int>> &links);

} // namespace strata::rt

#endif // STRATA_RT_DEVICE_H
