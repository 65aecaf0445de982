//===- PartitionScore.h - Reference score of a partition in tests -*- C++
//-*-===//
//
// The partitioner tests' independent reimplementation of how a partition's
// per-micro-batch value is scored against partitions with other stage counts
// (the schedule's bubble slots), shared by the brute-force checks.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TEST_UNIT_ANALYSIS_PARTITIONSCORE_H
#define STRATA_TEST_UNIT_ANALYSIS_PARTITIONSCORE_H

#include "strata/Analysis/PipelinePartition.h"

namespace mlir::strata::test {

/// `value` (seconds per micro-batch of the bottleneck, or bytes for the
/// communication objective) times the micro-batches plus the bubble slots
/// `o.schedule` leaves with `stages` stages.
inline double bubbleScore(const PartitionOptions &o, const LayerGraph &graph,
                          int64_t stages, double value) {
  if (o.objective == PartitionObjective::Communication)
    return value;
  double f = 0, b = 0;
  for (const PartitionLayer &l : graph.layers) {
    f += l.forwardSeconds;
    b += l.backwardSeconds;
  }
  double s = stages - 1, slots = s;
  if (o.schedule == PipelineSchedule::Interleaved)
    slots = s / o.virtualStages;
  if (o.schedule == PipelineSchedule::ZeroBubbleH1)
    slots = f + b > 0 ? s * f / (f + b) : 0;
  if (o.schedule == PipelineSchedule::PipeDream ||
      o.schedule == PipelineSchedule::TwoBW)
    slots = 0;
  return value * (o.microBatches + slots);
}

} // namespace mlir::strata::test

#endif // STRATA_TEST_UNIT_ANALYSIS_PARTITIONSCORE_H
