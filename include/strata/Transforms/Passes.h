//===- Passes.h - Strata passes ---------------------------------*- C++ -*-===//

#ifndef STRATA_TRANSFORMS_PASSES_H
#define STRATA_TRANSFORMS_PASSES_H

#include "strata/Analysis/BufferPacking.h"
#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/Remat.h"
#include "strata/Dialect/Strata/StrataAttrs.h"
#include "strata/Transforms/PipelineSchedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::strata {
class StrataDialect;

/// Where `--strata-insert-grad-sync` sums a bucket's gradients.
enum class GradAccumulation { Device, Host };

/// What `--strata-tile-gemm` does for a matmul missing from the database.
enum class GemmFallback { Model, None };

/// The arithmetic `--strata-mixed-precision` gives the matmuls and
/// convolutions: f32, bf16, or (Model) bf16 where the model's tensors were.
enum class ComputePrecision { F32, BF16, Model };

#define GEN_PASS_DECL
#include "strata/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "strata/Transforms/Passes.h.inc"

/// Registers `--strata-train-pipeline` (TrainPipeline.cpp): the whole flow
/// from a model to a planned training step, with one option set.
void registerStrataPipelines();
} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_PASSES_H
