//===- PipelinePartitionTest.cpp - DP vs brute force ----------------------===//
//
// The partitioner's dynamic program against exhaustive enumeration of every
// contiguous partition and every replication vector (from the same candidate
// factors, using exactly the devices given) under the same cost function
// (evaluatePartition, which sums directly instead of using the DP's prefix
// sums) and the same memory constraint, on thousands of random chains and
// DAGs; plus the modes and diagnostics.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/PipelineProfile.h"

#include "PartitionScore.h"

#include "gtest/gtest.h"

#include <array>
#include <cmath>
#include <ctime>
#include <iostream>
#include <limits>
#include <random>

using namespace mlir::strata;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool near(double a, double b) {
  if (a == b)
    return true;
  if (!std::isfinite(a) || !std::isfinite(b))
    return false;
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

/// The best feasible objective per stage count and the best overall, by
/// enumeration.
struct Brute {
  std::vector<double> byStages;
  double minMemory = kInf;
};

void enumerate(const LayerGraph &graph, const PartitionTopology &topo,
               const PartitionOptions &o, const std::vector<int64_t> &cands,
               int64_t stages, Brute &brute) {
  unsigned L = graph.layers.size();
  // Every composition of L layers into `stages` non-empty contiguous parts.
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<int64_t> replicas;
  std::function<void(unsigned)> cut = [&](unsigned first) {
    if (bounds.size() + 1 == static_cast<size_t>(stages)) {
      bounds.emplace_back(first, L - 1);
      // Every replication vector summing to the devices.
      std::function<void(size_t, int64_t)> rep = [&](size_t s, int64_t used) {
        if (s == bounds.size()) {
          if (used != o.devices)
            return;
          PartitionEvaluation e =
              evaluatePartition(graph, topo, o, bounds, replicas);
          brute.minMemory = std::min(brute.minMemory, e.peakMemoryBytes);
          if (e.fitsMemory)
            brute.byStages[stages] =
                std::min(brute.byStages[stages], e.objective);
          return;
        }
        for (int64_t r : cands) {
          if (used + r > o.devices)
            break;
          replicas.push_back(r);
          rep(s + 1, used + r);
          replicas.pop_back();
        }
      };
      rep(0, 0);
      bounds.pop_back();
      return;
    }
    for (unsigned last = first; last + (stages - bounds.size() - 1) < L;
         ++last) {
      bounds.emplace_back(first, last);
      cut(last + 1);
      bounds.pop_back();
    }
  };
  cut(0);
}

LayerGraph randomGraph(std::mt19937 &rng, unsigned layers, bool dag) {
  std::uniform_real_distribution<double> time(0.0, 10.0), bytes(0.0, 100.0);
  std::uniform_int_distribution<int> coin(0, 3);
  LayerGraph graph;
  for (unsigned l = 0; l < layers; ++l) {
    PartitionLayer layer;
    layer.id = 10 + 2 * l;
    layer.forwardSeconds = time(rng);
    layer.backwardSeconds = 2 * time(rng);
    layer.updateSeconds = coin(rng) == 0 ? time(rng) : 0.0;
    layer.paramBytes = coin(rng) == 0 ? 0.0 : bytes(rng);
    layer.optimizerBytes = coin(rng) == 0 ? 0.0 : 2 * bytes(rng);
    layer.stashBytes = bytes(rng);
    graph.layers.push_back(layer);
  }
  for (unsigned l = 0; l + 1 < layers; ++l)
    graph.edges.push_back({l, l + 1, bytes(rng)});
  if (dag)
    for (unsigned l = 0; l + 2 < layers; ++l)
      if (coin(rng) == 0) {
        std::uniform_int_distribution<unsigned> to(l + 2, layers - 1);
        graph.edges.push_back({l, to(rng), bytes(rng)});
      }
  return graph;
}

PartitionTopology randomTopology(std::mt19937 &rng, int64_t devices) {
  std::uniform_int_distribution<int64_t> perNode(1, 4);
  std::uniform_real_distribution<double> bw(1.0, 50.0), lat(0.0, 0.5);
  PartitionTopology topo;
  topo.devicesPerNode = perNode(rng);
  topo.nodes = (devices + topo.devicesPerNode - 1) / topo.devicesPerNode;
  topo.intraBandwidth = bw(rng);
  topo.intraLatency = lat(rng);
  topo.interBandwidth = bw(rng) / 4;
  topo.interLatency = lat(rng) * 3;
  topo.memoryBytes = 1e30;
  return topo;
}

/// Returns whether a partition was found (the brute force agreeing).
bool checkAgainstBruteForce(const LayerGraph &graph,
                            const PartitionTopology &topo,
                            const PartitionOptions &options,
                            const std::string &what) {
  PartitionResult result = partitionPipeline(graph, topo, options);
  PartitionOptions o = resolveOptions(topo, options);
  std::vector<int64_t> cands = replicaCandidates(topo, o);
  int64_t L = graph.layers.size();
  int64_t fixed = o.stages;
  if (o.straight)
    fixed = o.devices;
  if (o.replicas > 0)
    fixed = o.devices / o.replicas;
  int64_t maxStages = fixed ? fixed : std::min<int64_t>(L, o.devices);
  Brute brute;
  brute.byStages.assign(maxStages + 1, kInf);
  for (int64_t s = fixed ? fixed : 1; s <= maxStages; ++s)
    enumerate(graph, topo, o, cands, s, brute);
  double bestScore = kInf, bestValue = kInf;
  for (int64_t s = fixed ? fixed : 1; s <= maxStages; ++s) {
    if (brute.byStages[s] == kInf)
      continue;
    double score = test::bubbleScore(o, graph, s, brute.byStages[s]);
    if (score < bestScore) {
      bestScore = score;
      bestValue = brute.byStages[s];
    }
  }
  if (bestValue == kInf) {
    EXPECT_FALSE(result.ok()) << what;
    if (brute.minMemory < kInf) {
      EXPECT_TRUE(near(result.requiredMemoryBytes, brute.minMemory))
          << what << ": required " << result.requiredMemoryBytes << " brute "
          << brute.minMemory;
      // With exactly that much memory, something fits.
      PartitionOptions enough = options;
      enough.memoryBytes = brute.minMemory * (1 + 1e-12);
      EXPECT_TRUE(partitionPipeline(graph, topo, enough).ok()) << what;
    }
    return false;
  }
  EXPECT_TRUE(result.ok()) << what << ": " << result.error;
  if (!result.ok())
    return false;
  for (int64_t s = fixed ? fixed : 1; s <= maxStages; ++s) {
    double dp = result.objectiveByStages[s];
    if (brute.byStages[s] == kInf)
      EXPECT_EQ(dp, kInf) << what << " S=" << s;
    else if (dp == kInf)
      // Pruned by the bounded search: only a count that cannot win.
      EXPECT_GE(test::bubbleScore(o, graph, s, brute.byStages[s]) * (1 + 1e-12),
                bestScore)
          << what << " S=" << s << ": pruned, brute " << brute.byStages[s];
    else
      EXPECT_TRUE(near(dp, brute.byStages[s]))
          << what << " S=" << s << ": dp " << dp << " brute "
          << brute.byStages[s];
  }
  const PartitionEvaluation &best = result.best;
  EXPECT_TRUE(near(best.objective, bestValue))
      << what << ": dp " << best.objective << " brute " << bestValue;
  EXPECT_TRUE(best.fitsMemory) << what;
  // Contiguous, non-empty, covering, every device used.
  unsigned next = 0;
  int64_t devices = 0;
  for (const StagePlan &st : best.stages) {
    EXPECT_EQ(st.firstLayer, next) << what;
    EXPECT_LE(st.firstLayer, st.lastLayer) << what;
    EXPECT_GE(st.replicas, 1) << what;
    next = st.lastLayer + 1;
    devices += st.replicas;
  }
  EXPECT_EQ(next, graph.layers.size()) << what;
  EXPECT_EQ(devices, o.devices) << what;
  if (fixed)
    EXPECT_EQ(static_cast<int64_t>(best.stages.size()), fixed) << what;
  if (o.straight)
    for (const StagePlan &st : best.stages)
      EXPECT_EQ(st.replicas, 1) << what;
  if (o.replicas)
    for (const StagePlan &st : best.stages)
      EXPECT_EQ(st.replicas, o.replicas) << what;
  return true;
}

PartitionOptions randomOptions(std::mt19937 &rng, int64_t devices,
                               unsigned layers) {
  std::uniform_int_distribution<int> pick(0, 3), micro(1, 8);
  PartitionOptions o;
  o.devices = devices;
  o.objective = static_cast<PartitionObjective>(pick(rng) % 3);
  o.schedule = static_cast<PipelineSchedule>(pick(rng));
  o.microBatches = micro(rng);
  switch (pick(rng)) {
  case 0: { // fixed stages
    std::uniform_int_distribution<int64_t> s(
        1, std::min<int64_t>(layers, devices));
    o.stages = s(rng);
    break;
  }
  case 1: // straight, when the devices allow one
    if (devices <= layers)
      o.straight = true;
    break;
  case 2: { // uniform replicas dividing the devices
    std::vector<int64_t> divisors;
    for (int64_t r = 1; r <= devices; ++r)
      if (devices % r == 0 && devices / r <= layers)
        divisors.push_back(r);
    std::uniform_int_distribution<size_t> d(0, divisors.size() - 1);
    o.replicas = divisors[d(rng)];
    break;
  }
  default:
    break;
  }
  return o;
}

/// 1500 random instances of `layers` x `devices`; returns how many had a
/// partition (both the DP and the brute force agreeing).
int bruteForceTrials(unsigned seed, std::pair<unsigned, unsigned> layers,
                     std::pair<int64_t, int64_t> devices, bool dag,
                     const std::string &name) {
  std::mt19937 rng(seed);
  int found = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(layers.first,
                                                         layers.second)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(devices.first,
                                                       devices.second)(rng);
    LayerGraph graph = randomGraph(rng, L, dag);
    PartitionTopology topo = randomTopology(rng, D);
    PartitionOptions o = randomOptions(rng, D, L);
    found += checkAgainstBruteForce(graph, topo, o,
                                    name + " trial " + std::to_string(trial));
  }
  return found;
}

TEST(PipelinePartition, MatchesBruteForceOnChains) {
  // Not vacuous: most trials have a partition to compare.
  EXPECT_GT(bruteForceTrials(1234, {1, 6}, {1, 6}, /*dag=*/false, "chain"),
            1000);
}

TEST(PipelinePartition, MatchesBruteForceOnDAGs) {
  EXPECT_GT(bruteForceTrials(99, {3, 7}, {1, 5}, /*dag=*/true, "dag"), 1000);
}

TEST(PipelinePartition, MatchesBruteForceWithCostTermsAndAsyncSchedules) {
  // Every schedule (the asynchronous ones too) with random cost terms: the
  // exhaustive DP (or, for default terms, the fast searches) against the
  // brute force over the same candidates.
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> pick(0, 5), coin(0, 1), xfer(0, 2);
  int found = 0, nonDefault = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 6)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 6)(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 3 == 0);
    PartitionTopology topo = randomTopology(rng, D);
    PartitionOptions o = randomOptions(rng, D, L);
    o.schedule = static_cast<PipelineSchedule>(pick(rng));
    o.terms.allReduceFactor = coin(rng) ? 4.0 : 0.0;
    o.terms.evenShares = coin(rng);
    o.terms.transfers = static_cast<TransferModel>(xfer(rng));
    o.terms.allReplicaCounts = coin(rng);
    if (trial % 4 == 0) // Memory that binds.
      o.memoryBytes = std::uniform_real_distribution<double>(100, 600)(rng);
    nonDefault += o.terms.evenShares || o.terms.allReplicaCounts ||
                  o.terms.transfers != TransferModel::PerCut;
    found += checkAgainstBruteForce(graph, topo, o,
                                    "terms trial " + std::to_string(trial));
  }
  EXPECT_GT(found, 900);
  EXPECT_GT(nonDefault, 1000);
}

TEST(PipelinePartition, PipeDreamTermsPriceAsPipeDreamsOptimizer) {
  // Two layers on three devices, 1 GB/s, no latency: PipeDream's optimizer
  // prices a stage of compute W and parameters P on m replicas at
  // (W + 4 (m - 1) P / (B m)) / m per minibatch, and data parallelism on n
  // machines at (W + 4 (n - 1) P / (B n)) / n, with no bubble.
  LayerGraph graph;
  PartitionLayer a, b;
  a.forwardSeconds = 1.0;
  a.backwardSeconds = 2.0;
  a.paramBytes = 1e9;
  a.stashBytes = 10;
  b.forwardSeconds = 0.25;
  b.backwardSeconds = 0.75;
  graph.layers = {a, b};
  graph.edges = {{0, 1, 5e8}};
  PartitionTopology topo;
  topo.devicesPerNode = 1;
  topo.nodes = 3;
  topo.intraBandwidth = topo.interBandwidth = 1e9;
  topo.memoryBytes = 1e30;
  PartitionOptions o;
  o.devices = 3;
  o.microBatches = 3;
  o.schedule = PipelineSchedule::PipeDream;
  std::string error;
  ASSERT_TRUE(parseCostTerms("pipedream", o.terms, error)) << error;
  PartitionResult r = evaluateGivenPartition(graph, topo, o, "0..0:2,1..1:1");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NEAR(r.best.stages[0].seconds, (3.0 + 4.0 * 1 * 1e9 / 2e9) / 2, 1e-12);
  EXPECT_NEAR(r.best.stages[1].seconds, 1.0, 1e-12);
  EXPECT_EQ(r.best.bubbleFraction, 0.0);
  EXPECT_NEAR(r.best.stepSeconds, 2.5 * 3, 1e-12);
  EXPECT_NEAR(r.dataParallel.stepSeconds / 3, (4.0 + 4.0 * 2 * 1e9 / 3e9) / 3,
              1e-12);
  // Weight stashing: the first stage (two stages from the end) keeps
  // min(2, ceil(3 / 2)) = 2 micro-batches and so one extra weight version.
  EXPECT_EQ(r.best.stages[0].inFlight, 2);
  // 2 P (weights, gradients) + 2 stashes + one more weight version.
  EXPECT_NEAR(r.best.stages[0].memoryBytes, 2e9 + 2 * 10 + 1e9, 1e-3);
  // The search finds this partition or a better one, and 2-1 beats the
  // flushed 1F1B under the same terms (no bubble).
  PartitionResult searched = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(searched.ok()) << searched.error;
  EXPECT_LE(searched.best.stepSeconds, r.best.stepSeconds * (1 + 1e-12));
  o.schedule = PipelineSchedule::OneFOneB;
  PartitionResult flushed =
      evaluateGivenPartition(graph, topo, o, "0..0:2,1..1:1");
  EXPECT_GT(flushed.best.stepSeconds, r.best.stepSeconds);
  // Per-replica transfers: the cut (0.5 GB each way) is divided over the
  // replicas on each side: max(2 * 0.5 / 2, 2 * 0.5 / 1) on the second stage.
  o.schedule = PipelineSchedule::PipeDream;
  o.terms.transfers = TransferModel::PerReplica;
  PartitionResult xfer =
      evaluateGivenPartition(graph, topo, o, "0..0:2,1..1:1");
  EXPECT_NEAR(xfer.best.stages[0].transferSeconds, 0.5, 1e-12);
  EXPECT_NEAR(xfer.best.stages[1].transferSeconds, 1.0, 1e-12);
}

TEST(PipelinePartition, CostTermsParse) {
  CostTerms t;
  std::string error;
  EXPECT_TRUE(parseCostTerms("allreduce=3,shares=even", t, error));
  EXPECT_EQ(t.allReduceFactor, 3.0);
  EXPECT_TRUE(t.evenShares);
  EXPECT_EQ(stringifyCostTerms(t),
            "allreduce=3,shares=even,transfers=per-cut,replicas=nodes");
  EXPECT_TRUE(parseCostTerms("strata", t, error));
  EXPECT_EQ(stringifyCostTerms(t),
            "allreduce=target,shares=whole,transfers=per-cut,replicas=nodes");
  EXPECT_TRUE(parseCostTerms("pipedream,transfers=per-replica", t, error));
  EXPECT_EQ(stringifyCostTerms(t),
            "allreduce=4,shares=even,transfers=per-replica,replicas=all");
  EXPECT_TRUE(parseCostTerms("transfers=pipedream", t, error));
  EXPECT_EQ(t.transfers, TransferModel::PipeDream);
  EXPECT_FALSE(parseCostTerms("allreduce=0", t, error));
  EXPECT_EQ(error, "allreduce='0': expected a number in (0, 16]");
  EXPECT_FALSE(parseCostTerms("allreduce=nan", t, error));
  EXPECT_FALSE(parseCostTerms("shares=half", t, error));
  EXPECT_NE(error.find("unknown cost term 'shares=half'"), std::string::npos);
  EXPECT_FALSE(parseCostTerms("", t, error));
}

TEST(PipelinePartition, MatchesBruteForceUnderMemoryPressure) {
  std::mt19937 rng(7);
  int infeasible = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    std::uniform_int_distribution<unsigned> layers(2, 6);
    std::uniform_int_distribution<int64_t> devices(1, 6);
    unsigned L = layers(rng);
    int64_t D = devices(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 2 == 0);
    PartitionTopology topo = randomTopology(rng, D);
    std::uniform_real_distribution<double> cap(50.0, 900.0);
    topo.memoryBytes = cap(rng);
    PartitionOptions o = randomOptions(rng, D, L);
    if (!partitionPipeline(graph, topo, o).ok())
      ++infeasible;
    checkAgainstBruteForce(graph, topo, o,
                           "memory trial " + std::to_string(trial));
  }
  // The caps exercise both outcomes.
  EXPECT_GT(infeasible, 100);
  EXPECT_LT(infeasible, 1400);
}

TEST(PipelinePartition, MatchesBruteForceWithRecompute) {
  // Recompute changes the memory (inputs per micro-batch, one stash) and
  // the compute (a second forward): the DP and the brute force, which prices
  // each partition with evaluatePartition, still agree, and recompute makes
  // some capped instances feasible that were not.
  std::mt19937 rng(17);
  int rescued = 0, found = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(2, 6)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 6)(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 2 == 0);
    PartitionTopology topo = randomTopology(rng, D);
    topo.memoryBytes = std::uniform_real_distribution<double>(50, 900)(rng);
    PartitionOptions o = randomOptions(rng, D, L);
    bool keeps = partitionPipeline(graph, topo, o).ok();
    o.recompute = true;
    bool recomputes = partitionPipeline(graph, topo, o).ok();
    rescued += recomputes && !keeps;
    found += checkAgainstBruteForce(graph, topo, o,
                                    "recompute trial " + std::to_string(trial));
  }
  EXPECT_GT(found, 500);
  EXPECT_GT(rescued, 10);
}

/// The fast searches (partitionPipeline: the threshold search, or the
/// bounded search for a fixed stage count) against the exhaustive DP
/// (detail::partitionPipelineReference) on one instance: the same outcome,
/// the same optimum, and per stage count either the reference's optimum or
/// +inf where that count cannot beat the chosen partition's score.
/// Returns whether a partition was found.
bool checkAgainstReference(const LayerGraph &graph,
                           const PartitionTopology &topo,
                           const PartitionOptions &options,
                           const std::string &what, int &pruned) {
  PartitionResult fast = partitionPipeline(graph, topo, options);
  PartitionResult ref =
      detail::partitionPipelineReference(graph, topo, options);
  EXPECT_EQ(fast.error, ref.error) << what;
  EXPECT_EQ(fast.requiredMemoryBytes, ref.requiredMemoryBytes) << what;
  if (!ref.ok() || !fast.ok())
    return false;
  // The same stage count and, in the DP's own terms (prefix sums), the same
  // optimum bit for bit. Equal-valued partitions may differ (the searches
  // break ties differently), so evaluatePartition's direct sums of the two
  // may differ in the last bits, and with the balance objective the step
  // time (which also counts sync and transfers) may differ.
  EXPECT_EQ(fast.best.stages.size(), ref.best.stages.size()) << what;
  int64_t chosen = fast.best.stages.size();
  if (static_cast<size_t>(chosen) <
      std::min(fast.objectiveByStages.size(), ref.objectiveByStages.size()))
    EXPECT_EQ(fast.objectiveByStages[chosen], ref.objectiveByStages[chosen])
        << what;
  EXPECT_TRUE(near(fast.best.objective, ref.best.objective))
      << what << ": fast " << fast.best.objective << " ref "
      << ref.best.objective;
  if (options.objective == PartitionObjective::Throughput)
    EXPECT_TRUE(near(fast.best.stepSeconds, ref.best.stepSeconds)) << what;
  EXPECT_TRUE(fast.best.fitsMemory) << what;
  PartitionOptions o = resolveOptions(topo, options);
  double chosenScore = test::bubbleScore(o, graph, chosen, fast.best.objective);
  EXPECT_EQ(fast.objectiveByStages.size(), ref.objectiveByStages.size())
      << what;
  for (size_t s = 1; s < std::min(fast.objectiveByStages.size(),
                                  ref.objectiveByStages.size());
       ++s) {
    double f = fast.objectiveByStages[s], r = ref.objectiveByStages[s];
    if (f == r)
      continue;
    ++pruned;
    EXPECT_EQ(f, kInf) << what << " S=" << s << ": fast " << f << " ref " << r;
    EXPECT_GE(test::bubbleScore(o, graph, s, r) * (1 + 1e-12), chosenScore)
        << what << " S=" << s << ": pruned a stage count that scores better";
  }
  // The bounded search's partition really has its claimed value.
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<int64_t> replicas;
  for (const StagePlan &st : fast.best.stages) {
    bounds.emplace_back(st.firstLayer, st.lastLayer);
    replicas.push_back(st.replicas);
  }
  int64_t devices = 0;
  for (int64_t r : replicas)
    devices += r;
  EXPECT_EQ(devices, o.devices) << what;
  PartitionEvaluation again =
      evaluatePartition(graph, topo, o, bounds, replicas);
  EXPECT_TRUE(near(again.objective, fast.best.objective)) << what;
  EXPECT_TRUE(again.fitsMemory) << what;
  return true;
}

TEST(PipelinePartition, BoundedSearchMatchesTheExhaustiveDP) {
  // Thousands of random instances larger than the brute force can afford:
  // chains and DAGs, 1-40 layers on 1-48 devices of 1-8-device nodes, every
  // objective and schedule, recompute on and off, memory caps from loose to
  // infeasible, fixed stages / straight / uniform replicas.
  std::mt19937 rng(2024);
  int found = 0, pruned = 0, trials = 3000;
  for (int trial = 0; trial < trials; ++trial) {
    bool medium = trial % 3 == 0;
    unsigned L =
        std::uniform_int_distribution<unsigned>(1, medium ? 40 : 10)(rng);
    int64_t D =
        std::uniform_int_distribution<int64_t>(1, medium ? 48 : 12)(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 2 == 0);
    PartitionTopology topo = randomTopology(rng, D);
    topo.devicesPerNode = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    topo.nodes = (D + topo.devicesPerNode - 1) / topo.devicesPerNode;
    if (trial % 4 != 0) {
      // From ~one layer's state to several layers' worth per device.
      topo.memoryBytes =
          std::uniform_real_distribution<double>(50.0, 300.0 * L)(rng);
    }
    PartitionOptions o = randomOptions(rng, D, L);
    o.microBatches = std::uniform_int_distribution<int64_t>(1, 64)(rng);
    o.recompute = trial % 5 < 2;
    o.virtualStages = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    found += checkAgainstReference(
        graph, topo, o, "reference trial " + std::to_string(trial), pruned);
  }
  // Not vacuous: both outcomes occur, and the bounds do prune stage counts.
  EXPECT_GT(found, trials / 3);
  EXPECT_LT(found, trials);
  EXPECT_GT(pruned, 100);
}

TEST(PipelinePartition, ThresholdSearchMatchesTheExhaustiveDPAcrossNodes) {
  // The threshold search's replica groups (whole nodes with one micro-batch
  // count per replica) and residue classes (where a stage lies within its
  // nodes) need more devices than the test above: 2-16 nodes of 2-8
  // devices, sometimes fewer devices than the nodes hold, up to 128
  // micro-batches, memory caps from binding to loose, every min-max
  // objective and schedule, recompute on and off, free stage counts (or
  // straight / uniform replicas, which force one); every seventh on 16
  // full nodes of 8 with 16-24 layers.
  std::mt19937 rng(4242);
  int found = 0, pruned = 0, multiNode = 0, straddling = 0, infeasible = 0;
  const int trials = 3000;
  for (int trial = 0; trial < trials; ++trial) {
    // One in seven is larger: more offsets per class and longer rows.
    bool large = trial % 7 == 3;
    unsigned L =
        std::uniform_int_distribution<unsigned>(large ? 16 : 1, 24)(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 2 == 0);
    PartitionTopology topo = randomTopology(rng, 1);
    topo.devicesPerNode =
        large ? 8 : std::array<int64_t, 3>{2, 4, 8}[trial % 3];
    topo.nodes =
        large ? 16 : std::uniform_int_distribution<int64_t>(2, 16)(rng);
    int64_t D = topo.numDevices();
    if (trial % 5 == 0)
      D -= std::uniform_int_distribution<int64_t>(1, topo.devicesPerNode)(rng);
    if (trial % 4 != 0)
      topo.memoryBytes =
          std::uniform_real_distribution<double>(50.0, 150.0 * L)(rng);
    PartitionOptions o = randomOptions(rng, D, L);
    o.stages = 0; // The bounded search's case is covered above.
    if (o.objective == PartitionObjective::Communication)
      o.objective = trial % 2 ? PartitionObjective::Throughput
                              : PartitionObjective::Balance;
    o.microBatches = std::uniform_int_distribution<int64_t>(1, 128)(rng);
    o.recompute = trial % 7 < 2;
    o.virtualStages = std::uniform_int_distribution<int64_t>(1, 4)(rng);
    std::string what = "node trial " + std::to_string(trial);
    bool ok = checkAgainstReference(graph, topo, o, what, pruned);
    found += ok;
    infeasible += !ok;
    if (!ok)
      continue;
    // Deterministic: a second run picks the same partition.
    PartitionResult r = partitionPipeline(graph, topo, o);
    PartitionResult again = partitionPipeline(graph, topo, o);
    ASSERT_EQ(r.best.stages.size(), again.best.stages.size()) << what;
    for (size_t st = 0; st < r.best.stages.size(); ++st) {
      EXPECT_EQ(r.best.stages[st].lastLayer, again.best.stages[st].lastLayer)
          << what;
      EXPECT_EQ(r.best.stages[st].replicas, again.best.stages[st].replicas)
          << what;
    }
    bool wide = false, across = false;
    for (const StagePlan &st : r.best.stages) {
      wide |= st.replicas > topo.devicesPerNode;
      across |= st.replicas <= topo.devicesPerNode &&
                st.firstDevice / topo.devicesPerNode !=
                    (st.firstDevice + st.replicas - 1) / topo.devicesPerNode;
    }
    multiNode += wide;
    straddling += across;
  }
  // Not vacuous: both outcomes, stages over whole nodes, and stages of a
  // node's size or less that straddle two nodes.
  EXPECT_GT(found, trials / 2);
  EXPECT_GT(infeasible, 100);
  EXPECT_GT(multiNode, 200);
  EXPECT_GT(straddling, 40);
  std::cout << "threshold vs reference: " << found << " found, " << infeasible
            << " infeasible, " << multiNode << " with multi-node stages, "
            << straddling << " with straddling stages\n";
}

TEST(PipelinePartition, EvaluateGivenPartitionReproducesTheSearch) {
  // The search's own choice, written as --evaluate's text and priced again,
  // gives the same stages, step time and baselines.
  std::mt19937 rng(23);
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 8)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 8)(rng);
    LayerGraph graph = randomGraph(rng, L, trial % 2 == 0);
    PartitionTopology topo = randomTopology(rng, D);
    PartitionOptions o = randomOptions(rng, D, L);
    o.objective = PartitionObjective::Throughput;
    PartitionResult searched = partitionPipeline(graph, topo, o);
    if (!searched.ok())
      continue;
    std::string spec;
    for (const StagePlan &stage : searched.best.stages)
      spec += (spec.empty() ? "" : ",") + std::to_string(stage.firstLayer) +
              ".." + std::to_string(stage.lastLayer) + ":" +
              std::to_string(stage.replicas);
    PartitionResult given = evaluateGivenPartition(graph, topo, o, spec);
    ASSERT_TRUE(given.ok()) << given.error << " for " << spec;
    EXPECT_EQ(given.best.stepSeconds, searched.best.stepSeconds) << spec;
    EXPECT_EQ(given.best.peakMemoryBytes, searched.best.peakMemoryBytes);
    EXPECT_EQ(given.dataParallel.stepSeconds,
              searched.dataParallel.stepSeconds);
    EXPECT_EQ(given.uniform.stepSeconds, searched.uniform.stepSeconds);
    ++checked;
  }
  EXPECT_GT(checked, 150);
  // A partition that skips a layer is refused with the reason.
  LayerGraph graph = randomGraph(rng, 3, false);
  PartitionTopology topo = randomTopology(rng, 2);
  PartitionOptions o;
  o.devices = 2;
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..0:1,2..2:1").error,
            "no stage holds layer 1");
}

TEST(PipelinePartition, CutPricesEveryCrossingTensor) {
  LayerGraph graph;
  graph.layers.resize(4);
  graph.edges = {{0, 1, 1}, {1, 2, 2}, {2, 3, 4}, {0, 3, 8}, {1, 3, 16}};
  std::vector<double> cuts = graph.cutBytes();
  ASSERT_EQ(cuts.size(), 3u);
  EXPECT_EQ(cuts[0], 1 + 8);
  EXPECT_EQ(cuts[1], 2 + 8 + 16);
  EXPECT_EQ(cuts[2], 4 + 8 + 16);
  // One tensor read by layers 1 and 3 (the edges share its id) crosses the
  // cuts before its last reader once.
  graph.edges = {{0, 1, 8, 7}, {0, 3, 8, 7}, {1, 2, 2}};
  EXPECT_EQ(graph.cutBytes(), (std::vector<double>{8, 8 + 2, 8}));
  graph.edges.push_back({1, 3, 9, 7});
  EXPECT_EQ(graph.verify(),
            "the edges of tensor 7 disagree on its producer or size");
}

TEST(PipelinePartition, PrefersTheCheapCutOfAResidualGraph) {
  // Four equal layers on two devices; a residual from 0 to 2 makes the
  // middle cut carry far more than the cut after layer 2.
  LayerGraph graph;
  for (int l = 0; l < 4; ++l) {
    PartitionLayer layer;
    layer.id = l;
    layer.forwardSeconds = 1;
    layer.backwardSeconds = 2;
    graph.layers.push_back(layer);
  }
  graph.edges = {{0, 1, 1e3}, {1, 2, 1e3}, {2, 3, 1e3}, {0, 2, 1e12}};
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.intraBandwidth = 1e9;
  topo.memoryBytes = 1e12;
  PartitionOptions o;
  o.straight = true;
  o.microBatches = 8;
  PartitionResult r = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.best.stages.size(), 2u);
  EXPECT_EQ(r.best.stages[0].lastLayer, 2u);
}

TEST(PipelinePartition, Diagnostics) {
  std::mt19937 rng(3);
  LayerGraph graph = randomGraph(rng, 3, false);
  PartitionTopology topo;
  topo.devicesPerNode = 4;
  topo.memoryBytes = 1e30;
  PartitionOptions o;
  o.stages = 4;
  EXPECT_EQ(partitionPipeline(graph, topo, o).error,
            "4 stages but only 3 layers");
  o = PartitionOptions();
  o.replicas = 3;
  EXPECT_EQ(partitionPipeline(graph, topo, o).error,
            "4 devices are not divisible into stages of 3 replicas");
  o = PartitionOptions();
  o.devices = 5;
  o.straight = true;
  topo.nodes = 2;
  EXPECT_EQ(partitionPipeline(graph, topo, o).error,
            "5 stages but only 3 layers");
  o = PartitionOptions();
  o.replicas = 2;
  o.stages = 3;
  EXPECT_EQ(partitionPipeline(graph, topo, o).error,
            "3 stages of 2 replicas do not use 8 devices");
  o = PartitionOptions();
  o.microBatches = -1;
  EXPECT_EQ(partitionPipeline(graph, topo, o).error,
            "micro-batches must be at least 1, got -1");
  LayerGraph backwards = graph;
  backwards.edges.push_back({2, 1, 1});
  EXPECT_NE(partitionPipeline(backwards, topo, PartitionOptions())
                .error.find("does not go forward"),
            std::string::npos);
}

TEST(PipelinePartition, NothingFitsNamesTheSmallestMemory) {
  LayerGraph graph;
  for (int l = 0; l < 3; ++l) {
    PartitionLayer layer;
    layer.id = l;
    layer.forwardSeconds = 1;
    layer.backwardSeconds = 1;
    layer.paramBytes = 1024.0 * 1024 * 1024;
    graph.layers.push_back(layer);
  }
  PartitionTopology topo;
  topo.devicesPerNode = 3;
  topo.memoryBytes = 1024.0 * 1024 * 1024; // 2 GiB needed per layer
  PartitionResult r = partitionPipeline(graph, topo, PartitionOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.requiredMemoryBytes, 2.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(r.error, "no partition fits in 1 GiB per device; the smallest "
                     "feasible memory per device is 2 GiB (2147483648 bytes)");
}

TEST(PipelinePartition, UniformAndDataParallelComparisons) {
  std::mt19937 rng(11);
  LayerGraph graph = randomGraph(rng, 8, true);
  PartitionTopology topo;
  topo.devicesPerNode = 4;
  topo.memoryBytes = 1e30;
  PartitionOptions o;
  o.stages = 2;
  PartitionResult r = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.uniform.stages.size(), 2u);
  EXPECT_EQ(r.uniform.stages[0].lastLayer, 3u);
  EXPECT_EQ(r.uniform.stages[0].replicas, 2);
  ASSERT_EQ(r.dataParallel.stages.size(), 1u);
  EXPECT_EQ(r.dataParallel.stages[0].replicas, 4);
  // The DP is at least as good as uniform under its own objective.
  EXPECT_LE(r.best.objective, r.uniform.objective * (1 + 1e-12));
  EXPECT_NEAR(r.speedup, r.dataParallel.stepSeconds / r.best.stepSeconds,
              1e-12);
}

TEST(PipelinePartition, LargeModelIsFast) {
  // gpt3-175b-like: 98 layers, 96 of them equal blocks, on 1024 devices of
  // 8-device nodes with 80 GiB each.
  LayerGraph graph;
  for (int l = 0; l < 98; ++l) {
    PartitionLayer layer;
    layer.id = l;
    bool block = l > 0 && l < 97;
    layer.forwardSeconds = block ? 0.11 : 0.02;
    layer.backwardSeconds = 2 * layer.forwardSeconds;
    layer.paramBytes = block ? 7.2e9 : 2.5e9;
    layer.optimizerBytes = 2 * layer.paramBytes;
    layer.stashBytes = 0.2e9;
    graph.layers.push_back(layer);
    if (l > 0)
      graph.edges.push_back(
          {static_cast<unsigned>(l - 1), static_cast<unsigned>(l), 1e8});
  }
  PartitionTopology topo;
  topo.devicesPerNode = 8;
  topo.nodes = 128;
  topo.intraBandwidth = 450e9;
  topo.intraLatency = 2e-6;
  topo.interBandwidth = 50e9;
  topo.interLatency = 5e-6;
  topo.memoryBytes = 80.0 * 1024 * 1024 * 1024;
  std::clock_t start = std::clock();
  PartitionResult r = partitionPipeline(graph, topo, PartitionOptions());
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(r.best.fitsMemory);
  // A guard against a blow-up, not a benchmark (bench/partition.md has the
  // timings): processor time, which a loaded machine does not inflate.
  // Sanitizer builds (STRATA_SANITIZE) run it several times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  EXPECT_LT(seconds, 100.0);
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  EXPECT_LT(seconds, 100.0);
#else
  EXPECT_LT(seconds, 10.0);
#endif
#else
  EXPECT_LT(seconds, 10.0);
#endif
}

// Found by fuzzing the profile reader: the smallest feasible memory of a
// profile with absurd sizes is beyond int64_t, and printing it as an integer
// was undefined behaviour.
TEST(PipelinePartition, AbsurdMemoryIsReportedNotConverted) {
  LayerGraph graph;
  for (int l = 0; l < 3; ++l) {
    PartitionLayer layer;
    layer.id = l;
    layer.forwardSeconds = 1e-3;
    layer.backwardSeconds = 2e-3;
    layer.paramBytes = 1e54;
    graph.layers.push_back(layer);
    if (l > 0)
      graph.edges.push_back(
          {static_cast<unsigned>(l - 1), static_cast<unsigned>(l), 1e3});
  }
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.nodes = 1;
  topo.memoryBytes = 16e9;
  PartitionResult r = partitionPipeline(graph, topo, PartitionOptions());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("the smallest feasible memory per device is"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("e+54 bytes)"), std::string::npos) << r.error;
}

// Found by fuzzing the profile readers: a NaN size passed every check and
// kept the search for the smallest feasible memory from ending.
TEST(PipelineProfile, NonFiniteNumbersAreRejected) {
  for (const char *value : {"nan", "inf", "-1.0", "1e999"}) {
    std::string text =
        std::string("node1 -- Input0 -- forward_compute_time=0.5, "
                    "backward_compute_time=0.0, activation_size=8.0, "
                    "parameter_size=") +
        value + "\n";
    auto graph = parsePipeDreamGraph(text, "graph.txt");
    ASSERT_FALSE(static_cast<bool>(graph)) << value;
    EXPECT_NE(llvm::toString(graph.takeError())
                  .find("graph.txt:1: parameter_size must be a finite "
                        "non-negative number"),
              std::string::npos)
        << value;
  }
  LayerGraph graph;
  PartitionLayer layer;
  layer.stashBytes = std::nan("");
  graph.layers.push_back(layer);
  EXPECT_EQ(graph.verify(),
            "layer 0 has a negative, infinite or NaN time or size");
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.memoryBytes = 1e9;
  EXPECT_EQ(partitionPipeline(graph, topo, PartitionOptions()).error,
            "layer 0 has a negative, infinite or NaN time or size");
}

TEST(PipelineProfile, ReadsPipeDreamGraphs) {
  // As PipeDream's optimizer does: the Input source (node1, 636 ms on
  // AlexNet's profile) and the __getitem__ sink nothing reads (node4) are
  // dropped; a __getitem__ that feeds a layer (node5) stays.
  const char *text =
      "node1 -- Input0 -- forward_compute_time=636.000, "
      "backward_compute_time=0.000, activation_size=50.0, "
      "parameter_size=0.000\n"
      "node3 -- Conv2d(3, 64) -- forward_compute_time=2.000, "
      "backward_compute_time=4.000, activation_size=100.0, "
      "parameter_size=10.000\n"
      "node2 -- LSTM(2, 2) -- forward_compute_time=1.000, "
      "backward_compute_time=1.000, activation_size=[10.0; 5.0], "
      "parameter_size=20.000\n"
      "node4 -- __getitem__(1) -- forward_compute_time=0.500, "
      "backward_compute_time=0.000, activation_size=5.0, "
      "parameter_size=0.000\n"
      "node5 -- __getitem__(0) -- forward_compute_time=0.010, "
      "backward_compute_time=0.000, activation_size=10.0, "
      "parameter_size=0.000\n"
      "node6 -- Linear(2, 2) -- forward_compute_time=1.000, "
      "backward_compute_time=2.000, activation_size=8.0, "
      "parameter_size=6.000\n"
      "\tnode1 -- node3\n"
      "\tnode3 -- node2\n"
      "\tnode1 -- node2\n"
      "\tnode2 -- node4\n"
      "\tnode2 -- node5\n"
      "\tnode5 -- node6\n";
  llvm::Expected<LayerGraph> graph = parsePipeDreamGraph(text, "graph.txt");
  ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
  ASSERT_EQ(graph->layers.size(), 4u);
  // Topological: node3, node2 (reads node3), node5, node6.
  EXPECT_EQ(graph->layers[0].name, "node3 Conv2d(3, 64)");
  EXPECT_DOUBLE_EQ(graph->layers[0].forwardSeconds, 2e-3);
  EXPECT_DOUBLE_EQ(graph->layers[1].stashBytes, 15.0);
  EXPECT_DOUBLE_EQ(graph->layers[1].optimizerBytes, 20.0);
  EXPECT_EQ(graph->layers[2].name, "node5 __getitem__(0)");
  EXPECT_EQ(graph->layers[3].name, "node6 Linear(2, 2)");
  // node3 -> node2 carries 100, node2 -> node5 15, node5 -> node6 10; the
  // input's 50 bytes are gone with it.
  ASSERT_EQ(graph->edges.size(), 3u);
  EXPECT_EQ(graph->edges[0].from, 0u);
  EXPECT_EQ(graph->edges[0].to, 1u);
  EXPECT_DOUBLE_EQ(graph->edges[0].bytes, 100.0);
  EXPECT_EQ(graph->edges[2].from, 2u);
  EXPECT_EQ(graph->edges[2].to, 3u);

  // Nothing but an input is no graph.
  llvm::Expected<LayerGraph> empty = parsePipeDreamGraph(
      "node1 -- Input0 -- forward_compute_time=1, backward_compute_time=0, "
      "activation_size=1, parameter_size=0\n",
      "input.txt");
  ASSERT_FALSE(static_cast<bool>(empty));
  EXPECT_EQ(llvm::toString(empty.takeError()),
            "input.txt: no nodes besides inputs and dead sinks");

  llvm::Expected<LayerGraph> bad = parsePipeDreamGraph(
      "node1 -- Foo -- forward_compute_time=x\n", "bad.txt");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "bad.txt:1: expected forward_compute_time, backward_compute_time, "
            "activation_size and parameter_size");
}

TEST(PipelineProfile, StrataProfileRoundTrips) {
  const char *text = R"({"format": "strata-profile", "version": 1,
    "layers": [
      {"layer": 1, "name": "b", "forward_seconds": 2, "backward_seconds": 3,
       "activation_bytes": 7, "parameter_bytes": 11},
      {"layer": 0, "name": "a", "forward_seconds": 1, "backward_seconds": 1,
       "activation_bytes": 5, "stash_bytes": 6}]})";
  llvm::Expected<LayerProfileSet> profile = parseLayerProfile(text, "p.json");
  ASSERT_TRUE(static_cast<bool>(profile))
      << llvm::toString(profile.takeError());
  llvm::Expected<LayerGraph> graph = profileToGraph(*profile);
  ASSERT_TRUE(static_cast<bool>(graph)) << llvm::toString(graph.takeError());
  ASSERT_EQ(graph->layers.size(), 2u);
  EXPECT_EQ(graph->layers[0].name, "a");
  EXPECT_EQ(graph->layers[0].stashBytes, 6);
  EXPECT_EQ(graph->layers[1].stashBytes, 7);
  ASSERT_EQ(graph->edges.size(), 1u);
  EXPECT_EQ(graph->edges[0].bytes, 5);

  std::string written;
  llvm::raw_string_ostream os(written);
  os << layerGraphToProfile(*graph);
  llvm::Expected<LayerProfileSet> again = parseLayerProfile(written, "w");
  ASSERT_TRUE(static_cast<bool>(again)) << llvm::toString(again.takeError());
  llvm::Expected<LayerGraph> graph2 = profileToGraph(*again);
  ASSERT_TRUE(static_cast<bool>(graph2));
  EXPECT_EQ(graph2->layers[1].paramBytes, 11);
  EXPECT_EQ(graph2->edges.size(), 1u);

  llvm::Expected<LayerProfileSet> missing =
      parseLayerProfile(R"({"layers": [{"layer": 0}]})", "m.json");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "m.json: layers[0] needs \"forward_seconds\" and "
            "\"backward_seconds\"");
}

} // namespace

TEST(PipelinePartition, PipeDreamUpdatesAfterEveryMicroBatch) {
  // pipedream's stage applies an update after each of its micro-batches
  // (M per step on one replica), the flushed schedules once per step.
  LayerGraph graph;
  graph.layers.resize(2);
  for (PartitionLayer &layer : graph.layers) {
    layer.forwardSeconds = 1e-3;
    layer.backwardSeconds = 2e-3;
    layer.updateSeconds = 4e-4;
    layer.paramBytes = 1e6;
  }
  graph.edges = {{0, 1, 1e3}};
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.memoryBytes = 1e30;
  PartitionOptions o;
  o.devices = 2;
  o.microBatches = 4;
  o.schedule = PipelineSchedule::OneFOneB;
  PartitionResult flushed = evaluateGivenPartition(graph, topo, o, "1-1");
  o.schedule = PipelineSchedule::PipeDream;
  PartitionResult pipedream = evaluateGivenPartition(graph, topo, o, "1-1");
  ASSERT_TRUE(flushed.ok()) << flushed.error;
  ASSERT_TRUE(pipedream.ok()) << pipedream.error;
  EXPECT_DOUBLE_EQ(flushed.best.stages[0].updateSeconds, 4e-4 / 4);
  EXPECT_DOUBLE_EQ(pipedream.best.stages[0].updateSeconds, 4e-4);
}
