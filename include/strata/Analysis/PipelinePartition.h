//===- PipelinePartition.h - Layers to pipeline stages x replicas -*- C++
//-*-===//
//
// The pipeline partitioner (seed 002, first patent; PipeDream's optimizer): a
// dynamic program over (contiguous layer range, stage count, device offset)
// that chooses stage boundaries and a replication factor per stage for a
// layer graph on a device topology, minimising the slowest stage. Pure C++
// (no MLIR): the pass, `strata-partition` and the unit tests all use it.
//
// The cuts between stages are prefixes of the graph's layer order, or with
// PartitionOptions::cuts = DownSets every down-set of the layer DAG (as
// PipeDream's optimizer: a stage is then the difference of two nested
// down-sets, and the stages fix a topological order of their own,
// PartitionEvaluation::order; PipelineDownSets.h). A down-set partition is
// found by the exhaustive DP below with states = down-sets instead of first
// layers; "first layer i" below reads "the layers before the cut".
//
// The cost model (the DP and `evaluatePartition` price a partition the same
// way; the README's "Pipeline partitioning" section summarises it):
//
//   A step runs M micro-batches. Stage s = layers [a..b] on r replicas placed
//   on devices [o, o + r) (stages contiguous in device order, numbered node
//   by node; g devices per node). Each replica runs n = ceil(M / r) of the M
//   micro-batches. Per micro-batch (amortised over the step):
//     compute  = (F + B) * n / M                 F, B: forward, backward s
//     sync     = allreduce(P, r) / M             once per step, ring:
//                2 (r - 1) / r * P / bw + 2 (r - 1) * latency, on the
//                intra-node link if [o, o + r) lies in one node, else on the
//                inter-node link
//     update   = U / M                           optimizer update, per step
//     transfer = 2 * (latency + C / bw)          activations forward and
//                gradients back over the cut after b (C: bytes of every
//                tensor crossing it); intra-node link when the last device of
//                s and the first of s + 1 share a node
//     stage    = max(compute + sync + update, transfer)
//   Memory per device of stage s at position p of S (k = S - p):
//     2 P + O + stash * inflight,  inflight = n (gpipe), min(k, n) (1f1b,
//     zb-h1), min(n, ceil(k (v + 1) / v)) (interleaved, v virtual stages).
//   With recompute (--strata-remat's recompute, PartitionOptions::recompute)
//   a stage keeps only its input per micro-batch in flight and recomputes
//   the rest of one micro-batch at a time before its backward pass:
//     memory = 2 P + O + in * inflight + stash,  compute = (2 F + B) n / M
//   (in: bytes crossing the cut into the stage; 0 for the first stage,
//   whose input is the data).
//   Step = T * (M + bubble slots), T the slowest stage; bubble slots S - 1
//   (gpipe, 1f1b), (S - 1) / v (interleaved), (S - 1) * F / (F + B) (zb-h1:
//   only the forward part of a warm-up slot stays idle). Bubble fraction =
//   slots / (M + slots).
//
// The asynchronous schedules (seed 002's PipeDream patent; priced here as
// PipeDream's steady state without a flush, scheduled by
// --strata-schedule-pipeline with the same weight versions but a plan step
// that drains): `pipedream` (1F1B without a flush, weight
// stashing) and `2bw` (PipeDream-2BW, two weight versions) have no bubble
// (slots 0) and keep min(k, n) micro-batches in flight like 1f1b. A
// `pipedream` replica syncs its stage's weights after each of its
// micro-batches (sync = n * allreduce(P, r) / M) and stashes one weight
// version per micro-batch in flight (memory + P * (inflight - 1)); `2bw`
// syncs once per step and keeps one extra version (memory + P).
//
// CostTerms switch the terms that differ from PipeDream's optimizer
// (`pipedream` preset: all four as PipeDream has them):
//   * all-reduce volume factor f: f (r - 1) / r * P / bw instead of the
//     ring's 2 (the target's `all_reduce_volume_factor`; PipeDream: 4);
//   * shares: each replica runs M / r micro-batches (even) instead of
//     ceil(M / r) whole ones (the in-flight count stays whole);
//   * transfers: per cut as above; per replica (a stage's incoming and
//     outgoing cut, each 2 (latency + C / bw) / r, as PipeDream divides a
//     cut over the replicas that send or receive it); `pipedream`, per
//     replica as PipeDream's optimizer accounts it: the first stage's
//     outgoing cut is not charged to the first stage (the recurrence's base
//     case prices that stage alone; the cut appears only as the second
//     stage's input, over the second stage's replicas); or none (PipeDream's
//     optimizer counts transfers only with an activation compression
//     ratio);
//   * replica counts: every count 1..devices (placed node-aware: a stage
//     inside one node uses the intra-node link) instead of 1..g and whole
//     nodes.
// Any non-default term makes the search use the exhaustive DP.
//
// The search. The chosen stage count S minimises (slowest stage) * (M +
// slots(S)). The communication objective (a sum) runs the exhaustive DP
// over (stages left k, first layer i, device offset o) x (last layer j,
// replicas r). The min-max objectives with a free stage count (or one that
// `straight` / `replicas=` force) run a threshold search: for a bound T on
// every stage's term, a DP over (i, o) finds the fewest stages Smin(T) (the
// fewest are also the best for the memory, which grows with the stages
// after a stage), its rows kept as runs of equal counts per device offset
// mod the node size; the optimum is min over T of T * (M + slots(Smin(T))),
// reached where Smin steps down, and a branch and bound over the intervals
// of T between the probed pieces finds it. With `stages=` fixed the bounded
// search runs the DP's recurrence pruned by an incumbent score. Both give
// the exhaustive DP's optimum (detail::partitionPipelineReference keeps that
// DP for the tests); PipelinePartition.cpp spells out the arguments.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_PIPELINEPARTITION_H
#define STRATA_ANALYSIS_PIPELINEPARTITION_H

#include "strata/Transforms/PipelineSchedule.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::strata {
struct TargetDescription;

/// One layer of the graph, in pipeline (topological) order.
struct PartitionLayer {
  /// The layer's id (`strata.layer`, or the profile's id).
  int64_t id = 0;
  std::string name;
  /// Seconds of one micro-batch's forward and backward pass on one device.
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  /// Seconds of the optimizer update (once per step).
  double updateSeconds = 0;
  /// Bytes of the layer's parameters (gradients take as many again).
  double paramBytes = 0;
  /// Bytes of the layer's optimizer state.
  double optimizerBytes = 0;
  /// Bytes the layer keeps for its backward pass, per micro-batch in flight.
  double stashBytes = 0;
};

/// A tensor of `bytes` produced by the layer at position `from` and read by
/// the layer at position `to` (from < to). Edges with the same `tensor` id
/// (>= 0) carry one tensor to each of its readers: they share `from` and
/// `bytes`, and the tensor crosses a cut once however many readers lie past
/// it. `tensor` = -1: a tensor of its own, read by `to` alone. The edges are
/// also the graph's dependencies (a zero-byte edge still orders two layers).
struct PartitionEdge {
  unsigned from = 0;
  unsigned to = 0;
  double bytes = 0;
  int64_t tensor = -1;
};

/// One tensor of a LayerGraph: its producer, size and readers (ascending
/// positions, each once).
struct LayerTensor {
  unsigned from = 0;
  double bytes = 0;
  std::vector<unsigned> readers;
};

/// Layers in a topological order plus the tensors passed between them.
struct LayerGraph {
  std::vector<PartitionLayer> layers;
  std::vector<PartitionEdge> edges;

  /// Bytes crossing the cut after position j, for j in [0, layers - 1): the
  /// tensors produced at or before j that a layer after j reads.
  std::vector<double> cutBytes() const;
  /// "" when every edge goes forward between existing layers and the edges
  /// of one tensor agree on its producer and size.
  std::string verify() const;
  /// The tensors of the edges, in the order of each one's first edge.
  std::vector<LayerTensor> tensors() const;
  /// Whether every layer depends on the one before it (an edge p -> p + 1
  /// for every p): then the graph's down-sets are exactly its prefixes.
  bool isChain() const;
  /// The graph with its layers in `order` (order[p]: the position in this
  /// graph of the layer at position p; a topological order).
  LayerGraph reordered(const std::vector<unsigned> &order) const;
};

/// Devices numbered node by node, and the links between them.
struct PartitionTopology {
  int64_t devicesPerNode = 1;
  int64_t nodes = 1;
  /// Bytes per second and seconds.
  double intraBandwidth = 1e9;
  double intraLatency = 0;
  double interBandwidth = 1e9;
  double interLatency = 0;
  /// Memory of one device in bytes.
  double memoryBytes = 0;
  /// The all-reduce volume factor (TargetDescription).
  double allReduceFactor = 2.0;

  static PartitionTopology fromTarget(const TargetDescription &target);
  int64_t numDevices() const { return devicesPerNode * nodes; }
};

enum class PartitionObjective {
  /// Minimise the slowest stage (compute + sync vs transfer).
  Throughput,
  /// Minimise the largest compute per device (equal work per worker).
  Balance,
  /// Minimise the bytes moved per step (transfers + all-reduces).
  Communication,
};

/// The schedules the partitioner prices: the scheduler's own list
/// (strata/Transforms/PipelineSchedule.h), so the two never disagree.
using PipelineSchedule = pipeline::ScheduleKind;

/// How activation transfers between stages are charged (see the file
/// comment).
enum class TransferModel { PerCut, PerReplica, None, PipeDream };

/// The cuts between stages the search considers: prefixes of the graph's
/// layer order (each stage a contiguous range of positions), or every
/// down-set of the layer DAG (any set of layers holding the producers of
/// everything it reads; the stages then fix a new topological order).
enum class CutSpace { Prefixes, DownSets };

/// The cost terms that differ between Strata's model and PipeDream's
/// optimizer (see the file comment). The defaults are Strata's.
struct CostTerms {
  /// All-reduce volume factor (0: the topology's, from the target).
  double allReduceFactor = 0;
  /// M / r micro-batches per replica instead of ceil(M / r).
  bool evenShares = false;
  TransferModel transfers = TransferModel::PerCut;
  /// Every replica count 1..devices.
  bool allReplicaCounts = false;

  bool isDefault() const {
    return allReduceFactor == 0 && !evenShares &&
           transfers == TransferModel::PerCut && !allReplicaCounts;
  }
};

/// Parses comma-separated `allreduce=F,shares=whole|even,
/// transfers=per-cut|per-replica|pipedream|none,replicas=nodes|all` applied
/// over
/// `terms`, optionally after a preset, "strata" (the defaults) or
/// "pipedream" (e.g. "pipedream,transfers=per-replica"); the error says
/// which part is wrong.
bool parseCostTerms(llvm::StringRef spec, CostTerms &terms, std::string &error);
/// The canonical key=value form of `terms`.
std::string stringifyCostTerms(const CostTerms &terms);

const char *stringifyObjective(PartitionObjective objective);
const char *stringifySchedule(PipelineSchedule schedule);
/// Parse "throughput|balance|communication" /
/// "gpipe|1f1b|interleaved|zb-h1|pipedream|2bw";
/// false on an unknown name.
bool parseObjective(const std::string &name, PartitionObjective &objective);
bool parseSchedule(const std::string &name, PipelineSchedule &schedule);

struct PartitionOptions {
  /// Devices to use, all of them (0: all devices of the topology).
  int64_t devices = 0;
  /// Number of stages (0: chosen by the objective).
  int64_t stages = 0;
  /// Replicas of every stage (0: chosen per stage).
  int64_t replicas = 0;
  /// One device per stage (stages = devices).
  bool straight = false;
  PartitionObjective objective = PartitionObjective::Throughput;
  /// Micro-batches per step (0: 4 per device).
  int64_t microBatches = 0;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  /// Virtual stages per device of the interleaved schedule.
  int64_t virtualStages = 2;
  /// Memory per device (0: the topology's).
  double memoryBytes = 0;
  /// Recompute activations: see the file comment.
  bool recompute = false;
  CostTerms terms;
  /// The cuts searched. DownSets falls back to prefixes (and says why in
  /// PartitionResult::cutsNote) when the DAG has more than `maxDownSets`
  /// down-sets or the exhaustive DP over them would take too long; a chain
  /// takes the prefix searches (its down-sets are its prefixes).
  CutSpace cuts = CutSpace::Prefixes;
  int64_t maxDownSets = 20000;
};

/// One stage of a partition with its predicted costs.
struct StagePlan {
  /// Positions (not ids) of the stage's first and last layer.
  unsigned firstLayer = 0;
  unsigned lastLayer = 0;
  int64_t replicas = 1;
  int64_t firstDevice = 0;
  /// Per micro-batch, amortised over the step (see the file comment).
  double computeSeconds = 0;
  double syncSeconds = 0;
  double updateSeconds = 0;
  /// Transfer over the cut after this stage (0 for the last stage).
  double transferSeconds = 0;
  double seconds = 0;
  /// One micro-batch on one replica: the forward pass, and the backward pass
  /// with its recomputed forward (PartitionReplay replays these).
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  /// The optimizer update, once per step.
  double stepUpdateSeconds = 0;
  double paramBytes = 0;
  /// Bytes of one micro-batch crossing the cut after this stage (0 for the
  /// last stage).
  double cutBytes = 0;
  /// Bytes moved per step by this stage's all-reduce and outgoing cut.
  double commBytes = 0;
  int64_t inFlight = 0;
  double memoryBytes = 0;
};

struct PartitionEvaluation {
  /// The layer order the stages' positions refer to: order[p] is the
  /// position in the input graph of the layer at position p. Empty: the
  /// graph's own order.
  std::vector<unsigned> order;
  std::vector<StagePlan> stages;
  /// The objective's value (slowest stage, largest compute, total bytes).
  double objective = 0;
  /// Slowest stage (max of StagePlan::seconds).
  double stageSeconds = 0;
  double bubbleFraction = 0;
  double stepSeconds = 0;
  double peakMemoryBytes = 0;
  bool fitsMemory = false;
  /// The timeline model's replay of this partition (PartitionReplay.h):
  /// its step, or (0 and) why it was not replayed.
  double replayStepSeconds = 0;
  std::string replayNote;
};

struct PartitionResult {
  /// Empty on success; otherwise why nothing was produced.
  std::string error;
  /// With an error about memory: the smallest memory per device with which
  /// some partition under the same constraints fits (0 when unknown).
  double requiredMemoryBytes = 0;

  /// The options after defaults were resolved.
  PartitionOptions options;
  PartitionEvaluation best;
  /// The optimum per stage count (index S; +inf where none exists, and with
  /// the threshold or bounded search also where S cannot beat the chosen
  /// partition: the threshold search gives only the chosen count's).
  std::vector<double> objectiveByStages;
  /// Equal layer counts with the same number of stages, replicas spread as
  /// evenly as the devices allow.
  PartitionEvaluation uniform;
  /// Pure data parallelism: one stage of every layer on every device.
  PartitionEvaluation dataParallel;
  double speedup = 0;
  double uniformSpeedup = 0;
  /// Replication factors the DP considered.
  std::vector<int64_t> replicaCandidates;
  /// The cuts searched, and with DownSets the number of down-sets.
  CutSpace cutsSearched = CutSpace::Prefixes;
  int64_t downSets = 0;
  /// Why prefixes were searched although down-sets were asked for ("" when
  /// they were not asked for, or the graph is a chain).
  std::string cutsNote;

  bool ok() const { return error.empty(); }
};

/// Fills defaults (devices, micro-batches, memory) of `options`.
PartitionOptions resolveOptions(const PartitionTopology &topology,
                                const PartitionOptions &options);

/// Replication factors a stage may take: 1 .. devicesPerNode, then multiples
/// of devicesPerNode (whole nodes), up to `devices` (every count with
/// CostTerms::allReplicaCounts); or just the one of `replicas=` /
/// `straight`.
std::vector<int64_t> replicaCandidates(const PartitionTopology &topology,
                                       const PartitionOptions &resolved);

/// Prices one partition: `bounds[s]` = (first, last) layer position of stage
/// s, `replicas[s]` its replication factor. `resolved` must come from
/// resolveOptions. Independent of the DP (used by tests and reports).
PartitionEvaluation
evaluatePartition(const LayerGraph &graph, const PartitionTopology &topology,
                  const PartitionOptions &resolved,
                  const std::vector<std::pair<unsigned, unsigned>> &bounds,
                  const std::vector<int64_t> &replicas);

/// Prices the given partition like a chosen one (with the uniform and
/// data-parallel baselines), so any partition can be compared under the
/// model. `spec` is one of
///   * "first..last:replicas" per stage, comma-separated, in layer positions
///     (e.g. "0..11:3,12..40:1"); a stage of several ranges joins them with
///     '+' ("0..3+6..7:2,4..5+8..9:1"). Every layer is in exactly one
///     stage, and no layer reads a layer of a later stage (each stage with
///     those before it is a down-set); the layers are then ordered by stage.
///   * "r0-r1-...": the replicas of each stage in order, PipeDream's way of
///     writing a configuration (e.g. "13-2-1"); the stage boundaries are the
///     model's best for those replicas, searched over options.cuts.
/// The replicas sum to the devices of the options (default: all of the
/// topology's). The result's error says what is wrong.
PartitionResult evaluateGivenPartition(const LayerGraph &graph,
                                       const PartitionTopology &topology,
                                       const PartitionOptions &options,
                                       llvm::StringRef spec);

/// Chooses the partition (see the file comment).
PartitionResult partitionPipeline(const LayerGraph &graph,
                                  const PartitionTopology &topology,
                                  const PartitionOptions &options);

namespace detail {
/// partitionPipeline with the exhaustive DP for every objective (no bounds,
/// every stage count's optimum in objectiveByStages): the reference the
/// unit tests and bench/partition_scale.py compare the fast searches with.
PartitionResult partitionPipelineReference(const LayerGraph &graph,
                                           const PartitionTopology &topology,
                                           const PartitionOptions &options);
} // namespace detail

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_PIPELINEPARTITION_H
