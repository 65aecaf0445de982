//===- Passes.h - Strata passes ---------------------------------*- C++ -*-===//

#ifndef STRATA_TRANSFORMS_PASSES_H
#define STRATA_TRANSFORMS_PASSES_H

#include "strata/Analysis/BufferPacking.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::strata {
class StrataDialect;

#define GEN_PASS_DECL
#include "strata/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_PASSES_H
