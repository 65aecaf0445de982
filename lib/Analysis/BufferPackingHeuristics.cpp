//===- BufferPackingHeuristics.cpp - Greedy buffer packings ---------------===//
//
// The three heuristics of BufferPacking.h. Each places one item at a time
// into the gaps between the bytes that already placed items take while it
// is live; an OccupancyIndex answers that as a few merged runs.
//
//===----------------------------------------------------------------------===//

#include "BufferPackingInternal.h"
#include "strata/Analysis/BufferPacking.h"

#include <algorithm>
#include <set>

using namespace mlir::strata;
using namespace mlir::strata::detail;

namespace {
/// Bytes [lo, hi) taken by placed items.
struct Span {
  int64_t lo;
  int64_t hi;
};

/// Sorted, disjoint, non-touching spans: the union of the spans added.
class SpanUnion {
public:
  void add(Span span);
  const std::vector<Span> &runs() const { return spans; }
  void clear() { spans.clear(); }

private:
  std::vector<Span> spans;
};

/// The free gaps in the union of several SpanUnions, walked bottom up. Each
/// list keeps a cursor at its first run ending above the walk's position,
/// advanced by binary search, so a walk costs the alternations between
/// lists rather than the runs it passes.
class GapWalker {
public:
  void clear() { cursors.clear(); }
  void add(const SpanUnion &runs) {
    if (!runs.runs().empty())
      cursors.push_back(
          {runs.runs().data(), runs.runs().data() + runs.runs().size()});
  }
  /// The first maximal free interval [lo, hi) with lo >= from; hi is
  /// kMaxOffset above every run.
  Span nextGap(int64_t from);

private:
  struct Cursor {
    const Span *at;
    const Span *end;
  };
  std::vector<Cursor> cursors;
};

/// The bytes the placed items take, queried for the union of the spans of
/// those live at some time of a new item's lifetime. A segment tree over
/// the elementary time intervals between the items' distinct start and end
/// times: an item is stored at the O(log n) nodes that decompose its
/// lifetime (`covered`) and on their paths from the root (`below`: every
/// item stored in the node's subtree). A query over [start, end) takes
/// `below` of its own decomposition and `covered` of the nodes above it.
/// The unions merge stacked buffers into one run, so a query costs
/// O(log n) plus the runs it returns, not the buffers behind them.
class OccupancyIndex {
public:
  explicit OccupancyIndex(const std::vector<PackItem> &items);
  void insert(const PackItem &item, int64_t offset);
  /// Loads `gaps` with the runs of bytes taken during the item's lifetime.
  void occupied(const PackItem &item, GapWalker &gaps) const;
  /// Forgets every placed item.
  void clear();

private:
  size_t timeIndex(int64_t time) const {
    return std::lower_bound(times.begin(), times.end(), time) - times.begin();
  }
  void insert(size_t node, size_t nodeLo, size_t nodeHi, size_t lo, size_t hi,
              Span span);
  void query(size_t node, size_t nodeLo, size_t nodeHi, size_t lo, size_t hi,
             GapWalker &gaps) const;

  std::vector<int64_t> times;
  size_t leaves = 0;
  std::vector<SpanUnion> covered, below;
  std::vector<size_t> touched;
};
} // namespace

void SpanUnion::add(Span span) {
  // The first run that ends at or after the span's start touches it or lies
  // above it; merge every run that touches the span.
  auto first =
      std::lower_bound(spans.begin(), spans.end(), span.lo,
                       [](const Span &run, int64_t lo) { return run.hi < lo; });
  auto last = first;
  for (; last != spans.end() && last->lo <= span.hi; ++last) {
    span.lo = std::min(span.lo, last->lo);
    span.hi = std::max(span.hi, last->hi);
  }
  if (first == last) {
    spans.insert(first, span);
    return;
  }
  *first = span;
  spans.erase(first + 1, last);
}

OccupancyIndex::OccupancyIndex(const std::vector<PackItem> &items) {
  times.reserve(2 * items.size());
  for (const PackItem &item : items) {
    times.push_back(item.start);
    times.push_back(item.end);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  // Leaf i is [times[i], times[i + 1]).
  leaves = times.size() > 1 ? times.size() - 1 : 1;
  covered.resize(4 * leaves);
  below.resize(4 * leaves);
}

void OccupancyIndex::insert(size_t node, size_t nodeLo, size_t nodeHi,
                            size_t lo, size_t hi, Span span) {
  touched.push_back(node);
  below[node].add(span);
  if (lo <= nodeLo && nodeHi <= hi) {
    covered[node].add(span);
    return;
  }
  size_t mid = (nodeLo + nodeHi) / 2;
  if (lo < mid)
    insert(2 * node, nodeLo, mid, lo, hi, span);
  if (mid < hi)
    insert(2 * node + 1, mid, nodeHi, lo, hi, span);
}

void OccupancyIndex::insert(const PackItem &item, int64_t offset) {
  insert(1, 0, leaves, timeIndex(item.start), timeIndex(item.end),
         {offset, saturatingAdd(offset, item.size)});
}

void OccupancyIndex::query(size_t node, size_t nodeLo, size_t nodeHi, size_t lo,
                           size_t hi, GapWalker &gaps) const {
  if (lo <= nodeLo && nodeHi <= hi) {
    gaps.add(below[node]);
    return;
  }
  gaps.add(covered[node]);
  size_t mid = (nodeLo + nodeHi) / 2;
  if (lo < mid)
    query(2 * node, nodeLo, mid, lo, hi, gaps);
  if (mid < hi)
    query(2 * node + 1, mid, nodeHi, lo, hi, gaps);
}

void OccupancyIndex::occupied(const PackItem &item, GapWalker &gaps) const {
  gaps.clear();
  query(1, 0, leaves, timeIndex(item.start), timeIndex(item.end), gaps);
}

Span GapWalker::nextGap(int64_t from) {
  int64_t lo = from;
  for (bool moved = true; moved;) {
    moved = false;
    for (Cursor &cursor : cursors) {
      if (cursor.at != cursor.end && cursor.at->hi <= lo)
        cursor.at = std::upper_bound(
            cursor.at + 1, cursor.end, lo,
            [](int64_t value, const Span &run) { return value < run.hi; });
      if (cursor.at != cursor.end && cursor.at->lo <= lo) {
        lo = cursor.at->hi;
        moved = true;
      }
    }
  }
  // Drop the lists the walk has passed; the lowest next run bounds the gap.
  int64_t hi = kMaxOffset;
  for (size_t i = 0; i < cursors.size();) {
    if (cursors[i].at == cursors[i].end) {
      cursors[i] = cursors.back();
      cursors.pop_back();
      continue;
    }
    hi = std::min(hi, cursors[i].at->lo);
    ++i;
  }
  return {lo, hi};
}

void OccupancyIndex::clear() {
  for (size_t node : touched) {
    covered[node].clear();
    below[node].clear();
  }
  touched.clear();
}

/// The lowest aligned offset >= base where `size` bytes fit in a gap.
/// Saturates at kMaxOffset.
static int64_t firstFit(GapWalker &gaps, int64_t base, int64_t size,
                        int64_t alignment) {
  for (int64_t from = base;;) {
    Span gap = gaps.nextGap(from);
    int64_t at = saturatingAlignUp(gap.lo, alignment);
    if (saturatingAdd(at, size) <= gap.hi)
      return at;
    from = gap.hi;
  }
}

/// The aligned start of the smallest gap that holds `size` bytes (the
/// lowest of equal gaps), or of the space above every run when none does.
static int64_t bestFit(GapWalker &gaps, int64_t size, int64_t alignment) {
  int64_t best = -1, bestGap = kMaxOffset;
  for (int64_t from = 0;;) {
    Span gap = gaps.nextGap(from);
    int64_t at = saturatingAlignUp(gap.lo, alignment);
    if (gap.hi == kMaxOffset)
      return best >= 0 ? best : at;
    if (saturatingAdd(at, size) <= gap.hi && gap.hi - gap.lo < bestGap) {
      // A gap the item fills exactly is the smallest possible.
      if (at == gap.lo && at + size == gap.hi)
        return at;
      best = at;
      bestGap = gap.hi - gap.lo;
    }
    from = gap.hi;
  }
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

/// Places the items in `order`, each at `place(gaps, item)`.
template <typename PlaceFn>
static std::vector<int64_t> placeInOrder(const std::vector<PackItem> &items,
                                         const std::vector<size_t> &order,
                                         PlaceFn place) {
  std::vector<int64_t> offsets(items.size(), 0);
  OccupancyIndex index(items);
  GapWalker gaps;
  for (size_t item : order) {
    index.occupied(items[item], gaps);
    offsets[item] = place(gaps, items[item]);
    index.insert(items[item], offsets[item]);
  }
  return offsets;
}

/// TFLite's greedy-by-size: largest first, each at the lowest offset free
/// during its lifetime (the first gap that fits).
static std::vector<int64_t> greedyBySize(const std::vector<PackItem> &items) {
  return placeInOrder(items, bySizeOrder(items),
                      [](GapWalker &gaps, const PackItem &item) {
                        return firstFit(gaps, 0, item.size, item.alignment);
                      });
}

/// XLA's best fit in one order.
static std::vector<int64_t> bestFitInOrder(const std::vector<PackItem> &items,
                                           const std::vector<size_t> &order) {
  return placeInOrder(items, order, [](GapWalker &gaps, const PackItem &item) {
    return bestFit(gaps, item.size, item.alignment);
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
  OccupancyIndex index(items);
  std::vector<size_t> candidates;
  GapWalker gaps;
  int64_t base = 0;
  while (!unplaced.byRank.empty()) {
    size_t leader = order[*unplaced.byRank.begin()];
    const PackItem &big = items[leader];
    unplaced.erase(*unplaced.byRank.begin(), big);
    offsets[leader] = saturatingAlignUp(base, big.alignment);
    int64_t segmentEnd = saturatingAdd(offsets[leader], big.size);
    index.clear();
    index.insert(big, offsets[leader]);
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
      index.occupied(items[item], gaps);
      int64_t at = firstFit(gaps, offsets[leader], items[item].size,
                            items[item].alignment);
      if (saturatingAdd(at, items[item].size) > segmentEnd)
        continue;
      offsets[item] = at;
      index.insert(items[item], at);
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
