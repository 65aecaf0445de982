//===- BufferPackingInternal.h - Shared by the packing sources --*- C++ -*-===//
//
// The normalised problem the strategies work on, the checked arithmetic they
// share, and the exact search's entry point. Private to lib/Analysis.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_ANALYSIS_BUFFERPACKINGINTERNAL_H
#define STRATA_LIB_ANALYSIS_BUFFERPACKINGINTERNAL_H

#include "strata/Analysis/BufferPacking.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::detail {

using PackClock = std::chrono::steady_clock;

constexpr int64_t kMaxOffset = std::numeric_limits<int64_t>::max();

/// A buffer of non-zero size after rounding: `size` is a multiple of the
/// global alignment and `alignment` is lcm(global, the buffer's own).
struct PackItem {
  int64_t id = 0;
  int64_t start = 0;
  int64_t end = 0;
  int64_t size = 0;
  int64_t alignment = 1;
};

/// a + b, or nullopt when it overflows.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}

/// a + b, saturating at kMaxOffset (a, b >= 0).
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  std::optional<int64_t> sum = checkedAdd(a, b);
  return sum ? *sum : kMaxOffset;
}

/// The least multiple of `alignment` >= value (value >= 0, alignment >= 1),
/// or nullopt when it overflows.
inline std::optional<int64_t> alignUp(int64_t value, int64_t alignment) {
  int64_t rem = value % alignment;
  if (rem == 0)
    return value;
  return checkedAdd(value, alignment - rem);
}

/// alignUp saturating at kMaxOffset.
inline int64_t saturatingAlignUp(int64_t value, int64_t alignment) {
  std::optional<int64_t> aligned = alignUp(value, alignment);
  return aligned ? *aligned : kMaxOffset;
}

/// True when a and b are live at a common time.
inline bool liveTogether(const PackItem &a, const PackItem &b) {
  return a.start < b.end && b.start < a.end;
}

/// One packing of the items: an offset per item and its peak.
struct PackCandidate {
  std::vector<int64_t> offsets;
  int64_t peak = 0;
  std::string strategy;
};

/// The peak of offsets (saturating; items non-empty or peak 0).
int64_t candidatePeak(const std::vector<PackItem> &items,
                      const std::vector<int64_t> &offsets);

/// The largest total size live at one time (the items' sums were checked
/// not to overflow when they were built).
int64_t itemsLowerBound(const std::vector<PackItem> &items);

/// Runs one heuristic (fixed-structure, greedy-size or best-fit); nullopt,
/// with `error` set, when its offsets overflow int64.
std::optional<PackCandidate> runHeuristic(const std::vector<PackItem> &items,
                                          PackStrategy strategy,
                                          std::string &error);

enum class SearchStatus { Found, Infeasible, TimedOut };

/// The exact search's preprocessing (cross sections, overlaps, orders) is
/// done once and reused by every capacity probe.
class ExactSearch {
public:
  explicit ExactSearch(const std::vector<PackItem> &items);
  ~ExactSearch();

  /// Empty when the search can run; otherwise why not (the instance is too
  /// large for it).
  const std::string &unsupportedReason() const;

  /// Looks for offsets with every item below `capacity`. Found: `offsets`
  /// holds them. Infeasible: proven that none exist. TimedOut: `deadline`
  /// passed first.
  SearchStatus solve(int64_t capacity, PackClock::time_point deadline,
                     std::vector<int64_t> &offsets);

  /// Nodes visited by all solve calls so far.
  int64_t nodes() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The outcome of the exact strategy on top of the heuristics' best packing.
struct ExactOutcome {
  PackCandidate best;
  bool optimal = false;
  bool timedOut = false;
  int64_t nodes = 0;
  std::string note;
};

/// Minimises the peak (capacity 0) or finds a packing under `capacity`
/// (and, when there is none, the least peak above it), starting from
/// `incumbent` (the heuristics' best) and the lower bound `lowerBound`.
/// When `preferSearch` is false the incumbent is returned as soon as it
/// meets the target.
ExactOutcome runExactStrategy(const std::vector<PackItem> &items,
                              int64_t lowerBound, PackCandidate incumbent,
                              int64_t capacity, bool preferSearch,
                              PackClock::time_point deadline);

} // namespace mlir::strata::detail

#endif // STRATA_LIB_ANALYSIS_BUFFERPACKINGINTERNAL_H
