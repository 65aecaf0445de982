//===- PipelineDownSetsTest.cpp - Partitions over down-sets ---------------===//
//
// The down-set lattice against a brute force over every subset of the
// layers, and the partitioner over down-sets (PartitionOptions::cuts =
// DownSets) against a brute force over every chain of down-sets and every
// replica vector, priced by evaluatePartition on the layer order the chain
// gives; on random DAGs with every cost term, schedule and objective. Plus
// chains (whose down-sets are their prefixes: the same result as the prefix
// search), PipeDream's transfer accounting and --evaluate's forms.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelineDownSets.h"
#include "strata/Analysis/PipelinePartition.h"

#include "PartitionScore.h"

#include "gtest/gtest.h"

#include <bitset>
#include <cmath>
#include <functional>
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

/// A random DAG in topological order. Each layer's output is one tensor;
/// each layer after the first reads 1-3 earlier ones (the one before it
/// with probability `chain`), so tensors have several readers and some
/// layers several producers. With chain = 1 and no extra reads: a chain.
LayerGraph randomDag(std::mt19937 &rng, unsigned layers, double chain,
                     double extra) {
  std::uniform_real_distribution<double> time(0.0, 10.0), bytes(0.0, 100.0),
      unit(0.0, 1.0);
  std::uniform_int_distribution<int> coin(0, 3);
  LayerGraph graph;
  std::vector<double> output;
  for (unsigned l = 0; l < layers; ++l) {
    PartitionLayer layer;
    layer.id = 100 + l;
    layer.forwardSeconds = time(rng);
    layer.backwardSeconds = 2 * time(rng);
    layer.updateSeconds = coin(rng) == 0 ? time(rng) : 0.0;
    layer.paramBytes = coin(rng) == 0 ? 0.0 : bytes(rng);
    layer.optimizerBytes = coin(rng) == 0 ? 0.0 : 2 * bytes(rng);
    layer.stashBytes = bytes(rng);
    graph.layers.push_back(layer);
    output.push_back(coin(rng) == 0 ? 0.0 : bytes(rng));
  }
  for (unsigned l = 1; l < layers; ++l) {
    std::vector<unsigned> reads;
    if (unit(rng) < chain)
      reads.push_back(l - 1);
    std::uniform_int_distribution<unsigned> earlier(0, l - 1);
    while (reads.empty() || (reads.size() < 3 && unit(rng) < extra))
      reads.push_back(earlier(rng));
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (unsigned from : reads)
      graph.edges.push_back(
          {from, l, output[from], static_cast<int64_t>(from)});
  }
  return graph;
}

PartitionTopology randomTopology(std::mt19937 &rng, int64_t devices) {
  std::uniform_int_distribution<int64_t> perNode(1, 3);
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

/// Bit l: layer l is in the set.
using Mask = uint32_t;

/// Every down-set (or, `prefixes`, every prefix) of `graph` as a mask, by
/// brute force over the subsets.
std::vector<Mask> cutMasks(const LayerGraph &graph, bool prefixes) {
  unsigned n = graph.layers.size();
  std::vector<Mask> masks;
  for (Mask m = 0; m < (Mask(1) << n); ++m) {
    bool closed = true;
    for (const PartitionEdge &e : graph.edges)
      closed &= !((m >> e.to) & 1) || ((m >> e.from) & 1);
    bool prefix = (m & (m + 1)) == 0;
    if (closed && (!prefixes || prefix))
      masks.push_back(m);
  }
  return masks;
}

/// Bytes of the tensors produced in `m` that a layer outside reads.
double outBytes(const LayerGraph &graph, Mask m) {
  double out = 0;
  for (const LayerTensor &t : graph.tensors()) {
    bool leaves = false;
    for (unsigned r : t.readers)
      leaves |= !((m >> r) & 1);
    if (((m >> t.from) & 1) && leaves)
      out += t.bytes;
  }
  return out;
}

Mask maskOf(const std::vector<bool> &members) {
  Mask m = 0;
  for (unsigned p = 0; p < members.size(); ++p)
    m |= Mask(members[p]) << p;
  return m;
}

TEST(PipelineDownSets, EnumeratesEveryDownSet) {
  std::mt19937 rng(5);
  int wide = 0;
  for (int trial = 0; trial < 400; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 11)(rng);
    LayerGraph graph = randomDag(rng, L, trial % 4 ? 0.5 : 1.0, 0.4);
    std::vector<Mask> brute = cutMasks(graph, false);
    DownSetLattice lattice;
    ASSERT_EQ(enumerateDownSets(graph, 1 << 20, 1 << 30, lattice), "");
    ASSERT_EQ(lattice.numStates(), brute.size()) << "trial " << trial;
    wide += brute.size() > 2 * L;
    std::vector<Mask> masks;
    uint64_t pairs = 0;
    for (uint32_t s = 0; s < lattice.numStates(); ++s) {
      Mask m = maskOf(lattice.members(s));
      masks.push_back(m);
      EXPECT_EQ(std::bitset<32>(m).count(), lattice.size[s]);
      if (s > 0) {
        EXPECT_LE(lattice.size[s - 1], lattice.size[s]);
        EXPECT_EQ(maskOf(lattice.members(lattice.parent[s])) |
                      (Mask(1) << lattice.added[s]),
                  m);
      }
      EXPECT_EQ(lattice.outBytes[s], outBytes(graph, m)) << "trial " << trial;
      for (Mask other : brute)
        pairs += other != m && (other & m) == m;
    }
    EXPECT_EQ(masks.front(), 0u);
    EXPECT_EQ(masks.back(), (Mask(1) << L) - 1);
    std::vector<Mask> sorted = masks;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, brute) << "trial " << trial;
    ASSERT_EQ(lattice.numPairs(), pairs);
    for (uint32_t s = 0; s < lattice.numStates(); ++s)
      for (uint64_t k = lattice.superBegin[s]; k < lattice.superBegin[s + 1];
           ++k) {
        Mask sup = masks[lattice.supersets[k]];
        EXPECT_TRUE(sup != masks[s] && (sup & masks[s]) == masks[s]);
        if (k > lattice.superBegin[s])
          EXPECT_LT(lattice.supersets[k - 1], lattice.supersets[k]);
      }
  }
  EXPECT_GT(wide, 60); // Not only chains.
}

TEST(PipelineDownSets, DiamondAndCaps) {
  // 0 -> {1, 2} -> 3; layer 0's output is one tensor read by 1 and 2.
  LayerGraph graph;
  graph.layers.resize(4);
  graph.edges = {{0, 1, 8, 0}, {0, 2, 8, 0}, {1, 3, 2, 1}, {2, 3, 4, 2}};
  EXPECT_FALSE(graph.isChain());
  DownSetLattice lattice;
  ASSERT_EQ(enumerateDownSets(graph, 100, 100, lattice), "");
  // {}, {0}, {0,1}, {0,2}, {0,1,2}, {0,1,2,3}.
  ASSERT_EQ(lattice.numStates(), 6u);
  EXPECT_EQ(lattice.outBytes[1], 8);     // {0}: one tensor, two readers
  EXPECT_EQ(lattice.outBytes[2], 8 + 2); // {0,1}: 0's still read by 2
  EXPECT_EQ(lattice.outBytes[3], 8 + 4); // {0,2}
  EXPECT_EQ(lattice.outBytes[4], 2 + 4); // {0,1,2}
  EXPECT_EQ(lattice.difference(1, 4), (std::vector<unsigned>{1, 2}));
  EXPECT_EQ(lattice.numPairs(), 5u + 4 + 2 + 2 + 1);
  // Past the caps: a message and nothing else.
  EXPECT_EQ(enumerateDownSets(graph, 5, 100, lattice),
            "the layer DAG has more than 5 down-sets");
  EXPECT_EQ(lattice.numStates(), 0u);
  EXPECT_EQ(enumerateDownSets(graph, 100, 10, lattice),
            "the layer DAG's 6 down-sets have more than 10 nested pairs, too "
            "many for the exhaustive search");
  // The cut bytes of a prefix count a tensor once however many readers.
  std::vector<double> cuts = graph.cutBytes();
  EXPECT_EQ(cuts, (std::vector<double>{8, 8 + 2, 2 + 4}));
}

/// Prices the partition whose stages end at `chain` (masks) on `replicas`.
PartitionEvaluation priceChain(const LayerGraph &graph,
                               const PartitionTopology &topo,
                               const PartitionOptions &o,
                               const std::vector<Mask> &chain,
                               const std::vector<int64_t> &replicas) {
  std::vector<unsigned> order;
  std::vector<std::pair<unsigned, unsigned>> bounds;
  Mask before = 0;
  for (Mask m : chain) {
    unsigned first = order.size();
    for (unsigned p = 0; p < graph.layers.size(); ++p)
      if (((m & ~before) >> p) & 1)
        order.push_back(p);
    bounds.emplace_back(first, order.size() - 1);
    before = m;
  }
  return evaluatePartition(graph.reordered(order), topo, o, bounds, replicas);
}

/// The best objective per stage count over every chain of `masks` and
/// every replica vector from `cands` (or only `shape`).
std::vector<double>
bruteForce(const LayerGraph &graph, const PartitionTopology &topo,
           const PartitionOptions &o, const std::vector<Mask> &masks,
           const std::vector<int64_t> &cands, int64_t maxStages,
           const std::vector<int64_t> *shape = nullptr) {
  std::vector<double> best(maxStages + 1, kInf);
  Mask full = (Mask(1) << graph.layers.size()) - 1;
  std::vector<Mask> chain;
  std::vector<int64_t> replicas;
  std::function<void(Mask, int64_t)> walk = [&](Mask at, int64_t used) {
    int64_t s = chain.size();
    if (at == full) {
      if (used != o.devices || s > maxStages)
        return;
      PartitionEvaluation e = priceChain(graph, topo, o, chain, replicas);
      if (e.fitsMemory)
        best[s] = std::min(best[s], e.objective);
      return;
    }
    if (s == maxStages)
      return;
    for (Mask next : masks) {
      if (next == at || (next & at) != at)
        continue;
      chain.push_back(next);
      for (int64_t r : cands) {
        if (used + r > o.devices)
          break;
        if (shape &&
            (s >= static_cast<int64_t>(shape->size()) || (*shape)[s] != r))
          continue;
        replicas.push_back(r);
        walk(next, used + r);
        replicas.pop_back();
      }
      chain.pop_back();
    }
  };
  walk(0, 0);
  return best;
}

/// Random options with random cost terms (PipeDream's transfers too).
PartitionOptions randomOptions(std::mt19937 &rng, int64_t devices,
                               unsigned layers) {
  std::uniform_int_distribution<int> pick(0, 5), coin(0, 1), xfer(0, 3);
  PartitionOptions o;
  o.cuts = CutSpace::DownSets;
  o.devices = devices;
  o.objective = static_cast<PartitionObjective>(pick(rng) % 3);
  o.schedule = static_cast<PipelineSchedule>(pick(rng));
  o.microBatches = std::uniform_int_distribution<int64_t>(1, 8)(rng);
  o.recompute = coin(rng) && coin(rng);
  o.terms.allReduceFactor = coin(rng) ? 4.0 : 0.0;
  o.terms.evenShares = coin(rng);
  o.terms.transfers = static_cast<TransferModel>(xfer(rng));
  o.terms.allReplicaCounts = coin(rng);
  if (pick(rng) == 0)
    o.stages = std::uniform_int_distribution<int64_t>(
        1, std::min<int64_t>(layers, devices))(rng);
  return o;
}

TEST(PipelinePartition, DownSetSearchMatchesBruteForceOverDownSetChains) {
  std::mt19937 rng(31337);
  int found = 0, reordered = 0, pipedream = 0;
  const int trials = 3000;
  for (int trial = 0; trial < trials; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 7)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 5)(rng);
    LayerGraph graph = randomDag(rng, L, 0.4, 0.5);
    PartitionTopology topo = randomTopology(rng, D);
    PartitionOptions o = randomOptions(rng, D, L);
    if (trial % 4 == 0) // Memory that binds.
      topo.memoryBytes = std::uniform_real_distribution<double>(100, 600)(rng);
    std::string what = "trial " + std::to_string(trial);
    PartitionResult r = partitionPipeline(graph, topo, o);
    PartitionOptions ro = resolveOptions(topo, o);
    int64_t maxStages = o.stages ? o.stages : std::min<int64_t>(L, D);
    std::vector<double> brute =
        bruteForce(graph, topo, ro, cutMasks(graph, false),
                   replicaCandidates(topo, ro), maxStages);
    double bestScore = kInf, bestValue = kInf;
    for (int64_t s = o.stages ? o.stages : 1; s <= maxStages; ++s)
      if (brute[s] < kInf &&
          test::bubbleScore(ro, graph, s, brute[s]) < bestScore) {
        bestScore = test::bubbleScore(ro, graph, s, brute[s]);
        bestValue = brute[s];
      }
    if (bestValue == kInf) {
      EXPECT_FALSE(r.ok()) << what;
      continue;
    }
    ASSERT_TRUE(r.ok()) << what << ": " << r.error;
    ++found;
    pipedream += o.terms.transfers == TransferModel::PipeDream;
    EXPECT_EQ(r.cutsSearched,
              graph.isChain() ? CutSpace::Prefixes : CutSpace::DownSets)
        << what;
    for (int64_t s = o.stages ? o.stages : 1; s <= maxStages; ++s) {
      // The prefix searches of a chain leave +inf at stage counts that
      // cannot win; the DP over down-sets gives every count's optimum.
      if (graph.isChain() && r.objectiveByStages[s] == kInf)
        EXPECT_GE(test::bubbleScore(ro, graph, s, brute[s]) * (1 + 1e-12),
                  bestScore)
            << what << " S=" << s;
      else
        EXPECT_TRUE(near(r.objectiveByStages[s], brute[s]))
            << what << " S=" << s << ": dp " << r.objectiveByStages[s]
            << " brute " << brute[s];
    }
    EXPECT_TRUE(near(r.best.objective, bestValue))
        << what << ": dp " << r.best.objective << " brute " << bestValue;
    EXPECT_TRUE(r.best.fitsMemory) << what;
    // The stages in their order: a permutation in which every edge goes
    // forward, stages contiguous, every device used.
    std::vector<unsigned> order = r.best.order;
    reordered += !order.empty();
    if (order.empty())
      for (unsigned p = 0; p < L; ++p)
        order.push_back(p);
    ASSERT_EQ(order.size(), L) << what;
    EXPECT_TRUE(graph.reordered(order).verify().empty()) << what;
    unsigned next = 0;
    int64_t devices = 0;
    for (const StagePlan &st : r.best.stages) {
      EXPECT_EQ(st.firstLayer, next) << what;
      next = st.lastLayer + 1;
      devices += st.replicas;
    }
    EXPECT_EQ(next, L) << what;
    EXPECT_EQ(devices, D) << what;
  }
  // Not vacuous: most trials have a partition, many outside the input's
  // order, many under PipeDream's transfer terms.
  EXPECT_GT(found, trials / 2);
  EXPECT_GT(reordered, 150);
  EXPECT_GT(pipedream, 150);
}

TEST(PipelinePartition, DownSetsOfAChainAreItsPrefixes) {
  // On a chain the down-set search is the prefix search (same code, same
  // result bit for bit: the default terms take the threshold search), and
  // the exhaustive DP over the enumerated down-sets (forced through the
  // reference) reaches the same optimum.
  std::mt19937 rng(77);
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 14)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 10)(rng);
    LayerGraph graph = randomDag(rng, L, 1.0, trial % 2 ? 0.0 : 0.3);
    ASSERT_TRUE(graph.isChain());
    PartitionTopology topo = randomTopology(rng, D);
    PartitionOptions o = randomOptions(rng, D, L);
    if (trial % 2)
      o.terms = CostTerms();
    std::string what = "trial " + std::to_string(trial);
    PartitionResult down = partitionPipeline(graph, topo, o);
    o.cuts = CutSpace::Prefixes;
    PartitionResult prefixes = partitionPipeline(graph, topo, o);
    ASSERT_EQ(down.error, prefixes.error) << what;
    EXPECT_EQ(down.cutsSearched, CutSpace::Prefixes) << what;
    EXPECT_EQ(down.cutsNote, "") << what;
    if (!down.ok())
      continue;
    ++checked;
    EXPECT_EQ(down.best.objective, prefixes.best.objective) << what;
    EXPECT_EQ(down.best.stepSeconds, prefixes.best.stepSeconds) << what;
    ASSERT_EQ(down.best.stages.size(), prefixes.best.stages.size()) << what;
    for (size_t s = 0; s < down.best.stages.size(); ++s) {
      EXPECT_EQ(down.best.stages[s].lastLayer,
                prefixes.best.stages[s].lastLayer);
      EXPECT_EQ(down.best.stages[s].replicas, prefixes.best.stages[s].replicas);
    }
    PartitionResult refPrefixes =
        detail::partitionPipelineReference(graph, topo, o);
    o.cuts = CutSpace::DownSets;
    PartitionResult refDown =
        detail::partitionPipelineReference(graph, topo, o);
    ASSERT_TRUE(refDown.ok()) << what << ": " << refDown.error;
    EXPECT_EQ(refDown.cutsSearched, CutSpace::DownSets) << what;
    EXPECT_EQ(refDown.downSets, static_cast<int64_t>(L) + 1) << what;
    EXPECT_TRUE(refDown.best.order.empty()) << what;
    EXPECT_TRUE(near(refDown.best.objective, refPrefixes.best.objective))
        << what;
    EXPECT_EQ(refDown.best.stages.size(), refPrefixes.best.stages.size())
        << what;
  }
  EXPECT_GT(checked, 300);
}

/// Two branches after layer 0: 0 -> 1 -> 3 and 0 -> 2 -> 3, layer 2 the
/// expensive one.
LayerGraph fork() {
  LayerGraph graph;
  for (double w : {1.0, 1.0, 3.0, 2.0}) {
    PartitionLayer layer;
    layer.id = graph.layers.size();
    layer.forwardSeconds = w / 3;
    layer.backwardSeconds = 2 * w / 3;
    graph.layers.push_back(layer);
  }
  graph.edges = {{0, 1, 1, 0}, {0, 2, 1, 0}, {1, 3, 1, 1}, {2, 3, 1, 2}};
  return graph;
}

TEST(PipelinePartition, DownSetsCutWhereNoPrefixCan) {
  // On two devices in a straight pipeline the prefixes give at best
  // {0, 1} | {2, 3} (2 | 5); the down-set {0, 2} gives 4 | 3.
  LayerGraph graph = fork();
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.intraBandwidth = 1e12;
  topo.memoryBytes = 1e12;
  PartitionOptions o;
  o.straight = true;
  o.microBatches = 1;
  PartitionResult prefixes = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(prefixes.ok()) << prefixes.error;
  EXPECT_NEAR(prefixes.best.stageSeconds, 5.0, 1e-9);
  o.cuts = CutSpace::DownSets;
  PartitionResult down = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(down.ok()) << down.error;
  EXPECT_EQ(down.cutsSearched, CutSpace::DownSets);
  EXPECT_EQ(down.downSets, 6);
  EXPECT_NEAR(down.best.stageSeconds, 4.0, 1e-9);
  EXPECT_EQ(down.best.order, (std::vector<unsigned>{0, 2, 1, 3}));
  // --evaluate prices the same stages written with '+'.
  PartitionResult given =
      evaluateGivenPartition(graph, topo, o, "0..0+2..2:1,1..1+3..3:1");
  ASSERT_TRUE(given.ok()) << given.error;
  EXPECT_EQ(given.best.stepSeconds, down.best.stepSeconds);
  EXPECT_EQ(given.best.order, down.best.order);
  // Below the cap on down-sets the search falls back to prefixes, and
  // says so.
  o.maxDownSets = 5;
  PartitionResult capped = partitionPipeline(graph, topo, o);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(capped.cutsSearched, CutSpace::Prefixes);
  EXPECT_EQ(capped.cutsNote, "the layer DAG has more than 5 down-sets");
  EXPECT_NEAR(capped.best.stageSeconds, 5.0, 1e-9);
}

TEST(PipelinePartition, EvaluateRejectsStagesThatAreNotDownSets) {
  LayerGraph graph = fork();
  PartitionTopology topo;
  topo.devicesPerNode = 2;
  topo.memoryBytes = 1e12;
  PartitionOptions o;
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..1+3..3:1,2..2:1").error,
            "layer 3 in stage 0 reads layer 2 of the later stage 1");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..1:1,1..3:1").error,
            "layer 1 is in stage 0 and in stage 1");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..1:1,3..3:1").error,
            "no stage holds layer 2");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..1:1,2..4:1").error,
            "stage '2..4:1': '2..4' is not a range within layers 0..3");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "0..1+:1,2..3:1").error,
            "stage '0..1+:1' is not FIRST..LAST[+FIRST..LAST...]:REPLICAS "
            "with 1 <= REPLICAS <= 2");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "1-2").error,
            "the replicas sum to 3 devices, not 2");
  EXPECT_EQ(evaluateGivenPartition(graph, topo, o, "1-x").error,
            "'1-x' is neither stages FIRST..LAST:REPLICAS nor replicas per "
            "stage R0-R1-... (e.g. 3-1) with 1 <= R <= 2");
}

TEST(PipelinePartition, ReplicaShapesTakeTheBestBoundaries) {
  // "r0-r1-...": the stage boundaries with the best value for exactly those
  // replicas, over prefixes or down-sets, against the brute force.
  std::mt19937 rng(99);
  int found = 0, infeasible = 0;
  for (int trial = 0; trial < 800; ++trial) {
    unsigned L = std::uniform_int_distribution<unsigned>(1, 6)(rng);
    int64_t D = std::uniform_int_distribution<int64_t>(1, 6)(rng);
    LayerGraph graph = randomDag(rng, L, 0.5, 0.4);
    PartitionTopology topo = randomTopology(rng, D);
    if (trial % 3 == 0)
      topo.memoryBytes = std::uniform_real_distribution<double>(100, 600)(rng);
    PartitionOptions o = randomOptions(rng, D, L);
    o.stages = 0;
    if (trial % 2)
      o.cuts = CutSpace::Prefixes;
    // A random composition of D into at most L parts.
    std::vector<int64_t> shape;
    for (int64_t left = D; left > 0;) {
      int64_t r = std::uniform_int_distribution<int64_t>(1, left)(rng);
      if (static_cast<int64_t>(shape.size()) + 1 == static_cast<int64_t>(L))
        r = left;
      shape.push_back(r);
      left -= r;
    }
    std::string spec;
    for (int64_t r : shape)
      spec += (spec.empty() ? "" : "-") + std::to_string(r);
    std::string what = "trial " + std::to_string(trial) + " " + spec;
    PartitionResult r = evaluateGivenPartition(graph, topo, o, spec);
    PartitionOptions ro = resolveOptions(topo, o);
    std::vector<int64_t> cands = shape;
    std::sort(cands.begin(), cands.end());
    cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
    int64_t S = shape.size();
    std::vector<double> brute = bruteForce(
        graph, topo, ro, cutMasks(graph, trial % 2), cands, S, &shape);
    if (brute[S] == kInf) {
      ++infeasible;
      EXPECT_FALSE(r.ok()) << what;
      if (!r.ok() && r.error.find("no partition fits") != 0)
        ADD_FAILURE() << what << ": " << r.error;
      continue;
    }
    ASSERT_TRUE(r.ok()) << what << ": " << r.error;
    ++found;
    EXPECT_TRUE(near(r.best.objective, brute[S]))
        << what << ": " << r.best.objective << " brute " << brute[S];
    ASSERT_EQ(r.best.stages.size(), shape.size()) << what;
    for (size_t s = 0; s < shape.size(); ++s)
      EXPECT_EQ(r.best.stages[s].replicas, shape[s]) << what;
  }
  EXPECT_GT(found, 400);
  EXPECT_GT(infeasible, 20);
}

TEST(PipelinePartition, PipeDreamTransfersSkipTheFirstStagesOutput) {
  // Three layers on 2 + 1 + 1 devices, 1 GB/s: transfers=pipedream charges
  // stage 0 nothing (PipeDream's base case), stages 1 and 2 their larger
  // cut over their replicas; per-replica charges stage 0 its outgoing cut
  // over its 2 replicas too.
  LayerGraph graph;
  graph.layers.resize(3);
  for (PartitionLayer &layer : graph.layers)
    layer.forwardSeconds = 1e-3;
  graph.edges = {{0, 1, 4e8}, {1, 2, 1e8}};
  PartitionTopology topo;
  topo.devicesPerNode = 1;
  topo.nodes = 4;
  topo.intraBandwidth = topo.interBandwidth = 1e9;
  topo.memoryBytes = 1e30;
  PartitionOptions o;
  o.microBatches = 4;
  std::string error;
  ASSERT_TRUE(parseCostTerms("pipedream,transfers=pipedream", o.terms, error))
      << error;
  EXPECT_EQ(stringifyCostTerms(o.terms),
            "allreduce=4,shares=even,transfers=pipedream,replicas=all");
  PartitionResult r =
      evaluateGivenPartition(graph, topo, o, "0..0:2,1..1:1,2..2:1");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.best.stages[0].transferSeconds, 0.0);
  EXPECT_NEAR(r.best.stages[1].transferSeconds, 0.8, 1e-12);
  EXPECT_NEAR(r.best.stages[2].transferSeconds, 0.2, 1e-12);
  o.terms.transfers = TransferModel::PerReplica;
  r = evaluateGivenPartition(graph, topo, o, "0..0:2,1..1:1,2..2:1");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NEAR(r.best.stages[0].transferSeconds, 0.4, 1e-12);
}

} // namespace
