//===- PipelineProfile.cpp - Layer profiles and partition reports ---------===//

#include "strata/Analysis/PipelineProfile.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <queue>
#include <set>

using namespace llvm;
using namespace mlir::strata;

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

//===----------------------------------------------------------------------===//
// Strata profile
//===----------------------------------------------------------------------===//

Expected<LayerProfileSet> mlir::strata::parseLayerProfile(StringRef text,
                                                          StringRef source) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return makeError(source + ": " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return makeError(source + ": a profile is a JSON object");
  if (std::optional<StringRef> format = root->getString("format"))
    if (*format != "strata-profile")
      return makeError(source + ": format is '" + *format +
                       "', expected 'strata-profile'");
  const json::Array *layers = root->getArray("layers");
  if (!layers || layers->empty())
    return makeError(source + ": needs a non-empty \"layers\" array");
  LayerProfileSet profile;
  for (auto [n, value] : llvm::enumerate(*layers)) {
    const json::Object *obj = value.getAsObject();
    std::string where = (source + ": layers[" + Twine(n) + "]").str();
    if (!obj)
      return makeError(where + " is not an object");
    LayerProfile layer;
    std::optional<int64_t> id = obj->getInteger("layer");
    if (!id)
      return makeError(where + " needs an integer \"layer\"");
    layer.layer = *id;
    if (std::optional<StringRef> name = obj->getString("name"))
      layer.name = name->str();
    std::optional<double> forward = obj->getNumber("forward_seconds");
    std::optional<double> backward = obj->getNumber("backward_seconds");
    if (!forward || !backward)
      return makeError(where +
                       " needs \"forward_seconds\" and \"backward_seconds\"");
    layer.forwardSeconds = *forward;
    layer.backwardSeconds = *backward;
    layer.updateSeconds = obj->getNumber("update_seconds");
    layer.activationBytes = obj->getNumber("activation_bytes");
    layer.stashBytes = obj->getNumber("stash_bytes");
    layer.paramBytes = obj->getNumber("parameter_bytes");
    layer.optimizerBytes = obj->getNumber("optimizer_bytes");
    for (std::optional<double> v :
         {std::optional<double>(layer.forwardSeconds),
          std::optional<double>(layer.backwardSeconds), layer.updateSeconds,
          layer.activationBytes, layer.stashBytes, layer.paramBytes,
          layer.optimizerBytes})
      if (v && (*v < 0 || !std::isfinite(*v)))
        return makeError(where + " has a negative or non-finite value");
    profile.layers.push_back(std::move(layer));
  }
  if (const json::Array *edges = root->getArray("edges")) {
    profile.edges.emplace();
    for (auto [n, value] : llvm::enumerate(*edges)) {
      const json::Object *obj = value.getAsObject();
      std::optional<int64_t> from =
          obj ? obj->getInteger("from") : std::nullopt;
      std::optional<int64_t> to = obj ? obj->getInteger("to") : std::nullopt;
      std::optional<double> bytes =
          obj ? obj->getNumber("bytes") : std::nullopt;
      if (!from || !to || !bytes)
        return makeError(source + ": edges[" + Twine(n) +
                         "] needs integer \"from\", \"to\" and number "
                         "\"bytes\"");
      std::optional<int64_t> tensor = obj->getInteger("tensor");
      if (obj->get("tensor") && (!tensor || *tensor < 0))
        return makeError(source + ": edges[" + Twine(n) +
                         "]: \"tensor\" must be a non-negative integer");
      profile.edges->push_back({*from, *to, *bytes, tensor.value_or(-1)});
    }
  }
  return profile;
}

Expected<LayerGraph>
mlir::strata::profileToGraph(const LayerProfileSet &profile) {
  std::vector<LayerProfile> layers = profile.layers;
  llvm::stable_sort(layers, [](const LayerProfile &a, const LayerProfile &b) {
    return a.layer < b.layer;
  });
  LayerGraph graph;
  std::map<int64_t, unsigned> position;
  for (const LayerProfile &p : layers) {
    if (!position.emplace(p.layer, graph.layers.size()).second)
      return makeError("layer " + Twine(p.layer) +
                       " appears twice in the profile");
    PartitionLayer layer;
    layer.id = p.layer;
    layer.name = p.name;
    layer.forwardSeconds = p.forwardSeconds;
    layer.backwardSeconds = p.backwardSeconds;
    layer.updateSeconds = p.updateSeconds.value_or(0);
    layer.paramBytes = p.paramBytes.value_or(0);
    layer.optimizerBytes = p.optimizerBytes.value_or(0);
    layer.stashBytes = p.stashBytes.value_or(p.activationBytes.value_or(0));
    graph.layers.push_back(layer);
  }
  if (profile.edges) {
    for (const ProfileEdge &e : *profile.edges) {
      auto from = position.find(e.from), to = position.find(e.to);
      if (from == position.end() || to == position.end())
        return makeError("edge " + Twine(e.from) + " -> " + Twine(e.to) +
                         " names a layer the profile does not have");
      graph.edges.push_back({from->second, to->second, e.bytes, e.tensor});
    }
  } else {
    // A chain: each layer reads the one before it (zero bytes too: the
    // edges also order the layers).
    for (unsigned l = 0; l + 1 < layers.size(); ++l)
      graph.edges.push_back({l, l + 1, layers[l].activationBytes.value_or(0)});
  }
  if (std::string problem = graph.verify(); !problem.empty())
    return makeError(problem);
  return graph;
}

json::Value mlir::strata::layerGraphToProfile(const LayerGraph &graph) {
  json::Array layers;
  std::vector<double> handedOn(graph.layers.size(), 0.0);
  for (const LayerTensor &t : graph.tensors())
    handedOn[t.from] += t.bytes;
  for (auto [l, layer] : llvm::enumerate(graph.layers))
    layers.push_back(json::Object{
        {"layer", layer.id},
        {"name", layer.name},
        {"forward_seconds", layer.forwardSeconds},
        {"backward_seconds", layer.backwardSeconds},
        {"update_seconds", layer.updateSeconds},
        {"activation_bytes", handedOn[l]},
        {"stash_bytes", layer.stashBytes},
        {"parameter_bytes", layer.paramBytes},
        {"optimizer_bytes", layer.optimizerBytes},
    });
  json::Array edges;
  for (const PartitionEdge &e : graph.edges) {
    json::Object edge{{"from", graph.layers[e.from].id},
                      {"to", graph.layers[e.to].id},
                      {"bytes", e.bytes}};
    if (e.tensor >= 0)
      edge["tensor"] = e.tensor;
    edges.push_back(std::move(edge));
  }
  return json::Object{{"format", "strata-profile"},
                      {"version", 1},
                      {"layers", std::move(layers)},
                      {"edges", std::move(edges)}};
}

//===----------------------------------------------------------------------===//
// PipeDream graph.txt
//===----------------------------------------------------------------------===//

/// "node12" -> 12.
static std::optional<int64_t> nodeNumber(StringRef name) {
  name = name.trim();
  int64_t n;
  if (!name.consume_front("node") || name.getAsInteger(10, n))
    return std::nullopt;
  return n;
}

/// The number after `key=`; a bracketed list "[a; b]" is summed.
static std::optional<double> field(StringRef attrs, StringRef key) {
  size_t at = attrs.find((key + "=").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = attrs.drop_front(at + key.size() + 1);
  if (rest.consume_front("[")) {
    StringRef list = rest.take_until([](char c) { return c == ']'; });
    SmallVector<StringRef> items;
    list.split(items, ';', -1, false);
    double total = 0;
    for (StringRef item : items) {
      double v;
      if (item.trim().getAsDouble(v))
        return std::nullopt;
      total += v;
    }
    return total;
  }
  StringRef number = rest.take_until([](char c) { return c == ','; }).trim();
  double v;
  if (number.getAsDouble(v))
    return std::nullopt;
  return v;
}

namespace {
/// One node of a PipeDream profile graph.
struct PipeDreamNode {
  std::string desc;
  double forwardMs = 0, backwardMs = 0, activation = 0, params = 0;
};
} // namespace

/// What PipeDream's optimizer (optimizer_graph_hierarchical.py) does before
/// it partitions: the `Input*` sources go (their time and sizes are zeroed
/// and they are pinned to the first stage, so they are not the optimizer's
/// to place), and so do the `__getitem__` sinks nothing reads (one pass over
/// the sinks of the graph without the inputs).
static void dropPipeDreamInputsAndDeadSinks(
    std::map<int64_t, PipeDreamNode> &nodes,
    std::vector<std::pair<int64_t, int64_t>> &edges) {
  auto drop = [&](const std::set<int64_t> &gone) {
    for (int64_t id : gone)
      nodes.erase(id);
    llvm::erase_if(edges, [&](const std::pair<int64_t, int64_t> &edge) {
      return gone.count(edge.first) || gone.count(edge.second);
    });
  };
  std::set<int64_t> hasInput, hasOutput, gone;
  for (auto [from, to] : edges) {
    hasOutput.insert(from);
    hasInput.insert(to);
  }
  for (auto &[id, node] : nodes)
    if (!hasInput.count(id) && StringRef(node.desc).starts_with("Input"))
      gone.insert(id);
  drop(gone);
  hasOutput.clear();
  for (auto [from, to] : edges)
    hasOutput.insert(from);
  gone.clear();
  for (auto &[id, node] : nodes)
    if (!hasOutput.count(id) && StringRef(node.desc).starts_with("__getitem__"))
      gone.insert(id);
  drop(gone);
}

Expected<LayerGraph> mlir::strata::parsePipeDreamGraph(StringRef text,
                                                       StringRef source) {
  using Node = PipeDreamNode;
  std::map<int64_t, Node> nodes;
  std::vector<std::pair<int64_t, int64_t>> edges;
  SmallVector<StringRef> lines;
  text.split(lines, '\n', -1, false);
  for (auto [n, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.trim();
    if (line.empty())
      continue;
    std::string where = (source + ":" + Twine(n + 1)).str();
    size_t first = line.find(" -- ");
    if (first == StringRef::npos)
      return makeError(where + ": expected 'nodeN -- ...'");
    std::optional<int64_t> id = nodeNumber(line.take_front(first));
    if (!id)
      return makeError(where + ": expected a node name 'nodeN'");
    if (!line.contains("forward_compute_time=")) {
      std::optional<int64_t> to = nodeNumber(line.drop_front(first + 4));
      if (!to)
        return makeError(where + ": expected an edge 'nodeA -- nodeB'");
      edges.emplace_back(*id, *to);
      continue;
    }
    size_t last = line.rfind(" -- ");
    Node node;
    node.desc = line.slice(first + 4, last).trim().str();
    StringRef attrs = line.drop_front(last + 4);
    std::optional<double> fwd = field(attrs, "forward_compute_time");
    std::optional<double> bwd = field(attrs, "backward_compute_time");
    std::optional<double> act = field(attrs, "activation_size");
    std::optional<double> par = field(attrs, "parameter_size");
    if (!fwd || !bwd || !act || !par)
      return makeError(where + ": expected forward_compute_time, "
                               "backward_compute_time, activation_size and "
                               "parameter_size");
    for (auto [key, value] : {std::pair{"forward_compute_time", *fwd},
                              std::pair{"backward_compute_time", *bwd},
                              std::pair{"activation_size", *act},
                              std::pair{"parameter_size", *par}})
      if (!std::isfinite(value) || value < 0)
        return makeError(where + ": " + key +
                         " must be a finite non-negative number, got " +
                         llvm::formatv("{0}", value).str());
    node.forwardMs = *fwd;
    node.backwardMs = *bwd;
    node.activation = *act;
    node.params = *par;
    if (!nodes.emplace(*id, std::move(node)).second)
      return makeError(where + ": node" + Twine(*id) + " is described twice");
  }
  if (nodes.empty())
    return makeError(source + ": no nodes");
  for (auto [from, to] : edges)
    if (!nodes.count(from) || !nodes.count(to))
      return makeError(source + ": edge node" + Twine(from) + " -- node" +
                       Twine(to) + " names an undescribed node");
  dropPipeDreamInputsAndDeadSinks(nodes, edges);
  if (nodes.empty())
    return makeError(source + ": no nodes besides inputs and dead sinks");
  // Kahn's algorithm, smallest node number first.
  std::map<int64_t, std::vector<int64_t>> succ;
  std::map<int64_t, int64_t> indegree;
  for (auto &[id, node] : nodes)
    indegree[id] = 0;
  for (auto [from, to] : edges) {
    succ[from].push_back(to);
    ++indegree[to];
  }
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>>
      ready;
  for (auto &[id, degree] : indegree)
    if (degree == 0)
      ready.push(id);
  std::map<int64_t, unsigned> position;
  LayerGraph graph;
  while (!ready.empty()) {
    int64_t id = ready.top();
    ready.pop();
    position[id] = graph.layers.size();
    const Node &node = nodes[id];
    PartitionLayer layer;
    layer.id = static_cast<int64_t>(graph.layers.size());
    layer.name = ("node" + Twine(id) + " " + node.desc).str();
    layer.forwardSeconds = node.forwardMs * 1e-3;
    layer.backwardSeconds = node.backwardMs * 1e-3;
    layer.paramBytes = node.params;
    layer.optimizerBytes = node.params;
    layer.stashBytes = node.activation;
    graph.layers.push_back(std::move(layer));
    for (int64_t next : succ[id])
      if (--indegree[next] == 0)
        ready.push(next);
  }
  if (graph.layers.size() != nodes.size())
    return makeError(source + ": the graph has a cycle");
  // A node's output is one tensor (numbered by the node's position) read
  // by every successor.
  for (auto &[id, targets] : succ) {
    unsigned from = position[id];
    for (int64_t t : std::set<int64_t>(targets.begin(), targets.end()))
      graph.edges.push_back({from, position[t], nodes[id].activation,
                             static_cast<int64_t>(from)});
  }
  llvm::sort(graph.edges, [](const PartitionEdge &a, const PartitionEdge &b) {
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
  return graph;
}

Expected<LayerGraph> mlir::strata::loadLayerGraph(StringRef path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  StringRef text = (*buffer)->getBuffer();
  if (path.ends_with(".json")) {
    Expected<LayerProfileSet> profile = parseLayerProfile(text, path);
    if (!profile)
      return profile.takeError();
    return profileToGraph(*profile);
  }
  return parsePipeDreamGraph(text, path);
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

static double gib(double bytes) { return bytes / (1024.0 * 1024 * 1024); }

/// The position in `graph` of the layer at position `p` of `eval`'s order.
static unsigned graphPosition(const PartitionEvaluation &eval, unsigned p) {
  return eval.order.empty() ? p : eval.order[p];
}

/// The ids of a stage's layers as runs of consecutive graph positions:
/// "3..7", or "0..2+5..6" for a stage that is not contiguous in the graph's
/// order (a down-set partition's).
static std::string stageLayers(const LayerGraph &graph,
                               const PartitionEvaluation &eval,
                               const StagePlan &st) {
  std::vector<unsigned> positions;
  for (unsigned p = st.firstLayer; p <= st.lastLayer; ++p)
    positions.push_back(graphPosition(eval, p));
  llvm::sort(positions);
  std::string text;
  for (size_t k = 0; k < positions.size();) {
    size_t end = k + 1;
    while (end < positions.size() && positions[end] == positions[end - 1] + 1)
      ++end;
    text +=
        (Twine(text.empty() ? "" : "+") + Twine(graph.layers[positions[k]].id) +
         ".." + Twine(graph.layers[positions[end - 1]].id))
            .str();
    k = end;
  }
  return text;
}

static void printStages(raw_ostream &os, const LayerGraph &graph,
                        const PartitionEvaluation &eval) {
  os << "  stage  layers            replicas  devices     compute_ms  "
        "sync_ms   xfer_ms   stage_ms  in_flight  memory_GiB\n";
  for (auto [s, st] : llvm::enumerate(eval.stages)) {
    std::string layers = stageLayers(graph, eval, st);
    std::string devs =
        (Twine(st.firstDevice) + ".." + Twine(st.firstDevice + st.replicas - 1))
            .str();
    os << format("  %5zu  %-16s  %8lld  %-10s  %10.4f  %8.4f  %8.4f  %9.4f  "
                 "%9lld  %10.3f\n",
                 s, layers.c_str(), static_cast<long long>(st.replicas),
                 devs.c_str(), st.computeSeconds * 1e3, st.syncSeconds * 1e3,
                 st.transferSeconds * 1e3, st.seconds * 1e3,
                 static_cast<long long>(st.inFlight), gib(st.memoryBytes));
  }
}

static void printSummary(raw_ostream &os, const PartitionEvaluation &eval,
                         double dpStep) {
  os << format("  slowest stage %.4f ms per micro-batch, bubble %.1f%%, "
               "step %.4f ms, peak memory %.3f GiB%s",
               eval.stageSeconds * 1e3, eval.bubbleFraction * 100,
               eval.stepSeconds * 1e3, gib(eval.peakMemoryBytes),
               eval.fitsMemory ? "" : " (does not fit)");
  if (eval.stepSeconds > 0)
    os << format(", %.2fx data parallelism", dpStep / eval.stepSeconds);
  os << "\n";
  if (eval.replayNote.empty())
    os << format("  timeline replay: step %.4f ms\n",
                 eval.replayStepSeconds * 1e3);
  else
    os << "  timeline replay: none (" << eval.replayNote << ")\n";
}

void mlir::strata::printPartitionReport(raw_ostream &os,
                                        const LayerGraph &graph,
                                        const PartitionResult &result) {
  const PartitionOptions &o = result.options;
  os << "pipeline partition: " << graph.layers.size() << " layers, "
     << o.devices << " devices, " << result.best.stages.size()
     << " stages, objective " << stringifyObjective(o.objective)
     << ", schedule " << stringifySchedule(o.schedule) << ", " << o.microBatches
     << " micro-batches, " << format("%.3f", gib(o.memoryBytes))
     << " GiB per device\n";
  CostTerms defaults;
  defaults.allReduceFactor = 2.0;
  if (stringifyCostTerms(o.terms) != stringifyCostTerms(defaults))
    os << "cost terms: " << stringifyCostTerms(o.terms) << "\n";
  if (result.cutsSearched == CutSpace::DownSets)
    os << "cuts: the " << result.downSets
       << " down-sets of the layer DAG (stages need not be contiguous in the "
          "input's order)\n";
  else if (!result.cutsNote.empty())
    os << "cuts: prefixes of the layer order (" << result.cutsNote << ")\n";
  printStages(os, graph, result.best);
  printSummary(os, result.best, result.dataParallel.stepSeconds);
  os << "uniform partition (equal layer counts, "
     << result.uniform.stages.size() << " stages):\n";
  printStages(os, graph, result.uniform);
  printSummary(os, result.uniform, result.dataParallel.stepSeconds);
  os << "data parallelism (" << o.devices << " replicas):\n";
  printSummary(os, result.dataParallel, result.dataParallel.stepSeconds);
}

static json::Value evaluationToJSON(const LayerGraph &graph,
                                    const PartitionEvaluation &eval) {
  json::Array stages;
  for (const StagePlan &st : eval.stages)
    stages.push_back(json::Object{
        {"first_layer", graph.layers[graphPosition(eval, st.firstLayer)].id},
        {"last_layer", graph.layers[graphPosition(eval, st.lastLayer)].id},
        {"layers", stageLayers(graph, eval, st)},
        {"replicas", st.replicas},
        {"first_device", st.firstDevice},
        {"compute_seconds", st.computeSeconds},
        {"sync_seconds", st.syncSeconds},
        {"update_seconds", st.updateSeconds},
        {"transfer_seconds", st.transferSeconds},
        {"stage_seconds", st.seconds},
        {"in_flight", st.inFlight},
        {"memory_bytes", st.memoryBytes},
    });
  return json::Object{{"stages", std::move(stages)},
                      {"objective", eval.objective},
                      {"slowest_stage_seconds", eval.stageSeconds},
                      {"bubble_fraction", eval.bubbleFraction},
                      {"step_seconds", eval.stepSeconds},
                      {"peak_memory_bytes", eval.peakMemoryBytes},
                      {"fits_memory", eval.fitsMemory},
                      {"replay_step_seconds", eval.replayStepSeconds},
                      {"replay_note", eval.replayNote}};
}

json::Value mlir::strata::partitionReportToJSON(const LayerGraph &graph,
                                                const PartitionResult &result) {
  const PartitionOptions &o = result.options;
  return json::Object{
      {"layers", static_cast<int64_t>(graph.layers.size())},
      {"devices", o.devices},
      {"objective", stringifyObjective(o.objective)},
      {"schedule", stringifySchedule(o.schedule)},
      {"cost_terms", stringifyCostTerms(o.terms)},
      {"cuts",
       result.cutsSearched == CutSpace::DownSets ? "down-sets" : "prefixes"},
      {"down_sets", result.downSets},
      {"cuts_note", result.cutsNote},
      {"micro_batches", o.microBatches},
      {"memory_bytes_per_device", o.memoryBytes},
      {"partition", evaluationToJSON(graph, result.best)},
      {"uniform", evaluationToJSON(graph, result.uniform)},
      {"data_parallel", evaluationToJSON(graph, result.dataParallel)},
      {"speedup_over_data_parallel", result.speedup},
      {"uniform_speedup_over_data_parallel", result.uniformSpeedup},
  };
}
