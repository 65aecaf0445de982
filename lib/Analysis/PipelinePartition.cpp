//===- PipelinePartition.cpp - Layers to pipeline stages x replicas -------===//
//
// The dynamic program of PipelinePartition.h. Suffix form: f(k, i, o) is the
// best value of layers [i, L) split into k stages on devices [o, D), every
// device used. The stage opened at (i, o) covers [i, j] on r replicas and the
// rest is f(k - 1, j + 1, o + r); its memory depends on k (stages from it to
// the end), which is why k is part of the state. The slowest-stage
// objectives combine with max, the communication objective with +.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Target/TargetDescription.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <thread>

using namespace mlir::strata;

static constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> LayerGraph::cutBytes() const {
  size_t n = layers.size();
  std::vector<double> cuts(n > 0 ? n - 1 : 0, 0.0);
  if (cuts.empty())
    return cuts;
  // A difference array: an edge from a to b adds its bytes to cuts a..b-1.
  std::vector<double> delta(n, 0.0);
  for (const PartitionEdge &edge : edges) {
    delta[edge.from] += edge.bytes;
    delta[edge.to] -= edge.bytes;
  }
  double running = 0;
  for (size_t j = 0; j + 1 < n; ++j) {
    running += delta[j];
    cuts[j] = std::max(0.0, running);
  }
  return cuts;
}

/// A finite non-negative time or size (NaN fails every comparison, which
/// would keep the partitioner's memory search from ending).
static bool isSize(double v) { return v >= 0 && std::isfinite(v); }

std::string LayerGraph::verify() const {
  if (layers.empty())
    return "the layer graph has no layers";
  if (layers.size() > 65535)
    return "the layer graph has more than 65535 layers";
  for (const PartitionEdge &edge : edges) {
    if (edge.from >= layers.size() || edge.to >= layers.size())
      return "an edge refers to a layer position past the last layer";
    if (edge.from >= edge.to) {
      std::ostringstream os;
      os << "edge from layer " << layers[edge.from].id << " to layer "
         << layers[edge.to].id << " does not go forward in pipeline order";
      return os.str();
    }
    if (!isSize(edge.bytes))
      return "an edge has negative, infinite or NaN bytes";
  }
  for (const PartitionLayer &layer : layers)
    if (!isSize(layer.forwardSeconds) || !isSize(layer.backwardSeconds) ||
        !isSize(layer.updateSeconds) || !isSize(layer.paramBytes) ||
        !isSize(layer.optimizerBytes) || !isSize(layer.stashBytes)) {
      std::ostringstream os;
      os << "layer " << layer.id
         << " has a negative, infinite or NaN time or size";
      return os.str();
    }
  return "";
}

PartitionTopology PartitionTopology::fromTarget(const TargetDescription &t) {
  PartitionTopology topo;
  topo.devicesPerNode = t.devicesPerNode;
  topo.nodes = t.nodes;
  topo.intraBandwidth = t.intraNode.bandwidth();
  topo.intraLatency = t.intraNode.latency();
  topo.interBandwidth = t.interNode.bandwidth();
  topo.interLatency = t.interNode.latency();
  topo.memoryBytes = t.memoryCapacity();
  return topo;
}

const char *mlir::strata::stringifyObjective(PartitionObjective objective) {
  switch (objective) {
  case PartitionObjective::Throughput:
    return "throughput";
  case PartitionObjective::Balance:
    return "balance";
  case PartitionObjective::Communication:
    return "communication";
  }
  return "throughput";
}

const char *mlir::strata::stringifySchedule(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::GPipe:
    return "gpipe";
  case PipelineSchedule::OneFOneB:
    return "1f1b";
  case PipelineSchedule::Interleaved:
    return "interleaved";
  case PipelineSchedule::ZeroBubbleH1:
    return "zb-h1";
  }
  return "1f1b";
}

bool mlir::strata::parseObjective(const std::string &name,
                                  PartitionObjective &objective) {
  for (PartitionObjective o :
       {PartitionObjective::Throughput, PartitionObjective::Balance,
        PartitionObjective::Communication})
    if (name == stringifyObjective(o)) {
      objective = o;
      return true;
    }
  return false;
}

bool mlir::strata::parseSchedule(const std::string &name,
                                 PipelineSchedule &schedule) {
  for (PipelineSchedule s :
       {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB,
        PipelineSchedule::Interleaved, PipelineSchedule::ZeroBubbleH1})
    if (name == stringifySchedule(s)) {
      schedule = s;
      return true;
    }
  return false;
}

PartitionOptions mlir::strata::resolveOptions(const PartitionTopology &topology,
                                              const PartitionOptions &options) {
  PartitionOptions resolved = options;
  if (resolved.devices == 0)
    resolved.devices = topology.numDevices();
  if (resolved.microBatches == 0)
    resolved.microBatches = 4 * std::max<int64_t>(resolved.devices, 1);
  if (resolved.memoryBytes == 0)
    resolved.memoryBytes = topology.memoryBytes;
  if (resolved.virtualStages < 1)
    resolved.virtualStages = 1;
  return resolved;
}

std::vector<int64_t>
mlir::strata::replicaCandidates(const PartitionTopology &topology,
                                const PartitionOptions &resolved) {
  int64_t devices = resolved.devices;
  if (resolved.straight)
    return {1};
  if (resolved.replicas > 0)
    return {resolved.replicas};
  int64_t g = std::max<int64_t>(topology.devicesPerNode, 1);
  std::vector<int64_t> candidates;
  for (int64_t r = 1; r <= std::min(g, devices); ++r)
    candidates.push_back(r);
  for (int64_t r = 2 * g; r <= devices; r += g)
    candidates.push_back(r);
  // Pure data parallelism over every device is always a candidate.
  if (candidates.back() != devices)
    candidates.push_back(devices);
  return candidates;
}

//===----------------------------------------------------------------------===//
// Shared formulas
//===----------------------------------------------------------------------===//

static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Micro-batches whose activations a replica of the stage `k` stages from
/// the end keeps at once; `n` is the micro-batches the replica runs.
static int64_t inFlight(const PartitionOptions &o, int64_t k, int64_t n) {
  switch (o.schedule) {
  case PipelineSchedule::GPipe:
    return n;
  case PipelineSchedule::OneFOneB:
  case PipelineSchedule::ZeroBubbleH1:
    return std::min(k, n);
  case PipelineSchedule::Interleaved: {
    int64_t v = o.virtualStages;
    return std::min(n, ceilDiv(k * (v + 1), v));
  }
  }
  return n;
}

/// Bytes one device of a stage holds: `resident` (parameters, gradients,
/// optimizer state) plus what it keeps for `inFlight` micro-batches: all of
/// `stash` each, or with recompute only its `input` each and `stash` once.
static double stageMemory(const PartitionOptions &o, double resident,
                          double stash, double input, int64_t inFlight) {
  double k = static_cast<double>(inFlight);
  return o.recompute ? resident + input * k + stash : resident + stash * k;
}

/// Seconds of one micro-batch on a stage: forward and backward, plus the
/// forward again with recompute.
static double stageWork(const PartitionOptions &o, double forward,
                        double backward) {
  return (o.recompute ? 2.0 * forward : forward) + backward;
}

/// Idle micro-batch slots of one step: the bubble.
static double bubbleSlots(const PartitionOptions &o, int64_t stages,
                          double forward, double backward) {
  double s = static_cast<double>(stages - 1);
  switch (o.schedule) {
  case PipelineSchedule::GPipe:
  case PipelineSchedule::OneFOneB:
    return s;
  case PipelineSchedule::Interleaved:
    return s / static_cast<double>(o.virtualStages);
  case PipelineSchedule::ZeroBubbleH1:
    return forward + backward > 0 ? s * forward / (forward + backward) : 0.0;
  }
  return s;
}

static double ringAllReduce(double bytes, int64_t r, double bandwidth,
                            double latency) {
  if (r <= 1)
    return 0.0;
  double p = static_cast<double>(r);
  return 2.0 * (p - 1.0) / p * bytes / bandwidth + 2.0 * (p - 1.0) * latency;
}

static double transfer(double bytes, double bandwidth, double latency) {
  return bytes > 0 ? 2.0 * (latency + bytes / bandwidth) : 0.0;
}

/// The transfer over a cut of `bytes` on the intra-node link (0) and on the
/// inter-node link (1); 0 for the last stage, which has no cut after it.
static std::array<double, 2> cutTransfers(const PartitionTopology &topology,
                                          double bytes) {
  return {transfer(bytes, topology.intraBandwidth, topology.intraLatency),
          transfer(bytes, topology.interBandwidth, topology.interLatency)};
}

//===----------------------------------------------------------------------===//
// evaluatePartition: direct sums, independent of the DP
//===----------------------------------------------------------------------===//

PartitionEvaluation mlir::strata::evaluatePartition(
    const LayerGraph &graph, const PartitionTopology &topology,
    const PartitionOptions &o,
    const std::vector<std::pair<unsigned, unsigned>> &bounds,
    const std::vector<int64_t> &replicas) {
  PartitionEvaluation eval;
  int64_t g = std::max<int64_t>(topology.devicesPerNode, 1);
  int64_t stages = static_cast<int64_t>(bounds.size());
  double M = static_cast<double>(o.microBatches);
  double totalForward = 0, totalBackward = 0;
  for (const PartitionLayer &layer : graph.layers) {
    totalForward += layer.forwardSeconds;
    totalBackward += layer.backwardSeconds;
  }
  int64_t device = 0;
  eval.fitsMemory = true;
  for (int64_t s = 0; s < stages; ++s) {
    auto [first, last] = bounds[s];
    int64_t r = replicas[s];
    StagePlan stage;
    stage.firstLayer = first;
    stage.lastLayer = last;
    stage.replicas = r;
    stage.firstDevice = device;
    double forward = 0, backward = 0, update = 0, params = 0, optimizer = 0,
           stash = 0;
    for (unsigned l = first; l <= last; ++l) {
      const PartitionLayer &layer = graph.layers[l];
      forward += layer.forwardSeconds;
      backward += layer.backwardSeconds;
      update += layer.updateSeconds;
      params += layer.paramBytes;
      optimizer += layer.optimizerBytes;
      stash += layer.stashBytes;
    }
    double work = stageWork(o, forward, backward);
    int64_t n = ceilDiv(o.microBatches, r);
    stage.computeSeconds = work * static_cast<double>(n) / M;
    bool oneNode = device / g == (device + r - 1) / g;
    stage.syncSeconds =
        ringAllReduce(params, r,
                      oneNode ? topology.intraBandwidth
                              : topology.interBandwidth,
                      oneNode ? topology.intraLatency : topology.interLatency) /
        M;
    stage.updateSeconds = update / M;
    stage.commBytes = 2.0 * static_cast<double>(r - 1) * params;
    if (s + 1 < stages) {
      double crossing = 0;
      for (const PartitionEdge &edge : graph.edges)
        if (edge.from <= last && edge.to > last)
          crossing += edge.bytes;
      int64_t next = device + r;
      bool sameNode = (next - 1) / g == next / g;
      stage.transferSeconds =
          transfer(crossing,
                   sameNode ? topology.intraBandwidth : topology.interBandwidth,
                   sameNode ? topology.intraLatency : topology.interLatency);
      stage.commBytes += 2.0 * crossing * M;
    }
    stage.seconds =
        std::max(stage.computeSeconds + stage.syncSeconds + stage.updateSeconds,
                 stage.transferSeconds);
    stage.inFlight = inFlight(o, stages - s, n);
    double input = 0;
    for (const PartitionEdge &edge : graph.edges)
      if (edge.from < first && edge.to >= first)
        input += edge.bytes;
    stage.memoryBytes =
        stageMemory(o, 2.0 * params + optimizer, stash, input, stage.inFlight);
    if (stage.memoryBytes > o.memoryBytes)
      eval.fitsMemory = false;
    eval.peakMemoryBytes = std::max(eval.peakMemoryBytes, stage.memoryBytes);
    eval.stageSeconds = std::max(eval.stageSeconds, stage.seconds);
    switch (o.objective) {
    case PartitionObjective::Throughput:
      eval.objective = std::max(eval.objective, stage.seconds);
      break;
    case PartitionObjective::Balance:
      eval.objective = std::max(eval.objective, stage.computeSeconds);
      break;
    case PartitionObjective::Communication:
      eval.objective += stage.commBytes;
      break;
    }
    eval.stages.push_back(stage);
    device += r;
  }
  double slots = bubbleSlots(o, stages, totalForward, totalBackward);
  eval.bubbleFraction = slots / (M + slots);
  eval.stepSeconds = eval.stageSeconds * (M + slots);
  return eval;
}

//===----------------------------------------------------------------------===//
// The dynamic program
//===----------------------------------------------------------------------===//

namespace {
enum class Metric { Throughput, Balance, Communication, Memory };

/// Prefix sums over the layers and per-candidate constants shared by the
/// exhaustive DP (Solver) and the bounded search (BoundedSolver).
struct CostTables {
  CostTables(const LayerGraph &graph, const PartitionTopology &topology,
             const PartitionOptions &o, std::vector<int64_t> candidates);

  const PartitionOptions &o;
  const PartitionTopology &topology;
  std::vector<int64_t> candidates;
  int64_t numLayers = 0, devices = 0, g = 1;
  std::vector<double> work, update, params, resident, stash, cuts;
  /// Per candidate: micro-batches per replica and the all-reduce cost
  /// a * bytes + b on the intra-node (0) and inter-node (1) link.
  std::vector<int64_t> perReplica;
  std::vector<double> arScale[2], arFixed[2];
};

/// One run of the DP for a metric under a memory cap.
class Solver : CostTables {
public:
  using CostTables::CostTables;

  /// Runs the DP for stage counts 1..maxStages; value(S) is the optimum with
  /// exactly S stages (+inf if none).
  void solve(Metric metric, double cap, int64_t maxStages, bool onlyLast);
  const std::vector<double> &values() const { return best; }
  double value(int64_t stages) const { return best[stages]; }
  /// The optimal partition with `stages` stages (value(stages) finite).
  void reconstruct(int64_t stages,
                   std::vector<std::pair<unsigned, unsigned>> &bounds,
                   std::vector<int64_t> &replicas) const;

private:
  size_t index(int64_t i, int64_t off) const {
    return static_cast<size_t>(i) * (devices + 1) + off;
  }

  std::vector<double> best;
  /// choice[k][i * (D + 1) + o] = (j << 16) | candidate index, or ~0u.
  std::vector<std::vector<uint32_t>> choice;
};
} // namespace

CostTables::CostTables(const LayerGraph &graph,
                       const PartitionTopology &topology,
                       const PartitionOptions &o,
                       std::vector<int64_t> candidates)
    : o(o), topology(topology), candidates(std::move(candidates)) {
  numLayers = static_cast<int64_t>(graph.layers.size());
  devices = o.devices;
  g = std::max<int64_t>(topology.devicesPerNode, 1);
  work.assign(numLayers + 1, 0.0);
  update.assign(numLayers + 1, 0.0);
  params.assign(numLayers + 1, 0.0);
  resident.assign(numLayers + 1, 0.0);
  stash.assign(numLayers + 1, 0.0);
  for (int64_t l = 0; l < numLayers; ++l) {
    const PartitionLayer &layer = graph.layers[l];
    work[l + 1] =
        work[l] + stageWork(o, layer.forwardSeconds, layer.backwardSeconds);
    update[l + 1] = update[l] + layer.updateSeconds;
    params[l + 1] = params[l] + layer.paramBytes;
    resident[l + 1] =
        resident[l] + 2.0 * layer.paramBytes + layer.optimizerBytes;
    stash[l + 1] = stash[l] + layer.stashBytes;
  }
  cuts = graph.cutBytes();
  size_t numCandidates = this->candidates.size();
  perReplica.resize(numCandidates);
  for (int link = 0; link < 2; ++link) {
    arScale[link].resize(numCandidates);
    arFixed[link].resize(numCandidates);
  }
  for (size_t c = 0; c < numCandidates; ++c) {
    int64_t r = this->candidates[c];
    perReplica[c] = ceilDiv(o.microBatches, r);
    double p = static_cast<double>(r);
    arScale[0][c] = r > 1 ? 2.0 * (p - 1.0) / p / topology.intraBandwidth : 0;
    arFixed[0][c] = r > 1 ? 2.0 * (p - 1.0) * topology.intraLatency : 0;
    arScale[1][c] = r > 1 ? 2.0 * (p - 1.0) / p / topology.interBandwidth : 0;
    arFixed[1][c] = r > 1 ? 2.0 * (p - 1.0) * topology.interLatency : 0;
  }
}

void Solver::solve(Metric metric, double cap, int64_t maxStages,
                   bool onlyLast) {
  const double M = static_cast<double>(o.microBatches);
  const int64_t D = devices, L = numLayers;
  const int64_t rmin = candidates.front();
  const size_t cells = static_cast<size_t>(L + 1) * (D + 1);
  std::vector<double> prev(cells, kInf), cur(cells, kInf);
  // k = 0: nothing left, every device used.
  prev[index(L, D)] = 0.0;
  // The finite offsets of each row of the previous table lie in
  // [prevLo[i], prevHi[i]] (empty when prevLo > prevHi).
  std::vector<int64_t> prevLo(L + 1, D + 1), prevHi(L + 1, -1);
  std::vector<int64_t> curLo(L + 1), curHi(L + 1);
  prevLo[L] = prevHi[L] = D;
  best.assign(maxStages + 1, kInf);
  choice.assign(maxStages + 1, {});
  const bool sum = metric == Metric::Communication;
  const int64_t numCandidates = static_cast<int64_t>(candidates.size());

  for (int64_t k = 1; k <= maxStages; ++k) {
    std::fill(cur.begin(), cur.end(), kInf);
    std::fill(curLo.begin(), curLo.end(), D + 1);
    std::fill(curHi.begin(), curHi.end(), -1);
    std::vector<uint32_t> &choiceK = choice[k];
    choiceK.assign(cells, ~0u);
    bool last = onlyLast && k == maxStages;
    for (int64_t i = 0; i + k <= L; ++i) {
      if (last && i > 0)
        break;
      int64_t lastJ = k == 1 ? L - 1 : L - k;
      for (int64_t j = k == 1 ? L - 1 : i; j <= lastJ; ++j) {
        double residentBytes = resident[j + 1] - resident[i];
        if (residentBytes > cap)
          break;
        if (prevLo[j + 1] > prevHi[j + 1])
          continue;
        double stageWork = work[j + 1] - work[i];
        double stageUpdate = update[j + 1] - update[i];
        double stageParams = params[j + 1] - params[i];
        double stageStash = stash[j + 1] - stash[i];
        bool hasNext = j + 1 < L;
        double cut = hasNext ? cuts[j] : 0.0;
        std::array<double, 2> xfer = cutTransfers(topology, cut);
        const double *restRow = &prev[index(j + 1, 0)];
        for (int64_t c = 0; c < numCandidates; ++c) {
          int64_t r = candidates[c];
          // Offsets this stage may start at.
          int64_t hi = D - r - (k - 1) * rmin;
          if (hi < 0)
            break; // Larger candidates leave even fewer offsets.
          int64_t lo = k == 1 ? hi : 0;
          if (last) {
            if (lo > 0)
              continue;
            hi = 0;
          }
          // Only offsets whose rest can be finite.
          lo = std::max(lo, prevLo[j + 1] - r);
          hi = std::min(hi, prevHi[j + 1] - r);
          if (hi < lo)
            continue;
          int64_t n = perReplica[c];
          double memory =
              stageMemory(o, residentBytes, stageStash,
                          i > 0 ? cuts[i - 1] : 0.0, inFlight(o, k, n));
          if (memory > cap)
            continue;
          // term[oneNode][sameNode]: the stage's value by where it lies.
          double term[2][2];
          switch (metric) {
          case Metric::Memory:
            term[0][0] = term[0][1] = term[1][0] = term[1][1] = memory;
            break;
          case Metric::Balance:
            term[0][0] = term[0][1] = term[1][0] = term[1][1] =
                stageWork * static_cast<double>(n) / M;
            break;
          case Metric::Communication:
            term[0][0] = term[0][1] = term[1][0] = term[1][1] =
                2.0 * static_cast<double>(r - 1) * stageParams +
                (hasNext ? 2.0 * cut * M : 0.0);
            break;
          case Metric::Throughput:
            for (int one = 0; one < 2; ++one) {
              int link = one ? 0 : 1;
              double busy = stageWork * static_cast<double>(n) / M +
                            (arScale[link][c] * stageParams + arFixed[link][c] +
                             stageUpdate) /
                                M;
              term[one][1] = std::max(busy, xfer[0]);
              term[one][0] = std::max(busy, xfer[1]);
            }
            break;
          }
          uint32_t code = static_cast<uint32_t>(j << 16 | c);
          int64_t inNode = lo % g; // position of `off` within its node
          int64_t nextInNode = (lo + r) % g;
          for (int64_t off = lo; off <= hi; ++off) {
            double rest = restRow[off + r];
            if (rest != kInf) {
              double t = term[inNode + r <= g][nextInNode != 0];
              double v = sum ? t + rest : std::max(t, rest);
              size_t cell = index(i, off);
              if (v < cur[cell]) {
                cur[cell] = v;
                choiceK[cell] = code;
              }
            }
            if (++inNode == g)
              inNode = 0;
            if (++nextInNode == g)
              nextInNode = 0;
          }
        }
      }
      for (int64_t off = 0; off <= D; ++off)
        if (cur[index(i, off)] < kInf) {
          curLo[i] = std::min(curLo[i], off);
          curHi[i] = off;
        }
    }
    best[k] = cur[index(0, 0)];
    std::swap(prev, cur);
    std::swap(prevLo, curLo);
    std::swap(prevHi, curHi);
  }
}

void Solver::reconstruct(int64_t stages,
                         std::vector<std::pair<unsigned, unsigned>> &bounds,
                         std::vector<int64_t> &replicas) const {
  int64_t i = 0, off = 0;
  for (int64_t k = stages; k >= 1; --k) {
    uint32_t c = choice[k][index(i, off)];
    int64_t j = c >> 16;
    int64_t r = candidates[c & 0xffff];
    bounds.emplace_back(static_cast<unsigned>(i), static_cast<unsigned>(j));
    replicas.push_back(r);
    i = j + 1;
    off += r;
  }
}

//===----------------------------------------------------------------------===//
// The bounded search: the same recurrence for the min-max metrics, pruned
//===----------------------------------------------------------------------===//
//
// f(k, i, o) is the recurrence of Solver with max. What is asked for is the
// stage count S minimising f(S, 0, 0) * (M + slots(S)), slots increasing in
// S. Given an incumbent Z (the score of a partition known to exist), a
// suffix state of level k can only be part of an S-stage partition scoring
// at most Z, S >= k, if f(k, i, o) <= Z / (M + slots(S)) <= T_k :=
// Z / (M + slots(k)). So the search keeps only the states and transitions
// with values <= T_k (the states of an optimal partition all qualify, since
// a max is at least each of its parts), and f of every state it keeps is
// exactly the DP's (max and + are exact; the same formulas in the same
// order). The bounds are all of that kind:
//   * value:  a stage term or a rest above T_k is skipped;
//   * layers: for fixed (i, r, k) the stage's compute + sync + update and
//     its memory do not decrease with j (prefix sums of non-negative
//     values), so the j loop stops at the first j where either passes its
//     bound;
//   * devices: a stage of work W on r replicas has compute >= W / r (each
//     replica runs ceil(M / r) >= M / r micro-batches), so within T_k it
//     needs r >= W / T_k devices: a state (i, o) is reachable only with
//     o >= work[0, i) / T_k and D - o >= work[i, L) / T_k;
//   * rows:   each row keeps only its finite cells (offset, choice, value),
//     and a transition visits only the finite cells of the row it continues
//     with.
// Z starts from the equal split (evenSplit) when it fits, and drops to each
// level's exact score as the levels finish. Stage counts whose optimum
// cannot reach Z come out +inf: they cannot be chosen. Rows of one level are
// independent and are split over two threads.

namespace {
class BoundedSolver : CostTables {
public:
  using CostTables::CostTables;

  /// Values per stage count 1..maxStages: exact where the score can reach
  /// `incumbent`, else +inf. `fixedStages` (0: free) asks for that count.
  void solve(Metric metric, double cap, int64_t maxStages, int64_t fixedStages,
             double incumbent, double totalForward, double totalBackward);
  const std::vector<double> &values() const { return best; }
  void reconstruct(int64_t stages,
                   std::vector<std::pair<unsigned, unsigned>> &bounds,
                   std::vector<int64_t> &replicas) const;

private:
  /// A finite state of a row: offset, (j << 16) | candidate, value.
  struct Cell {
    int32_t off;
    uint32_t code;
    double value;
  };
  using Level = std::vector<std::vector<Cell>>;
  /// Dense per-thread row being built.
  struct Scratch {
    std::vector<double> value;
    std::vector<uint32_t> code;
  };
  struct LevelInfo {
    int64_t k;
    double threshold;
    bool last;
  };

  void solveRow(const LevelInfo &level, int64_t i, const Level &prev,
                std::vector<Cell> &row, Scratch &scratch) const;
  /// Devices needed for `w` of work within `threshold`: ceil(w / threshold)
  /// rounded down by a relative 1e-9 (a bound only has to be safe).
  static int64_t need(double w, double threshold) {
    if (!(threshold < kInf) || w <= 0)
      return 0;
    double x = w / threshold * (1 - 1e-9);
    return x >= 1e18 ? static_cast<int64_t>(1e18)
                     : static_cast<int64_t>(std::ceil(x));
  }

  Metric metric = Metric::Throughput;
  double cap = kInf;
  std::vector<double> best;
  std::vector<Level> levels;
};
} // namespace

void BoundedSolver::solveRow(const LevelInfo &level, int64_t i,
                             const Level &prev, std::vector<Cell> &row,
                             Scratch &scratch) const {
  const int64_t D = devices, L = numLayers, k = level.k;
  const double T = level.threshold, M = static_cast<double>(o.microBatches);
  const int64_t rmin = candidates.front();
  // Offsets the prefix [0, i) and the suffix [i, L) leave room for.
  int64_t lo = need(work[i], T), hi = D - need(work[L] - work[i], T);
  hi = std::min(hi, D - k * rmin);
  if (level.last)
    hi = std::min<int64_t>(hi, 0);
  if (lo > hi)
    return;
  std::fill(scratch.value.begin() + lo, scratch.value.begin() + hi + 1, kInf);
  const int64_t numCandidates = static_cast<int64_t>(candidates.size());
  for (int64_t c = 0; c < numCandidates; ++c) {
    int64_t r = candidates[c];
    // Offsets this stage may start at (k == 1: it ends at the last device).
    int64_t cHi = std::min(hi, D - r - (k - 1) * rmin);
    int64_t cLo = k == 1 ? std::max(lo, cHi) : lo;
    if (cHi < cLo)
      continue;
    int64_t n = perReplica[c];
    double dn = static_cast<double>(n);
    int64_t inflight = inFlight(o, k, n);
    double input = i > 0 ? cuts[i - 1] : 0.0;
    for (int64_t j = k == 1 ? L - 1 : i, lastJ = k == 1 ? L - 1 : L - k;
         j <= lastJ; ++j) {
      double residentBytes = resident[j + 1] - resident[i];
      double memory = stageMemory(o, residentBytes, stash[j + 1] - stash[i],
                                  input, inflight);
      if (memory > cap)
        break; // Grows with j.
      double stageWorkS = work[j + 1] - work[i];
      double stageUpdate = update[j + 1] - update[i];
      double stageParams = params[j + 1] - params[i];
      // term[oneNode][sameNode], as in Solver::solve.
      double term[2][2];
      double least;
      if (metric == Metric::Balance) {
        term[0][0] = term[0][1] = term[1][0] = term[1][1] = least =
            stageWorkS * dn / M;
      } else {
        bool hasNext = j + 1 < L;
        double cut = hasNext ? cuts[j] : 0.0;
        std::array<double, 2> xfer = cutTransfers(topology, cut);
        least = kInf;
        for (int one = 0; one < 2; ++one) {
          int link = one ? 0 : 1;
          double busy = stageWorkS * dn / M + (arScale[link][c] * stageParams +
                                               arFixed[link][c] + stageUpdate) /
                                                  M;
          least = std::min(least, busy);
          term[one][1] = std::max(busy, xfer[0]);
          term[one][0] = std::max(busy, xfer[1]);
        }
      }
      if (least > T)
        break; // Compute + sync + update grows with j.
      const std::vector<Cell> &rest = prev[j + 1];
      // The finite cells of the rest at offsets off + r, off in [cLo, cHi].
      auto it = std::lower_bound(
          rest.begin(), rest.end(), cLo + r,
          [](const Cell &cell, int64_t off) { return cell.off < off; });
      uint32_t code = static_cast<uint32_t>(j << 16 | c);
      for (; it != rest.end() && it->off <= cHi + r; ++it) {
        int64_t off = it->off - r;
        int64_t inNode = off % g;
        double t = term[inNode + r <= g][(off + r) % g != 0];
        double v = std::max(t, it->value);
        if (v <= T && v < scratch.value[off]) {
          scratch.value[off] = v;
          scratch.code[off] = code;
        }
      }
    }
  }
  for (int64_t off = lo; off <= hi; ++off)
    if (scratch.value[off] < kInf)
      row.push_back(
          {static_cast<int32_t>(off), scratch.code[off], scratch.value[off]});
}

void BoundedSolver::solve(Metric metric, double cap, int64_t maxStages,
                          int64_t fixedStages, double incumbent,
                          double totalForward, double totalBackward) {
  this->metric = metric;
  this->cap = cap;
  const int64_t L = numLayers;
  const double M = static_cast<double>(o.microBatches);
  best.assign(maxStages + 1, kInf);
  levels.assign(1, Level(L + 1));
  // k = 0: nothing left, every device used.
  levels[0][L].push_back({static_cast<int32_t>(devices), 0, 0.0});
  double Z = incumbent;
  // Slightly above Z / (M + slots) so that rounding never prunes a tie.
  auto thresholdFor = [&](int64_t stages) {
    return Z / (M + bubbleSlots(o, stages, totalForward, totalBackward)) *
           (1 + 1e-9);
  };
  bool parallel = L * devices >= (1 << 15);
  unsigned threads = parallel ? 2 : 1;
  std::vector<Scratch> scratch(threads);
  for (Scratch &s : scratch) {
    s.value.assign(devices + 1, kInf);
    s.code.assign(devices + 1, ~0u);
  }
  for (int64_t k = 1; k <= maxStages; ++k) {
    LevelInfo info{k, thresholdFor(fixedStages ? fixedStages : k),
                   fixedStages != 0 && k == maxStages};
    levels.emplace_back(L + 1);
    const Level &prev = levels[k - 1];
    Level &cur = levels[k];
    int64_t rows = info.last ? 1 : L - k + 1;
    auto work = [&](unsigned t) {
      for (int64_t i = t; i < rows; i += threads)
        solveRow(info, i, prev, cur[i], scratch[t]);
    };
    if (threads > 1) {
      std::thread helper(work, 1u);
      work(0);
      helper.join();
    } else {
      work(0);
    }
    // Values of older levels are no longer read; choices stay.
    bool any = false;
    for (const std::vector<Cell> &row : cur)
      any |= !row.empty();
    if (!cur[0].empty() && cur[0].front().off == 0) {
      best[k] = cur[0].front().value;
      if (!fixedStages || k == fixedStages)
        Z = std::min(
            Z, best[k] * (M + bubbleSlots(o, k, totalForward, totalBackward)));
    }
    if (!any)
      break; // Every later level is empty too.
  }
}

void BoundedSolver::reconstruct(
    int64_t stages, std::vector<std::pair<unsigned, unsigned>> &bounds,
    std::vector<int64_t> &replicas) const {
  int64_t i = 0, off = 0;
  for (int64_t k = stages; k >= 1; --k) {
    const std::vector<Cell> &row = levels[k][i];
    auto it = std::lower_bound(
        row.begin(), row.end(), off,
        [](const Cell &cell, int64_t o) { return cell.off < o; });
    uint32_t c = it->code;
    int64_t j = c >> 16;
    int64_t r = candidates[c & 0xffff];
    bounds.emplace_back(static_cast<unsigned>(i), static_cast<unsigned>(j));
    replicas.push_back(r);
    i = j + 1;
    off += r;
  }
}

/// `bytes` rounded up as an integer while int64_t holds it, else in
/// scientific notation (a profile can ask for absurd sizes).
static std::string formatByteCount(double bytes) {
  double rounded = std::ceil(bytes);
  if (rounded >= 0 && rounded < 0x1p63)
    return std::to_string(static_cast<int64_t>(rounded));
  std::ostringstream os;
  os.precision(4);
  os << bytes;
  return os.str();
}

static std::string formatBytes(double bytes) {
  std::ostringstream os;
  os.precision(4);
  if (bytes >= 1024.0 * 1024 * 1024)
    os << bytes / (1024.0 * 1024 * 1024) << " GiB";
  else if (bytes >= 1024.0 * 1024)
    os << bytes / (1024.0 * 1024) << " MiB";
  else if (bytes >= 1024.0)
    os << bytes / 1024.0 << " KiB";
  else
    os << formatByteCount(bytes) << " bytes";
  return os.str();
}

/// Equal layer counts over `stages` stages and the devices spread as evenly
/// as possible; false when a resulting factor is not a candidate.
static bool evenSplit(int64_t layers, int64_t devices, int64_t stages,
                      const std::vector<int64_t> &candidates,
                      std::vector<std::pair<unsigned, unsigned>> &bounds,
                      std::vector<int64_t> &replicas) {
  int64_t base = layers / stages, extra = layers % stages;
  int64_t rbase = devices / stages, rextra = devices % stages;
  unsigned first = 0;
  for (int64_t s = 0; s < stages; ++s) {
    unsigned count = static_cast<unsigned>(base + (s < extra ? 1 : 0));
    bounds.emplace_back(first, first + count - 1);
    first += count;
    replicas.push_back(rbase + (s < rextra ? 1 : 0));
  }
  for (int64_t r : replicas)
    if (!std::binary_search(candidates.begin(), candidates.end(), r))
      return false;
  return rbase > 0;
}

/// Checks the resolved options against the graph's `layers`; returns the
/// problem, or "" and the stage count the options fix (0: free).
static std::string checkOptions(const PartitionOptions &o, int64_t layers,
                                int64_t &fixedStages) {
  int64_t D = o.devices;
  std::ostringstream os;
  if (D < 1) {
    os << "devices must be at least 1, got " << D;
    return os.str();
  }
  if (o.microBatches < 1) {
    os << "micro-batches must be at least 1, got " << o.microBatches;
    return os.str();
  }
  if (o.stages < 0 || o.replicas < 0)
    return "stages and replicas must not be negative";
  if (o.straight && o.replicas > 1) {
    os << "a straight pipeline has one replica per stage, but replicas="
       << o.replicas << " was given";
    return os.str();
  }
  if (o.replicas > 0 && D % o.replicas != 0) {
    os << D << " devices are not divisible into stages of " << o.replicas
       << " replicas";
    return os.str();
  }
  fixedStages = o.stages;
  if (o.straight || o.replicas > 0) {
    int64_t implied = o.straight ? D : D / o.replicas;
    if (fixedStages != 0 && fixedStages != implied) {
      os << fixedStages << " stages";
      if (o.straight)
        os << " do not make a straight pipeline on " << D << " devices";
      else
        os << " of " << o.replicas << " replicas do not use " << D
           << " devices";
      return os.str();
    }
    fixedStages = implied;
  }
  if (fixedStages > layers) {
    os << fixedStages << " stages but only " << layers << " layers";
    return os.str();
  }
  if (fixedStages > D) {
    os << fixedStages << " stages but only " << D << " devices";
    return os.str();
  }
  return "";
}

/// The solver's metric for an objective.
static Metric getMetric(PartitionObjective objective) {
  switch (objective) {
  case PartitionObjective::Balance:
    return Metric::Balance;
  case PartitionObjective::Communication:
    return Metric::Communication;
  case PartitionObjective::Throughput:
    return Metric::Throughput;
  }
  return Metric::Throughput;
}

/// Records the solver's value per stage count in `result` and returns the
/// stage count with the best predicted step (0 when none fits).
static int64_t chooseStageCount(const LayerGraph &graph,
                                const std::vector<double> &values,
                                const PartitionOptions &o, Metric metric,
                                int64_t fixedStages, int64_t maxStages,
                                PartitionResult &result) {
  double totalForward = 0, totalBackward = 0;
  for (const PartitionLayer &layer : graph.layers) {
    totalForward += layer.forwardSeconds;
    totalBackward += layer.backwardSeconds;
  }
  result.objectiveByStages.assign(maxStages + 1, kInf);
  int64_t chosen = 0;
  double chosenScore = kInf;
  for (int64_t s = fixedStages ? fixedStages : 1; s <= maxStages; ++s) {
    double v = values[s];
    result.objectiveByStages[s] = v;
    if (v == kInf)
      continue;
    double score = metric == Metric::Communication
                       ? v
                       : v * (static_cast<double>(o.microBatches) +
                              bubbleSlots(o, s, totalForward, totalBackward));
    if (score < chosenScore) {
      chosenScore = score;
      chosen = s;
    }
  }
  return chosen;
}

/// Nothing fits: finds the smallest memory with which something would,
/// records it in `result` and returns the message. A cap prunes the search
/// (stages past it are skipped) without changing the optimum when the
/// optimum lies under it, so the cap grows from the device's memory until
/// something fits under it; the last search is exact. Without any cap
/// nothing can fit (no split uses the devices).
static std::string explainInfeasible(const LayerGraph &graph,
                                     const PartitionTopology &topology,
                                     const PartitionOptions &o,
                                     int64_t fixedStages, int64_t maxStages,
                                     PartitionResult &result) {
  auto smallestMemory = [&](double bound) {
    Solver memory(graph, topology, o, result.replicaCandidates);
    memory.solve(Metric::Memory, bound, maxStages, fixedStages != 0);
    double need = kInf;
    for (int64_t s = fixedStages ? fixedStages : 1; s <= maxStages; ++s)
      need = std::min(need, memory.value(s));
    return need;
  };
  double need = kInf;
  double total = 0;
  for (const PartitionLayer &layer : graph.layers)
    total += 2 * layer.paramBytes + layer.optimizerBytes +
             layer.stashBytes * static_cast<double>(o.microBatches);
  for (double bound = std::max(o.memoryBytes, 1.0) * 1.5;; bound *= 1.5) {
    // Also ends the search when the total is not a number.
    if (!(bound < total)) {
      need = smallestMemory(kInf);
      break;
    }
    need = smallestMemory(bound);
    if (need < kInf)
      break;
  }
  std::ostringstream os;
  if (need == kInf) {
    os << "no partition of " << graph.layers.size() << " layers into ";
    if (fixedStages)
      os << fixedStages;
    else
      os << "at most " << maxStages;
    os << " stages uses exactly " << o.devices << " devices";
    return os.str();
  }
  result.requiredMemoryBytes = need;
  os << "no partition fits in " << formatBytes(o.memoryBytes)
     << " per device; the smallest feasible memory per device is "
     << formatBytes(need) << " (" << formatByteCount(need) << " bytes)";
  return os.str();
}

/// Evaluates the baselines of a `chosen`-stage partition: the uniform
/// partition with as many stages and pure data parallelism, and the
/// speed-ups over the latter.
static void evaluateBaselines(const LayerGraph &graph,
                              const PartitionTopology &topology,
                              const PartitionOptions &o, int64_t chosen,
                              PartitionResult &result) {
  int64_t L = static_cast<int64_t>(graph.layers.size());
  int64_t D = o.devices;
  // Uniform partitioning with the same number of stages.
  {
    std::vector<std::pair<unsigned, unsigned>> ub;
    std::vector<int64_t> ur;
    evenSplit(L, D, chosen, result.replicaCandidates, ub, ur);
    result.uniform = evaluatePartition(graph, topology, o, ub, ur);
  }
  // Pure data parallelism: gradient accumulation keeps one micro-batch.
  {
    PartitionOptions dp = o;
    dp.schedule = PipelineSchedule::OneFOneB;
    result.dataParallel = evaluatePartition(
        graph, topology, dp, {{0u, static_cast<unsigned>(L - 1)}}, {D});
  }
  if (result.best.stepSeconds > 0) {
    result.speedup = result.dataParallel.stepSeconds / result.best.stepSeconds;
    if (result.uniform.stepSeconds > 0)
      result.uniformSpeedup =
          result.dataParallel.stepSeconds / result.uniform.stepSeconds;
  }
}

PartitionResult mlir::strata::evaluateGivenPartition(
    const LayerGraph &graph, const PartitionTopology &topology,
    const PartitionOptions &options, llvm::StringRef spec) {
  PartitionResult result;
  result.options = resolveOptions(topology, options);
  const PartitionOptions &o = result.options;
  if (std::string problem = graph.verify(); !problem.empty()) {
    result.error = problem;
    return result;
  }
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<int64_t> replicas;
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  int64_t next = 0, used = 0;
  int64_t L = static_cast<int64_t>(graph.layers.size());
  for (llvm::StringRef part : parts) {
    auto [range, count] = part.trim().split(':');
    auto [first, last] = range.split("..");
    int64_t a, b, r;
    if (first.getAsInteger(10, a) || last.getAsInteger(10, b) ||
        count.getAsInteger(10, r) || r < 1 || r > o.devices) {
      result.error = ("stage '" + part.trim() +
                      "' is not FIRST..LAST:REPLICAS with 1 <= REPLICAS <= " +
                      llvm::Twine(o.devices))
                         .str();
      return result;
    }
    if (a != next || b < a || b >= L) {
      result.error =
          ("stage '" + part.trim() + "' must start at layer " +
           llvm::Twine(next) + " and end by layer " + llvm::Twine(L - 1))
              .str();
      return result;
    }
    bounds.push_back({static_cast<unsigned>(a), static_cast<unsigned>(b)});
    replicas.push_back(r);
    next = b + 1;
    used += r;
  }
  if (next != L || used != o.devices) {
    result.error =
        (next != L ? "the stages cover layers 0.." + llvm::Twine(next - 1) +
                         " of 0.." + llvm::Twine(L - 1)
                   : "the replicas sum to " + llvm::Twine(used) +
                         " devices, not " + llvm::Twine(o.devices))
            .str();
    return result;
  }
  result.replicaCandidates = replicaCandidates(topology, o);
  result.best = evaluatePartition(graph, topology, o, bounds, replicas);
  evaluateBaselines(graph, topology, o, static_cast<int64_t>(bounds.size()),
                    result);
  return result;
}

/// The score (value times M + bubble slots) of the best equal split
/// (evenSplit) that fits, over stage counts spread across [1, maxStages]:
/// an achievable bound for BoundedSolver; +inf when none fits.
static double equalSplitIncumbent(const LayerGraph &graph,
                                  const PartitionTopology &topology,
                                  const PartitionOptions &o,
                                  const std::vector<int64_t> &candidates,
                                  int64_t fixedStages, int64_t maxStages,
                                  double totalForward, double totalBackward) {
  int64_t L = static_cast<int64_t>(graph.layers.size());
  double incumbent = kInf;
  // At most ~64 stage counts: evaluatePartition costs O(S * (L + edges)).
  int64_t step = std::max<int64_t>(1, maxStages / 64);
  for (int64_t s = fixedStages ? fixedStages : 1; s <= maxStages; s += step) {
    std::vector<std::pair<unsigned, unsigned>> bounds;
    std::vector<int64_t> replicas;
    if (!evenSplit(L, o.devices, s, candidates, bounds, replicas))
      continue;
    PartitionEvaluation e =
        evaluatePartition(graph, topology, o, bounds, replicas);
    if (!e.fitsMemory)
      continue;
    incumbent = std::min(incumbent,
                         e.objective *
                             (static_cast<double>(o.microBatches) +
                              bubbleSlots(o, s, totalForward, totalBackward)));
  }
  return incumbent;
}

/// partitionPipeline with the bounded search for the min-max objectives
/// (`reference`: the exhaustive DP for every objective).
static PartitionResult partition(const LayerGraph &graph,
                                 const PartitionTopology &topology,
                                 const PartitionOptions &options,
                                 bool reference) {
  PartitionResult result;
  PartitionOptions o = resolveOptions(topology, options);
  result.options = o;
  auto fail = [&](const std::string &message) {
    result.error = message;
    return result;
  };
  if (std::string problem = graph.verify(); !problem.empty())
    return fail(problem);
  int64_t L = static_cast<int64_t>(graph.layers.size());
  int64_t fixedStages = 0;
  if (std::string problem = checkOptions(o, L, fixedStages); !problem.empty())
    return fail(problem);

  result.replicaCandidates = replicaCandidates(topology, o);
  int64_t maxStages = fixedStages ? fixedStages : std::min(L, o.devices);
  Metric metric = getMetric(o.objective);
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<int64_t> replicas;
  int64_t chosen = 0;
  if (reference || metric == Metric::Communication) {
    Solver solver(graph, topology, o, result.replicaCandidates);
    solver.solve(metric, o.memoryBytes, maxStages, fixedStages != 0);
    chosen = chooseStageCount(graph, solver.values(), o, metric, fixedStages,
                              maxStages, result);
    if (chosen)
      solver.reconstruct(chosen, bounds, replicas);
  } else {
    double totalForward = 0, totalBackward = 0;
    for (const PartitionLayer &layer : graph.layers) {
      totalForward += layer.forwardSeconds;
      totalBackward += layer.backwardSeconds;
    }
    BoundedSolver solver(graph, topology, o, result.replicaCandidates);
    solver.solve(metric, o.memoryBytes, maxStages, fixedStages,
                 equalSplitIncumbent(graph, topology, o,
                                     result.replicaCandidates, fixedStages,
                                     maxStages, totalForward, totalBackward),
                 totalForward, totalBackward);
    chosen = chooseStageCount(graph, solver.values(), o, metric, fixedStages,
                              maxStages, result);
    if (chosen)
      solver.reconstruct(chosen, bounds, replicas);
  }
  if (chosen == 0)
    return fail(
        explainInfeasible(graph, topology, o, fixedStages, maxStages, result));

  result.best = evaluatePartition(graph, topology, o, bounds, replicas);
  evaluateBaselines(graph, topology, o, chosen, result);
  return result;
}

PartitionResult
mlir::strata::partitionPipeline(const LayerGraph &graph,
                                const PartitionTopology &topology,
                                const PartitionOptions &options) {
  return partition(graph, topology, options, /*reference=*/false);
}

PartitionResult mlir::strata::detail::partitionPipelineReference(
    const LayerGraph &graph, const PartitionTopology &topology,
    const PartitionOptions &options) {
  return partition(graph, topology, options, /*reference=*/true);
}
