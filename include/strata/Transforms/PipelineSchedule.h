//===- PipelineSchedule.h - Micro-batch orders of pipeline schedules -----===//
//
// The order in which each device of a pipeline runs the forward, backward and
// weight-gradient passes of its model chunks over the micro-batches of one
// step, for GPipe, 1F1B (PipeDream-Flush), interleaved 1F1B (virtual stages)
// and ZB-H1 (zero bubble). Plain C++ (no MLIR), so unit tests can check the
// invariants of every schedule directly.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_PIPELINESCHEDULE_H
#define STRATA_TRANSFORMS_PIPELINESCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::pipeline {

enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };

/// "gpipe", "1f1b", "interleaved", "zb-h1".
const char *getScheduleName(ScheduleKind kind);

/// One pass of one model chunk over one micro-batch.
struct Action {
  enum Kind {
    /// Forward.
    F,
    /// Backward; without a separate W it also computes weight gradients.
    B,
    /// Weight gradients only (ZB-H1 splits them off B).
    W
  };
  Kind kind = F;
  /// Model chunk (pipeline stage) 0..chunks-1; device = chunk % devices.
  int64_t chunk = 0;
  int64_t microBatch = 0;

  bool operator==(const Action &other) const {
    return kind == other.kind && chunk == other.chunk &&
           microBatch == other.microBatch;
  }
};

struct ScheduleShape {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  /// Devices of one pipeline (one replica).
  int64_t devices = 1;
  /// Model chunks per device (interleaved only; 1 otherwise). Chunk c runs on
  /// device c % devices.
  int64_t virtualStages = 1;
  int64_t microBatches = 1;
};

/// Returns an empty string when `shape` can be scheduled, else why not
/// (e.g. interleaved needs micro-batches to be a multiple of devices).
std::string checkShape(const ScheduleShape &shape);

/// The order of actions on each device (indexed by device). Every device
/// runs, for each of its chunks and every micro-batch, one F and one B (and
/// one W with ZB-H1), with each chunk's backward passes in increasing
/// micro-batch order (so gradients accumulate in the same order under every
/// schedule):
///   - GPipe: all forwards, then all backwards.
///   - 1F1B: device d runs min(devices - d - 1, M) warm-up forwards, then
///     alternates one forward and one backward, then drains the backwards;
///     at most devices - d micro-batches are in flight on device d.
///   - Interleaved (Megatron-LM): as 1F1B over virtual micro-batch slots,
///     with (devices - d - 1) * 2 + (virtualStages - 1) * devices warm-up
///     forwards; chunks advance in groups of `devices` micro-batches.
///   - ZB-H1: the 1F1B order with each backward split into B (input
///     gradients, which the previous stage waits for) and W (weight
///     gradients); device d defers up to devices - d - 1 W passes and runs
///     them when the queue is longer, the rest at the end, filling the
///     cool-down bubble of 1F1B without holding more activations.
std::vector<std::vector<Action>> buildSchedule(const ScheduleShape &shape);

/// The largest number of micro-batches whose forward ran but whose backward
/// (B) has not, on device `device`, at any point of `order`.
int64_t maxInFlight(const std::vector<Action> &order);

} // namespace mlir::strata::pipeline

#endif // STRATA_TRANSFORMS_PIPELINESCHEDULE_H
