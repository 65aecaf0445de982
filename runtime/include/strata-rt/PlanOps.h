//===- PlanOps.h - Op codes, traits and typed attributes ----------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The instruction set of a plan, generated from PlanOps.def: an OpCode per
// op, its static facts (OpInfo: mnemonic, operand counts, traits, attributes,
// in-place and index operands), the Phase of an instruction, and OpAttrs,
// the typed attributes that the loader decodes once per instruction and that
// kernels read.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_PLANOPS_H
#define STRATA_RT_PLANOPS_H

#include "strata-rt/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

enum class OpCode : uint8_t {
#define STRATA_PLAN_OP(Enum, Name, NumIn, NumOut, Traits) Enum,
#include "strata-rt/PlanOps.def"
};

/// The number of op codes.
constexpr int kNumOpCodes = 0
#define STRATA_PLAN_OP(Enum, Name, NumIn, NumOut, Traits) +1
#include "strata-rt/PlanOps.def"
    ;

/// What code outside the kernels needs to know about an op.
enum OpTrait : uint32_t {
  /// Runs a collective over a communicator group (`group` attribute).
  kCollective = 1u << 0,
  /// Moves a tensor between the ranks of two pipeline stages (`peer`).
  kPointToPoint = 1u << 1,
  /// Starts an asynchronous transfer that a kAsyncWait of the same `bucket`
  /// completes.
  kAsyncStart = 1u << 2,
  kAsyncWait = 1u << 3,
  /// Updates operands in place (OpInfo::inPlace).
  kInPlace = 1u << 4,
  /// May read its inputs after the kernel returns (a non-blocking send),
  /// until the executor completes it (Liveness.h keeps them alive).
  kReadsAfterReturn = 1u << 5,
  /// Has an i32 operand whose values index another operand
  /// (OpInfo::indexOperand), checked by the executor before it runs.
  kIndexOperands = 1u << 6,
  /// Cuts a block of rows (a micro-batch) out of its input.
  kBatchSlice = 1u << 7,
  /// Starts an asynchronous copy between a buffer and host slot `slot` on
  /// the executor's copy resource (swap_out, swap_in) and returns at once;
  /// the kCopyWait of the same slot blocks until it is complete. Distinct
  /// from kAsyncStart/kAsyncWait, which mean bucket all-reduces.
  kCopyStart = 1u << 8,
  kCopyWait = 1u << 9,
  /// A kInPlace op whose updated buffers never leave the rank (batch_norm's
  /// running statistics, which no send reads): the sends in flight need not
  /// complete before it (OpInfo::waitsForSends), and a send's input stays
  /// live past it (Liveness.h).
  kLocalUpdate = 1u << 10,
  /// Reads its one input's bytes with another shape (reshape, flatten): its
  /// output may be a view of the input's buffer (Buffer::viewOf), and then
  /// the kernel moves no byte.
  kView = 1u << 11,
};

enum class AttrId : uint8_t {
#define STRATA_PLAN_ATTR(Enum, Name, Member, Kind) Enum,
#include "strata-rt/PlanOps.def"
};

constexpr int kNumAttrIds = 0
#define STRATA_PLAN_ATTR(Enum, Name, Member, Kind) +1
#include "strata-rt/PlanOps.def"
    ;
static_assert(kNumAttrIds <= 64, "OpAttrs::present is a 64-bit mask");

enum class AttrKind : uint8_t { Int, Float, Bool, IntList };
/// "integer", "number", "boolean", "list of integers".
const char *attrKindName(AttrKind kind);

struct AttrInfo {
  const char *name;
  AttrKind kind;
};
const AttrInfo &attrInfo(AttrId id);

/// One attribute an op takes.
struct OpAttrSpec {
  AttrId id;
  bool required;
  /// The value of an absent optional Int, Float or Bool attribute.
  double fallback;
};

/// An index operand (see STRATA_PLAN_INDEX_OPERAND in PlanOps.def).
struct IndexOperandSpec {
  int ids;
  int tensor;
  bool output;
  int64_t dim;
};

struct OpInfo {
  OpCode op;
  const char *name;
  /// -1: any number (the kernel's verifier checks).
  int numInputs;
  int numOutputs;
  uint32_t traits;
  std::vector<OpAttrSpec> attrs;
  /// kInPlace ops: output #i is the buffer of input #inPlace[i], or a fresh
  /// buffer when inPlace[i] is -1 (batch_norm's normalised output); empty
  /// for other ops.
  std::vector<int> inPlace;
  /// The input whose buffer output `o` updates in place, or -1.
  int inPlaceInput(size_t o) const {
    return o < inPlace.size() ? inPlace[o] : -1;
  }
  /// kIndexOperands ops.
  IndexOperandSpec indexOperand;

  bool has(OpTrait trait) const { return (traits & trait) != 0; }
  /// Updates in place buffers a send may read (parameters, optimizer
  /// state): the sends in flight must complete before it runs.
  bool waitsForSends() const { return has(kInPlace) && !has(kLocalUpdate); }
  /// A point-to-point op that sends its one input to `peer` (the other kind
  /// receives its one output from `peer`).
  bool sends() const { return has(kPointToPoint) && numInputs == 1; }
  /// The spec of attribute `id`, or nullptr when the op does not take it.
  const OpAttrSpec *attr(AttrId id) const;
};

const OpInfo &opInfo(OpCode op);
/// The op's mnemonic ("matmul").
inline const char *opName(OpCode op) { return opInfo(op).name; }
/// Sets `op` to the op of mnemonic `name`; false when there is none.
bool lookupOpCode(const std::string &name, OpCode &op);

/// The phase of the step an instruction belongs to. Recompute instructions
/// are clones of forward instructions placed in the backward pass
/// (activation recomputation); everything that selects or accounts
/// instructions by phase treats them as backward (isBackwardPhase).
enum class Phase : uint8_t { None, Forward, Backward, Update, Recompute };
/// "", "forward", "backward", "update", "recompute".
const char *phaseName(Phase phase);
/// Parses "forward", "backward", "update" or "recompute"; false for anything
/// else.
bool parsePhase(const std::string &name, Phase &phase);
/// Backward or Recompute: part of the backward pass.
inline bool isBackwardPhase(Phase phase) {
  return phase == Phase::Backward || phase == Phase::Recompute;
}

/// The typed attributes of one instruction: one field per attribute of
/// PlanOps.def, holding the plan's value or the op's default. Kernels read
/// these fields; nothing after the loader reads attributes by name.
struct OpAttrs {
#define STRATA_PLAN_ATTR_TYPE_Int int64_t
#define STRATA_PLAN_ATTR_TYPE_Float double
#define STRATA_PLAN_ATTR_TYPE_Bool bool
#define STRATA_PLAN_ATTR_TYPE_IntList std::vector<int64_t>
#define STRATA_PLAN_ATTR(Enum, Name, Member, Kind)                             \
  STRATA_PLAN_ATTR_TYPE_##Kind Member = {};
#include "strata-rt/PlanOps.def"
#undef STRATA_PLAN_ATTR_TYPE_Int
#undef STRATA_PLAN_ATTR_TYPE_Float
#undef STRATA_PLAN_ATTR_TYPE_Bool
#undef STRATA_PLAN_ATTR_TYPE_IntList

  /// Bit i: attribute AttrId(i) was given by the plan (not defaulted).
  uint64_t present = 0;
  bool has(AttrId id) const {
    return (present >> static_cast<unsigned>(id)) & 1u;
  }
};

/// Decodes the attributes of an instruction of `op`, as the plan spells them,
/// into `out`: the op's defaults, overwritten by the plan's values. Returns
/// an error message ("attribute 'bucket' must be an integer, got 1.5"), empty
/// on success. Attributes the op does not take are ignored.
std::string decodeAttrs(OpCode op, const Attrs &raw, OpAttrs &out);
/// As decodeAttrs, for callers that built `raw` themselves and know it is
/// valid (tests, the tuner); throws std::invalid_argument otherwise.
OpAttrs decodeAttrsOrThrow(OpCode op, const Attrs &raw);

} // namespace strata::rt

#endif // STRATA_RT_PLANOPS_H
