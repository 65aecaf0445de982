//===- PartitionReplay.cpp - A partition's step on the timeline -----------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PartitionReplay.h"

#include "strata/Transforms/PipelineSchedule.h"

#include <algorithm>
#include <cmath>

using namespace mlir::strata;
namespace tl = mlir::strata::timeline;

/// Why `schedule` is not replayed ("" when it is).
static std::string unreplayable(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
  case PipelineSchedule::OneFOneB:
    return "";
  case PipelineSchedule::Interleaved:
    return "interleaved: the partition does not say how a device's layers "
           "split into chunks";
  case PipelineSchedule::ZeroBubbleH1:
    return "zb-h1: the profile has no weight-gradient share of the backward "
           "pass";
  case PipelineSchedule::PipeDream:
  case PipelineSchedule::TwoBW:
    return "asynchronous schedules have no flushed step to replay";
  }
  return "unknown schedule";
}

namespace {
/// Ranks of the stages' replicas and who owns which micro-batch.
struct RankMap {
  std::vector<int64_t> firstRank;
  std::vector<int64_t> replicas;
  int64_t owner(size_t stage, int64_t microBatch) const {
    return firstRank[stage] + microBatch % replicas[stage];
  }
};
} // namespace

/// Appends the instructions of one action (F or B of `stage` on micro-batch
/// `j`) to `list`: the receive of its input, its compute and the send of
/// its output. Tags: 2j forward, 2j + 1 backward.
static void appendAction(const PartitionEvaluation &eval, const RankMap &map,
                         const pipeline::Action &action,
                         std::vector<tl::Instruction> &list) {
  size_t s = static_cast<size_t>(action.chunk);
  const StagePlan &stage = eval.stages[s];
  size_t last = eval.stages.size() - 1;
  int64_t j = action.microBatch;
  bool forward = action.kind == pipeline::Action::F;
  int64_t tag = 2 * j + (forward ? 0 : 1);
  if (forward && s > 0)
    list.push_back(tl::Instruction::recv(map.owner(s - 1, j), tag));
  if (!forward && s < last)
    list.push_back(tl::Instruction::recv(map.owner(s + 1, j), tag));
  tl::Instruction compute = tl::Instruction::compute(
      (forward ? "F" : "B") + std::to_string(s) + "." + std::to_string(j),
      forward ? stage.forwardSeconds : stage.backwardSeconds);
  compute.category = forward ? "forward" : "backward";
  list.push_back(std::move(compute));
  if (forward && s < last)
    list.push_back(
        tl::Instruction::send(map.owner(s + 1, j), tag, stage.cutBytes));
  if (!forward && s > 0)
    list.push_back(tl::Instruction::send(map.owner(s - 1, j), tag,
                                         eval.stages[s - 1].cutBytes));
}

std::string mlir::strata::buildPartitionTimeline(
    const PartitionEvaluation &eval, const PartitionTopology &topology,
    const PartitionOptions &options, int64_t maxInstructions,
    tl::Schedule &schedule, tl::System &system) {
  if (std::string why = unreplayable(options.schedule); !why.empty())
    return why;
  if (eval.stages.empty())
    return "the partition has no stages";
  int64_t stages = static_cast<int64_t>(eval.stages.size());
  int64_t M = options.microBatches;
  for (const StagePlan &stage : eval.stages)
    if (stage.replicas != eval.stages.front().replicas)
      return "its stages have different replica counts; the pipeline "
             "scheduler runs equal counts only";
  RankMap map;
  int64_t ranks = 0;
  for (const StagePlan &stage : eval.stages) {
    map.firstRank.push_back(ranks);
    map.replicas.push_back(stage.replicas);
    ranks += stage.replicas;
  }
  // About three instructions per action, two actions per micro-batch and
  // stage, and two per rank for the all-reduce and the update.
  double estimate = 6.0 * double(M) * double(stages) + 2.0 * double(ranks);
  if (estimate > double(maxInstructions))
    return "the replay would place about " +
           std::to_string(static_cast<int64_t>(estimate)) +
           " instructions, more than " + std::to_string(maxInstructions);

  pipeline::ScheduleShape shape;
  shape.kind = options.schedule == PipelineSchedule::GPipe
                   ? pipeline::ScheduleKind::GPipe
                   : pipeline::ScheduleKind::OneFOneB;
  shape.devices = stages;
  shape.microBatches = M;
  if (std::string problem = pipeline::checkShape(shape); !problem.empty())
    return problem;
  std::vector<std::vector<pipeline::Action>> order =
      pipeline::buildSchedule(shape);

  schedule = tl::Schedule();
  schedule.ranks.assign(static_cast<size_t>(ranks), {});
  system = tl::System();
  system.nodeOfRank.resize(static_cast<size_t>(ranks));
  int64_t perNode = std::max<int64_t>(topology.devicesPerNode, 1);
  for (int64_t s = 0; s < stages; ++s) {
    const StagePlan &stage = eval.stages[s];
    std::vector<int64_t> group;
    for (int64_t k = 0; k < stage.replicas; ++k) {
      int64_t rank = map.firstRank[s] + k;
      group.push_back(rank);
      system.nodeOfRank[rank] = (stage.firstDevice + k) / perNode;
      // The replica's share of the device's order: a subsequence of one
      // deadlock-free order, so deadlock-free itself.
      std::vector<tl::Instruction> &list = schedule.ranks[rank];
      for (const pipeline::Action &action : order[s])
        if (action.microBatch % stage.replicas == k)
          appendAction(eval, map, action, list);
      if (stage.replicas > 1)
        list.push_back(tl::Instruction::collective(
            static_cast<int64_t>(schedule.groups.size()),
            stage.paramBytes * options.terms.allReduceFactor / 2.0));
      tl::Instruction update = tl::Instruction::compute(
          "update" + std::to_string(s), stage.stepUpdateSeconds);
      update.category = "update";
      list.push_back(std::move(update));
    }
    schedule.groups.push_back(std::move(group));
  }
  // A level with no finite positive bandwidth moves bytes for free.
  auto level = [](double latency, double bandwidth) {
    bool usable = bandwidth > 0 && std::isfinite(bandwidth);
    return tl::Link{std::max(latency, 0.0), usable ? bandwidth : 1e300};
  };
  system.intraNode = level(topology.intraLatency, topology.intraBandwidth);
  system.interNode = level(topology.interLatency, topology.interBandwidth);
  return "";
}

PartitionReplay mlir::strata::replayPartition(const PartitionEvaluation &eval,
                                              const PartitionTopology &topology,
                                              const PartitionOptions &options,
                                              int64_t maxInstructions) {
  PartitionReplay replay;
  tl::Schedule schedule;
  tl::System system;
  replay.error = buildPartitionTimeline(eval, topology, options,
                                        maxInstructions, schedule, system);
  if (!replay.ok())
    return replay;
  tl::Result result = tl::simulate(schedule, system);
  if (!result.ok()) {
    replay.error = result.error;
    return replay;
  }
  replay.stepSeconds = result.stepSeconds;
  replay.ranks = static_cast<int64_t>(schedule.ranks.size());
  for (const tl::RankStats &rank : result.ranks)
    replay.bubbleSeconds = std::max(replay.bubbleSeconds, rank.bubble);
  return replay;
}
