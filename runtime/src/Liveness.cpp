//===- Liveness.cpp - Buffer lifetimes of a plan's programs ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Liveness.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

namespace strata::rt {

namespace {
/// Widens `interval` to contain time step `t`.
void touch(LiveInterval &interval, int64_t t) {
  if (!interval.live()) {
    interval.first = interval.last = t;
    return;
  }
  interval.first = std::min(interval.first, t);
  interval.last = std::max(interval.last, t);
}

/// Adds one program, whose first instruction is time step `base`.
bool addProgram(const std::vector<LiveInstruction> &program, int64_t base,
                std::vector<LiveInterval> &intervals) {
  int64_t n = static_cast<int64_t>(program.size());
  int64_t size = static_cast<int64_t>(intervals.size());
  // nextInPlace[i]: the first in-place instruction after i, else the last
  // instruction.
  std::vector<int64_t> nextInPlace(program.size(), n - 1);
  for (int64_t i = n - 2; i >= 0; --i)
    nextInPlace[i] = program[i + 1].inPlace ? i + 1 : nextInPlace[i + 1];
  for (int64_t i = 0; i < n; ++i) {
    const LiveInstruction &inst = program[i];
    for (const std::vector<int64_t> *ids : {&inst.in, &inst.out})
      for (int64_t id : *ids) {
        if (id < 0 || id >= size)
          return false;
        touch(intervals[id], base + i);
      }
    if (inst.readsAfterReturn)
      for (int64_t id : inst.in)
        touch(intervals[id], base + nextInPlace[i]);
  }
  return true;
}
} // namespace

std::vector<LiveInterval>
computeLiveness(const std::vector<std::vector<LiveInstruction>> &programs,
                const std::vector<bool> &persistent) {
  std::vector<LiveInterval> intervals(persistent.size());
  int64_t base = 0;
  for (const std::vector<LiveInstruction> &program : programs) {
    if (!addProgram(program, base, intervals))
      return {};
    base += static_cast<int64_t>(program.size());
  }
  for (size_t id = 0; id < persistent.size(); ++id)
    if (persistent[id])
      intervals[id] = {0, std::max<int64_t>(base - 1, 0)};
  return intervals;
}

int64_t liveBytesLowerBound(const std::vector<LiveInterval> &intervals,
                            const std::vector<int64_t> &bytes,
                            int64_t alignment) {
  // (time, change): ends (at last + 1) sort before starts at the same time.
  std::vector<std::pair<int64_t, int64_t>> events;
  for (size_t id = 0; id < intervals.size() && id < bytes.size(); ++id) {
    if (!intervals[id].live() || bytes[id] <= 0)
      continue;
    int64_t size = (bytes[id] + alignment - 1) / alignment * alignment;
    events.push_back({intervals[id].first, size});
    events.push_back({intervals[id].last + 1, -size});
  }
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (auto [time, change] : events) {
    live += change;
    peak = std::max(peak, live);
  }
  return peak;
}

std::string checkNoLiveOverlap(const std::vector<LiveInterval> &intervals,
                               const std::vector<int64_t> &offsets,
                               const std::vector<int64_t> &bytes) {
  struct Event {
    int64_t time;
    bool start;
    int64_t id;
  };
  std::vector<Event> events;
  size_t n = std::min({intervals.size(), offsets.size(), bytes.size()});
  for (size_t id = 0; id < n; ++id) {
    if (!intervals[id].live() || bytes[id] <= 0)
      continue;
    events.push_back({intervals[id].first, true, static_cast<int64_t>(id)});
    events.push_back({intervals[id].last + 1, false, static_cast<int64_t>(id)});
  }
  // Ends before starts at the same time step: [a, b] and [b + 1, c] do not
  // meet.
  std::sort(events.begin(), events.end(), [](const Event &a, const Event &b) {
    if (a.time != b.time)
      return a.time < b.time;
    if (a.start != b.start)
      return !a.start;
    return a.id < b.id;
  });
  auto describe = [&](int64_t id) {
    return "buffer " + std::to_string(id) + " (bytes [" +
           std::to_string(offsets[id]) + ", " +
           std::to_string(offsets[id] + bytes[id]) + "), live at steps " +
           std::to_string(intervals[id].first) + ".." +
           std::to_string(intervals[id].last) + ")";
  };
  // The live buffers, keyed by (offset, id); pairwise disjoint, so a new one
  // can only overlap its neighbours in offset order.
  std::map<std::pair<int64_t, int64_t>, int64_t> active;
  for (const Event &event : events) {
    std::pair<int64_t, int64_t> key{offsets[event.id], event.id};
    if (!event.start) {
      active.erase(key);
      continue;
    }
    int64_t end = offsets[event.id] + bytes[event.id];
    auto next = active.lower_bound(key);
    if (next != active.end() && next->first.first < end)
      return describe(event.id) + " and " + describe(next->first.second) +
             " are live at the same time and share bytes";
    if (next != active.begin()) {
      auto prev = std::prev(next);
      if (prev->second > offsets[event.id])
        return describe(event.id) + " and " + describe(prev->first.second) +
               " are live at the same time and share bytes";
    }
    active.emplace(key, end);
  }
  return "";
}

} // namespace strata::rt
