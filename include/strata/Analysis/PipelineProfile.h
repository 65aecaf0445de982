//===- PipelineProfile.h - Layer profiles and partition reports -*- C++ -*-===//
//
// Readers for per-layer profiles the pipeline partitioner consumes, and the
// partition report. Depends on LLVM Support only (no MLIR).
//
// Strata's profile (JSON, what `strata-run --profile` writes and
// `--strata-partition-pipeline=profile=FILE` / `strata-partition` read):
//
//   {"format": "strata-profile", "version": 1,
//    "layers": [{"layer": 0, "name": "fc0",
//                "forward_seconds": 1.2e-4, "backward_seconds": 2.5e-4,
//                "update_seconds": 1e-5,           (optional)
//                "activation_bytes": 131072,       (optional)
//                "stash_bytes": 262144,            (optional)
//                "parameter_bytes": 401408,        (optional)
//                "optimizer_bytes": 802816}, ...], (optional)
//    "edges": [{"from": 0, "to": 1, "bytes": 131072,
//               "tensor": 7}, ...]}                 (optional; tensor too)
//
// Times are per micro-batch on one device; `layer` is the `strata.layer` id;
// `edges` name layer ids and are the layers' dependencies (a layer may only
// go to a stage after those of the layers it reads); edges with the same
// `tensor` id carry one tensor to several readers, which crosses a cut once
// (without an id each edge is a tensor of its own). `activation_bytes` is
// what the layer hands to later layers: without `edges`, a chain of edges
// layer -> next layer carries it.
//
// PipeDream's profile (`graph.txt`, msr-fiddle/pipedream): node lines
//   nodeN -- <desc> -- forward_compute_time=<ms>, backward_compute_time=<ms>,
//   activation_size=<bytes>, parameter_size=<bytes>
// and edge lines `nodeA -- nodeB`. Nodes are ordered topologically (ties by
// node number); a node's output (activation_size) is one tensor read by each
// of its successors (an edge to each), stashed for backward; optimizer state
// is taken as one momentum buffer (parameter_size), as PipeDream's SGD runs
// had.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_PIPELINEPROFILE_H
#define STRATA_ANALYSIS_PIPELINEPROFILE_H

#include "strata/Analysis/PipelinePartition.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::strata {

/// One layer of a Strata profile; absent fields stay empty.
struct LayerProfile {
  int64_t layer = 0;
  std::string name;
  double forwardSeconds = 0;
  double backwardSeconds = 0;
  std::optional<double> updateSeconds;
  std::optional<double> activationBytes;
  std::optional<double> stashBytes;
  std::optional<double> paramBytes;
  std::optional<double> optimizerBytes;
};

struct ProfileEdge {
  int64_t from = 0;
  int64_t to = 0;
  double bytes = 0;
  /// Edges with the same id carry one tensor to several readers (-1: none).
  int64_t tensor = -1;
};

struct LayerProfileSet {
  std::vector<LayerProfile> layers;
  std::optional<std::vector<ProfileEdge>> edges;
};

/// Parses a Strata profile; `sourceName` prefixes error messages.
llvm::Expected<LayerProfileSet> parseLayerProfile(llvm::StringRef json,
                                                  llvm::StringRef sourceName);
/// The layer graph of a profile alone (layers in ascending id; missing sizes
/// are 0, a missing stash is the activation).
llvm::Expected<LayerGraph> profileToGraph(const LayerProfileSet &profile);
/// Writes `graph` as a Strata profile.
llvm::json::Value layerGraphToProfile(const LayerGraph &graph);

/// Parses PipeDream's graph.txt.
llvm::Expected<LayerGraph> parsePipeDreamGraph(llvm::StringRef text,
                                               llvm::StringRef sourceName);

/// Loads a file as a Strata profile (.json) or a PipeDream graph (else).
llvm::Expected<LayerGraph> loadLayerGraph(llvm::StringRef path);

/// Human-readable report of a successful partition.
void printPartitionReport(llvm::raw_ostream &os, const LayerGraph &graph,
                          const PartitionResult &result);
/// The same as JSON.
llvm::json::Value partitionReportToJSON(const LayerGraph &graph,
                                        const PartitionResult &result);

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_PIPELINEPROFILE_H
