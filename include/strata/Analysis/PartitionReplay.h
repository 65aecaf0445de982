//===- PartitionReplay.h - A partition's step on the timeline ---*- C++ -*-===//
//
// Part of the Strata project.
//
// The partitioner prices a partition in closed form (slowest stage times
// micro-batches plus bubble slots; PipelinePartition.h), which its search
// evaluates millions of times. Its result is then replayed on the timeline
// model (Timeline.h), the one model of a step that strata-sim, the pipeline
// scheduler and the grad-sync pass use: every replica of every stage is a
// rank that runs the schedule's order (pipeline::buildSchedule) over the
// micro-batches it owns (micro-batch j goes to replica j mod r of each
// stage), receives its input from the previous stage's owner of j and
// sends its output to the next stage's (the same for gradients backwards),
// then all-reduces its gradients with the stage's other replicas (a ring of
// allReduceFactor / 2 times the parameter bytes, the partitioner's volume)
// and runs its update. Links are the topology's levels (a rank is device
// firstDevice + k of its stage; devicesPerNode devices a node).
//
// Replayed: the flushed GPipe and 1F1B schedules, one chunk a device, with
// the same replica count on every stage (the partitions the pipeline
// scheduler runs: replica k of each stage forms pipeline k, and each
// pipeline runs the schedule on its micro-batches). Not replayed (an error
// says why): stages with different replica counts (with the schedules'
// fixed in-flight limits a replicated stage would stall its neighbours,
// which the closed form does not assume), interleaved (the partitioner does not
// say how a device's layers split into chunks), ZB-H1 (its profile has no
// weight-gradient share), the asynchronous PipeDream and 2BW (no flush: a
// step of theirs is a steady state, not a program with an end), and
// partitions whose replay would place more than `maxInstructions`
// instructions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_PARTITIONREPLAY_H
#define STRATA_ANALYSIS_PARTITIONREPLAY_H

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/Timeline.h"

#include <string>

namespace mlir::strata {

struct PartitionReplay {
  /// Empty when replayed; else why not.
  std::string error;
  /// The replayed step (every rank's last instruction).
  double stepSeconds = 0;
  /// The largest per-rank time blocked at receives (pipeline bubbles).
  double bubbleSeconds = 0;
  int64_t ranks = 0;
  bool ok() const { return error.empty(); }
};

/// Builds the timeline program of `eval` (a partition priced with the
/// resolved `options` on `topology`): one rank per stage replica. Returns
/// why not when the schedule is not replayed or the program would hold more
/// than `maxInstructions` instructions.
std::string buildPartitionTimeline(const PartitionEvaluation &eval,
                                   const PartitionTopology &topology,
                                   const PartitionOptions &options,
                                   int64_t maxInstructions,
                                   timeline::Schedule &schedule,
                                   timeline::System &system);

/// Replays `eval` on the timeline model (see the file comment).
PartitionReplay replayPartition(const PartitionEvaluation &eval,
                                const PartitionTopology &topology,
                                const PartitionOptions &options,
                                int64_t maxInstructions = 2000000);

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_PARTITIONREPLAY_H
