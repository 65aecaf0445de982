//===- PipelineDownSets.cpp - Down-sets of a layer DAG --------------------===//
//
// Breadth first by size: the down-sets with n + 1 layers are those with n
// plus one layer whose predecessors they all hold (a "ready" layer). A state
// is kept as the first position it lacks plus the sorted positions past it
// that it holds, which identifies it (the map key) and answers membership;
// its ready layers and the tensors leaving it are carried along, so a new
// state costs its ready list and the readers of the added layer, not the
// graph. The supersets of a state are the states reachable from it through
// those one-layer steps.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/PipelineDownSets.h"
#include "strata/Analysis/PipelinePartition.h"

#include <algorithm>
#include <map>

using namespace mlir::strata;

std::vector<bool> DownSetLattice::members(uint32_t s) const {
  std::vector<bool> in(size.empty() ? 0 : size.back(), false);
  for (; s != 0; s = parent[s])
    in[added[s]] = true;
  return in;
}

std::vector<unsigned> DownSetLattice::difference(uint32_t a, uint32_t b) const {
  std::vector<bool> inA = members(a), inB = members(b);
  std::vector<unsigned> out;
  for (unsigned p = 0; p < inB.size(); ++p)
    if (inB[p] && !inA[p])
      out.push_back(p);
  return out;
}

namespace {
/// A state being expanded: positions [0, first) and `extra` (sorted, all
/// past `first`) are in it; `ready` (sorted) are the layers outside it whose
/// predecessors it holds; `open` (sorted) the tensors leaving it.
struct Frontier {
  uint32_t first = 0;
  std::vector<uint32_t> extra, ready, open;

  bool contains(uint32_t p) const {
    return p < first || std::binary_search(extra.begin(), extra.end(), p);
  }
};

/// The graph's dependencies and tensors by position.
struct Dependencies {
  std::vector<std::vector<uint32_t>> preds, succs, produced, read;
  std::vector<LayerTensor> tensors;

  explicit Dependencies(const LayerGraph &graph) {
    size_t n = graph.layers.size();
    preds.resize(n);
    succs.resize(n);
    produced.resize(n);
    read.resize(n);
    for (const PartitionEdge &e : graph.edges) {
      preds[e.to].push_back(e.from);
      succs[e.from].push_back(e.to);
    }
    for (size_t p = 0; p < n; ++p) {
      for (std::vector<uint32_t> *list : {&preds[p], &succs[p]}) {
        std::sort(list->begin(), list->end());
        list->erase(std::unique(list->begin(), list->end()), list->end());
      }
    }
    tensors = graph.tensors();
    for (uint32_t t = 0; t < tensors.size(); ++t) {
      if (tensors[t].bytes == 0)
        continue; // Never changes a cut.
      produced[tensors[t].from].push_back(t);
      for (unsigned r : tensors[t].readers)
        read[r].push_back(t);
    }
  }
};
} // namespace

/// The state `from` plus layer `v` (ready in it).
static Frontier extend(const Frontier &from, uint32_t v,
                       const Dependencies &deps) {
  Frontier to;
  to.extra = from.extra;
  if (v == from.first) {
    to.first = v + 1;
    // Absorb the extras that now continue the prefix.
    size_t k = 0;
    while (k < to.extra.size() && to.extra[k] == to.first) {
      ++to.first;
      ++k;
    }
    to.extra.erase(to.extra.begin(), to.extra.begin() + k);
  } else {
    to.first = from.first;
    to.extra.insert(std::lower_bound(to.extra.begin(), to.extra.end(), v), v);
  }
  // Ready: the old ones but v, and v's successors whose predecessors are
  // all in now.
  for (uint32_t r : from.ready)
    if (r != v)
      to.ready.push_back(r);
  for (uint32_t w : deps.succs[v])
    if (std::all_of(deps.preds[w].begin(), deps.preds[w].end(),
                    [&](uint32_t u) { return to.contains(u); }))
      to.ready.push_back(w);
  std::sort(to.ready.begin(), to.ready.end());
  // Open tensors: those v read may have lost their last reader outside.
  for (uint32_t t : from.open) {
    const std::vector<unsigned> &readers = deps.tensors[t].readers;
    bool readByV = std::binary_search(readers.begin(), readers.end(), v);
    if (!readByV || !std::all_of(readers.begin(), readers.end(),
                                 [&](unsigned r) { return to.contains(r); }))
      to.open.push_back(t);
  }
  // v's own tensors: no reader of v can be in a down-set without v.
  for (uint32_t t : deps.produced[v])
    to.open.push_back(t);
  std::sort(to.open.begin(), to.open.end());
  return to;
}

/// The supersets of every state from the one-layer steps `cover` (states
/// ordered by size, so every step goes to a later state); false past
/// `maxPairs`.
static bool collectSupersets(const std::vector<std::vector<uint32_t>> &cover,
                             uint64_t maxPairs, DownSetLattice &lattice) {
  size_t n = cover.size();
  lattice.superBegin.assign(1, 0);
  std::vector<uint32_t> seen(n, UINT32_MAX), stack, found;
  for (uint32_t s = 0; s < n; ++s) {
    found.clear();
    stack.assign(cover[s].begin(), cover[s].end());
    for (uint32_t t : stack)
      seen[t] = s;
    while (!stack.empty()) {
      uint32_t t = stack.back();
      stack.pop_back();
      found.push_back(t);
      for (uint32_t u : cover[t])
        if (seen[u] != s) {
          seen[u] = s;
          stack.push_back(u);
        }
    }
    if (lattice.supersets.size() + found.size() > maxPairs)
      return false;
    std::sort(found.begin(), found.end());
    lattice.supersets.insert(lattice.supersets.end(), found.begin(),
                             found.end());
    lattice.superBegin.push_back(lattice.supersets.size());
  }
  return true;
}

std::string mlir::strata::enumerateDownSets(const LayerGraph &graph,
                                            uint64_t maxStates,
                                            uint64_t maxPairs,
                                            DownSetLattice &lattice) {
  lattice = DownSetLattice();
  Dependencies deps(graph);
  uint32_t n = static_cast<uint32_t>(graph.layers.size());
  Frontier empty;
  for (uint32_t p = 0; p < n; ++p)
    if (deps.preds[p].empty())
      empty.ready.push_back(p);
  lattice.size = {0};
  lattice.parent = {0};
  lattice.added = {0};
  lattice.outBytes = {0.0};
  std::vector<std::vector<uint32_t>> cover(1);
  std::vector<Frontier> level{std::move(empty)};
  uint32_t levelBase = 0;
  for (uint32_t size = 0; size < n; ++size) {
    std::map<std::vector<uint32_t>, uint32_t> index;
    std::vector<Frontier> next;
    uint32_t nextBase = static_cast<uint32_t>(lattice.size.size());
    for (uint32_t k = 0; k < level.size(); ++k) {
      uint32_t from = levelBase + k;
      for (uint32_t v : level[k].ready) {
        Frontier to = extend(level[k], v, deps);
        std::vector<uint32_t> key;
        key.reserve(to.extra.size() + 1);
        key.push_back(to.first);
        key.insert(key.end(), to.extra.begin(), to.extra.end());
        auto [it, inserted] = index.try_emplace(
            std::move(key), static_cast<uint32_t>(lattice.size.size()));
        cover[from].push_back(it->second);
        if (!inserted)
          continue;
        if (lattice.size.size() >= maxStates) {
          lattice = DownSetLattice();
          return "the layer DAG has more than " + std::to_string(maxStates) +
                 " down-sets";
        }
        double out = 0;
        for (uint32_t t : to.open)
          out += deps.tensors[t].bytes;
        lattice.size.push_back(size + 1);
        lattice.parent.push_back(from);
        lattice.added.push_back(v);
        lattice.outBytes.push_back(size + 1 == n ? 0.0 : out);
        cover.emplace_back();
        next.push_back(std::move(to));
      }
    }
    level = std::move(next);
    levelBase = nextBase;
  }
  if (!collectSupersets(cover, maxPairs, lattice)) {
    std::string states = std::to_string(lattice.numStates());
    lattice = DownSetLattice();
    return "the layer DAG's " + states + " down-sets have more than " +
           std::to_string(maxPairs) +
           " nested pairs, too many for the exhaustive search";
  }
  return "";
}
