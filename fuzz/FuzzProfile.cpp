//===- FuzzProfile.cpp - Fuzz the layer profile readers -------------------===//
//
// libFuzzer target `strata-fuzz-profile`. The first byte of an input picks
// the reader (even: a Strata profile, JSON, as `strata-run --profile` writes
// it; odd: PipeDream's graph.txt), the rest is the file. A profile that
// parses is turned into a layer graph and, when that verifies and has at most
// kMaxPartitionLayers layers, partitioned on a 2 x 2 device topology (what
// --strata-partition-pipeline profile=FILE and strata-partition do; bit 5
// of the selector cuts at down-sets), and
// both reports are printed to a null stream.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelinePartition.h"
#include "strata/Analysis/PipelineProfile.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

using namespace mlir::strata;

static constexpr size_t kMaxInputBytes = 64 * 1024;
static constexpr size_t kMaxPartitionLayers = 64;

static void partition(const LayerGraph &graph, uint8_t selector) {
  if (!graph.verify().empty() || graph.layers.empty() ||
      graph.layers.size() > kMaxPartitionLayers)
    return;
  PartitionTopology topology;
  topology.devicesPerNode = 2;
  topology.nodes = 2;
  topology.intraBandwidth = 100e9;
  topology.intraLatency = 2e-6;
  topology.interBandwidth = 10e9;
  topology.interLatency = 5e-6;
  topology.memoryBytes = 16e9;
  PartitionOptions options;
  options.objective = static_cast<PartitionObjective>((selector >> 1) % 3);
  options.schedule = static_cast<PipelineSchedule>((selector >> 3) % 4);
  options.microBatches = 8;
  options.cuts = (selector >> 5) & 1 ? CutSpace::DownSets : CutSpace::Prefixes;
  PartitionResult result = partitionPipeline(graph, topology, options);
  if (!result.ok())
    return;
  printPartitionReport(llvm::nulls(), graph, result);
  llvm::nulls() << partitionReportToJSON(graph, result);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > kMaxInputBytes)
    return -1;
  uint8_t selector = data[0];
  llvm::StringRef text(reinterpret_cast<const char *>(data + 1), size - 1);
  if (selector % 2 == 0) {
    llvm::Expected<LayerProfileSet> profile =
        parseLayerProfile(text, "fuzz.profile.json");
    if (!profile) {
      llvm::consumeError(profile.takeError());
      return 0;
    }
    llvm::Expected<LayerGraph> graph = profileToGraph(*profile);
    if (!graph) {
      llvm::consumeError(graph.takeError());
      return 0;
    }
    llvm::nulls() << layerGraphToProfile(*graph);
    partition(*graph, selector);
    return 0;
  }
  llvm::Expected<LayerGraph> graph = parsePipeDreamGraph(text, "graph.txt");
  if (!graph) {
    llvm::consumeError(graph.takeError());
    return 0;
  }
  llvm::nulls() << layerGraphToProfile(*graph);
  partition(*graph, selector);
  return 0;
}
