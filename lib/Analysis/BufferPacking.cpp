//===- BufferPacking.cpp - Offsets for buffers with fixed lifetimes -------===//
//
// Input checks, the lower bound, the packing check and the driver of
// BufferPacking.h. The heuristics are in BufferPackingHeuristics.cpp, the
// exact search in BufferPackingExact.cpp.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/BufferPacking.h"
#include "BufferPackingInternal.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

using namespace mlir::strata;
using namespace mlir::strata::detail;

const char *mlir::strata::stringifyPackStrategy(PackStrategy strategy) {
  switch (strategy) {
  case PackStrategy::Auto:
    return "auto";
  case PackStrategy::FixedStructure:
    return "fixed-structure";
  case PackStrategy::GreedySize:
    return "greedy-size";
  case PackStrategy::BestFit:
    return "best-fit";
  case PackStrategy::Exact:
    return "exact";
  }
  return "unknown";
}

std::optional<PackStrategy>
mlir::strata::parsePackStrategy(std::string_view name) {
  for (PackStrategy strategy :
       {PackStrategy::Auto, PackStrategy::FixedStructure,
        PackStrategy::GreedySize, PackStrategy::BestFit, PackStrategy::Exact})
    if (name == stringifyPackStrategy(strategy))
      return strategy;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Input checks and normalisation
//===----------------------------------------------------------------------===//

namespace {
/// The problem the strategies see: the non-empty buffers as items, and for
/// each buffer its item (-1 for a zero-size buffer).
struct NormalizedProblem {
  std::vector<PackItem> items;
  std::vector<int64_t> itemOfBuffer;
};

/// One time event of a sweep: an item starting or ending at `time`.
/// Ends sort before starts at the same time (lifetimes are half-open).
struct SweepEvent {
  int64_t time;
  bool isStart;
  size_t index;
  bool operator<(const SweepEvent &other) const {
    if (time != other.time)
      return time < other.time;
    if (isStart != other.isStart)
      return !isStart;
    return index < other.index;
  }
};
} // namespace

static std::vector<SweepEvent> sweepEvents(const std::vector<PackItem> &items) {
  std::vector<SweepEvent> events;
  events.reserve(2 * items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    events.push_back({items[i].start, true, i});
    events.push_back({items[i].end, false, i});
  }
  std::sort(events.begin(), events.end());
  return events;
}

/// The largest live total, or nullopt when a running total overflows.
static std::optional<int64_t>
checkedLowerBound(const std::vector<PackItem> &items) {
  int64_t live = 0, best = 0;
  for (const SweepEvent &event : sweepEvents(items)) {
    if (!event.isStart) {
      live -= items[event.index].size;
      continue;
    }
    std::optional<int64_t> sum = checkedAdd(live, items[event.index].size);
    if (!sum)
      return std::nullopt;
    live = *sum;
    best = std::max(best, live);
  }
  return best;
}

int64_t detail::itemsLowerBound(const std::vector<PackItem> &items) {
  return checkedLowerBound(items).value_or(kMaxOffset);
}

int64_t detail::candidatePeak(const std::vector<PackItem> &items,
                              const std::vector<int64_t> &offsets) {
  int64_t peak = 0;
  for (size_t i = 0; i < items.size(); ++i)
    peak = std::max(peak, saturatingAdd(offsets[i], items[i].size));
  return peak;
}

static std::string describeBuffer(const PackBuffer &buffer) {
  std::ostringstream os;
  os << "buffer " << buffer.id;
  return os.str();
}

/// Checks one buffer and rounds it; an error message or nullopt.
static std::optional<std::string>
normalizeBuffer(const PackBuffer &buffer, int64_t alignment, PackItem &item) {
  std::ostringstream os;
  os << describeBuffer(buffer) << ": ";
  if (buffer.size < 0) {
    os << "negative size " << buffer.size;
    return os.str();
  }
  if (buffer.start >= buffer.end) {
    os << "empty lifetime [" << buffer.start << ", " << buffer.end
       << ") (start must be before end)";
    return os.str();
  }
  if (buffer.alignment < 1) {
    os << "alignment " << buffer.alignment << " is not positive";
    return os.str();
  }
  std::optional<int64_t> size = alignUp(buffer.size, alignment);
  int64_t g = std::gcd(alignment, buffer.alignment);
  int64_t lcm;
  if (!size || __builtin_mul_overflow(alignment / g, buffer.alignment, &lcm)) {
    os << "size " << buffer.size << " or alignment " << buffer.alignment
       << " overflows int64 when aligned to " << alignment;
    return os.str();
  }
  item = {buffer.id, buffer.start, buffer.end, *size, lcm};
  return std::nullopt;
}

static std::optional<std::string>
normalize(const std::vector<PackBuffer> &buffers, int64_t alignment,
          NormalizedProblem &problem) {
  if (alignment < 1)
    return "alignment " + std::to_string(alignment) + " is not positive";
  problem.items.clear();
  problem.itemOfBuffer.assign(buffers.size(), -1);
  for (size_t i = 0; i < buffers.size(); ++i) {
    PackItem item;
    if (std::optional<std::string> error =
            normalizeBuffer(buffers[i], alignment, item))
      return error;
    if (item.size == 0)
      continue;
    problem.itemOfBuffer[i] = problem.items.size();
    problem.items.push_back(item);
  }
  std::vector<int64_t> ids;
  ids.reserve(buffers.size());
  for (const PackBuffer &buffer : buffers)
    ids.push_back(buffer.id);
  std::sort(ids.begin(), ids.end());
  auto duplicate = std::adjacent_find(ids.begin(), ids.end());
  if (duplicate != ids.end())
    return "duplicate buffer id " + std::to_string(*duplicate);
  if (!checkedLowerBound(problem.items))
    return std::string("the total size of buffers live at one time overflows "
                       "int64");
  return std::nullopt;
}

std::optional<std::string>
mlir::strata::verifyPackBuffers(const std::vector<PackBuffer> &buffers,
                                int64_t alignment) {
  NormalizedProblem problem;
  return normalize(buffers, alignment, problem);
}

int64_t mlir::strata::packingLowerBound(const std::vector<PackBuffer> &buffers,
                                        int64_t alignment) {
  NormalizedProblem problem;
  if (normalize(buffers, alignment, problem))
    return -1;
  return itemsLowerBound(problem.items);
}

//===----------------------------------------------------------------------===//
// The packing check
//===----------------------------------------------------------------------===//

/// Offsets non-negative and aligned, ends within int64; nullopt or a message.
static std::optional<std::string>
checkOffsets(const std::vector<PackBuffer> &buffers,
             const std::vector<int64_t> &offsets, int64_t alignment) {
  if (offsets.size() != buffers.size())
    return std::to_string(offsets.size()) + " offsets for " +
           std::to_string(buffers.size()) + " buffers";
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::ostringstream os;
    os << describeBuffer(buffers[i]) << ": offset " << offsets[i];
    if (offsets[i] < 0) {
      os << " is negative";
      return os.str();
    }
    if (offsets[i] % alignment != 0 || offsets[i] % buffers[i].alignment != 0) {
      os << " is not a multiple of its alignment "
         << std::lcm(alignment, buffers[i].alignment);
      return os.str();
    }
    if (!checkedAdd(offsets[i], buffers[i].size)) {
      os << " + size " << buffers[i].size << " overflows int64";
      return os.str();
    }
  }
  return std::nullopt;
}

static std::string describeOverlap(const PackBuffer &a, int64_t offsetA,
                                   const PackBuffer &b, int64_t offsetB) {
  std::ostringstream os;
  os << "buffers " << a.id << " and " << b.id
     << " overlap: both are live at time " << std::max(a.start, b.start)
     << " and use bytes [" << std::max(offsetA, offsetB) << ", "
     << std::min(offsetA + a.size, offsetB + b.size) << ")";
  return os.str();
}

std::optional<std::string>
mlir::strata::checkPacking(const std::vector<PackBuffer> &buffers,
                           const std::vector<int64_t> &offsets,
                           int64_t alignment) {
  NormalizedProblem problem;
  if (std::optional<std::string> error = normalize(buffers, alignment, problem))
    return "invalid buffers: " + *error;
  if (std::optional<std::string> error =
          checkOffsets(buffers, offsets, alignment))
    return error;
  // The buffers live at the sweep's current time, by offset. They never
  // overlap (each insertion is checked), so a new buffer can only overlap
  // its neighbours in offset order.
  std::vector<size_t> bufferOfItem(problem.items.size());
  for (size_t i = 0; i < buffers.size(); ++i)
    if (problem.itemOfBuffer[i] >= 0)
      bufferOfItem[problem.itemOfBuffer[i]] = i;
  std::set<std::pair<int64_t, size_t>> live;
  for (const SweepEvent &event : sweepEvents(problem.items)) {
    size_t index = bufferOfItem[event.index];
    int64_t offset = offsets[index];
    if (!event.isStart) {
      live.erase({offset, index});
      continue;
    }
    const PackBuffer &buffer = buffers[index];
    auto next = live.lower_bound({offset, 0});
    if (next != live.end() && next->first < offset + buffer.size)
      return describeOverlap(buffers[next->second], next->first, buffer,
                             offset);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first + buffers[prev->second].size > offset)
        return describeOverlap(buffers[prev->second], prev->first, buffer,
                               offset);
    }
    live.insert({offset, index});
  }
  return std::nullopt;
}

int64_t mlir::strata::packingPeak(const std::vector<PackBuffer> &buffers,
                                  const std::vector<int64_t> &offsets,
                                  int64_t alignment) {
  NormalizedProblem problem;
  if (normalize(buffers, alignment, problem) ||
      checkOffsets(buffers, offsets, alignment))
    return -1;
  int64_t peak = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    int64_t item = problem.itemOfBuffer[i];
    if (item < 0)
      continue;
    std::optional<int64_t> end =
        checkedAdd(offsets[i], problem.items[item].size);
    if (!end)
      return -1;
    peak = std::max(peak, *end);
  }
  return peak;
}

//===----------------------------------------------------------------------===//
// The driver
//===----------------------------------------------------------------------===//

/// The best of the three heuristics (ties: the earlier in the list).
static std::optional<PackCandidate>
bestHeuristic(const std::vector<PackItem> &items, std::string &error) {
  std::optional<PackCandidate> best;
  for (PackStrategy strategy : {PackStrategy::BestFit, PackStrategy::GreedySize,
                                PackStrategy::FixedStructure}) {
    std::optional<PackCandidate> candidate =
        runHeuristic(items, strategy, error);
    if (!candidate)
      return std::nullopt;
    if (!best || candidate->peak < best->peak)
      best = std::move(candidate);
  }
  return best;
}

/// Runs options.strategy on the normalised items and fills the packing
/// fields of `result`; false (with result.error set) on failure.
static bool runStrategy(const std::vector<PackItem> &items,
                        const PackOptions &options,
                        PackClock::time_point deadline, PackResult &result) {
  PackStrategy strategy = options.strategy;
  std::optional<PackCandidate> packing;
  if (strategy != PackStrategy::Auto && strategy != PackStrategy::Exact)
    packing = runHeuristic(items, strategy, result.error);
  else
    packing = bestHeuristic(items, result.error);
  if (!packing)
    return false;
  if (strategy != PackStrategy::Auto && strategy != PackStrategy::Exact) {
    result.optimal = packing->peak == result.lowerBound;
  } else {
    ExactOutcome outcome = runExactStrategy(
        items, result.lowerBound, std::move(*packing), options.capacity,
        /*preferSearch=*/strategy == PackStrategy::Exact, deadline);
    packing = std::move(outcome.best);
    result.optimal = outcome.optimal;
    result.timedOut = outcome.timedOut;
    result.searchNodes = outcome.nodes;
    result.note = outcome.note;
  }
  result.strategy = packing->strategy;
  result.peak = packing->peak;
  result.offsets = std::move(packing->offsets);
  return true;
}

PackResult mlir::strata::packBuffers(const std::vector<PackBuffer> &buffers,
                                     const PackOptions &options) {
  PackClock::time_point begin = PackClock::now();
  PackResult result;
  auto finish = [&](PackResult &r) -> PackResult {
    r.seconds = std::chrono::duration<double>(PackClock::now() - begin).count();
    return std::move(r);
  };
  NormalizedProblem problem;
  if (std::optional<std::string> error =
          normalize(buffers, options.alignment, problem)) {
    result.error = *error;
    return finish(result);
  }
  if (options.capacity < 0 || !(options.timeLimitSeconds >= 0)) {
    result.error = "capacity and time limit must not be negative";
    return finish(result);
  }
  result.lowerBound = itemsLowerBound(problem.items);
  // Whole microseconds, capped at a year: no clock arithmetic overflows.
  double limit = std::min(options.timeLimitSeconds, 3.2e7);
  PackClock::time_point deadline =
      begin + std::chrono::microseconds(int64_t(limit * 1e6));
  if (!runStrategy(problem.items, options, deadline, result))
    return finish(result);

  // Items' offsets to buffers' offsets, then the check every packing passes.
  std::vector<int64_t> itemOffsets = std::move(result.offsets);
  result.offsets.assign(buffers.size(), 0);
  for (size_t i = 0; i < buffers.size(); ++i)
    if (problem.itemOfBuffer[i] >= 0)
      result.offsets[i] = itemOffsets[problem.itemOfBuffer[i]];
  std::optional<std::string> invalid =
      checkPacking(buffers, result.offsets, options.alignment);
  if (!invalid &&
      packingPeak(buffers, result.offsets, options.alignment) != result.peak)
    invalid = "its peak is miscounted";
  if (invalid) {
    result.error = "internal error: the " + result.strategy +
                   " packing is invalid: " + *invalid;
    result.offsets.clear();
  }
  return finish(result);
}
