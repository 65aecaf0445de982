//===- PartitionReplayTest.cpp - A partition's step on the timeline -------===//
//
// Hand-built partitions whose replayed step is known in closed form.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PartitionReplay.h"

#include <gtest/gtest.h>

using namespace mlir::strata;

namespace {

/// `stages` stages of `replicas` replicas each, every stage F seconds
/// forward, B backward, U update, `cut` bytes over each cut, `params`
/// parameter bytes.
PartitionEvaluation uniform(int64_t stages, int64_t replicas, double f,
                            double b, double u, double cut = 0,
                            double params = 0) {
  PartitionEvaluation eval;
  for (int64_t s = 0; s < stages; ++s) {
    StagePlan stage;
    stage.replicas = replicas;
    stage.firstDevice = s * replicas;
    stage.forwardSeconds = f;
    stage.backwardSeconds = b;
    stage.stepUpdateSeconds = u;
    stage.cutBytes = s + 1 < stages ? cut : 0;
    stage.paramBytes = params;
    eval.stages.push_back(stage);
  }
  return eval;
}

/// Resolved options (a ring all-reduce: twice the bytes over 2 (p - 1) / p).
PartitionOptions options(PipelineSchedule schedule, int64_t microBatches) {
  PartitionOptions o;
  o.schedule = schedule;
  o.microBatches = microBatches;
  o.terms.allReduceFactor = 2.0;
  return o;
}

PartitionTopology flat(int64_t devices, double bandwidth, double latency) {
  PartitionTopology t;
  t.devicesPerNode = devices;
  t.intraBandwidth = t.interBandwidth = bandwidth;
  t.intraLatency = t.interLatency = latency;
  return t;
}

} // namespace

TEST(PartitionReplay, OneStageRunsEveryMicroBatch) {
  PartitionReplay r =
      replayPartition(uniform(1, 1, 1.0, 2.0, 0.5), flat(1, 1e9, 0),
                      options(PipelineSchedule::OneFOneB, 8));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.stepSeconds, 8 * 3.0 + 0.5);
  EXPECT_EQ(r.ranks, 1);
}

// Free transfers: a flushed pipeline of S equal stages takes (M + S - 1)
// slots of F + B, then the update (1F1B and GPipe alike).
TEST(PartitionReplay, FlushedPipelineBubble) {
  for (PipelineSchedule schedule :
       {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe}) {
    PartitionReplay r = replayPartition(uniform(4, 1, 1.0, 2.0, 0.25),
                                        flat(4, 1e30, 0), options(schedule, 8));
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_NEAR(r.stepSeconds, (8 + 4 - 1) * 3.0 + 0.25, 1e-9);
    // The last stage waits (S - 1) forwards before its first micro-batch;
    // the first stage waits as long for its first gradient.
    EXPECT_NEAR(r.bubbleSeconds, 3 * 3.0, 1e-9);
  }
}

// Transfers on the links: with one stage's F = B = 1 s and 0.5 s per cut,
// micro-batch 0 reaches the second stage at 1.5 s; everything after is the
// compute chain of two stages and one more transfer back.
TEST(PartitionReplay, TransfersDelayTheChain) {
  PartitionReplay r =
      replayPartition(uniform(2, 1, 1.0, 1.0, 0.0, /*cut=*/0.5e9),
                      flat(2, 1e9, 0), options(PipelineSchedule::GPipe, 1));
  ASSERT_TRUE(r.ok()) << r.error;
  // F0 (1) + send (0.5) + F1 (1) + B1 (1) + send back (0.5) + B0 (1).
  EXPECT_NEAR(r.stepSeconds, 5.0, 1e-9);
}

// Two replicas of one stage split the micro-batches, then all-reduce the
// gradients: a ring of 2 ranks moves 2 (p - 1) / p = 1 times the bytes.
TEST(PartitionReplay, ReplicasShareMicroBatchesAndAllReduce) {
  PartitionReplay r = replayPartition(
      uniform(1, 2, 1.0, 1.0, 0.5, 0, /*params=*/2e9), flat(2, 1e9, 1e-3),
      options(PipelineSchedule::OneFOneB, 8));
  ASSERT_TRUE(r.ok()) << r.error;
  double ring = 2 * 1e-3 + 2e9 / 1e9;
  EXPECT_NEAR(r.stepSeconds, 4 * 2.0 + ring + 0.5, 1e-9);
  EXPECT_EQ(r.ranks, 2);
}

TEST(PartitionReplay, SaysWhatItDoesNotReplay) {
  PartitionTopology t = flat(4, 1e9, 0);
  for (PipelineSchedule schedule :
       {PipelineSchedule::Interleaved, PipelineSchedule::ZeroBubbleH1,
        PipelineSchedule::PipeDream, PipelineSchedule::TwoBW}) {
    PartitionReplay r =
        replayPartition(uniform(2, 1, 1, 1, 0), t, options(schedule, 4));
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.stepSeconds, 0);
  }
  PartitionEvaluation mixed = uniform(2, 1, 1, 1, 0);
  mixed.stages[1].replicas = 2;
  PartitionReplay r =
      replayPartition(mixed, t, options(PipelineSchedule::OneFOneB, 4));
  EXPECT_NE(r.error.find("replica counts"), std::string::npos) << r.error;
  r = replayPartition(uniform(64, 1, 1, 1, 0), t,
                      options(PipelineSchedule::OneFOneB, 64),
                      /*maxInstructions=*/1000);
  EXPECT_NE(r.error.find("instructions"), std::string::npos) << r.error;
}
