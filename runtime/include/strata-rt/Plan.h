//===- Plan.h - The plan file: types and loader ------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// In-memory form of a plan (docs/plan-format.md) and its loader. A plan that
// `loadPlan` accepts is fully validated: every buffer lies inside its arena,
// every reference names a buffer of the right kind and dtype, and every
// instruction passed its kernel's verifier, so executing it cannot index out
// of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_PLAN_H
#define STRATA_RT_PLAN_H

#include "strata-rt/Kernels.h"
#include "strata-rt/PlanFormat.h"
#include "strata-rt/PlanOps.h"
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::rt {

/// The newest plan format version this runtime reads (it also reads
/// version 1, whose plans have exactly one rank entry).
constexpr int64_t kPlanFormatVersion = strata_plan::kFormatVersion;

enum class BufferKind { Param, Grad, State, Input, Activation };
/// "param", "grad", "state", "input", "activation".
const char *bufferKindName(BufferKind kind);
bool parseBufferKind(const std::string &name, BufferKind &kind);

struct Buffer {
  int64_t id = 0;
  std::string name;
  BufferKind kind = BufferKind::Activation;
  TensorDesc desc;
  /// Byte range [offset, offset + bytes) of the rank's arena.
  int64_t offset = 0;
  int64_t bytes = 0;
  /// The activation buffer whose bytes this one is (a reshape's output
  /// placed in its input's bytes), or -1. Only a kView instruction whose
  /// input is that buffer or another view of it may write a view.
  int64_t viewOf = -1;
};

enum class InitKind {
  Zeros,
  Ones,
  Normal,
  Uniform,
  XavierUniform,
  KaimingNormal
};
/// "zeros", "ones", "normal", "uniform", "xavier_uniform", "kaiming_normal".
const char *initKindName(InitKind kind);
bool parseInitKind(const std::string &name, InitKind &kind);

/// How one parameter or state is initialised (see Init.h).
struct InitSpec {
  InitKind kind = InitKind::Zeros;
  double scale = 1.0;
  /// Filled in by the loader (from the plan, else from the shape) for the
  /// kinds that need them.
  int64_t fanIn = 0;
  int64_t fanOut = 0;
};

struct Parameter {
  std::string name;
  int64_t buffer = -1;
  /// The gradient buffer, or -1 for a parameter without one.
  int64_t grad = -1;
  int64_t layer = -1;
  InitSpec init;
};

struct State {
  std::string name;
  int64_t buffer = -1;
  /// The parameter this state belongs to ("" when none is named).
  std::string param;
  /// Its index in Plan::parameters (-1 when none is named).
  int64_t paramIndex = -1;
  InitSpec init;
  /// `init` is "param": the state starts as a copy of its parameter's value
  /// (an older weight version of an asynchronous pipeline schedule).
  bool copiesParam = false;
  /// A running statistic (`"kind": "running"`, batch_norm's running mean or
  /// variance) rather than optimizer state: part of the model's weights, so
  /// `--init` loads it with the parameters.
  bool running = false;
  /// The layer of a running statistic (-1 when the plan gives none).
  int64_t layer = -1;
  /// A value the step carries over to the next (`"kind": "carry"`: what a
  /// pipeline that does not drain between steps keeps of the previous
  /// step's forward pass): belongs to no parameter, starts as zeros, any
  /// element type; a checkpoint of a drained pipeline need not hold it.
  bool carry = false;
};

enum class InputRole { Data, Labels, Step };
/// "data", "labels", "step".
const char *inputRoleName(InputRole role);

struct Input {
  std::string name;
  InputRole role = InputRole::Data;
  int64_t buffer = -1;
};

/// One instruction, decoded once by the loader: code outside the kernels
/// tests its op's traits (`info()`), kernels read its typed attributes.
struct Instruction {
  OpCode op = OpCode::Add;
  /// The op's CPU kernel; never null in a loaded plan.
  const OpKernel *kernel = nullptr;
  std::vector<int64_t> in;
  std::vector<int64_t> out;
  OpAttrs attrs;
  int64_t layer = -1;
  /// Phase::None when the plan gives none.
  Phase phase = Phase::None;
  /// Works on a micro-batch of the previous step (`"previous_step": true`):
  /// a pipeline that does not drain between steps runs a step's last
  /// backward passes at the start of the next. The executor skips these in
  /// the first step after a drained (or fresh) pipeline and runs them alone
  /// to drain it (Executor::drain).
  bool previousStep = false;

  const OpInfo &info() const { return opInfo(op); }
  bool has(OpTrait trait) const { return info().has(trait); }
  /// Updates in place buffers a send may read: the sends in flight must
  /// complete before it (OpInfo::waitsForSends), unless it is a `local`
  /// copy_into, whose buffer no send reads (the plan loader checks).
  bool waitsForSends() const { return info().waitsForSends() && !attrs.local; }
  /// The mnemonic, for messages.
  const char *name() const { return opName(op); }
};

/// Where a rank's program runs: the host CPU or a CUDA GPU.
enum class DeviceKind { Cpu, Cuda };
/// "cpu", "cuda".
const char *deviceKindName(DeviceKind kind);
bool parseDeviceKind(const std::string &name, DeviceKind &kind);

struct RankPlan {
  int64_t rank = 0;
  /// The device the plan asks for; `strata-run --device` may override it.
  DeviceKind device = DeviceKind::Cpu;
  /// Which shard of the global batch this rank reads (its data-parallel
  /// replica index).
  int64_t replica = 0;
  /// The pipeline stage (device of the pipeline) the rank runs; 0 when the
  /// plan is not a pipeline.
  int64_t stage = 0;
  int64_t arenaBytes = 0;
  /// The rank whose program this rank runs (its own rank when it has one);
  /// sharing keeps a plan for many identical replicas small.
  int64_t programOf = 0;
  /// Empty when programOf names another rank.
  std::vector<Instruction> program;
};

/// A set of ranks that run collectives together (all_reduce's `group`
/// attribute indexes the plan's groups).
struct CommGroup {
  std::string name;
  /// Distinct ranks, ascending.
  std::vector<int64_t> ranks;
};

struct Plan {
  /// Where the plan was loaded from (used in messages).
  std::string path;
  int64_t version = kPlanFormatVersion;
  std::string model;
  std::string producer;
  /// The informational "optimizer" object: its "kind" and numeric fields.
  std::string optimizerKind;
  std::map<std::string, double> optimizer;

  /// Indexed by buffer id.
  std::vector<Buffer> buffers;
  std::vector<Parameter> parameters;
  std::vector<State> states;
  std::vector<Input> inputs;
  int64_t loss = -1;
  /// One entry per rank of the run, indexed by rank (after loading, also for
  /// a version 1 plan with `replicas` > 1, whose replicas share ranks[0]'s
  /// program).
  std::vector<RankPlan> ranks;
  /// Data-parallel replicas: the global batch is this many times the
  /// per-rank batch (1: no data parallelism).
  int64_t replicas = 1;
  /// Communicator groups; a plan without any has one implicit group of every
  /// rank (index 0).
  std::vector<CommGroup> groups;
  /// Lagging gradients: the `staleness` of the plan's all_reduce_start
  /// instructions (every one carries the same; 0: synchronous).
  int64_t staleness = 0;
  /// Optimizer updates one step applies to each parameter (the optional
  /// "updates_per_step"; more than 1 for the asynchronous pipeline
  /// schedules, whose updates run between the forward and backward passes).
  int64_t updatesPerStep = 1;

  /// The largest total of bytes (each rounded up to 64) of buffers live at
  /// one time over the plan's programs (Liveness.h): no arena is smaller.
  int64_t liveLowerBound = 0;
  /// The strategy `--strata-plan-buffers` recorded in the plan's optional
  /// "memory_plan" object ("" when the buffers were not planned).
  std::string memoryPlanStrategy;
  /// Pipeline stages (1 when the plan is not a pipeline); every (stage,
  /// replica) pair has exactly one rank.
  int64_t stages = 1;
  /// The rank that runs `stage` for `replica`, or -1.
  int64_t rankOf(int64_t stage, int64_t replica) const;

  /// The input with `role`, or nullptr (a plan has at most one per role).
  const Input *findInput(InputRole role) const;
  /// The buffer whose bytes buffer `id` is: the buffer it views
  /// (Buffer::viewOf), else itself.
  int64_t bytesOf(int64_t id) const {
    int64_t viewed = buffers[id].viewOf;
    return viewed >= 0 ? viewed : id;
  }
  /// The carried value (State::carry) that buffer `id` holds, or null.
  const State *carryIn(int64_t id) const {
    for (const State &state : states)
      if (state.carry && state.buffer == id)
        return &state;
    return nullptr;
  }
  bool isCarry(int64_t id) const { return carryIn(id) != nullptr; }
  /// The number of ranks the plan runs on.
  int64_t worldSize() const { return static_cast<int64_t>(ranks.size()); }
  /// The instructions rank `rank` runs.
  const std::vector<Instruction> &programOf(int64_t rank) const {
    return ranks[ranks[rank].programOf].program;
  }
};

/// Multi-tensor groups of a rank program: entry i is the number of
/// instructions of the group that instruction i starts (consecutive
/// instructions of i's op with the same non-zero `multi_tensor` id, none
/// reading a value an earlier one writes; at least 2), 1 for an instruction
/// outside any group, and 0 for a group member after the first. Executors run
/// a group as one kernel when its op has one.
std::vector<size_t> multiTensorRuns(const std::vector<Instruction> &program);

/// The buffers `program` updates in place (the outputs of its kInPlace
/// instructions that overwrite an input: parameters, states, carried
/// values), in id order. `forwardBackward`: only those of instructions
/// outside the update phase (batch_norm's running statistics), which a
/// forward-backward pass changes.
std::vector<int64_t> updatedInPlace(const std::vector<Instruction> &program,
                                    bool forwardBackward = false);

/// Reads and validates the plan at `path`. Errors are `Status::Code::Invalid`
/// (a file that cannot be read is a `Failure`) with a message that starts
/// with the path and names the field, e.g.
///   "mlp.json: buffers[3].offset: must be a multiple of 64, got 100"
///   "mlp.json: instruction #12 (matmul): <kernel message>".
Status loadPlan(const std::string &path, Plan &plan);

/// As loadPlan, for plan text already in memory; `path` is only used in
/// messages.
Status parsePlan(const std::string &text, const std::string &path, Plan &plan);

} // namespace strata::rt

#endif // STRATA_RT_PLAN_H
