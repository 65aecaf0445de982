//===- OptionLimits.h - Documented bounds of pass options -------*- C++ -*-===//
//
// Options that size the work or the memory of a pass (or of the run that its
// output drives) have documented upper bounds, so that an absurd value is a
// diagnostic naming the bound instead of an allocation that never ends.
// docs/limits.md lists them.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_OPTIONLIMITS_H
#define STRATA_TRANSFORMS_OPTIONLIMITS_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir::strata {

/// Data-parallel replicas (of a step or of one pipeline stage) and devices.
constexpr int64_t kMaxReplicas = 65536;
/// Pipeline stages.
constexpr int64_t kMaxStages = 4096;
/// Micro-batches of one pipelined step.
constexpr int64_t kMaxMicroBatches = 4096;
/// Model chunks per device of the interleaved schedule.
constexpr int64_t kMaxVirtualStages = 64;
/// Iterations a lagging gradient may be old (the runtime keeps up to s + 1
/// gradient sets per rank).
constexpr int64_t kMaxStaleness = 64;
/// Ops a pipelined step may hold after the scheduler clones every op per
/// micro-batch.
constexpr int64_t kMaxScheduledOps = int64_t(1) << 22;

/// Checks `min <= value <= max` for option `option` of pass `pass` (its flag
/// without dashes) and otherwise emits "--PASS needs OPTION >= MIN, got V" or
/// "--PASS needs OPTION <= MAX (its documented bound), got V" at `loc`.
LogicalResult checkOptionRange(Location loc, StringRef pass, StringRef option,
                               int64_t value, int64_t min, int64_t max);

} // namespace mlir::strata

#endif // STRATA_TRANSFORMS_OPTIONLIMITS_H
