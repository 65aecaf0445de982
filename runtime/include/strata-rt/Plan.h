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
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::rt {

/// The plan format version this runtime reads.
constexpr int64_t kPlanFormatVersion = 1;

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
  InitSpec init;
};

enum class InputRole { Data, Labels, Step };
/// "data", "labels", "step".
const char *inputRoleName(InputRole role);

struct Input {
  std::string name;
  InputRole role = InputRole::Data;
  int64_t buffer = -1;
};

struct Instruction {
  std::string op;
  /// Never null in a loaded plan.
  const OpKernel *kernel = nullptr;
  std::vector<int64_t> in;
  std::vector<int64_t> out;
  Attrs attrs;
  int64_t layer = -1;
  /// "forward", "backward", "update", or "" when the plan gives none.
  std::string phase;
};

struct RankPlan {
  int64_t rank = 0;
  std::string device;
  int64_t arenaBytes = 0;
  std::vector<Instruction> program;
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
  std::vector<RankPlan> ranks;
  /// Data-parallel replicas: every one of this many ranks runs ranks[0]'s
  /// program on its shard of the global batch (1: a single-rank plan).
  int64_t replicas = 1;

  /// The input with `role`, or nullptr (a plan has at most one per role).
  const Input *findInput(InputRole role) const;
};

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
