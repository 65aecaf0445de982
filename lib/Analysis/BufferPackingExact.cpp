//===- BufferPackingExact.cpp - Branch and bound for "peak <= C" ----------===//
//
// The exact strategy of BufferPacking.h, after MiniMalloc (Moffitt, ASPLOS
// 2023). The search places buffers in order of increasing offset, each at its
// lowest offset given the buffers below it (the top of the highest placed
// buffer it is live with, aligned): every packing can be pushed down to one
// of these "canonical" packings without raising any buffer, so the search
// loses nothing by enumerating only them. Pruning:
//
//   cross sections   time is cut into sections, the sets of buffers live
//                    together just before some buffer ends (the maximal such
//                    sets; any two buffers live together share one). In a
//                    section the unplaced buffers stack, each no lower than
//                    its lowest offset and the offset just placed: one
//                    machine with release dates, whose least makespan (jobs
//                    in release order) must fit under the capacity. This
//                    subsumes MiniMalloc's floor + remaining total.
//   canonical order  candidates in (offset, preorder rank) order, each branch
//                    only above the last placement in that order.
//   dominance        a buffer is never placed at or above the lowest top an
//                    unplaced buffer could have: that buffer could drop into
//                    the gap left below, a packing found in another branch.
//   uncovered items  when the item just placed is live with no unplaced item
//                    and the branch fails, so do its siblings: it left them
//                    all their choices.
//   decomposition    once no unplaced buffer crosses the boundary between
//                    two sections, the two sides are independent and are
//                    solved one after the other, each from scratch.
//
// Ties between candidates at one offset go by a preorder (the largest
// remaining section total, lifetime width and area, in three priorities,
// recomputed for every independent part); the three preorders run round
// robin with a node budget that doubles each round, so one ordering's bad
// luck costs a bounded amount.
//
//===----------------------------------------------------------------------===//

#include "BufferPackingInternal.h"

#include <algorithm>
#include <array>
#include <numeric>

using namespace mlir::strata;
using namespace mlir::strata::detail;

/// Larger instances are left to the heuristics: the search recurses once per
/// placed buffer and keeps every overlapping pair.
static constexpr size_t kMaxSearchItems = 5000;
static constexpr uint64_t kMaxSearchPairs = 5000000;
static constexpr uint64_t kMaxSectionEntries = 20000000;

namespace {
enum class Status { Found, NotFound, Aborted, TimedOut };

/// The unplaced buffers of an independent part of the problem and the
/// sections they span.
struct Partition {
  std::vector<uint32_t> items;
  uint32_t sectionBegin = 0;
  uint32_t sectionEnd = 0;
};

struct Candidate {
  int64_t offset;
  uint32_t rank;
  uint32_t item;
};
} // namespace

struct ExactSearch::Impl {
  explicit Impl(const std::vector<PackItem> &items);

  Status solveWithPreorder(size_t preorder);
  Status search(const Partition &part, int64_t lastOffset, uint32_t lastRank);
  Status descend(const Partition &part, uint32_t item, int64_t offset,
                 uint32_t rank);
  Status solveIndependentParts(const Partition &part);
  bool place(uint32_t item, int64_t offset);
  bool sectionsFit(const Partition &part, int64_t offset);
  void set(int64_t &slot, int64_t value) {
    if (slot == value)
      return;
    trail.push_back({&slot, slot});
    slot = value;
  }
  void undo(size_t mark) {
    while (trail.size() > mark) {
      *trail.back().slot = trail.back().old;
      trail.pop_back();
    }
  }

  bool buildSections();
  bool buildOverlaps();
  void buildPreorders();
  void sortByPreorder(std::vector<uint32_t> &part);

  std::vector<PackItem> items;
  std::string unsupported;
  int64_t lowerBound = 0;

  // Static: item i spans sections [sectionBegin[i], sectionEnd[i]).
  size_t numSections = 0;
  std::vector<uint32_t> sectionBegin, sectionEnd;
  std::vector<std::vector<uint32_t>> sectionItems;
  std::vector<int64_t> sectionTotal;
  /// Items spanning sections s and s + 1, for s < numSections - 1.
  std::vector<int64_t> initialCuts;
  std::vector<std::vector<uint32_t>> overlaps;
  std::vector<uint64_t> widths;
  std::vector<unsigned __int128> areas;
  std::vector<int64_t> preorderTotal;

  // Per solve call.
  int64_t capacity = 0;
  PackClock::time_point deadline;
  const std::array<char, 3> *priority = nullptr;
  int64_t nodes = 0;
  int64_t nodeBudget = 0;
  /// Per item; per section: the unplaced total and the lowest offset of an
  /// unplaced item (kMaxOffset when none is left).
  std::vector<int64_t> offset, minOffset, solution;
  std::vector<int64_t> remaining, lowest, cuts;
  struct TrailEntry {
    int64_t *slot;
    int64_t old;
  };
  std::vector<TrailEntry> trail;
  /// Sections whose items changed in the last placement.
  std::vector<uint32_t> touched;
  std::vector<uint64_t> touchStamp;
  uint64_t stamp = 0;
  std::vector<std::pair<int64_t, int64_t>> releases;
};

//===----------------------------------------------------------------------===//
// Preprocessing
//===----------------------------------------------------------------------===//

ExactSearch::Impl::Impl(const std::vector<PackItem> &items) : items(items) {
  if (items.size() > kMaxSearchItems) {
    unsupported = std::to_string(items.size()) +
                  " buffers, more than the search's " +
                  std::to_string(kMaxSearchItems);
    return;
  }
  lowerBound = itemsLowerBound(items);
  if (!buildSections() || !buildOverlaps())
    return;
  buildPreorders();
}

/// Sections are indexed by the distinct end times T: section j holds the
/// items with start < T[j] <= end, those live just before T[j]. Only
/// maximal sections are kept (j where some item starts in [T[j-1], T[j]));
/// the others are subsets of their predecessor. An item's sections are
/// contiguous and it is in the maximal section where it starts.
bool ExactSearch::Impl::buildSections() {
  std::vector<int64_t> ends;
  for (const PackItem &item : items)
    ends.push_back(item.end);
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  auto firstAfter = [&](int64_t time) -> size_t {
    return std::upper_bound(ends.begin(), ends.end(), time) - ends.begin();
  };
  std::vector<uint32_t> kept(ends.size() + 1, 0);
  for (const PackItem &item : items)
    kept[firstAfter(item.start)] = 1;
  // kept[j] becomes the number of kept sections before j.
  std::exclusive_scan(kept.begin(), kept.end(), kept.begin(), uint32_t(0));
  numSections = kept.back();
  uint64_t entries = 0;
  for (const PackItem &item : items) {
    sectionBegin.push_back(kept[firstAfter(item.start)]);
    sectionEnd.push_back(kept[firstAfter(item.end)]);
    entries += sectionEnd.back() - sectionBegin.back();
  }
  if (entries > kMaxSectionEntries) {
    unsupported = std::to_string(entries) +
                  " buffer-section pairs, more "
                  "than the search's " +
                  std::to_string(kMaxSectionEntries);
    return false;
  }
  sectionItems.assign(numSections, {});
  sectionTotal.assign(numSections, 0);
  std::vector<int64_t> crossing(numSections + 1, 0);
  for (uint32_t i = 0; i < items.size(); ++i) {
    for (uint32_t s = sectionBegin[i]; s < sectionEnd[i]; ++s) {
      sectionItems[s].push_back(i);
      sectionTotal[s] += items[i].size;
    }
    // Crosses the boundaries after sections [begin, end - 1).
    ++crossing[sectionBegin[i]];
    --crossing[sectionEnd[i] - 1];
  }
  std::partial_sum(crossing.begin(), crossing.end(), crossing.begin());
  initialCuts.assign(crossing.begin(),
                     crossing.begin() + (numSections ? numSections - 1 : 0));
  return true;
}

/// Every pair of items live together, by a sweep (ends before starts at
/// equal times); a first pass only counts them.
bool ExactSearch::Impl::buildOverlaps() {
  std::vector<std::pair<int64_t, int64_t>> events; // (time, +-(i + 1))
  for (uint32_t i = 0; i < items.size(); ++i) {
    events.push_back({items[i].start, int64_t(i) + 1});
    events.push_back({items[i].end, -(int64_t(i) + 1)});
  }
  std::sort(events.begin(), events.end());
  uint64_t pairs = 0, live = 0;
  for (const auto &[time, event] : events) {
    if (event < 0) {
      --live;
      continue;
    }
    pairs += live++;
  }
  if (pairs > kMaxSearchPairs) {
    unsupported = std::to_string(pairs) +
                  " overlapping pairs, more than the "
                  "search's " +
                  std::to_string(kMaxSearchPairs);
    return false;
  }
  overlaps.assign(items.size(), {});
  std::vector<uint32_t> active;
  std::vector<size_t> position(items.size());
  for (const auto &[time, event] : events) {
    if (event < 0) {
      uint32_t i = uint32_t(-event - 1);
      position[active.back()] = position[i];
      active[position[i]] = active.back();
      active.pop_back();
      continue;
    }
    uint32_t i = uint32_t(event - 1);
    for (uint32_t j : active) {
      overlaps[i].push_back(j);
      overlaps[j].push_back(i);
    }
    position[i] = active.size();
    active.push_back(i);
  }
  return true;
}

/// The static parts of the preorder keys: lifetime width and area.
void ExactSearch::Impl::buildPreorders() {
  for (const PackItem &item : items) {
    uint64_t width = uint64_t(item.end) - uint64_t(item.start);
    widths.push_back(width);
    areas.push_back((unsigned __int128)width * uint64_t(item.size));
  }
}

/// Sorts a part's items by the preorder `priority` of the current solve:
/// the largest remaining total of a section the item is in (T), its
/// lifetime width (W) and its area (A), descending, ties by id. The
/// totals change as items are placed, so each independent part is sorted
/// when it is formed.
void ExactSearch::Impl::sortByPreorder(std::vector<uint32_t> &part) {
  std::vector<int64_t> &total = preorderTotal;
  for (uint32_t i : part) {
    total[i] = 0;
    for (uint32_t s = sectionBegin[i]; s < sectionEnd[i]; ++s)
      total[i] = std::max(total[i], remaining[s]);
  }
  std::sort(part.begin(), part.end(), [&](uint32_t a, uint32_t b) {
    for (char c : *priority) {
      if (c == 'T' && total[a] != total[b])
        return total[a] > total[b];
      if (c == 'W' && widths[a] != widths[b])
        return widths[a] > widths[b];
      if (c == 'A' && areas[a] != areas[b])
        return areas[a] > areas[b];
    }
    return items[a].id < items[b].id;
  });
}

//===----------------------------------------------------------------------===//
// The search
//===----------------------------------------------------------------------===//

/// Places `item` at `offset`: the unplaced items live with it can go no
/// lower than its top. Updates the sections' remaining totals and lowest
/// offsets, and lists the sections touched. False when no unplaced item is
/// live with the item.
bool ExactSearch::Impl::place(uint32_t item, int64_t at) {
  set(offset[item], at);
  solution[item] = at;
  int64_t top = saturatingAdd(at, items[item].size);
  ++stamp;
  touched.clear();
  auto touch = [&](uint32_t other) {
    for (uint32_t s = sectionBegin[other]; s < sectionEnd[other]; ++s) {
      if (touchStamp[s] == stamp)
        continue;
      touchStamp[s] = stamp;
      touched.push_back(s);
    }
  };
  touch(item);
  bool covered = false;
  for (uint32_t other : overlaps[item]) {
    if (offset[other] >= 0)
      continue;
    covered = true;
    int64_t low = saturatingAlignUp(top, items[other].alignment);
    if (low <= minOffset[other])
      continue;
    set(minOffset[other], low);
    touch(other);
  }
  for (uint32_t s = sectionBegin[item]; s < sectionEnd[item]; ++s)
    set(remaining[s], remaining[s] - items[item].size);
  for (uint32_t s : touched) {
    int64_t low = kMaxOffset;
    for (uint32_t other : sectionItems[s])
      if (offset[other] < 0)
        low = std::min(low, minOffset[other]);
    set(lowest[s], low);
  }
  return covered;
}

/// Cross-section inference after placing an item at `at`. The unplaced
/// items of a section are pairwise live together, so they stack, each no
/// lower than its lowest offset nor than `at` (later placements never are):
/// one machine scheduling jobs with release dates. Every section checks the
/// simple bound max(lowest, at) + remaining; the sections the placement
/// touched also check the least makespan (jobs in release order) when the
/// releases' range leaves it in doubt.
bool ExactSearch::Impl::sectionsFit(const Partition &part, int64_t at) {
  for (uint32_t s = part.sectionBegin; s < part.sectionEnd; ++s)
    if (remaining[s] > 0 &&
        saturatingAdd(std::max(lowest[s], at), remaining[s]) > capacity)
      return false;
  for (uint32_t s : touched) {
    if (remaining[s] == 0)
      continue;
    int64_t highest = 0;
    for (uint32_t item : sectionItems[s])
      if (offset[item] < 0)
        highest = std::max(highest, minOffset[item]);
    if (saturatingAdd(std::max(highest, at), remaining[s]) <= capacity)
      continue;
    releases.clear();
    for (uint32_t item : sectionItems[s])
      if (offset[item] < 0)
        releases.push_back({std::max(minOffset[item], at), items[item].size});
    std::sort(releases.begin(), releases.end());
    int64_t end = 0;
    for (const auto &[release, size] : releases)
      end = saturatingAdd(std::max(end, release), size);
    if (end > capacity)
      return false;
  }
  return true;
}

Status ExactSearch::Impl::search(const Partition &part, int64_t lastOffset,
                                 uint32_t lastRank) {
  if (nodeBudget-- <= 0)
    return Status::Aborted;
  if ((++nodes & 255) == 0 && PackClock::now() > deadline)
    return Status::TimedOut;
  std::vector<Candidate> candidates;
  int64_t lowestTop = kMaxOffset;
  for (uint32_t r = 0; r < part.items.size(); ++r) {
    uint32_t item = part.items[r];
    if (offset[item] >= 0)
      continue;
    candidates.push_back({minOffset[item], r, item});
    lowestTop =
        std::min(lowestTop, saturatingAdd(minOffset[item], items[item].size));
  }
  if (candidates.empty())
    return Status::Found;
  // Every unplaced item goes at or above the next placement, so the fullest
  // section bounds how high that can be.
  int64_t fullest = 0;
  for (uint32_t s = part.sectionBegin; s < part.sectionEnd; ++s)
    fullest = std::max(fullest, remaining[s]);
  int64_t highestStart = capacity - fullest;
  std::sort(candidates.begin(), candidates.end(),
            [](const Candidate &a, const Candidate &b) {
              return a.offset != b.offset ? a.offset < b.offset
                                          : a.rank < b.rank;
            });
  for (const Candidate &candidate : candidates) {
    if (candidate.offset < lastOffset ||
        (candidate.offset == lastOffset && candidate.rank < lastRank))
      continue;
    // Dominance: some unplaced item would fit entirely below this offset.
    if (candidate.offset >= lowestTop || candidate.offset > highestStart)
      break;
    if (saturatingAdd(candidate.offset, items[candidate.item].size) > capacity)
      continue;
    size_t mark = trail.size();
    bool covered = place(candidate.item, candidate.offset);
    Status status = Status::NotFound;
    if (sectionsFit(part, candidate.offset))
      status = descend(part, candidate.item, candidate.offset, candidate.rank);
    undo(mark);
    if (status != Status::NotFound)
      return status;
    // Nothing unplaced is live with the item: placing it first constrained
    // no other candidate, so they fail below it as well.
    if (!covered)
      break;
  }
  return Status::NotFound;
}

/// After placing `item`: the item no longer ties its sections together; if
/// that splits the part, its pieces are solved independently.
Status ExactSearch::Impl::descend(const Partition &part, uint32_t item,
                                  int64_t at, uint32_t itemRank) {
  bool split = false;
  for (uint32_t s = sectionBegin[item]; s + 1 < sectionEnd[item]; ++s) {
    set(cuts[s], cuts[s] - 1);
    split |= cuts[s] == 0;
  }
  if (!split)
    return search(part, at, itemRank);
  return solveIndependentParts(part);
}

/// Splits `part` at the section boundaries no unplaced item crosses and
/// solves the pieces one after another (each from scratch: they share no
/// unplaced item, so none constrains another).
Status ExactSearch::Impl::solveIndependentParts(const Partition &part) {
  std::vector<uint32_t> starts = {part.sectionBegin};
  for (uint32_t s = part.sectionBegin; s + 1 < part.sectionEnd; ++s)
    if (cuts[s] == 0)
      starts.push_back(s + 1);
  std::vector<Partition> pieces(starts.size());
  for (size_t p = 0; p < starts.size(); ++p) {
    pieces[p].sectionBegin = starts[p];
    pieces[p].sectionEnd =
        p + 1 < starts.size() ? starts[p + 1] : part.sectionEnd;
  }
  for (uint32_t item : part.items) {
    if (offset[item] >= 0)
      continue;
    size_t p =
        std::upper_bound(starts.begin(), starts.end(), sectionBegin[item]) -
        starts.begin() - 1;
    pieces[p].items.push_back(item);
  }
  for (Partition &piece : pieces) {
    if (piece.items.empty())
      continue;
    sortByPreorder(piece.items);
    Status status = search(piece, 0, 0);
    if (status != Status::Found)
      return status;
  }
  return Status::Found;
}

/// The preorders' priorities, as in MiniMalloc: TWA, TAW and WAT.
static constexpr std::array<std::array<char, 3>, 3> kPriorities = {
    {{'T', 'W', 'A'}, {'T', 'A', 'W'}, {'W', 'A', 'T'}}};

Status ExactSearch::Impl::solveWithPreorder(size_t preorder) {
  size_t n = items.size();
  priority = &kPriorities[preorder];
  preorderTotal.assign(n, 0);
  offset.assign(n, -1);
  minOffset.assign(n, 0);
  solution.assign(n, 0);
  remaining = sectionTotal;
  lowest.assign(numSections, 0);
  touchStamp.assign(numSections, 0);
  cuts = initialCuts;
  trail.clear();
  Partition root;
  root.items.resize(n);
  std::iota(root.items.begin(), root.items.end(), 0);
  root.sectionEnd = numSections;
  return solveIndependentParts(root);
}

//===----------------------------------------------------------------------===//
// ExactSearch
//===----------------------------------------------------------------------===//

ExactSearch::ExactSearch(const std::vector<PackItem> &items)
    : impl(std::make_unique<Impl>(items)) {}

ExactSearch::~ExactSearch() = default;

const std::string &ExactSearch::unsupportedReason() const {
  return impl->unsupported;
}

int64_t ExactSearch::nodes() const { return impl->nodes; }

SearchStatus ExactSearch::solve(int64_t capacity,
                                PackClock::time_point deadline,
                                std::vector<int64_t> &offsets) {
  Impl &s = *impl;
  if (s.lowerBound > capacity)
    return SearchStatus::Infeasible;
  if (s.items.empty()) {
    offsets.clear();
    return SearchStatus::Found;
  }
  s.capacity = capacity;
  s.deadline = deadline;
  // Round robin over the preorders with a node budget doubling per round;
  // one exhausted search (NotFound) proves infeasibility.
  for (int64_t budget = int64_t(s.items.size());; budget *= 2) {
    for (size_t preorder = 0; preorder < kPriorities.size(); ++preorder) {
      s.nodeBudget = budget;
      switch (s.solveWithPreorder(preorder)) {
      case Status::Found:
        offsets = s.solution;
        return SearchStatus::Found;
      case Status::NotFound:
        return SearchStatus::Infeasible;
      case Status::TimedOut:
        return SearchStatus::TimedOut;
      case Status::Aborted:
        break;
      }
      if (PackClock::now() > deadline)
        return SearchStatus::TimedOut;
    }
    if (budget > std::numeric_limits<int64_t>::max() / 4)
      return SearchStatus::TimedOut;
  }
}

//===----------------------------------------------------------------------===//
// Minimum peak, or a packing under a capacity
//===----------------------------------------------------------------------===//

ExactOutcome detail::runExactStrategy(const std::vector<PackItem> &items,
                                      int64_t lowerBound,
                                      PackCandidate incumbent, int64_t capacity,
                                      bool preferSearch,
                                      PackClock::time_point deadline) {
  ExactOutcome out;
  out.best = std::move(incumbent);
  bool met =
      capacity > 0 ? out.best.peak <= capacity : out.best.peak == lowerBound;
  if ((!preferSearch && met) || items.empty()) {
    out.optimal = out.best.peak == lowerBound;
    return out;
  }
  ExactSearch search(items);
  if (!search.unsupportedReason().empty()) {
    out.note = "exact search skipped: " + search.unsupportedReason();
    out.optimal = out.best.peak == lowerBound;
    return out;
  }
  std::vector<int64_t> offsets;
  auto probe = [&](int64_t target, PackClock::time_point until) {
    SearchStatus status = search.solve(target, until, offsets);
    if (status == SearchStatus::Found)
      out.best = {offsets, candidatePeak(items, offsets), "exact"};
    return status;
  };
  // No packing has a peak below `low` (unless a probe timed out).
  int64_t low = lowerBound;
  if (capacity > 0) {
    // A tight capacity prunes more: a short probe at the lower bound often
    // finds a perfect packing sooner than the capacity's own search.
    if (lowerBound < capacity) {
      PackClock::time_point now = PackClock::now();
      SearchStatus status = probe(lowerBound, now + (deadline - now) / 10);
      if (status == SearchStatus::Found) {
        out.optimal = true;
        out.nodes = search.nodes();
        return out;
      }
      if (status == SearchStatus::Infeasible)
        low = lowerBound + 1;
    }
    SearchStatus status = probe(capacity, deadline);
    if (status == SearchStatus::TimedOut) {
      out.timedOut = true;
      out.note = out.best.peak <= capacity
                     ? "the search ran out of time; the " + out.best.strategy +
                           " packing fits"
                     : "the search found no packing under the capacity in "
                       "the time limit";
    }
    if (status != SearchStatus::Infeasible) {
      out.optimal = out.best.peak == lowerBound;
      out.nodes = search.nodes();
      return out;
    }
    low = std::max(low, capacity + 1);
  }
  // Binary search between `low` and the best peak, probing `low` first:
  // each probe gets half the time left.
  for (bool first = true; low < out.best.peak; first = false) {
    PackClock::time_point now = PackClock::now();
    if (now >= deadline) {
      out.timedOut = true;
      break;
    }
    int64_t target = first ? low : low + (out.best.peak - 1 - low) / 2;
    SearchStatus status = probe(target, now + (deadline - now) / 2);
    if (status == SearchStatus::TimedOut)
      out.timedOut = true;
    if (status != SearchStatus::Found)
      low = target + 1;
  }
  out.optimal = !out.timedOut;
  if (out.timedOut)
    out.note = "the search ran out of time below peak " +
               std::to_string(out.best.peak) + "; it may not be minimal";
  out.nodes = search.nodes();
  return out;
}
