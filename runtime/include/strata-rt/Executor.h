//===- Executor.h - Runs a plan's program on the CPU -------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// An Executor runs one rank's program. It owns one zeroed, 64-byte-aligned
// host arena of the rank's `arena_bytes`, binds every buffer of the plan as a
// Tensor view into it, and runs the program through the CPU kernels
// (lookupKernel(op)->run) or, on a GPU, through a DeviceBackend (Device.h)
// whose device arena mirrors the host one. The host views are what data
// sources, initialisation and checkpoints use; with a device, the executor
// uploads inputs before each step and parameters and states after they were
// changed on the host, and `syncToHost` brings them back.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_EXECUTOR_H
#define STRATA_RT_EXECUTOR_H

#include "strata-rt/Compression.h"
#include "strata-rt/CopyEngine.h"
#include "strata-rt/Device.h"
#include "strata-rt/Kernels.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"
#include "strata-rt/ThreadPool.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace strata::rt {

/// --emulate-compute: the runs of each instruction that measure its unslowed
/// time before padding starts (the median of all but the first, a warm-up):
/// in a run whose every step runs every instruction once, the first six
/// steps are not slowed.
inline constexpr int64_t kEmulateUnslowedRuns = 6;
static_assert(kEmulateUnslowedRuns >= 2, "one run is a warm-up");

struct ExecutorOptions {
  /// Worker threads of the kernels; <= 0 means one per hardware thread.
  int threads = 0;
  /// GEMM tiling of matmuls that carry none of their own.
  GemmTiling gemm;
  /// Communicator of a multi-rank run (not owned); nullptr for one rank.
  Communicator *comm = nullptr;
  /// Communicators of the plan's groups, indexed by group (not owned;
  /// nullptr where this rank is not a member). Empty: group 0 is `comm`.
  std::vector<Communicator *> groups;
  /// Which rank's program to run.
  int64_t rank = 0;
  /// CPU kernels take this many times as long (timed padding, a spin, after
  /// each kernel; strata-run --emulate-compute). Each instruction's first
  /// kEmulateUnslowedRuns runs are not padded: they measure its unslowed time
  /// (the median of all but the first), and later runs are padded until they
  /// have taken computeScale times that. Communication and copies are not
  /// padded.
  double computeScale = 1;
  /// Where to run it; a CUDA executor needs `backend`.
  DeviceKind device = DeviceKind::Cpu;
  /// The device of a CUDA executor (ownership passes to the executor).
  std::shared_ptr<DeviceBackend> backend;
};

class Executor {
public:
  /// Allocates and zeroes the arena and binds the buffers of `plan` (which
  /// must come from loadPlan). Fails (`Failure`) only when the arena cannot
  /// be allocated.
  static Status create(Plan plan, const ExecutorOptions &options,
                       std::unique_ptr<Executor> &executor);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  const Plan &getPlan() const { return plan; }
  ThreadPool &getPool() { return *pool; }
  /// Views of every buffer, indexed by buffer id.
  const std::vector<Tensor> &getTensors() const { return tensors; }
  const Tensor &getTensor(int64_t id) const { return tensors[id]; }

  /// The program this executor runs.
  const std::vector<Instruction> &getProgram() const { return *program; }
  /// Where it runs.
  DeviceKind getDevice() const { return device; }
  /// "cpu (N threads)" or the device backend's description.
  std::string describeDevice() const;

  /// Initialises every parameter and state from its init spec, keyed by
  /// (seed, name) (see Init.h); states with `copiesParam` copy their
  /// parameter.
  void initialize(uint64_t seed);
  /// Sets every state with `copiesParam` to its parameter's value (after
  /// the parameters were loaded from a file).
  void copyParameterStates();

  /// Parameters or states were written through the host views (a
  /// checkpoint was loaded): a device executor uploads them before the next
  /// step. Free on the CPU.
  void markHostModified() { hostStale = true; }
  /// Brings parameters, states and gradients of a device executor back into
  /// the host views (before a checkpoint is written); nothing when the host
  /// views were modified since the last upload (markHostModified: they are
  /// the newer copies). Free on the CPU.
  Status syncToHost() const;

  /// Runs the program once as step `step` (1-based): sets the step input (if
  /// any), runs every instruction in order and reads the loss. The data and
  /// labels inputs must have been filled. Fails (`Failure`) when an id or
  /// label operand is out of range or a kernel throws; the step is then
  /// incomplete.
  Status runStep(int64_t step, float &loss);

  /// Which instructions of a step to run.
  enum class StepPart {
    /// Only the forward pass (up to the loss).
    Forward,
    /// Forward and backward: every gradient, but no optimizer update.
    ForwardBackward,
    /// Only the optimizer updates (after ForwardBackward: gradient
    /// clipping scales the gradients between the two).
    Update,
    /// The whole step.
    All,
    /// Lagging gradients: forward and backward without `all_reduce_wait`
    /// (the gradient set, packed into the bucket staging buffers).
    Gradients,
    /// Lagging gradients: only `all_reduce_wait` and the updates (applies
    /// the aggregate the bucket staging buffers hold).
    Apply,
    /// Only the instructions of the previous step's micro-batches
    /// (Instruction::previousStep): drain().
    Drain,
  };
  /// Like runStep, restricted to the instructions of `part` (selected by
  /// their phase). While the pipeline is not in flight (pipelineInFlight),
  /// the previous step's instructions are skipped: there is no previous
  /// step. A whole step (All, or Update after ForwardBackward) leaves the
  /// pipeline in flight.
  Status runStep(int64_t step, float &loss, StepPart part);

  /// Whether the program carries micro-batches over from one step to the
  /// next (has previous-step instructions).
  bool carriesOver() const { return carryOver; }
  /// Whether the previous step's carried-over micro-batches still wait for
  /// their backward passes (a step ran since the start or the last drain).
  bool pipelineInFlight() const { return inFlight; }
  /// Sets it (a checkpoint restores it).
  void setPipelineInFlight(bool on) { inFlight = on && carryOver; }
  /// Drains a pipeline that carries micro-batches over: keeps the in-flight
  /// state (the parameters and states this rank updates in place, but the
  /// carried values, which a drain leaves as they are: what a checkpoint
  /// needs to resume the pipeline exactly), then runs the previous step's
  /// instructions alone, as step `step` (the one after the last step), so
  /// every micro-batch's update is applied. Nothing when the pipeline is
  /// not in flight. Every rank of the plan drains together. The weights are
  /// then those of a pipeline draining every step (no arithmetic differs);
  /// resumeInFlight goes back to the kept state to go on.
  Status drain(int64_t step);
  /// Puts the kept in-flight parameters and states back (after a drain)
  /// and marks the pipeline in flight; forgets them.
  void resumeInFlight();
  /// The kept in-flight bytes of each parameter and state buffer (empty
  /// when none are kept); a checkpoint of a pipeline stage gathers the
  /// other stages' into rank 0's.
  std::map<int64_t, std::vector<char>> &getInFlight() { return flight; }
  const std::map<int64_t, std::vector<char>> &getInFlight() const {
    return flight;
  }
  /// Replicated pipeline stages (replicas > 1): every rank's carried values
  /// by checkpoint name (`STATE@rankR`), which rank 0 gathers for a
  /// checkpoint (replicas carry different micro-batches).
  std::map<std::string, std::vector<char>> &getRankCarries() {
    return rankCarries;
  }
  const std::map<std::string, std::vector<char>> &getRankCarries() const {
    return rankCarries;
  }
  /// The rank this executor runs.
  int64_t getRank() const { return rank; }
  /// The carried values this rank's program writes (buffers).
  std::vector<int64_t> ownCarries() const;

  /// Evaluation mode for the steps that follow (strata-run --infer,
  /// --eval-data): batch_norm uses and keeps its running statistics, as
  /// PyTorch's model.eval(). Off (training mode) by default.
  void setEvaluation(bool evaluation);
  bool isEvaluation() const { return context.evaluation; }

  /// Lagging gradients: leave the collectives to the lagging aggregator
  /// (KernelContext::deferCollectives).
  void setDeferCollectives(bool defer) { context.deferCollectives = defer; }
  /// The bucket staging buffers, by bucket number (the packed gradient set
  /// after a Gradients part; what an Apply part unpacks).
  std::map<int64_t, BucketTransfer> &getBuckets() { return context.buckets; }
  /// The next runStep sleeps this long before its first backward
  /// instruction (an injected straggler, `strata-run --straggler`); reset
  /// to 0 by that step.
  void setBackwardDelay(double milliseconds) { backwardDelayMs = milliseconds; }
  /// Learning-rate schedules: sets the `lr` of every instruction that takes
  /// one (the optimizer updates) to rate(the plan's value) for the steps
  /// that follow; the previous step's instructions (a pipeline that carries
  /// micro-batches over) to previousRate(the plan's value) when given, the
  /// rate of the step they belong to.
  void
  setLearningRates(const std::function<double(double)> &rate,
                   const std::function<double(double)> &previousRate = nullptr);
  /// Mixed precision: with `on` false, the instructions the plan marks
  /// `bf16` (matmuls and convolutions) compute in f32 for the steps that
  /// follow; true restores the plan's marks (the gradient check's f32
  /// reference forward).
  void setBf16Products(bool on);
  /// The number of instructions the plan marks `bf16`.
  size_t countBf16Products() const { return planBf16.size(); }

  /// Start and duration of each instruction of the last runStep.
  const std::vector<InstructionTime> &getLastStepTimes() const {
    return lastStepTimes;
  }
  /// The origin of those times in microseconds of std::chrono::steady_clock
  /// (CLOCK_MONOTONIC on Linux: one clock for all processes of a machine,
  /// so the ranks' traces can be aligned).
  double getClockOriginUs() const { return originNs * 1e-3; }

  /// An asynchronous bucket all-reduce of the last runStep (CPU): from its
  /// `all_reduce_start` until it completed (the communicator's completion
  /// time, Request::completedNs; where it records none, when the executor
  /// first saw it complete: it tests transfers in flight after every
  /// instruction), in the clock of getLastStepTimes.
  struct TransferTime {
    int64_t bucket = 0;
    int64_t bytes = 0;
    double startUs = 0;
    double durationUs = 0;
  };
  std::vector<TransferTime> getLastStepTransfers() const;

  /// A host copy of the last runStep (CPU; swap_out or swap_in), as the copy
  /// thread ran it, in the clock of getLastStepTimes.
  struct CopyTime {
    std::string name;
    int64_t slot = 0;
    int64_t bytes = 0;
    double startUs = 0;
    double durationUs = 0;
  };
  std::vector<CopyTime> getLastStepCopies() const;
  /// The host swap pool of a CPU executor whose program swaps (nullptr
  /// otherwise).
  const SwapPool *getSwapPool() const { return swapPool.get(); }
  /// The compressed activations of the program (nullptr when it has none).
  CompressionState *getCompression() { return compression.get(); }
  const CompressionState *getCompression() const { return compression.get(); }
  /// The run's seed, which keys stochastic rounding with the step number.
  void setSeed(uint64_t value) { seed = value; }

private:
  Executor(Plan plan, const ExecutorOptions &options);
  Status checkIndexOperands(size_t index) const;
  /// Completes the pipeline sends in flight.
  Status finishSends();

  /// The rank's host memory: an anonymous mapping of `size` bytes, or
  /// pinned memory of the device backend.
  struct Arena {
    void *base = nullptr;
    size_t size = 0;
    DeviceBackend *pinnedBy = nullptr;
    ~Arena();
  };

  Status runOnDevice(int64_t step, float &loss,
                     const std::vector<bool> &included,
                     const std::function<void(size_t)> &delay);

  Plan plan;
  /// The rank's program (in `plan`).
  std::vector<Instruction> *program = nullptr;
  /// multiTensorRuns(*program): the multi-tensor groups the CPU runs as one
  /// kernel.
  std::vector<size_t> groupRuns;
  /// Runs the multi-tensor group of `size` instructions from `first` as one
  /// kernel and records each member's share of its time (by element count).
  void runGroup(size_t first, size_t size);
  /// (instruction, the plan's `lr`) of every instruction that takes one.
  std::vector<std::pair<size_t, double>> planLearningRates;
  /// The instructions the plan marks `bf16`.
  std::vector<size_t> planBf16;
  DeviceKind device = DeviceKind::Cpu;
  std::shared_ptr<DeviceBackend> backend;
  /// The host views of parameters/states changed since the last upload.
  bool hostStale = true;
  /// carriesOver(); pipelineInFlight().
  bool carryOver = false, inFlight = false;
  /// keepInFlight(): buffer -> bytes.
  std::map<int64_t, std::vector<char>> flight;
  Status keepInFlight();
  std::map<std::string, std::vector<char>> rankCarries;
  int64_t rank = 0;
  Status runStepPart(int64_t step, float &loss, StepPart part);
  /// Buffers a device executor uploads before every step (inputs) and after
  /// host changes (parameters, states).
  std::vector<int64_t> inputBuffers, stateBuffers;
  std::unique_ptr<ThreadPool> pool;
  KernelContext context;
  std::unique_ptr<Arena> arena;
  /// Activation swapping (CPU): the host slots and the copy thread, which
  /// reads and writes the arena and the pool (so it goes first).
  std::unique_ptr<SwapPool> swapPool;
  std::unique_ptr<CopyEngine> copies;
  std::vector<CopySpan> lastStepCopies;
  std::unique_ptr<CompressionState> compression;
  uint64_t seed = 0;
  std::vector<Tensor> tensors;
  std::vector<InstructionTime> lastStepTimes;
  /// The clock origin of the instruction times, in ns since the epoch of
  /// std::chrono::steady_clock.
  int64_t originNs = 0;
  double backwardDelayMs = 0;
  double computeScale = 1;
  /// --emulate-compute, per instruction (then per multi-tensor group, by its
  /// first member, after the program's size: a group and its first member
  /// run alone differ): how often it ran, and its unslowed times (ns) after
  /// its first run, then their median.
  struct Unslowed {
    int64_t runs = 0;
    std::vector<double> samplesNs;
    double medianNs = 0;
  };
  std::vector<Unslowed> unslowed;
  /// --emulate-compute: spins until the kernel of instruction `index` (a
  /// multi-tensor group when `group`) that ran from `startNs` to `endNs` has
  /// taken computeScale times its unslowed time; returns the new end.
  int64_t padKernel(size_t index, bool group, int64_t startNs, int64_t endNs);
};

/// The gradients of the parameters `executor`'s rank updates (a pipeline
/// stage's own; every parameter on one rank or a data-parallel replica), as
/// they stand after a ForwardBackward step part.
std::vector<Tensor> rankGradients(const Executor &executor);

} // namespace strata::rt

#endif // STRATA_RT_EXECUTOR_H
