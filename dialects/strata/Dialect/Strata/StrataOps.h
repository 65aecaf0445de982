//===- StrataOps.h - Strata operations --------------------------*- C++ -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAOPS_H
#define STRATA_DIALECT_STRATA_STRATAOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "strata/Dialect/Strata/StrataAttrs.h"
#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Dialect/Strata/StrataInterfaces.h"

#include <array>
#include <optional>

namespace mlir::strata {
/// The communication links of a run: collectives read and write it.
struct CommResource : public SideEffects::Resource::Base<CommResource> {
  StringRef getName() final { return "strata.comm"; }
};

/// Host memory copies (swap_out / swap_in): they read and write it.
struct CopyResource : public SideEffects::Resource::Base<CopyResource> {
  StringRef getName() final { return "strata.copy"; }
};

/// Running statistics of batch normalisation, updated in place by the
/// forward pass: `strata.batch_norm` reads and writes it.
struct RunningStatsResource
    : public SideEffects::Resource::Base<RunningStatsResource> {
  StringRef getName() final { return "strata.running_stats"; }
};

/// The kept weight versions of the asynchronous pipeline schedules (states
/// with `init = param`), written in place by `strata.copy_into`.
struct WeightVersionsResource
    : public SideEffects::Resource::Base<WeightVersionsResource> {
  StringRef getName() final { return "strata.weight_versions"; }
};

/// The most bytes one tensor may hold (256 TiB). Every size the compiler and
/// the runtime derive from a tensor (element counts, bytes, arena offsets)
/// then fits an `int64_t` with room to add many of them.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// Whether `type` is a statically shaped ranked tensor whose dimensions are
/// all at least 1 and whose bytes are at most `kMaxTensorBytes`: the tensors
/// Strata ops take and produce (the type constraints of the ODS definitions).
bool isSizedTensorType(Type type);

/// The operand whose buffer result `index` of `op` takes because the op
/// writes it in place (an optimizer update's new parameter or state, a
/// stateful op's new running statistics or kept weight version), or null.
Value getReplacedOperand(Operation *op, unsigned index);
} // namespace mlir::strata

#define GET_OP_CLASSES
#include "strata/Dialect/Strata/StrataOps.h.inc"

namespace mlir {
class ModuleOp;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace mlir::strata {
/// Runs `fn` on every training step (`strata.train_step`) of `module`, in
/// order, stopping at the first failure. With none, reports `noStep` at the
/// module (e.g. "no training step to lower (run --strata-autodiff first)")
/// and fails.
LogicalResult forEachTrainStep(ModuleOp module, const Twine &noStep,
                               function_ref<LogicalResult(func::FuncOp)> fn);
/// Returns the layer index of `op` (`strata.layer`), if it has one.
std::optional<int64_t> getLayer(Operation *op);
/// Sets the layer index of `op`.
void setLayer(Operation *op, int64_t layer);
/// Sets `strata.phase` of `op`.
void setPhase(Operation *op, Phase phase);
/// Gives `op` the pipeline stage, micro-batch and layer of `from` (those it
/// has): an op a pass inserts next to `from` runs where `from` runs.
void copyPlacement(Operation *from, Operation *op);
/// The buffer --strata-lower-to-plan (or a buffer planner) assigned to
/// `value`: `strata.buffer` of a function argument, or the entry of its
/// op's `strata.buffers`; null when there is none.
BufferAttr getBuffer(Value value);
/// Sets argument attribute `name` of every argument i of `func` to
/// `values[i]` in one update (setting them one by one rebuilds the array of
/// all arguments' attributes each time: quadratic in the argument count).
void setArgAttrOfAll(FunctionOpInterface func, StringRef name,
                     ArrayRef<Attribute> values);
/// The result type of `strata.matmul` (and `strata.fused_matmul`) for
/// operands of types `lhs` and `rhs` and the transposes, or failure with the
/// reason reported at `loc` (when given).
FailureOr<RankedTensorType>
inferMatmulType(std::optional<Location> loc, Type lhs, Type rhs,
                bool transposeA, bool transposeB, bool headsA = false,
                bool headsB = false, bool headsC = false);
/// `type` with its dimensions rank-3 and rank-2 swapped when `heads` (a
/// matmul operand's heads layout: stored [..., R, H, C], read as
/// [..., H, R, C]), else `type` itself; failure (reported at `loc`) when
/// the rank is below 3.
FailureOr<RankedTensorType> swapHeads(std::optional<Location> loc,
                                      RankedTensorType type, bool heads,
                                      StringRef what);
/// The problem size {batch, m, n, k} of a (batched) product of `lhs` giving
/// `result` (matmul and fused_matmul).
std::array<int64_t, 4> getMatmulProblemSize(RankedTensorType lhs,
                                            RankedTensorType result,
                                            bool transposeA);
/// Bytes of a statically shaped tensor type (0 for anything else).
int64_t getTensorBytes(Type type);
/// Seconds a ring all-reduce of `bytes` over `replicas` devices of `target`
/// takes: `2 (p - 1) / p` times the bytes over the link joining them
/// (intra-node when they fit in one node) plus `2 (p - 1)` link latencies.
double estimateRingAllReduceSeconds(int64_t bytes, int64_t replicas,
                                    const TargetDescription &target);
} // namespace mlir::strata

#endif // STRATA_DIALECT_STRATA_STRATAOPS_H
