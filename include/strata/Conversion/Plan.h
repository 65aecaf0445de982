//===- Plan.h - Lowering a training step to a runtime plan ------*- C++ -*-===//
//
// A training step (after --strata-autodiff) becomes a plan for the runtime in
// two steps: --strata-lower-to-plan places every value in a buffer of the
// device arena (attributes in the IR), and the `export-plan` translation
// writes the plan file (docs/plan-format.md) from those attributes.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_CONVERSION_PLAN_H
#define STRATA_CONVERSION_PLAN_H

#include "strata-rt/PlanFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir {
namespace func {
class FuncOp;
} // namespace func
namespace strata {
class BufferAttr;

/// Version of the plan format `exportPlan` writes (PlanFormat.h, shared
/// with the runtime).
constexpr int64_t kPlanFormatVersion = ::strata_plan::kFormatVersion;
/// Alignment of every buffer in the arena.
constexpr int64_t kBufferAlignment = ::strata_plan::kBufferAlignment;

/// Assigns every argument and op result of `func` a buffer (see
/// LowerToPlanPass). Fails on a value that is not a statically shaped tensor.
LogicalResult assignBuffers(func::FuncOp func);

/// Checks the buffers of a function `assignBuffers` (or a buffer planner)
/// placed: every argument and op result has one, its bytes match its type,
/// its offset is aligned and it lies inside `strata.arena_bytes`; one id
/// always names the same byte range. Emits a diagnostic at the offending
/// value's op otherwise.
LogicalResult verifyBuffers(func::FuncOp func);

/// Writes the plan of the module's training step to `os`, assigning buffers
/// first where they are missing. Every rank asks for `device` ("cpu" or
/// "cuda"). With `forwardOnly`, the plan of the module's one model function
/// instead (before autodiff): an inference plan without backward, gradients
/// or optimizer state.
LogicalResult exportPlan(ModuleOp module, raw_ostream &os,
                         StringRef device = "cpu", bool forwardOnly = false);

/// Registers `--export-plan` with mlir-translate's registry.
void registerExportPlanTranslation();

} // namespace strata
} // namespace mlir

#endif // STRATA_CONVERSION_PLAN_H
