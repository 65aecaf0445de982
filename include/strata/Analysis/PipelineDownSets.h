//===- PipelineDownSets.h - Down-sets of a layer DAG ------------*- C++ -*-===//
//
// The cuts a pipeline partition may use when the layer order is free: the
// down-sets (ideals) of the layer graph's DAG, the sets of layers that hold
// the producer of everything they read. A partition into S stages is a chain
// of down-sets {} = J0 < J1 < ... < JS = every layer, stage s holding
// J(s+1) \ Js; listing the stages in order, each stage's layers in their
// graph order, is a topological order in which the stages are contiguous.
// A chain graph's down-sets are its prefixes; parallel branches multiply
// them (branches of b and c layers beside each other give (b + 1) (c + 1)
// down-sets around the fork), so the enumeration stops at a cap.
// PipeDream's optimizer partitions over the same sets (its antichain DAG's
// states). Pure C++ (no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_PIPELINEDOWNSETS_H
#define STRATA_ANALYSIS_PIPELINEDOWNSETS_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::strata {
struct LayerGraph;

/// Every down-set of a layer graph, and which contain which.
struct DownSetLattice {
  /// Layers in each state. State 0 is the empty set and the last state
  /// every layer; states are ordered by size, ties by order of discovery
  /// (breadth first, adding layers in ascending position): deterministic.
  std::vector<uint32_t> size;
  /// State s > 0 is state parent[s] plus the layer at position added[s].
  std::vector<uint32_t> parent, added;
  /// Bytes of the tensors produced inside state s that a layer outside it
  /// reads, summed in tensor order (0 for the first and the last state).
  std::vector<double> outBytes;
  /// The states strictly containing state s, ascending (so by size):
  /// supersets[superBegin[s] .. superBegin[s + 1]).
  std::vector<uint64_t> superBegin;
  std::vector<uint32_t> supersets;

  size_t numStates() const { return size.size(); }
  uint64_t numPairs() const { return supersets.size(); }
  /// Whether each layer position is in state `s`.
  std::vector<bool> members(uint32_t s) const;
  /// Positions of the layers in state `b` but not in `a` (a inside b),
  /// ascending.
  std::vector<unsigned> difference(uint32_t a, uint32_t b) const;
};

/// Enumerates the down-sets of `graph` (a verified graph: its edges, zero
/// bytes included, are the dependencies) and the pairs of nested ones.
/// Returns "" on success, else why it stopped: more than `maxStates` states
/// or more than `maxPairs` nested pairs.
std::string enumerateDownSets(const LayerGraph &graph, uint64_t maxStates,
                              uint64_t maxPairs, DownSetLattice &lattice);

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_PIPELINEDOWNSETS_H
