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
#include "strata/Analysis/PartitionReplay.h"
#include "strata/Analysis/PipelineDownSets.h"
#include "strata/Target/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <sstream>
#include <thread>
#include <tuple>

using namespace mlir::strata;

static constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<LayerTensor> LayerGraph::tensors() const {
  std::vector<LayerTensor> out;
  std::map<int64_t, size_t> byId;
  for (const PartitionEdge &edge : edges) {
    size_t t = out.size();
    if (edge.tensor >= 0) {
      auto [it, inserted] = byId.try_emplace(edge.tensor, t);
      t = it->second;
      if (inserted)
        out.push_back({edge.from, edge.bytes, {}});
    } else {
      out.push_back({edge.from, edge.bytes, {}});
    }
    out[t].readers.push_back(edge.to);
  }
  for (LayerTensor &tensor : out) {
    llvm::sort(tensor.readers);
    tensor.readers.erase(llvm::unique(tensor.readers), tensor.readers.end());
  }
  return out;
}

/// Each tensor as the edge from its producer to its last reader, in the
/// order of its first edge (what the cuts of prefixes depend on; no
/// per-tensor reader lists, as evaluatePartition runs it many times).
static std::vector<PartitionEdge> tensorSpans(const LayerGraph &graph) {
  std::vector<PartitionEdge> spans;
  spans.reserve(graph.edges.size());
  std::map<int64_t, size_t> byId;
  for (const PartitionEdge &edge : graph.edges) {
    if (edge.tensor >= 0) {
      auto [it, inserted] = byId.try_emplace(edge.tensor, spans.size());
      if (!inserted) {
        spans[it->second].to = std::max(spans[it->second].to, edge.to);
        continue;
      }
    }
    spans.push_back(edge);
  }
  return spans;
}

std::vector<double> LayerGraph::cutBytes() const {
  size_t n = layers.size();
  std::vector<double> cuts(n > 0 ? n - 1 : 0, 0.0);
  if (cuts.empty())
    return cuts;
  // A difference array: a tensor from a last read at b adds its bytes to
  // cuts a..b-1.
  std::vector<double> delta(n, 0.0);
  for (const PartitionEdge &tensor : tensorSpans(*this)) {
    delta[tensor.from] += tensor.bytes;
    delta[tensor.to] -= tensor.bytes;
  }
  double running = 0;
  for (size_t j = 0; j + 1 < n; ++j) {
    running += delta[j];
    cuts[j] = std::max(0.0, running);
  }
  return cuts;
}

bool LayerGraph::isChain() const {
  std::vector<bool> linked(layers.size(), false);
  for (const PartitionEdge &edge : edges)
    if (edge.to == edge.from + 1)
      linked[edge.from] = true;
  for (size_t p = 0; p + 1 < layers.size(); ++p)
    if (!linked[p])
      return false;
  return true;
}

LayerGraph LayerGraph::reordered(const std::vector<unsigned> &order) const {
  LayerGraph out;
  std::vector<unsigned> position(layers.size());
  for (unsigned p = 0; p < order.size(); ++p) {
    position[order[p]] = p;
    out.layers.push_back(layers[order[p]]);
  }
  out.edges = edges;
  for (PartitionEdge &edge : out.edges) {
    edge.from = position[edge.from];
    edge.to = position[edge.to];
  }
  return out;
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
  // The edges of one tensor agree on its producer and size.
  std::map<int64_t, const PartitionEdge *> first;
  for (const PartitionEdge &edge : edges) {
    if (edge.tensor < 0)
      continue;
    auto [it, inserted] = first.try_emplace(edge.tensor, &edge);
    if (!inserted &&
        (it->second->from != edge.from || it->second->bytes != edge.bytes)) {
      std::ostringstream os;
      os << "the edges of tensor " << edge.tensor
         << " disagree on its producer or size";
      return os.str();
    }
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
  topo.allReduceFactor = t.allReduceVolumeFactor;
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
  return pipeline::getScheduleName(schedule);
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
        PipelineSchedule::Interleaved, PipelineSchedule::ZeroBubbleH1,
        PipelineSchedule::PipeDream, PipelineSchedule::TwoBW})
    if (name == stringifySchedule(s)) {
      schedule = s;
      return true;
    }
  return false;
}

static const char *stringifyTransfers(TransferModel transfers) {
  switch (transfers) {
  case TransferModel::PerCut:
    return "per-cut";
  case TransferModel::PerReplica:
    return "per-replica";
  case TransferModel::None:
    return "none";
  case TransferModel::PipeDream:
    return "pipedream";
  }
  return "per-cut";
}

static bool parseTransfers(llvm::StringRef name, TransferModel &transfers) {
  for (TransferModel t : {TransferModel::PerCut, TransferModel::PerReplica,
                          TransferModel::PipeDream, TransferModel::None})
    if (name == stringifyTransfers(t)) {
      transfers = t;
      return true;
    }
  return false;
}

bool mlir::strata::parseCostTerms(llvm::StringRef spec, CostTerms &terms,
                                  std::string &error) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.trim().split(parts, ',', -1, /*KeepEmpty=*/false);
  if (parts.empty()) {
    error = "expected 'strata', 'pipedream' or key=value terms";
    return false;
  }
  // A preset may come first; the key=value terms after it override it.
  llvm::StringRef preset = parts.front().trim();
  if (preset == "strata" || preset == "pipedream") {
    terms = CostTerms();
    if (preset == "pipedream") {
      terms.allReduceFactor = 4.0;
      terms.evenShares = true;
      terms.transfers = TransferModel::None;
      terms.allReplicaCounts = true;
    }
    parts.erase(parts.begin());
  }
  for (llvm::StringRef part : parts) {
    auto [key, value] = part.trim().split('=');
    key = key.trim();
    value = value.trim();
    if (key == "allreduce") {
      double f;
      if (value.getAsDouble(f) || !(f > 0 && f <= 16)) {
        error =
            ("allreduce='" + value + "': expected a number in (0, 16]").str();
        return false;
      }
      terms.allReduceFactor = f;
    } else if (key == "shares" && (value == "whole" || value == "even")) {
      terms.evenShares = value == "even";
    } else if (key == "transfers" && parseTransfers(value, terms.transfers)) {
    } else if (key == "replicas" && (value == "nodes" || value == "all")) {
      terms.allReplicaCounts = value == "all";
    } else {
      error = ("unknown cost term '" + part.trim() +
               "' (allreduce=F, shares=whole|even, "
               "transfers=per-cut|per-replica|pipedream|none, "
               "replicas=nodes|all)")
                  .str();
      return false;
    }
  }
  return true;
}

std::string mlir::strata::stringifyCostTerms(const CostTerms &terms) {
  std::ostringstream os;
  os << "allreduce=";
  if (terms.allReduceFactor == 0)
    os << "target";
  else
    os << terms.allReduceFactor;
  os << ",shares=" << (terms.evenShares ? "even" : "whole")
     << ",transfers=" << stringifyTransfers(terms.transfers)
     << ",replicas=" << (terms.allReplicaCounts ? "all" : "nodes");
  return os.str();
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
  if (resolved.terms.allReduceFactor == 0)
    resolved.terms.allReduceFactor = topology.allReduceFactor;
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
  std::vector<int64_t> candidates;
  if (resolved.terms.allReplicaCounts) {
    for (int64_t r = 1; r <= devices; ++r)
      candidates.push_back(r);
    return candidates;
  }
  int64_t g = std::max<int64_t>(topology.devicesPerNode, 1);
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
  case PipelineSchedule::PipeDream:
  case PipelineSchedule::TwoBW:
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
/// `stash` each, or with recompute only its `input` each and `stash` once;
/// plus the weight versions the asynchronous schedules stash (`params`
/// bytes each beyond the first).
static double stageMemory(const PartitionOptions &o, double resident,
                          double stash, double input, int64_t inFlight,
                          double params) {
  double k = static_cast<double>(inFlight);
  double memory =
      o.recompute ? resident + input * k + stash : resident + stash * k;
  if (o.schedule == PipelineSchedule::PipeDream && inFlight > 1)
    memory += params * (k - 1.0);
  else if (o.schedule == PipelineSchedule::TwoBW)
    memory += params;
  return memory;
}

/// Micro-batches one of `r` replicas runs per step: whole ones, or M / r
/// with even shares.
static double replicaShare(const PartitionOptions &o, int64_t r) {
  return o.terms.evenShares
             ? static_cast<double>(o.microBatches) / static_cast<double>(r)
             : static_cast<double>(ceilDiv(o.microBatches, r));
}

/// All-reduces a replica runs per step: one per micro-batch it runs
/// (`pipedream`), else one.
static double syncsPerStep(const PartitionOptions &o, double share) {
  return o.schedule == PipelineSchedule::PipeDream ? share : 1.0;
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
  case PipelineSchedule::PipeDream:
  case PipelineSchedule::TwoBW:
    return 0.0;
  }
  return s;
}

/// An all-reduce of `bytes` over `r` replicas with volume factor `factor`
/// (2: a ring).
static double allReduce(double factor, double bytes, int64_t r,
                        double bandwidth, double latency) {
  if (r <= 1)
    return 0.0;
  double p = static_cast<double>(r);
  return factor * (p - 1.0) / p * bytes / bandwidth + 2.0 * (p - 1.0) * latency;
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

/// The transfer term of a stage on `r` replicas whose outgoing cut takes
/// `out` and incoming cut `in` seconds; `first`: the first stage
/// (evaluatePartition spells it out).
static double stageTransfer(TransferModel transfers, int64_t r, double out,
                            double in, bool first) {
  switch (transfers) {
  case TransferModel::PerCut:
    return out;
  case TransferModel::PerReplica:
    return std::max(in, out) / static_cast<double>(r);
  case TransferModel::PipeDream:
    // PipeDream's recurrence prices the first stage alone (its base case),
    // without the outgoing cut: that is charged only as the next stage's
    // input, over the next stage's replicas.
    return first ? 0.0 : std::max(in, out) / static_cast<double>(r);
  case TransferModel::None:
    return 0.0;
  }
  return out;
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
  std::vector<PartitionEdge> tensors = tensorSpans(graph);
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
    stage.forwardSeconds = forward;
    stage.backwardSeconds = work - forward;
    stage.stepUpdateSeconds = update;
    stage.paramBytes = params;
    int64_t n = ceilDiv(o.microBatches, r);
    double share = replicaShare(o, r);
    double syncs = syncsPerStep(o, share);
    double factor = o.terms.allReduceFactor;
    stage.computeSeconds = work * share / M;
    bool oneNode = device / g == (device + r - 1) / g;
    stage.syncSeconds =
        syncs *
        allReduce(factor, params, r,
                  oneNode ? topology.intraBandwidth : topology.interBandwidth,
                  oneNode ? topology.intraLatency : topology.interLatency) /
        M;
    // pipedream updates after every micro-batch (as it syncs), the others
    // once per step.
    stage.updateSeconds = syncs * update / M;
    stage.commBytes = factor * static_cast<double>(r - 1) * params * syncs;
    // Tensors crossing the cut before the stage and the one after it.
    double input = 0;
    for (const PartitionEdge &tensor : tensors)
      if (tensor.from < first && tensor.to >= first)
        input += tensor.bytes;
    if (s + 1 < stages) {
      double crossing = 0;
      for (const PartitionEdge &tensor : tensors)
        if (tensor.from <= last && tensor.to > last)
          crossing += tensor.bytes;
      stage.cutBytes = crossing;
      int64_t next = device + r;
      bool sameNode = (next - 1) / g == next / g;
      stage.transferSeconds =
          transfer(crossing,
                   sameNode ? topology.intraBandwidth : topology.interBandwidth,
                   sameNode ? topology.intraLatency : topology.interLatency);
      stage.commBytes += 2.0 * crossing * M;
    }
    if (o.terms.transfers != TransferModel::PerCut) {
      // Per replica: both cuts of the stage, each divided over its
      // replicas (PipeDream: except the first stage's outgoing one).
      bool prevSameNode = device % g != 0;
      double in = s > 0 ? transfer(input,
                                   prevSameNode ? topology.intraBandwidth
                                                : topology.interBandwidth,
                                   prevSameNode ? topology.intraLatency
                                                : topology.interLatency)
                        : 0.0;
      stage.transferSeconds = stageTransfer(o.terms.transfers, r,
                                            stage.transferSeconds, in, s == 0);
    }
    stage.seconds =
        std::max(stage.computeSeconds + stage.syncSeconds + stage.updateSeconds,
                 stage.transferSeconds);
    stage.inFlight = inFlight(o, stages - s, n);
    stage.memoryBytes = stageMemory(o, 2.0 * params + optimizer, stash, input,
                                    stage.inFlight, params);
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

/// Sums over the cut states and per-candidate constants shared by the
/// exhaustive DP (Solver), the bounded search (BoundedSolver) and the
/// threshold search (ThresholdSolver). A state is the set of layers before a
/// cut: without a lattice state i is the first i layers (the only kind the
/// bounded and threshold searches take), with one the lattice's down-sets. A
/// stage goes from a state to one containing it and holds the difference.
struct CostTables {
  CostTables(const LayerGraph &graph, const PartitionTopology &topology,
             const PartitionOptions &o, std::vector<int64_t> candidates,
             const DownSetLattice *lattice = nullptr);

  /// Layers in state `s`.
  int64_t layersIn(int64_t s) const {
    return lattice ? static_cast<int64_t>(lattice->size[s]) : s;
  }

  const PartitionOptions &o;
  const PartitionTopology &topology;
  std::vector<int64_t> candidates;
  const DownSetLattice *lattice;
  int64_t numLayers = 0, numStates = 0, devices = 0, g = 1;
  /// Per state, sums over its layers.
  std::vector<double> work, update, params, resident, stash;
  /// Per state, the bytes of the tensors leaving it (0: empty or full).
  std::vector<double> out;
  /// Without a lattice: bytes crossing the cut after position j.
  std::vector<double> cuts;
  /// Per candidate: whole micro-batches per replica (the in-flight bound),
  /// the share each replica runs (replicaShare), and the all-reduce cost
  /// per step a * bytes + b on the intra-node (0) and inter-node (1) link.
  std::vector<int64_t> perReplica;
  std::vector<double> share;
  std::vector<double> arScale[2], arFixed[2];
  /// Per candidate replica count: the stage's optimizer updates per step
  /// (one per micro-batch a replica runs for pipedream, else one).
  std::vector<double> updatesPerStep;
};

/// One run of the DP for a metric under a memory cap.
class Solver : CostTables {
public:
  using CostTables::CostTables;

  /// Runs the DP for stage counts 1..maxStages; value(S) is the optimum with
  /// exactly S stages (+inf if none). `fixed`: the replicas of every stage
  /// in order (maxStages of them, with onlyLast).
  void solve(Metric metric, double cap, int64_t maxStages, bool onlyLast,
             const std::vector<int64_t> *fixed = nullptr);
  const std::vector<double> &values() const { return best; }
  double value(int64_t stages) const { return best[stages]; }
  /// The optimal partition with `stages` stages (value(stages) finite): the
  /// state after each stage (the last one every layer) and its replicas.
  void reconstruct(int64_t stages, std::vector<int64_t> &states,
                   std::vector<int64_t> &replicas) const;

private:
  /// The states a stage from state i may end at with k stages left (the
  /// k - 1 after it need a layer each), ascending: at(0 .. count - 1).
  struct Ends {
    const uint32_t *list;
    int64_t first, count;
    int64_t at(int64_t t) const { return list ? list[t] : first + t; }
  };
  Ends ends(int64_t i, int64_t k) const;
  size_t index(int64_t i, int64_t off) const {
    return static_cast<size_t>(i) * (devices + 1) + off;
  }

  std::vector<double> best;
  /// choice[k][i * (D + 1) + o] = (j << 16) | candidate index, or ~0u (j:
  /// the state after the stage).
  std::vector<std::vector<uint32_t>> choice;
};
} // namespace

CostTables::CostTables(const LayerGraph &graph,
                       const PartitionTopology &topology,
                       const PartitionOptions &o,
                       std::vector<int64_t> candidates,
                       const DownSetLattice *lattice)
    : o(o), topology(topology), candidates(std::move(candidates)),
      lattice(lattice) {
  numLayers = static_cast<int64_t>(graph.layers.size());
  numStates =
      lattice ? static_cast<int64_t>(lattice->numStates()) : numLayers + 1;
  devices = o.devices;
  g = std::max<int64_t>(topology.devicesPerNode, 1);
  for (std::vector<double> *sums : {&work, &update, &params, &resident, &stash})
    sums->assign(numStates, 0.0);
  // State s is state `from` plus the layer at `l` (prefixes: s - 1 plus
  // s - 1), so every sum is built by the same additions in both cases.
  for (int64_t s = 1; s < numStates; ++s) {
    int64_t from = lattice ? lattice->parent[s] : s - 1;
    const PartitionLayer &layer =
        graph.layers[lattice ? lattice->added[s] : s - 1];
    work[s] =
        work[from] + stageWork(o, layer.forwardSeconds, layer.backwardSeconds);
    update[s] = update[from] + layer.updateSeconds;
    params[s] = params[from] + layer.paramBytes;
    resident[s] =
        resident[from] + 2.0 * layer.paramBytes + layer.optimizerBytes;
    stash[s] = stash[from] + layer.stashBytes;
  }
  if (lattice) {
    out = lattice->outBytes;
  } else {
    cuts = graph.cutBytes();
    out.assign(numStates, 0.0);
    for (int64_t s = 1; s < numLayers; ++s)
      out[s] = cuts[s - 1];
  }
  size_t numCandidates = this->candidates.size();
  perReplica.resize(numCandidates);
  share.resize(numCandidates);
  updatesPerStep.resize(numCandidates);
  for (int link = 0; link < 2; ++link) {
    arScale[link].resize(numCandidates);
    arFixed[link].resize(numCandidates);
  }
  for (size_t c = 0; c < numCandidates; ++c) {
    int64_t r = this->candidates[c];
    perReplica[c] = ceilDiv(o.microBatches, r);
    share[c] = replicaShare(o, r);
    double p = static_cast<double>(r);
    double f = o.terms.allReduceFactor;
    double syncs = syncsPerStep(o, share[c]);
    updatesPerStep[c] = syncs;
    arScale[0][c] =
        r > 1 ? syncs * (f * (p - 1.0) / p / topology.intraBandwidth) : 0;
    arFixed[0][c] =
        r > 1 ? syncs * (2.0 * (p - 1.0) * topology.intraLatency) : 0;
    arScale[1][c] =
        r > 1 ? syncs * (f * (p - 1.0) / p / topology.interBandwidth) : 0;
    arFixed[1][c] =
        r > 1 ? syncs * (2.0 * (p - 1.0) * topology.interLatency) : 0;
  }
}

Solver::Ends Solver::ends(int64_t i, int64_t k) const {
  const int64_t L = numLayers;
  if (!lattice) {
    if (k == 1)
      return {nullptr, L, i < L ? 1 : 0};
    return {nullptr, i + 1, std::max<int64_t>(0, L - k + 1 - i)};
  }
  const uint32_t *begin = lattice->supersets.data() + lattice->superBegin[i];
  const uint32_t *end = lattice->supersets.data() + lattice->superBegin[i + 1];
  if (k == 1) // The full state, the last superset.
    return {end - (begin != end ? 1 : 0), 0, begin != end ? 1 : 0};
  // Supersets are in order of size; k - 1 layers must remain.
  const uint32_t *stop = std::partition_point(
      begin, end, [&](uint32_t s) { return lattice->size[s] + (k - 1) <= L; });
  return {begin, 0, stop - begin};
}

void Solver::solve(Metric metric, double cap, int64_t maxStages, bool onlyLast,
                   const std::vector<int64_t> *fixed) {
  const double M = static_cast<double>(o.microBatches);
  const int64_t D = devices, L = numLayers, full = numStates - 1;
  const int64_t rmin = candidates.front();
  const size_t cells = static_cast<size_t>(numStates) * (D + 1);
  std::vector<double> prev(cells, kInf), cur(cells, kInf);
  // k = 0: nothing left, every device used.
  prev[index(full, D)] = 0.0;
  // The finite offsets of each row of the previous table lie in
  // [prevLo[i], prevHi[i]] (empty when prevLo > prevHi).
  std::vector<int64_t> prevLo(numStates, D + 1), prevHi(numStates, -1);
  std::vector<int64_t> curLo(numStates), curHi(numStates);
  prevLo[full] = prevHi[full] = D;
  // With fixed replicas, the device each stage starts at.
  std::vector<int64_t> fixedOffset;
  if (fixed) {
    int64_t off = 0;
    for (int64_t r : *fixed) {
      fixedOffset.push_back(off);
      off += r;
    }
  }
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
    // States are in order of size: k stages need k more layers.
    for (int64_t i = 0; i < numStates && layersIn(i) + k <= L; ++i) {
      if (last && i > 0)
        break;
      Ends e = ends(i, k);
      for (int64_t t = 0; t < e.count; ++t) {
        int64_t j = e.at(t); // The state after the stage.
        double residentBytes = resident[j] - resident[i];
        if (residentBytes > cap) {
          if (!lattice)
            break; // Grows with j along prefixes.
          continue;
        }
        if (prevLo[j] > prevHi[j])
          continue;
        double stageWork = work[j] - work[i];
        double stageUpdate = update[j] - update[i];
        double stageParams = params[j] - params[i];
        double stageStash = stash[j] - stash[i];
        bool hasNext = j != full;
        double cut = out[j];
        std::array<double, 2> xfer = cutTransfers(topology, cut);
        std::array<double, 2> xferIn = cutTransfers(topology, out[i]);
        const double *restRow = &prev[index(j, 0)];
        for (int64_t c = 0; c < numCandidates; ++c) {
          int64_t r = candidates[c];
          if (fixed && r != (*fixed)[maxStages - k])
            continue;
          // Offsets this stage may start at.
          int64_t hi = D - r - (k - 1) * rmin;
          if (hi < 0)
            break; // Larger candidates leave even fewer offsets.
          int64_t lo = k == 1 ? hi : 0;
          if (fixed) {
            int64_t at = fixedOffset[maxStages - k];
            if (at < lo || at > hi)
              continue;
            lo = hi = at;
          }
          if (last) {
            if (lo > 0)
              continue;
            hi = 0;
          }
          // Only offsets whose rest can be finite.
          lo = std::max(lo, prevLo[j] - r);
          hi = std::min(hi, prevHi[j] - r);
          if (hi < lo)
            continue;
          int64_t n = perReplica[c];
          double memory = stageMemory(o, residentBytes, stageStash, out[i],
                                      inFlight(o, k, n), stageParams);
          if (memory > cap)
            continue;
          // term[oneNode][sameNode][prevSameNode]: the stage's value by where
          // it lies (whether it fits one node, whether the device after it
          // and the one before it share its first/last device's node).
          double term[2][2][2];
          double *flat = &term[0][0][0];
          switch (metric) {
          case Metric::Memory:
            std::fill(flat, flat + 8, memory);
            break;
          case Metric::Balance:
            std::fill(flat, flat + 8, stageWork * share[c] / M);
            break;
          case Metric::Communication:
            std::fill(flat, flat + 8,
                      o.terms.allReduceFactor * static_cast<double>(r - 1) *
                              stageParams * syncsPerStep(o, share[c]) +
                          (hasNext ? 2.0 * cut * M : 0.0));
            break;
          case Metric::Throughput:
            for (int one = 0; one < 2; ++one) {
              int link = one ? 0 : 1;
              double busy = stageWork * share[c] / M +
                            (arScale[link][c] * stageParams + arFixed[link][c] +
                             updatesPerStep[c] * stageUpdate) /
                                M;
              for (int same = 0; same < 2; ++same)
                for (int prevSame = 0; prevSame < 2; ++prevSame)
                  term[one][same][prevSame] = std::max(
                      busy,
                      stageTransfer(o.terms.transfers, r, xfer[same ? 0 : 1],
                                    xferIn[prevSame ? 0 : 1], i == 0));
            }
            break;
          }
          uint32_t code = static_cast<uint32_t>(j << 16 | c);
          int64_t inNode = lo % g; // position of `off` within its node
          int64_t nextInNode = (lo + r) % g;
          for (int64_t off = lo; off <= hi; ++off) {
            double rest = restRow[off + r];
            if (rest != kInf) {
              double t = term[inNode + r <= g][nextInNode != 0][inNode != 0];
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

void Solver::reconstruct(int64_t stages, std::vector<int64_t> &states,
                         std::vector<int64_t> &replicas) const {
  int64_t i = 0, off = 0;
  for (int64_t k = stages; k >= 1; --k) {
    uint32_t c = choice[k][index(i, off)];
    int64_t j = c >> 16;
    int64_t r = candidates[c & 0xffff];
    states.push_back(j);
    replicas.push_back(r);
    i = j;
    off += r;
  }
}

/// The stage bounds of a partition whose stages end at `states` (Solver's
/// reconstruct), and with a lattice the layer order they refer to (empty
/// when it is the graph's own).
static void statesToStages(const DownSetLattice *lattice,
                           const std::vector<int64_t> &states,
                           std::vector<std::pair<unsigned, unsigned>> &bounds,
                           std::vector<unsigned> &order) {
  int64_t from = 0;
  for (int64_t to : states) {
    unsigned first = lattice ? static_cast<unsigned>(order.size())
                             : static_cast<unsigned>(from);
    if (lattice)
      for (unsigned p : lattice->difference(static_cast<uint32_t>(from),
                                            static_cast<uint32_t>(to)))
        order.push_back(p);
    unsigned end = lattice ? static_cast<unsigned>(order.size())
                           : static_cast<unsigned>(to);
    bounds.emplace_back(first, end - 1);
    from = to;
  }
  bool identity = true;
  for (unsigned p = 0; p < order.size(); ++p)
    identity &= order[p] == p;
  if (identity)
    order.clear();
}

//===----------------------------------------------------------------------===//
// The bounded search: the same recurrence for the min-max metrics, pruned
//===----------------------------------------------------------------------===//
//
// Used when `stages=` fixes the stage count (and the replicas are free): the
// threshold search below minimises the count, which cannot ask for one.
//
// f(k, i, o) is the recurrence of Solver with max; what is asked for is
// f(S, 0, 0) for the fixed S. Given an incumbent Z (the score of an S-stage
// partition known to exist), a suffix state can only be part of an S-stage
// partition scoring at most Z if f(k, i, o) <= T := Z / (M + slots(S)). So
// the search keeps only the states and transitions with values <= T (the
// states of an optimal partition all qualify, since
// a max is at least each of its parts), and f of every state it keeps is
// exactly the DP's (max and + are exact; the same formulas in the same
// order). The bounds are all of that kind:
//   * value:  a stage term or a rest above T is skipped;
//   * layers: for fixed (i, r, k) the stage's compute + sync + update and
//     its memory do not decrease with j (prefix sums of non-negative
//     values), so the j loop stops at the first j where either passes its
//     bound;
//   * devices: a stage of work W on r replicas has compute >= W / r (each
//     replica runs ceil(M / r) >= M / r micro-batches), so within T_k it
//     needs r >= W / T devices: a state (i, o) is reachable only with
//     o >= work[0, i) / T and D - o >= work[i, L) / T;
//   * rows:   each row keeps only its finite cells (offset, choice, value),
//     and a transition visits only the finite cells of the row it continues
//     with.
// Z is the equal split's (evenSplit) when it fits, else +inf. Rows of one
// level are independent and are split over two threads.

namespace {
class BoundedSolver : CostTables {
public:
  using CostTables::CostTables;

  /// The value of `fixedStages` (= maxStages) stages in values(), exact
  /// where its score can reach `incumbent`, else +inf.
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
                                  input, inflight, params[j + 1] - params[i]);
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
          double busy = stageWorkS * dn / M +
                        (arScale[link][c] * stageParams + arFixed[link][c] +
                         updatesPerStep[c] * stageUpdate) /
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
    LevelInfo info{k, thresholdFor(fixedStages), k == maxStages};
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
    if (!cur[0].empty() && cur[0].front().off == 0)
      best[k] = cur[0].front().value;
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

//===----------------------------------------------------------------------===//
// The threshold search: the min-max metrics with a free stage count
//===----------------------------------------------------------------------===//
//
// Every stage term (Solver's term[oneNode][sameNode]) is independent of the
// stage count; only the memory (through the stages k from a stage to the
// end) and the score's bubble depend on it. For a threshold T let Smin(T) be
// the fewest stages of a partition whose every term is <= T (memory fitting,
// every device used); it does not increase with T. The score of an S-stage
// optimum v(S) is v(S) * (M + slots(S)) with slots increasing in S, so
//   min_S v(S) (M + slots(S)) = min_T T (M + slots(Smin(T))),
// and the minimum sits where Smin steps down: at T = v(S) for the S = Smin(T)
// there (then v(S) is also the exhaustive DP's value for S, and no smaller
// stage count ties it). Both directions: T = v(S) gives Smin(T) <= S at a
// score no larger; and a T gives a partition of Smin(T) stages whose value,
// at most T, scores no more than T (M + slots(Smin(T))).
//
// Smin(T) is a DP over (first layer i, device offset o) that minimises the
// stage count: g(i, o) = min 1 + g(j + 1, o + r) over stages [i, j] on r
// replicas with term <= T and memory <= cap at k = 1 + g(j + 1, o + r). The
// memory grows with k (in-flight micro-batches), so the fewest stages after
// a stage are also the best for its memory: the minimum is exact. For fixed
// i, g(., o) is nearly constant in o (any device count a stage can absorb
// gives the same count), so a row is kept per residue class o mod g (the
// node size: intra- vs inter-node all-reduce and transfer depend on it) as
// runs of equal counts. Replica candidates above g come in groups r = base +
// m g with the same micro-batches per replica n: in a group the memory is
// the same and the term grows with m (compute fixed, the ring's terms grow,
// and rounding is monotone), so the feasible ones are a prefix m <= m*, and
// a run [lo, hi] of row j + 1 becomes the run [lo - m* - carry, hi - carry]
// of row i; the row is the pointwise minimum of those (lowerEnvelope). A
// probe may also drop suffixes needing more than maxCount stages: counts
// only fall along a path, so the counts <= maxCount stay exact.
//
// A probe at T returns Smin(T) (0 past maxCount or when nothing fits), a
// witness partition with that many stages (greedy: each stage the smallest
// term reaching a suffix with one stage fewer) whose value w is <= T, and
// `next`, the smallest term > T among every stage the DP priced, or a lower
// bound for the terms it skipped (the j loop stops where the compute + sync
// + update of every candidate passes T; they grow with j). Every allowed
// transition stays allowed up to `next`, so Smin is constant on [w, next):
// Smin(w) <= Smin(T) through the witness, and Smin does not increase.
//
// The outer search keeps the unknown intervals [lo, hi) of T between such
// pieces, with Smin >= S inside (S: the count of the piece on the right) and
// so a score >= lo (M + slots(S)). It starts from the best equal split's
// value (an achievable score) and the bound max(dearest layer alone, total
// work / devices) (each stage's compute is at least its work / replicas,
// and the largest of those ratios is at least their mediant), probes the
// interval with the lowest bound in its middle (in the bits of the double,
// below bestScore / (M + slots(S)), so it ends), and drops intervals whose
// bound cannot beat the best witness (nor tie it with fewer stages). With
// maxCount = the largest S with lo (M + slots(S)) <= best, a probe that
// finds nothing rules out [lo, next) as well. When no interval is left, the
// best witness's value is v(S*) for the smallest optimal S*: exactly what
// chooseStageCount picks from the exhaustive DP (v(S*) is a step of Smin, so
// the value is the DP's own max of the same terms, bit for bit). Ties
// between partitions of that value go to the witness of the first probe
// that reached it (the search's order is deterministic).

namespace {
/// Offsets rho + q g, q in [lo, hi], of one residue class rho whose suffix
/// needs `count` stages at least.
struct ThresholdRun {
  int32_t lo, hi, count;
};

/// Scratch of lowerEnvelope, reused across rows.
struct EnvelopeScratch {
  std::vector<ThresholdRun> sorted;
  std::vector<int32_t> histogram, nextFree, paint;
};

class ThresholdSolver : CostTables {
public:
  ThresholdSolver(const LayerGraph &graph, const PartitionTopology &topology,
                  const PartitionOptions &o, std::vector<int64_t> candidates,
                  Metric metric, double cap);

  /// The optimal stage count (0: nothing fits) and its value; the partition
  /// is in `bounds` / `replicas`.
  /// `hintValue` / `hintScore`: a partition's value and score (+inf: none)
  /// to start from.
  int64_t solve(double totalForward, double totalBackward, double hintValue,
                double hintScore, double &value,
                std::vector<std::pair<unsigned, unsigned>> &bounds,
                std::vector<int64_t> &replicas);

private:
  using Run = ThresholdRun;
  /// Candidates [first, first + size): r = candidates[first] + m g, one n.
  struct Group {
    int64_t first, size, n;
  };
  struct Probe {
    int64_t stages = 0;
    double witness = kInf, next = kInf;
    std::vector<std::pair<unsigned, unsigned>> bounds;
    std::vector<int64_t> replicas;
  };
  /// What the stages [i, j] of one group may use at offsets of class rho.
  struct Reach {
    int64_t mMax;   // feasible m in [0, mMax]; -1: none
    double blocked; // the smallest term > T of the group (+inf: none)
    int64_t toClass, carry;
  };

  Probe probe(double T, int64_t maxCount);
  void solveRow(int64_t i, double T, int64_t maxCount, double &next);
  bool reconstruct(double T, Probe &p) const;
  /// Per group and class for the stage [i, j]; false when every term of
  /// this j and all later ones exceeds T (`least` then bounds them).
  bool reach(int64_t i, int64_t j, double T, std::vector<Reach> &out,
             double &least) const;
  double busy(int64_t i, int64_t j, int64_t c, int link) const;
  bool fits(int64_t i, int64_t j, int64_t n, int64_t k) const;
  /// The largest k <= limit with fits(i, j, n, k) (0: none); the memory
  /// grows with k.
  int64_t maxStagesFitting(int64_t i, int64_t j, int64_t n,
                           int64_t limit) const;
  /// Every partition's value is at least this (the dearest layer alone).
  double lowerBound() const;
  std::vector<Run> &row(int64_t i, int64_t rho) { return rows[i * g + rho]; }
  const std::vector<Run> &row(int64_t i, int64_t rho) const {
    return rows[i * g + rho];
  }

  Metric metric;
  double cap;
  std::vector<Group> groups;
  std::vector<std::vector<Run>> rows;
  /// Whether row i has any run.
  std::vector<char> rowUsed;
  /// Per class: the runs row i may take, before the pointwise minimum.
  std::vector<std::vector<Run>> pending;
  EnvelopeScratch envelope;
};
} // namespace

ThresholdSolver::ThresholdSolver(const LayerGraph &graph,
                                 const PartitionTopology &topology,
                                 const PartitionOptions &o,
                                 std::vector<int64_t> candidates, Metric metric,
                                 double cap)
    : CostTables(graph, topology, o, std::move(candidates)), metric(metric),
      cap(cap) {
  // Candidates up to g are their own group: whether they lie in one node
  // depends on the offset. Above g, consecutive multiples of g with the
  // same n share one.
  for (int64_t c = 0; c < static_cast<int64_t>(this->candidates.size()); ++c) {
    int64_t r = this->candidates[c];
    if (!groups.empty() && r > g) {
      Group &last = groups.back();
      int64_t prev = this->candidates[last.first + last.size - 1];
      if (prev > g && r == prev + g && perReplica[c] == last.n) {
        ++last.size;
        continue;
      }
    }
    groups.push_back({c, 1, perReplica[c]});
  }
  rows.resize(static_cast<size_t>(numLayers + 1) * g);
  pending.resize(g);
}

double ThresholdSolver::busy(int64_t i, int64_t j, int64_t c, int link) const {
  // The expressions of Solver::solve, so that the values are identical.
  const double M = static_cast<double>(o.microBatches);
  double stageWork = work[j + 1] - work[i];
  double n = static_cast<double>(perReplica[c]);
  if (metric == Metric::Balance)
    return stageWork * n / M;
  double stageUpdate = update[j + 1] - update[i];
  double stageParams = params[j + 1] - params[i];
  return stageWork * n / M +
         (arScale[link][c] * stageParams + arFixed[link][c] +
          updatesPerStep[c] * stageUpdate) /
             M;
}

bool ThresholdSolver::fits(int64_t i, int64_t j, int64_t n, int64_t k) const {
  double memory = stageMemory(
      o, resident[j + 1] - resident[i], stash[j + 1] - stash[i],
      i > 0 ? cuts[i - 1] : 0.0, inFlight(o, k, n), params[j + 1] - params[i]);
  return !(memory > cap);
}

int64_t ThresholdSolver::maxStagesFitting(int64_t i, int64_t j, int64_t n,
                                          int64_t limit) const {
  if (fits(i, j, n, limit))
    return limit;
  int64_t lo = 0, hi = limit - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (fits(i, j, n, mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

double ThresholdSolver::lowerBound() const {
  double bound = 0;
  for (int64_t l = 0; l < numLayers; ++l) {
    double least = kInf;
    for (const Group &group : groups)
      for (int link = 0; link < 2; ++link)
        least = std::min(least, busy(l, l, group.first, link));
    bound = std::max(bound, least);
  }
  // Each stage's compute is at least its work / replicas, and the largest
  // of those ratios is at least their mediant, total work / devices (scaled
  // down a hair against rounding).
  return std::max(bound,
                  work[numLayers] / static_cast<double>(devices) * (1 - 1e-9));
}

bool ThresholdSolver::reach(int64_t i, int64_t j, double T,
                            std::vector<Reach> &out, double &least) const {
  const bool hasNext = j + 1 < numLayers && metric != Metric::Balance;
  std::array<double, 2> xfer =
      hasNext ? cutTransfers(topology, cuts[j]) : std::array<double, 2>{0, 0};
  least = kInf;
  out.resize(groups.size() * g);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group &group = groups[gi];
    int64_t base = candidates[group.first];
    // busy[link] at m = 0, the group's smallest; above g always inter-node.
    double b0[2] = {busy(i, j, group.first, 0), busy(i, j, group.first, 1)};
    least = std::min({least, b0[0], b0[1]});
    // Large groups: the last m within T (busy grows with m), found when a
    // class needs it.
    int64_t mMax = -2;
    double blockedBusy = b0[1];
    for (int64_t rho = 0; rho < g; ++rho) {
      Reach &r = out[gi * g + rho];
      r.toClass = (rho + base) % g;
      r.carry = (rho + base) / g;
      r.mMax = -1;
      r.blocked = kInf;
      // A stage into an empty class stays useless while that class stays
      // empty, which only other stages' terms can change: its term need
      // not bound `next` (see the comment above).
      if (row(j + 1, r.toClass).empty())
        continue;
      double x = xfer[r.toClass != 0 ? 0 : 1];
      if (base <= g) {
        double t = std::max(b0[rho + base <= g ? 0 : 1], x);
        if (t <= T)
          r.mMax = 0;
        else
          r.blocked = t;
        continue;
      }
      if (x > T || b0[1] > T) {
        r.blocked = std::max(b0[1], x);
        continue;
      }
      if (mMax == -2) {
        int64_t lo = 0, hi = group.size - 1;
        while (lo < hi) {
          int64_t mid = (lo + hi + 1) / 2;
          if (busy(i, j, group.first + mid, 1) <= T)
            lo = mid;
          else
            hi = mid - 1;
        }
        mMax = lo;
        blockedBusy =
            lo + 1 < group.size ? busy(i, j, group.first + lo + 1, 1) : kInf;
      }
      r.mMax = mMax;
      r.blocked = blockedBusy;
    }
  }
  return !(least > T);
}

/// The pointwise minimum of `runs` (any order, overlapping) as disjoint runs
/// in increasing order, equal neighbours merged. The runs are bucketed by
/// count and painted smallest count first, each offset once: `nextFree`
/// skips painted offsets (a union-find with path halving), so the cost is
/// linear in the runs plus the offsets they span.
static void lowerEnvelope(const std::vector<ThresholdRun> &runs,
                          EnvelopeScratch &s, std::vector<ThresholdRun> &out) {
  out.clear();
  if (runs.empty())
    return;
  int32_t qMin = runs[0].lo, qMax = runs[0].hi;
  int32_t cMin = runs[0].count, cMax = runs[0].count;
  for (const ThresholdRun &run : runs) {
    qMin = std::min(qMin, run.lo);
    qMax = std::max(qMax, run.hi);
    cMin = std::min(cMin, run.count);
    cMax = std::max(cMax, run.count);
  }
  // Counting sort by count.
  s.histogram.assign(cMax - cMin + 2, 0);
  for (const ThresholdRun &run : runs)
    ++s.histogram[run.count - cMin + 1];
  for (size_t c = 1; c < s.histogram.size(); ++c)
    s.histogram[c] += s.histogram[c - 1];
  s.sorted.resize(runs.size());
  for (const ThresholdRun &run : runs)
    s.sorted[s.histogram[run.count - cMin]++] = run;
  int32_t width = qMax - qMin + 1;
  s.paint.assign(width, -1);
  s.nextFree.resize(width + 1);
  for (int32_t x = 0; x <= width; ++x)
    s.nextFree[x] = x;
  auto find = [&](int32_t x) {
    while (s.nextFree[x] != x) {
      s.nextFree[x] = s.nextFree[s.nextFree[x]];
      x = s.nextFree[x];
    }
    return x;
  };
  for (const ThresholdRun &run : s.sorted)
    for (int32_t x = find(run.lo - qMin); x <= run.hi - qMin; x = find(x + 1)) {
      s.paint[x] = run.count;
      s.nextFree[x] = x + 1;
    }
  for (int32_t x = 0; x < width; ++x) {
    int32_t count = s.paint[x];
    if (count < 0)
      continue;
    if (!out.empty() && out.back().hi + 1 == x + qMin &&
        out.back().count == count)
      ++out.back().hi;
    else
      out.push_back({x + qMin, x + qMin, count});
  }
}

void ThresholdSolver::solveRow(int64_t i, double T, int64_t maxCount,
                               double &next) {
  const double M = static_cast<double>(o.microBatches);
  for (std::vector<Run> &p : pending)
    p.clear();
  std::vector<Reach> reaches;
  for (int64_t j = i; j < numLayers; ++j) {
    if (resident[j + 1] - resident[i] > cap)
      break; // The memory only grows with j.
    // Every term from here on is at least the compute of one micro-batch
    // per replica, and the stages into empty rows do not count (reach).
    double floor = (work[j + 1] - work[i]) / M;
    if (floor > T) {
      next = std::min(next, floor);
      break;
    }
    if (!rowUsed[j + 1])
      continue;
    double least;
    if (!reach(i, j, T, reaches, least)) {
      next = std::min(next, least); // Bounds every term from here on.
      break;
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Group &group = groups[gi];
      // The most stages from this one to the end its memory allows.
      int64_t kMax = -1;
      for (int64_t rho = 0; rho < g; ++rho) {
        const Reach &r = reaches[gi * g + rho];
        next = std::min(next, r.blocked);
        if (r.mMax < 0)
          continue;
        if (kMax < 0)
          kMax = maxStagesFitting(i, j, group.n, maxCount);
        for (const Run &run : row(j + 1, r.toClass)) {
          int64_t hi = run.hi - r.carry;
          if (hi < 0)
            continue;
          int32_t k = run.count + 1;
          if (k > kMax)
            continue;
          int64_t lo = std::max<int64_t>(0, run.lo - r.carry - r.mMax);
          pending[rho].push_back(
              {static_cast<int32_t>(lo), static_cast<int32_t>(hi), k});
        }
      }
    }
  }
  rowUsed[i] = false;
  for (int64_t rho = 0; rho < g; ++rho) {
    lowerEnvelope(pending[rho], envelope, row(i, rho));
    rowUsed[i] |= !row(i, rho).empty();
  }
}

ThresholdSolver::Probe ThresholdSolver::probe(double T, int64_t maxCount) {
  Probe p;
  for (std::vector<Run> &r : rows)
    r.clear();
  int64_t D = devices;
  row(numLayers, D % g)
      .push_back({static_cast<int32_t>(D / g), static_cast<int32_t>(D / g), 0});
  rowUsed.assign(numLayers + 1, false);
  rowUsed[numLayers] = true;
  for (int64_t i = numLayers - 1; i >= 0; --i)
    solveRow(i, T, maxCount, p.next);
  const std::vector<Run> &start = row(0, 0);
  if (start.empty() || start.front().lo != 0)
    return p;
  p.stages = start.front().count;
  [[maybe_unused]] bool complete = reconstruct(T, p);
  assert(complete && "g(0, 0) = stages has a path of that many stages");
  return p;
}

bool ThresholdSolver::reconstruct(double T, Probe &p) const {
  int64_t i = 0, off = 0;
  p.witness = 0;
  std::vector<Reach> reaches;
  for (int64_t k = p.stages; k >= 1; --k) {
    int64_t rho = off % g, q = off / g;
    double bestTerm = kInf;
    int64_t bestJ = -1, bestC = -1;
    for (int64_t j = i; j < numLayers; ++j) {
      double least;
      if (resident[j + 1] - resident[i] > cap ||
          !reach(i, j, T, reaches, least))
        break;
      for (size_t gi = 0; gi < groups.size(); ++gi) {
        const Group &group = groups[gi];
        const Reach &r = reaches[gi * g + rho];
        if (r.mMax < 0 || !fits(i, j, group.n, k))
          continue;
        // The smallest m (smallest term) whose suffix takes k - 1 stages.
        const std::vector<Run> &runs = row(j + 1, r.toClass);
        int64_t from = q + r.carry, to = from + r.mMax;
        auto it = std::lower_bound(
            runs.begin(), runs.end(), from,
            [](const Run &run, int64_t x) { return run.hi < x; });
        for (; it != runs.end() && it->lo <= to; ++it) {
          if (it->count != k - 1)
            continue;
          int64_t c = group.first + std::max<int64_t>(it->lo, from) - from;
          int64_t rr = candidates[c];
          bool one = off % g + rr <= g;
          double term = busy(i, j, c, one ? 0 : 1);
          if (metric != Metric::Balance && j + 1 < numLayers)
            term = std::max(
                term, cutTransfers(topology, cuts[j])[r.toClass != 0 ? 0 : 1]);
          if (term < bestTerm) {
            bestTerm = term;
            bestJ = j;
            bestC = c;
          }
          break;
        }
      }
    }
    if (bestJ < 0)
      return false; // Cannot happen: g(i, off) = k had a transition.
    p.bounds.emplace_back(static_cast<unsigned>(i),
                          static_cast<unsigned>(bestJ));
    p.replicas.push_back(candidates[bestC]);
    p.witness = std::max(p.witness, bestTerm);
    i = bestJ + 1;
    off += candidates[bestC];
  }
  return true;
}

/// The midpoint of [lo, hi) in the order of the doubles' bits (>= 0), so
/// that bisection ends after at most 64 halvings.
static double bitMidpoint(double lo, double hi) {
  uint64_t a, b;
  std::memcpy(&a, &lo, sizeof a);
  std::memcpy(&b, &hi, sizeof b);
  uint64_t m = a + (b - a) / 2;
  double mid;
  std::memcpy(&mid, &m, sizeof mid);
  return mid;
}

int64_t
ThresholdSolver::solve(double totalForward, double totalBackward,
                       double hintValue, double hintScore, double &value,
                       std::vector<std::pair<unsigned, unsigned>> &bounds,
                       std::vector<int64_t> &replicas) {
  const double M = static_cast<double>(o.microBatches);
  auto score = [&](double v, int64_t s) {
    return v * (M + bubbleSlots(o, s, totalForward, totalBackward));
  };
  // Until a probe finds a witness, the hint (an equal split's score, a hair
  // above it so that rounding between its direct sums and the prefix sums
  // cannot cut off the optimum) bounds the search.
  Probe best;
  double bestScore = hintScore < kInf ? hintScore * (1 + 1e-9) : kInf;
  // An unknown interval [lo, hi) of thresholds; Smin >= stages inside, so
  // nothing in it scores below `bound`.
  struct Gap {
    double bound, lo, hi;
    int64_t stages;
    bool operator>(const Gap &other) const {
      return std::tie(bound, lo) > std::tie(other.bound, other.lo);
    }
  };
  std::priority_queue<Gap, std::vector<Gap>, std::greater<>> gaps;
  auto push = [&](double lo, double hi, int64_t stages) {
    if (lo < hi)
      gaps.push({score(lo, stages), lo, hi, stages});
  };
  push(lowerBound(), kInf, 1);
  bool first = true;
  while (!gaps.empty()) {
    Gap gap = gaps.top();
    gaps.pop();
    // Nothing inside scores less, or ties with fewer stages.
    if (gap.bound > bestScore ||
        (gap.bound == bestScore && best.stages && gap.stages > best.stages))
      continue;
    // Stage counts past maxCount score more than the best at any T >= lo:
    // the probe drops suffixes that need more.
    int64_t maxCount = 1;
    while (maxCount < numLayers && score(gap.lo, maxCount + 1) <= bestScore)
      ++maxCount;
    // Above bestScore / (M + slots(stages)) nothing can beat the best (a
    // hair above it: only the probe point, not the pruning, depends on it).
    double hi = std::min(
        gap.hi,
        bestScore /
            (M + bubbleSlots(o, gap.stages, totalForward, totalBackward)) *
            (1 + 1e-12));
    // The top of the interval's useful part when it is narrow: if nothing
    // there takes maxCount stages or fewer, nothing below does either and
    // one probe closes it. Wide ones are halved.
    double top =
        hi < gap.hi ? std::max(hi, gap.lo) : std::nextafter(gap.hi, 0.0);
    double T = top <= gap.lo * 1.02 ? top : bitMidpoint(gap.lo, top);
    if (first && hintValue >= gap.lo && hintValue < kInf)
      T = hintValue * (1 + 1e-9); // The equal split passes: a good start.
    first = false;
    Probe p = probe(T, maxCount);
    if (p.stages == 0) {
      // Infeasible, or more than maxCount stages, below p.next.
      push(p.next, gap.hi, gap.stages);
      continue;
    }
    double s = score(p.witness, p.stages);
    push(gap.lo, p.witness, p.stages);
    push(p.next, gap.hi, gap.stages);
    // Equal scores: the fewer stages, then the smaller value (rounding can
    // give two values of one stage count the same score).
    if (s < bestScore ||
        (s == bestScore &&
         (!best.stages || p.stages < best.stages ||
          (p.stages == best.stages && p.witness < best.witness)))) {
      bestScore = s;
      best = std::move(p);
    }
  }
  if (!best.stages) {
    // Only if the hint was below every partition's score after all.
    if (hintScore < kInf)
      return solve(totalForward, totalBackward, kInf, kInf, value, bounds,
                   replicas);
    return 0;
  }
  value = best.witness;
  bounds = std::move(best.bounds);
  replicas = std::move(best.replicas);
  return best.stages;
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
  if (!(o.terms.allReduceFactor > 0 && o.terms.allReduceFactor <= 16)) {
    os << "the all-reduce volume factor must be in (0, 16], got "
       << o.terms.allReduceFactor;
    return os.str();
  }
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
/// `lattice`: the cut space searched (null: prefixes); `fixed`: the replicas
/// of every stage, when given (their candidates in `candidates`).
static std::string
explainInfeasible(const LayerGraph &graph, const PartitionTopology &topology,
                  const PartitionOptions &o, int64_t fixedStages,
                  int64_t maxStages, const std::vector<int64_t> &candidates,
                  const DownSetLattice *lattice,
                  const std::vector<int64_t> *fixed, PartitionResult &result) {
  auto smallestMemory = [&](double bound) {
    Solver memory(graph, topology, o, candidates, lattice);
    memory.solve(Metric::Memory, bound, maxStages, fixedStages != 0, fixed);
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
/// Fills `eval`'s replay on the timeline model.
static void replay(PartitionEvaluation &eval, const PartitionTopology &topology,
                   const PartitionOptions &o) {
  PartitionReplay r = replayPartition(eval, topology, o);
  eval.replayStepSeconds = r.stepSeconds;
  eval.replayNote = r.error;
}

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
    replay(result.dataParallel, topology, dp);
  }
  replay(result.best, topology, o);
  replay(result.uniform, topology, o);
  if (result.best.stepSeconds > 0) {
    result.speedup = result.dataParallel.stepSeconds / result.best.stepSeconds;
    if (result.uniform.stepSeconds > 0)
      result.uniformSpeedup =
          result.dataParallel.stepSeconds / result.uniform.stepSeconds;
  }
}

/// The score (value times M + bubble slots) of the best equal split
/// (evenSplit) that fits, over stage counts spread across [1, maxStages]:
/// an achievable bound for the searches (its value in `value`); +inf when
/// none fits.
static double equalSplitIncumbent(const LayerGraph &graph,
                                  const PartitionTopology &topology,
                                  const PartitionOptions &o,
                                  const std::vector<int64_t> &candidates,
                                  int64_t fixedStages, int64_t maxStages,
                                  double totalForward, double totalBackward,
                                  double *value = nullptr) {
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
    double score =
        e.objective * (static_cast<double>(o.microBatches) +
                       bubbleSlots(o, s, totalForward, totalBackward));
    if (score < incumbent) {
      incumbent = score;
      if (value)
        *value = e.objective;
    }
  }
  return incumbent;
}

/// Work the exhaustive DP over down-sets may take: nested pairs x candidates
/// x offsets x stage counts (about a second).
static constexpr double kDownSetWork = 1e9;
/// Cells of its choice tables (4 bytes each): 1 GiB.
static constexpr double kDownSetCells = 0x1p28;

/// The down-sets of `graph` when `o` asks for them, the graph is not a chain
/// (or `force`) and the DP over them stays within the caps (`perPair`: the
/// DP's work per nested pair); else null, with the reason in
/// result.cutsNote. Records the cuts searched in `result`.
static std::unique_ptr<DownSetLattice> chooseCuts(const LayerGraph &graph,
                                                  const PartitionOptions &o,
                                                  int64_t maxStages,
                                                  double perPair, bool force,
                                                  PartitionResult &result) {
  result.cutsSearched = CutSpace::Prefixes;
  if (o.cuts != CutSpace::DownSets || (!force && graph.isChain()))
    return nullptr;
  // Choice codes keep a state in 16 bits.
  uint64_t maxStates =
      static_cast<uint64_t>(std::clamp<int64_t>(o.maxDownSets, 1, 65535));
  double pairs = kDownSetWork / std::max(perPair, 1.0);
  auto lattice = std::make_unique<DownSetLattice>();
  std::string why = enumerateDownSets(
      graph, maxStates, static_cast<uint64_t>(std::min(pairs, 1e12)), *lattice);
  if (why.empty() && static_cast<double>(lattice->numStates()) *
                             static_cast<double>(o.devices + 1) *
                             static_cast<double>(maxStages + 1) >
                         kDownSetCells)
    why = "the DP's tables over the layer DAG's " +
          std::to_string(lattice->numStates()) + " down-sets would exceed " +
          "1 GiB";
  if (!why.empty()) {
    result.cutsNote = why;
    return nullptr;
  }
  result.cutsSearched = CutSpace::DownSets;
  result.downSets = static_cast<int64_t>(lattice->numStates());
  return lattice;
}

/// evaluatePartition of the stages `bounds` of the layer order `order`
/// (empty: the graph's own).
static PartitionEvaluation
evaluateInOrder(const LayerGraph &graph, const PartitionTopology &topology,
                const PartitionOptions &o, const std::vector<unsigned> &order,
                const std::vector<std::pair<unsigned, unsigned>> &bounds,
                const std::vector<int64_t> &replicas) {
  if (order.empty())
    return evaluatePartition(graph, topology, o, bounds, replicas);
  PartitionEvaluation eval =
      evaluatePartition(graph.reordered(order), topology, o, bounds, replicas);
  eval.order = order;
  return eval;
}

/// partitionPipeline with the threshold search (or, with `stages=`, the
/// bounded search) for the min-max objectives over prefixes, else the
/// exhaustive DP (`reference`: the exhaustive DP for every objective, over
/// down-sets when asked for even on a chain).
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
  std::unique_ptr<DownSetLattice> lattice = chooseCuts(
      graph, o, maxStages,
      static_cast<double>(result.replicaCandidates.size()) *
          static_cast<double>(o.devices + 1) * static_cast<double>(maxStages),
      reference, result);
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<unsigned> order;
  std::vector<int64_t> replicas;
  int64_t chosen = 0;
  // The fast searches assume prefixes, whole shares, per-cut transfers and
  // the node-aligned replica counts; anything else takes the exhaustive DP.
  bool exhaustive = lattice || o.terms.evenShares ||
                    o.terms.transfers != TransferModel::PerCut ||
                    o.terms.allReplicaCounts;
  if (reference || exhaustive || metric == Metric::Communication) {
    Solver solver(graph, topology, o, result.replicaCandidates, lattice.get());
    solver.solve(metric, o.memoryBytes, maxStages, fixedStages != 0);
    chosen = chooseStageCount(graph, solver.values(), o, metric, fixedStages,
                              maxStages, result);
    if (chosen) {
      std::vector<int64_t> states;
      solver.reconstruct(chosen, states, replicas);
      statesToStages(lattice.get(), states, bounds, order);
    }
  } else if (o.stages == 0 || o.straight || o.replicas > 0) {
    // The stage count is free, or the candidates force it (every partition
    // of `straight` or `replicas=` has D / r stages): the threshold search.
    double totalForward = 0, totalBackward = 0;
    for (const PartitionLayer &layer : graph.layers) {
      totalForward += layer.forwardSeconds;
      totalBackward += layer.backwardSeconds;
    }
    ThresholdSolver solver(graph, topology, o, result.replicaCandidates, metric,
                           o.memoryBytes);
    double hintValue = kInf;
    double hintScore = equalSplitIncumbent(
        graph, topology, o, result.replicaCandidates, fixedStages, maxStages,
        totalForward, totalBackward, &hintValue);
    double value = kInf;
    int64_t stages = solver.solve(totalForward, totalBackward, hintValue,
                                  hintScore, value, bounds, replicas);
    std::vector<double> values(maxStages + 1, kInf);
    if (stages)
      values[stages] = value;
    chosen = chooseStageCount(graph, values, o, metric, fixedStages, maxStages,
                              result);
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
    return fail(explainInfeasible(graph, topology, o, fixedStages, maxStages,
                                  result.replicaCandidates, lattice.get(),
                                  nullptr, result));

  result.best = evaluateInOrder(graph, topology, o, order, bounds, replicas);
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

//===----------------------------------------------------------------------===//
// evaluateGivenPartition
//===----------------------------------------------------------------------===//

/// The best partition whose stages have the replicas `shape` in order
/// ("13-2-1"), over the cut space of the options.
static void searchShape(const LayerGraph &graph,
                        const PartitionTopology &topology,
                        const std::vector<int64_t> &shape,
                        PartitionResult &result) {
  const PartitionOptions &o = result.options;
  int64_t S = static_cast<int64_t>(shape.size());
  std::vector<int64_t> candidates = shape;
  llvm::sort(candidates);
  candidates.erase(llvm::unique(candidates), candidates.end());
  std::unique_ptr<DownSetLattice> lattice =
      chooseCuts(graph, o, S, static_cast<double>(S), false, result);
  Metric metric = getMetric(o.objective);
  Solver solver(graph, topology, o, candidates, lattice.get());
  solver.solve(metric, o.memoryBytes, S, /*onlyLast=*/true, &shape);
  if (chooseStageCount(graph, solver.values(), o, metric, S, S, result) == 0) {
    result.error = explainInfeasible(graph, topology, o, S, S, candidates,
                                     lattice.get(), &shape, result);
    return;
  }
  std::vector<int64_t> states, replicas;
  std::vector<std::pair<unsigned, unsigned>> bounds;
  std::vector<unsigned> order;
  solver.reconstruct(S, states, replicas);
  statesToStages(lattice.get(), states, bounds, order);
  result.best = evaluateInOrder(graph, topology, o, order, bounds, replicas);
}

/// Parses "r0-r1-..." into `shape`; "" or the problem.
static std::string parseShape(llvm::StringRef spec, int64_t layers,
                              int64_t devices, std::vector<int64_t> &shape) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, '-');
  int64_t used = 0;
  for (llvm::StringRef part : parts) {
    int64_t r;
    if (part.trim().getAsInteger(10, r) || r < 1 || r > devices)
      return ("'" + spec +
              "' is neither stages FIRST..LAST:REPLICAS nor replicas per "
              "stage R0-R1-... (e.g. 3-1) with 1 <= R <= " +
              llvm::Twine(devices))
          .str();
    shape.push_back(r);
    used += r;
  }
  if (used != devices)
    return ("the replicas sum to " + llvm::Twine(used) + " devices, not " +
            llvm::Twine(devices))
        .str();
  if (static_cast<int64_t>(shape.size()) > layers)
    return (llvm::Twine(shape.size()) + " stages but only " +
            llvm::Twine(layers) + " layers")
        .str();
  return "";
}

/// Parses "a..b[+c..d...]:r" stages into the stage of every layer position
/// and the replicas per stage; "" or the problem.
static std::string parseStages(llvm::StringRef spec, int64_t layers,
                               int64_t devices, std::vector<int64_t> &stageOf,
                               std::vector<int64_t> &replicas) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, ',', -1, /*KeepEmpty=*/false);
  stageOf.assign(layers, -1);
  int64_t used = 0;
  for (llvm::StringRef part : parts) {
    part = part.trim();
    auto [ranges, count] = part.rsplit(':');
    int64_t r;
    llvm::SmallVector<llvm::StringRef> pieces;
    ranges.split(pieces, '+');
    auto syntax = [&]() {
      return ("stage '" + part +
              "' is not FIRST..LAST[+FIRST..LAST...]:REPLICAS with 1 <= "
              "REPLICAS <= " +
              llvm::Twine(devices))
          .str();
    };
    if (count.trim().getAsInteger(10, r) || r < 1 || r > devices)
      return syntax();
    int64_t s = static_cast<int64_t>(replicas.size());
    for (llvm::StringRef piece : pieces) {
      auto [first, last] = piece.trim().split("..");
      int64_t a, b;
      if (first.getAsInteger(10, a) || last.getAsInteger(10, b))
        return syntax();
      if (a < 0 || b < a || b >= layers)
        return ("stage '" + part + "': '" + piece.trim() +
                "' is not a range within layers 0.." + llvm::Twine(layers - 1))
            .str();
      for (int64_t p = a; p <= b; ++p) {
        if (stageOf[p] >= 0)
          return ("layer " + llvm::Twine(p) + " is in stage " +
                  llvm::Twine(stageOf[p]) + " and in stage " + llvm::Twine(s))
              .str();
        stageOf[p] = s;
      }
    }
    replicas.push_back(r);
    used += r;
  }
  for (int64_t p = 0; p < layers; ++p)
    if (stageOf[p] < 0)
      return ("no stage holds layer " + llvm::Twine(p)).str();
  if (used != devices)
    return ("the replicas sum to " + llvm::Twine(used) + " devices, not " +
            llvm::Twine(devices))
        .str();
  return "";
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
  int64_t L = static_cast<int64_t>(graph.layers.size());
  spec = spec.trim();
  result.replicaCandidates = replicaCandidates(topology, o);
  if (!spec.contains(':')) {
    std::vector<int64_t> shape;
    result.error = parseShape(spec, L, o.devices, shape);
    if (result.error.empty())
      searchShape(graph, topology, shape, result);
    if (!result.ok())
      return result;
    evaluateBaselines(graph, topology, o,
                      static_cast<int64_t>(result.best.stages.size()), result);
    return result;
  }
  std::vector<int64_t> stageOf, replicas;
  result.error = parseStages(spec, L, o.devices, stageOf, replicas);
  if (!result.ok())
    return result;
  // No layer reads one of a later stage.
  for (const PartitionEdge &edge : graph.edges)
    if (stageOf[edge.from] > stageOf[edge.to]) {
      result.error = ("layer " + llvm::Twine(edge.to) + " in stage " +
                      llvm::Twine(stageOf[edge.to]) + " reads layer " +
                      llvm::Twine(edge.from) + " of the later stage " +
                      llvm::Twine(stageOf[edge.from]))
                         .str();
      return result;
    }
  // The layers by stage, each stage's in graph order.
  std::vector<unsigned> order(L);
  for (unsigned p = 0; p < order.size(); ++p)
    order[p] = p;
  llvm::sort(order, [&](unsigned a, unsigned b) {
    return std::tie(stageOf[a], a) < std::tie(stageOf[b], b);
  });
  std::vector<std::pair<unsigned, unsigned>> bounds;
  for (unsigned p = 0; p < order.size(); ++p) {
    if (p == 0 || stageOf[order[p]] != stageOf[order[p - 1]])
      bounds.emplace_back(p, p);
    bounds.back().second = p;
  }
  if (llvm::is_sorted(order))
    order.clear();
  result.best = evaluateInOrder(graph, topology, o, order, bounds, replicas);
  evaluateBaselines(graph, topology, o, static_cast<int64_t>(bounds.size()),
                    result);
  return result;
}
