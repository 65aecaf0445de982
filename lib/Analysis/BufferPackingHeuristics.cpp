//===- BufferPackingHeuristics.cpp - Greedy buffer packings ---------------===//
//
// The three heuristics of BufferPacking.h. Each places one item at a time
// against the already placed items that are live at the same time; a
// ConflictIndex finds those in O(log n + k).
//
//===----------------------------------------------------------------------===//

#include "BufferPackingInternal.h"
#include "strata/Analysis/BufferPacking.h"

#include <algorithm>
#include <set>

using namespace mlir::strata;
using namespace mlir::strata::detail;

namespace {
/// The placed items, queried for those live at some time of a new item's
/// lifetime. An item is live during [start, end) of a new item when it is
/// live at `start` (a stabbing query on a segment tree over the items'
/// distinct start times) or it starts inside (start, end) (a range of an
/// ordered set); the two never report the same item.
class ConflictIndex {
public:
  explicit ConflictIndex(const std::vector<PackItem> &items);
  void insert(size_t item);
  /// Appends the placed items live at the same time as `item`.
  void collect(size_t item, std::vector<size_t> &out) const;
  /// Forgets every placed item.
  void clear();

private:
  size_t pointIndex(int64_t time) const {
    return std::lower_bound(points.begin(), points.end(), time) -
           points.begin();
  }

  const std::vector<PackItem> &items;
  std::vector<int64_t> points;
  size_t leaves = 1;
  std::vector<std::vector<size_t>> nodes;
  std::vector<size_t> touched;
  std::set<std::pair<int64_t, size_t>> byStart;
};

/// Bytes [lo, hi) taken by a placed item.
struct Span {
  int64_t lo;
  int64_t hi;
};
} // namespace

ConflictIndex::ConflictIndex(const std::vector<PackItem> &items)
    : items(items) {
  points.reserve(items.size());
  for (const PackItem &item : items)
    points.push_back(item.start);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  while (leaves < points.size())
    leaves *= 2;
  nodes.resize(2 * leaves);
}

void ConflictIndex::insert(size_t item) {
  // The item covers the start times in [start, end): leaves [lo, hi).
  size_t lo = pointIndex(items[item].start) + leaves;
  size_t hi = pointIndex(items[item].end) + leaves;
  for (; lo < hi; lo /= 2, hi /= 2) {
    if (lo & 1) {
      touched.push_back(lo);
      nodes[lo++].push_back(item);
    }
    if (hi & 1) {
      touched.push_back(--hi);
      nodes[hi].push_back(item);
    }
  }
  byStart.insert({items[item].start, item});
}

void ConflictIndex::collect(size_t item, std::vector<size_t> &out) const {
  const PackItem &query = items[item];
  for (size_t node = pointIndex(query.start) + leaves; node >= 1; node /= 2)
    out.insert(out.end(), nodes[node].begin(), nodes[node].end());
  for (auto it = byStart.upper_bound({query.start, SIZE_MAX});
       it != byStart.end() && it->first < query.end; ++it)
    out.push_back(it->second);
}

void ConflictIndex::clear() {
  for (size_t node : touched)
    nodes[node].clear();
  touched.clear();
  byStart.clear();
}

/// The bytes taken by the placed items live with `item`, by offset.
static void conflictSpans(const ConflictIndex &index, size_t item,
                          const std::vector<PackItem> &items,
                          const std::vector<int64_t> &offsets,
                          std::vector<size_t> &scratch,
                          std::vector<Span> &spans) {
  scratch.clear();
  index.collect(item, scratch);
  spans.clear();
  for (size_t other : scratch)
    spans.push_back(
        {offsets[other], saturatingAdd(offsets[other], items[other].size)});
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi;
  });
}

/// The lowest aligned offset >= base where `size` bytes miss every span
/// (spans sorted by their start). Saturates at kMaxOffset.
static int64_t firstFit(const std::vector<Span> &spans, int64_t base,
                        int64_t size, int64_t alignment) {
  int64_t at = saturatingAlignUp(base, alignment);
  for (const Span &span : spans) {
    if (saturatingAdd(at, size) <= span.lo)
      break;
    if (span.hi > at)
      at = saturatingAlignUp(span.hi, alignment);
  }
  return at;
}

/// The aligned start of the smallest gap between spans that holds `size`
/// bytes (the lowest of equal gaps); above every span when none does.
static int64_t bestFit(const std::vector<Span> &spans, int64_t size,
                       int64_t alignment) {
  int64_t top = 0, best = -1, bestGap = kMaxOffset;
  for (const Span &span : spans) {
    if (span.lo > top) {
      int64_t at = saturatingAlignUp(top, alignment);
      int64_t gap = span.lo - top;
      if (saturatingAdd(at, size) <= span.lo && gap < bestGap) {
        best = at;
        bestGap = gap;
      }
    }
    top = std::max(top, span.hi);
  }
  return best >= 0 ? best : saturatingAlignUp(top, alignment);
}

static uint64_t lifetime(const PackItem &item) {
  return uint64_t(item.end) - uint64_t(item.start);
}

/// Item indices sorted by size (descending), then start, then id.
static std::vector<size_t> bySizeOrder(const std::vector<PackItem> &items) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const PackItem &x = items[a], &y = items[b];
    if (x.size != y.size)
      return x.size > y.size;
    if (x.start != y.start)
      return x.start < y.start;
    return x.id < y.id;
  });
  return order;
}

/// Places the items in `order`, each at `place(spans, item)`.
template <typename PlaceFn>
static std::vector<int64_t> placeInOrder(const std::vector<PackItem> &items,
                                         const std::vector<size_t> &order,
                                         PlaceFn place) {
  std::vector<int64_t> offsets(items.size(), 0);
  ConflictIndex index(items);
  std::vector<size_t> scratch;
  std::vector<Span> spans;
  for (size_t item : order) {
    conflictSpans(index, item, items, offsets, scratch, spans);
    offsets[item] = place(spans, items[item]);
    index.insert(item);
  }
  return offsets;
}

/// TFLite's greedy-by-size: largest first, each at the lowest offset free
/// during its lifetime (the first gap that fits).
static std::vector<int64_t> greedyBySize(const std::vector<PackItem> &items) {
  return placeInOrder(items, bySizeOrder(items),
                      [](const std::vector<Span> &spans, const PackItem &item) {
                        return firstFit(spans, 0, item.size, item.alignment);
                      });
}

/// XLA's best fit in one order.
static std::vector<int64_t> bestFitInOrder(const std::vector<PackItem> &items,
                                           const std::vector<size_t> &order) {
  return placeInOrder(items, order,
                      [](const std::vector<Span> &spans, const PackItem &item) {
                        return bestFit(spans, item.size, item.alignment);
                      });
}

/// XLA's GlobalDecreasingSizeBestFitHeap in its two orders, spatial (size,
/// then lifetime length, descending) and temporal (lifetime length, then
/// size, descending); the one with the lower peak (spatial on a tie).
static std::vector<int64_t> bestFitPacking(const std::vector<PackItem> &items) {
  std::vector<size_t> spatial(items.size());
  for (size_t i = 0; i < spatial.size(); ++i)
    spatial[i] = i;
  std::vector<size_t> temporal = spatial;
  std::sort(spatial.begin(), spatial.end(), [&](size_t a, size_t b) {
    const PackItem &x = items[a], &y = items[b];
    if (x.size != y.size)
      return x.size > y.size;
    if (lifetime(x) != lifetime(y))
      return lifetime(x) > lifetime(y);
    return x.id < y.id;
  });
  std::sort(temporal.begin(), temporal.end(), [&](size_t a, size_t b) {
    const PackItem &x = items[a], &y = items[b];
    if (lifetime(x) != lifetime(y))
      return lifetime(x) > lifetime(y);
    if (x.size != y.size)
      return x.size > y.size;
    return x.id < y.id;
  });
  std::vector<int64_t> first = bestFitInOrder(items, spatial);
  std::vector<int64_t> second = bestFitInOrder(items, temporal);
  if (candidatePeak(items, second) < candidatePeak(items, first))
    return second;
  return first;
}

/// The unplaced items of fixed-structure, by size rank and by time.
namespace {
struct Unplaced {
  std::set<size_t> byRank;
  std::set<std::pair<int64_t, size_t>> byStart, byEnd;

  void erase(size_t rank, const PackItem &item) {
    byRank.erase(rank);
    byStart.erase({item.start, rank});
    byEnd.erase({item.end, rank});
  }
};
} // namespace

/// "Memory reduction for fixed structures", as we read it. The largest
/// unplaced buffer L opens a segment [base, base + size(L)) on top of the
/// previous segments, L at its bottom. The unplaced buffers that are never
/// live with L are then offered to the segment, largest first: each goes to
/// the lowest offset inside the segment where it misses the segment's
/// buffers live with it (first fit), or waits for a later segment when it
/// does not fit. The next segment starts where this one ends. Buffers live
/// with L cannot share its segment (L fills it), so every segment holds L
/// plus buffers disjoint from L in time; the peak is the sum of the leaders'
/// sizes. Each segment scans the buffers disjoint in time from its leader,
/// so buffers that keep being offered and not fitting cost a rescan.
static std::vector<int64_t>
fixedStructurePacking(const std::vector<PackItem> &items) {
  std::vector<size_t> order = bySizeOrder(items);
  Unplaced unplaced;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const PackItem &item = items[order[rank]];
    unplaced.byRank.insert(rank);
    unplaced.byStart.insert({item.start, rank});
    unplaced.byEnd.insert({item.end, rank});
  }
  std::vector<int64_t> offsets(items.size(), 0);
  ConflictIndex index(items);
  std::vector<size_t> scratch, candidates;
  std::vector<Span> spans;
  int64_t base = 0;
  while (!unplaced.byRank.empty()) {
    size_t leader = order[*unplaced.byRank.begin()];
    const PackItem &big = items[leader];
    unplaced.erase(*unplaced.byRank.begin(), big);
    offsets[leader] = saturatingAlignUp(base, big.alignment);
    int64_t segmentEnd = saturatingAdd(offsets[leader], big.size);
    index.clear();
    index.insert(leader);
    candidates.clear();
    for (auto it = unplaced.byEnd.begin();
         it != unplaced.byEnd.end() && it->first <= big.start; ++it)
      candidates.push_back(it->second);
    for (auto it = unplaced.byStart.lower_bound({big.end, 0});
         it != unplaced.byStart.end(); ++it)
      candidates.push_back(it->second);
    std::sort(candidates.begin(), candidates.end());
    for (size_t rank : candidates) {
      size_t item = order[rank];
      conflictSpans(index, item, items, offsets, scratch, spans);
      int64_t at = firstFit(spans, offsets[leader], items[item].size,
                            items[item].alignment);
      if (saturatingAdd(at, items[item].size) > segmentEnd)
        continue;
      offsets[item] = at;
      index.insert(item);
      unplaced.erase(rank, items[item]);
    }
    base = segmentEnd;
  }
  return offsets;
}

std::optional<PackCandidate>
detail::runHeuristic(const std::vector<PackItem> &items, PackStrategy strategy,
                     std::string &error) {
  PackCandidate candidate;
  candidate.strategy = stringifyPackStrategy(strategy);
  switch (strategy) {
  case PackStrategy::FixedStructure:
    candidate.offsets = fixedStructurePacking(items);
    break;
  case PackStrategy::GreedySize:
    candidate.offsets = greedyBySize(items);
    break;
  case PackStrategy::BestFit:
    candidate.offsets = bestFitPacking(items);
    break;
  case PackStrategy::Auto:
  case PackStrategy::Exact:
    error = "internal error: not a heuristic";
    return std::nullopt;
  }
  candidate.peak = candidatePeak(items, candidate.offsets);
  if (candidate.peak == kMaxOffset) {
    error = "the " + candidate.strategy + " packing's offsets overflow int64";
    return std::nullopt;
  }
  return candidate;
}
