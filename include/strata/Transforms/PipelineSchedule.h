//===- PipelineSchedule.h - Micro-batch orders of pipeline schedules -----===//
//
// The order in which each device of a pipeline runs the forward, backward and
// weight-gradient passes of its model chunks over the micro-batches of one
// step, for GPipe, 1F1B (PipeDream-Flush), interleaved 1F1B (virtual stages),
// ZB-H1 (zero bubble), and PipeDream's asynchronous 1F1B with weight stashing
// and PipeDream-2BW, which update the weights inside the step. Plain C++ (no
// MLIR), so unit tests can check the invariants of every schedule directly.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TRANSFORMS_PIPELINESCHEDULE_H
#define STRATA_TRANSFORMS_PIPELINESCHEDULE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::pipeline {

enum class ScheduleKind {
  GPipe,
  OneFOneB,
  Interleaved,
  ZeroBubbleH1,
  PipeDream,
  TwoBW
};

/// When an asynchronous pipeline drains (--strata-schedule-pipeline
/// drain=): `run`, once at the end of the run (PipeDream's: micro-batches
/// carry over from one step to the next, ScheduleShape::carryOver); `step`,
/// at the end of every step; `auto`, `run` for pipedream and for 2bw whose
/// window is the whole step, where the step has at least as many
/// micro-batches as devices, else `step`. The weights every micro-batch
/// reads are the same either way.
enum class Drain { Auto, Step, Run };

/// "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream", "2bw".
const char *getScheduleName(ScheduleKind kind);

/// Whether `kind` updates the weights inside the step, after the backward
/// pass that closes each window of micro-batches (pipedream, 2bw), rather
/// than once after every micro-batch (the flushed schedules).
bool isAsynchronous(ScheduleKind kind);

/// a / b rounded down (b > 0): the window of a carried micro-batch, whose
/// number is negative.
inline int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// One pass of one model chunk over one micro-batch.
struct Action {
  enum Kind {
    /// Forward.
    F,
    /// Backward; without a separate W it also computes weight gradients.
    B,
    /// Weight gradients only (ZB-H1 splits them off B).
    W,
    /// The optimizer update of the chunk's weights with the gradients of the
    /// window that `microBatch`'s backward pass closes (asynchronous
    /// schedules only).
    U
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
  /// 2bw: micro-batches whose gradients one weight version accumulates (0:
  /// all of the step's). Ignored by the other schedules.
  int64_t window = 0;
  /// Asynchronous schedules only: the pipeline does not drain at the end of
  /// a step. Device d's last devices - d - 1 backward passes (and the
  /// updates they close) run at the start of the next step, between its
  /// warm-up forwards, as PipeDream runs them: such an action of the
  /// previous step's micro-batch m has micro-batch m - microBatches
  /// (negative). The run drains once, at its end.
  bool carryOver = false;
};

/// Returns an empty string when `shape` can be scheduled, else why not
/// (e.g. interleaved needs micro-batches to be a multiple of devices).
std::string checkShape(const ScheduleShape &shape);

/// Micro-batches whose gradients one update applies: 1 (pipedream), the
/// window (2bw) or the whole step (the flushed schedules).
int64_t updateWindow(const ScheduleShape &shape);

/// Updates of each parameter in one step: micro-batches / updateWindow (1
/// for the flushed schedules).
int64_t updatesPerStep(const ScheduleShape &shape);

/// The weight version that the forward and the backward pass of micro-batch
/// `micro` read on `device`, counted in updates from the weights at the start
/// of the step (0; negative: an older version kept from earlier steps; a
/// negative `micro`, the previous step's micro-batch micro + microBatches,
/// reads its version less the previous step's updates):
///   - flushed schedules: 0;
///   - pipedream: micro - (devices - device - 1), the weights after the
///     updates of every micro-batch whose backward pass ran on the device
///     before this forward pass (1F1B runs devices - device - 1 warm-up
///     forwards); weight stashing keeps that version for its backward pass;
///   - 2bw: micro / window - 1: every micro-batch of a window reads the
///     version before the newest, W(t+1) = W(t) - lr grad(W(t - 1)).
int64_t weightVersion(const ScheduleShape &shape, int64_t device,
                      int64_t micro);

/// The older weight versions `device` keeps from one step to the next: the
/// versions -keptVersions..-1 that weightVersion names (devices - device - 1
/// for pipedream, 1 for 2bw, 0 for the flushed schedules), shifted down by
/// carriedUpdates.
int64_t keptVersions(const ScheduleShape &shape, int64_t device);

/// Micro-batches of the previous step whose backward pass `device` runs at
/// the start of a step (carryOver): devices - device - 1, else 0.
int64_t carriedMicroBatches(const ScheduleShape &shape, int64_t device);

/// Updates of the previous step that `device` applies at the start of a
/// step (carryOver): the windows its carried backward passes close. The
/// weights at the start of a step are version -carriedUpdates.
int64_t carriedUpdates(const ScheduleShape &shape, int64_t device);

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
///   - pipedream, 2bw: the 1F1B order, with a U after every B that closes an
///     update window (every B for pipedream). Without carryOver the step
///     ends with every micro-batch's backward pass (the pipeline drains at
///     the step's boundary); with it, device d's cool-down backward passes
///     move to the next step, each after one warm-up forward
///     (F0 B(-w) F1 B(-w+1) ... with w = devices - d - 1), so a device
///     alternates one forward and one backward across steps without a
///     bubble. weightVersion gives the asynchronous semantics, which are the
///     same either way.
std::vector<std::vector<Action>> buildSchedule(const ScheduleShape &shape);

/// The largest number of micro-batches whose forward ran but whose backward
/// (B) has not, on device `device`, at any point of `order` (the previous
/// step's carried micro-batches count from its start).
int64_t maxInFlight(const std::vector<Action> &order);

} // namespace mlir::strata::pipeline

#endif // STRATA_TRANSFORMS_PIPELINESCHEDULE_H
