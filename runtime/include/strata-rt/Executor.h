//===- Executor.h - Runs a plan's program on the CPU -------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// An Executor owns one zeroed, 64-byte-aligned arena of `arena_bytes` for
// rank 0, binds every buffer of the plan as a Tensor view into it, and runs the
// program through the CPU kernels (lookupKernel(op)->run).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_EXECUTOR_H
#define STRATA_RT_EXECUTOR_H

#include "strata-rt/Kernels.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"
#include "strata-rt/ThreadPool.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace strata::rt {

struct ExecutorOptions {
  /// Worker threads of the kernels; <= 0 means one per hardware thread.
  int threads = 0;
  /// GEMM tiling of matmuls that carry none of their own.
  GemmTiling gemm;
  /// Communicator of a multi-rank run (not owned); nullptr for one rank.
  Communicator *comm = nullptr;
};

/// When one instruction ran, in microseconds since the executor was created.
struct InstructionTime {
  double startUs = 0;
  double durationUs = 0;
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

  /// Initialises every parameter and state from its init spec, keyed by
  /// (seed, name) (see Init.h).
  void initialize(uint64_t seed);

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
    /// The whole step.
    All,
  };
  /// Like runStep, restricted to the instructions of `part` (selected by
  /// their phase).
  Status runStep(int64_t step, float &loss, StepPart part);

  /// Start and duration of each instruction of the last runStep.
  const std::vector<InstructionTime> &getLastStepTimes() const {
    return lastStepTimes;
  }

private:
  Executor(Plan plan, const ExecutorOptions &options);
  Status checkIndexOperands(size_t index) const;

  /// The rank's memory: an anonymous mapping of `size` bytes.
  struct Arena {
    void *base = nullptr;
    size_t size = 0;
    ~Arena();
  };

  Plan plan;
  std::unique_ptr<ThreadPool> pool;
  KernelContext context;
  std::unique_ptr<Arena> arena;
  std::vector<Tensor> tensors;
  std::vector<InstructionTime> lastStepTimes;
  /// The clock origin of the instruction times, in ns since the epoch of
  /// std::chrono::steady_clock.
  int64_t originNs = 0;
};

} // namespace strata::rt

#endif // STRATA_RT_EXECUTOR_H
