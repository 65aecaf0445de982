//===- BufferPacking.h - Offsets for buffers with lifetimes -----*- C++ -*-===//
//
// Static memory planning's packing step (issue 14): every buffer has a fixed
// lifetime [start, end) and a size; choose a byte offset for each so that
// buffers live at the same time never share a byte, keeping the peak (the
// arena size) small. Plain C++ (no MLIR, no LLVM), so `strata-pack`, the
// unit tests and a planner pass can all use it.
//
// Strategies:
//   fixed-structure  the largest unplaced buffer opens a segment of its size
//                    on top of the previous segments; smaller buffers never
//                    live at the same time as it are packed into the
//                    segment first-fit; repeat with what is left.
//   greedy-size      TFLite's greedy-by-size: largest first, each at the
//                    lowest offset that is free during its lifetime.
//   best-fit         XLA's heap simulator (GlobalDecreasingSizeBestFitHeap):
//                    each buffer into the smallest free gap that holds it,
//                    in size order and in lifetime-length order; the better.
//   exact            a MiniMalloc-style branch and bound (ASPLOS'23) for
//                    "peak <= C"; the minimum peak by searching C between
//                    the lower bound and the best heuristic.
//   auto             the heuristics, then `exact` when they miss the lower
//                    bound (or the capacity); the smallest peak wins.
//
// Alignment: with a global alignment A, every offset is a multiple of A and
// every size is rounded up to A (the bytes between a buffer's end and the
// next multiple of A can hold nothing else). A buffer's own alignment adds to
// it: its offset is a multiple of lcm(A, alignment). The peak is the highest
// rounded end, so it is a multiple of A.
//
// Costs: the lower bound and `checkPacking` are sweeps, O(n log n). The
// heuristics keep the bytes taken by placed buffers as merged runs on a
// segment tree over time; placing a buffer walks the gaps between the runs
// of O(log n) nodes, so it costs the gaps passed (first fit stops at the
// first gap that holds the buffer, best fit looks at every gap) times
// O(log n), not the buffers live at the same time as TFLite's and XLA's
// loops do. Worst case (a gap per buffer) that is O(n^2 log n). On 100,000
// buffers shaped like a training step (20,000 activations live from forward
// to backward, random sizes) greedy-size takes 2.5 s and best-fit (two
// orders) 10 s on a 2-core Xeon. fixed-structure rescans, per segment, the
// unplaced buffers never live with its leader. The exact search is
// exponential in the worst case, bounded by the time limit, and skipped
// above 5,000 buffers or 5 million overlapping pairs.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_BUFFERPACKING_H
#define STRATA_ANALYSIS_BUFFERPACKING_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlir::strata {

/// One buffer: `size` bytes live on the half-open interval [start, end).
struct PackBuffer {
  /// A name for messages; ids are unique within a problem.
  int64_t id = 0;
  int64_t start = 0;
  int64_t end = 0;
  /// Bytes, >= 0. A zero-size buffer overlaps nothing and gets offset 0.
  int64_t size = 0;
  /// The offset is a multiple of this (and of the global alignment).
  int64_t alignment = 1;
};

enum class PackStrategy { Auto, FixedStructure, GreedySize, BestFit, Exact };

/// "auto", "fixed-structure", "greedy-size", "best-fit", "exact".
const char *stringifyPackStrategy(PackStrategy strategy);
std::optional<PackStrategy> parsePackStrategy(std::string_view name);

struct PackOptions {
  PackStrategy strategy = PackStrategy::Auto;
  /// Global alignment of every offset and size, >= 1.
  int64_t alignment = 1;
  /// 0: minimise the peak. Otherwise the target: `exact` searches for a
  /// packing with peak <= capacity (after a short try at the lower bound;
  /// when there is none, for the least peak above it); `auto` stops at the
  /// first heuristic that fits.
  int64_t capacity = 0;
  /// Wall-clock limit of the exact search (the heuristics always finish).
  double timeLimitSeconds = 10;
};

struct PackResult {
  /// Empty on success; otherwise why there is no packing (bad input, sizes
  /// that overflow int64, or a packing that failed its check).
  std::string error;
  /// One offset per buffer, in input order.
  std::vector<int64_t> offsets;
  /// The arena size: the highest (rounded) end of any buffer.
  int64_t peak = 0;
  /// packingLowerBound of the input.
  int64_t lowerBound = 0;
  /// The strategy whose packing was kept ("greedy-size", "exact", ...).
  std::string strategy;
  /// The peak is proven minimal (equal to the lower bound, or the exact
  /// search proved that nothing lower exists).
  bool optimal = false;
  /// The exact search ran out of time; the packing is the best found.
  bool timedOut = false;
  /// Wall-clock seconds of the whole call.
  double seconds = 0;
  /// Nodes visited by the exact search (0 when it did not run).
  int64_t searchNodes = 0;
  /// Why the exact search was skipped or stopped early, if it was.
  std::string note;

  bool ok() const { return error.empty(); }
};

/// A message for the first bad buffer (negative size, start >= end,
/// alignment < 1, a duplicate id, rounded sizes or live totals that overflow
/// int64), or nullopt when the problem is well formed.
std::optional<std::string>
verifyPackBuffers(const std::vector<PackBuffer> &buffers,
                  int64_t alignment = 1);

/// The largest total of (rounded) sizes live at one time: no packing has a
/// smaller peak. -1 when verifyPackBuffers fails.
int64_t packingLowerBound(const std::vector<PackBuffer> &buffers,
                          int64_t alignment = 1);

/// The peak of `offsets` (the highest rounded end); -1 on bad input or
/// overflow.
int64_t packingPeak(const std::vector<PackBuffer> &buffers,
                    const std::vector<int64_t> &offsets, int64_t alignment = 1);

/// nullopt when `offsets` is a valid packing: one non-negative offset per
/// buffer, a multiple of the buffer's alignment, and no two buffers live at
/// the same time share a byte. Otherwise a message naming the offending
/// buffer(s). A sweep over time, O(n log n).
std::optional<std::string> checkPacking(const std::vector<PackBuffer> &buffers,
                                        const std::vector<int64_t> &offsets,
                                        int64_t alignment = 1);

/// Packs `buffers` with `options.strategy`. Every packing returned has passed
/// checkPacking; a packing that would not is reported as an error instead.
/// Deterministic: the same buffers (in any order) give the same offsets per
/// id, except where the exact search's time limit cuts it short.
PackResult packBuffers(const std::vector<PackBuffer> &buffers,
                       const PackOptions &options = {});

} // namespace mlir::strata

#endif // STRATA_ANALYSIS_BUFFERPACKING_H
