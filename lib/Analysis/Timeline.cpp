//===- Timeline.cpp - Replays per-rank instruction lists ------------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

using namespace mlir::strata::timeline;

const char *mlir::strata::timeline::getStreamName(Stream stream) {
  switch (stream) {
  case Stream::Compute:
    return "compute";
  case Stream::Copy:
    return "copy";
  case Stream::Comm:
    return "comm";
  }
  return "?";
}

int64_t System::nodeOf(int64_t rank) const {
  if (rank < 0 || rank >= static_cast<int64_t>(nodeOfRank.size()))
    return 0;
  return nodeOfRank[rank];
}

const Link &System::linkBetween(int64_t a, int64_t b) const {
  return nodeOf(a) == nodeOf(b) ? intraNode : interNode;
}

const Link &System::linkOfGroup(const std::vector<int64_t> &ranks) const {
  for (int64_t r : ranks)
    if (nodeOf(r) != nodeOf(ranks.front()))
      return interNode;
  return intraNode;
}

double mlir::strata::timeline::ringAllReduceSeconds(double bytes, int64_t ranks,
                                                    const Link &link) {
  if (ranks <= 1)
    return 0;
  double p = static_cast<double>(ranks);
  return 2.0 * (p - 1.0) * link.latencySeconds +
         2.0 * (p - 1.0) / p * bytes / link.bytesPerSecond;
}

Instruction Instruction::compute(std::string name, double seconds) {
  Instruction inst;
  inst.kind = Compute;
  inst.name = std::move(name);
  inst.seconds = seconds;
  return inst;
}

Instruction Instruction::send(int64_t peer, int64_t tag, double bytes) {
  Instruction inst;
  inst.kind = Send;
  inst.name = "send";
  inst.peer = peer;
  inst.tag = tag;
  inst.bytes = bytes;
  return inst;
}

Instruction Instruction::recv(int64_t peer, int64_t tag) {
  Instruction inst;
  inst.kind = Recv;
  inst.name = "recv";
  inst.peer = peer;
  inst.tag = tag;
  return inst;
}

Instruction Instruction::collective(int64_t group, double bytes) {
  Instruction inst;
  inst.kind = Collective;
  inst.name = "all_reduce";
  inst.group = group;
  inst.bytes = bytes;
  return inst;
}

Instruction Instruction::collectiveStart(int64_t group, double bytes,
                                         int64_t handle) {
  Instruction inst;
  inst.kind = CollectiveStart;
  inst.name = "all_reduce_start";
  inst.group = group;
  inst.bytes = bytes;
  inst.handle = handle;
  return inst;
}

Instruction Instruction::copyStart(double bytes, int64_t handle) {
  Instruction inst;
  inst.kind = CopyStart;
  inst.name = "copy";
  inst.bytes = bytes;
  inst.handle = handle;
  return inst;
}

Instruction Instruction::wait(int64_t handle) {
  Instruction inst;
  inst.kind = Wait;
  inst.name = "wait";
  inst.handle = handle;
  return inst;
}

namespace {

constexpr double kUnknown = -1;

/// The number traces and messages give instruction `index`, `inst`.
int64_t labelOf(const Instruction &inst, size_t index) {
  if (inst.label == Instruction::kNotAnInstruction)
    return -1;
  return inst.label >= 0 ? inst.label : static_cast<int64_t>(index);
}

/// A collective one rank started and that has not begun yet.
struct PendingCollective {
  int64_t rank;
  int64_t index;
  double issued;
};

struct RankState {
  size_t pc = 0;
  double host = 0;
  double streamFree[kNumStreams] = {0, 0, 0};
  /// End of each instruction (kUnknown until known).
  std::vector<double> endOf;
  /// Unfinished starts by handle.
  std::map<int64_t, int64_t> handles;
  /// A blocking collective at pc was issued already.
  bool issuedAtPc = false;
  /// Collectives started, not yet begun, in issue order.
  std::deque<PendingCollective> collectives;
  RankStats stats;
};

class Simulator {
public:
  Simulator(const Schedule &schedule, const System &system)
      : schedule(schedule), system(system) {}
  Result run();

private:
  const Schedule &schedule;
  const System &system;
  std::vector<RankState> state;
  std::vector<std::vector<int64_t>> groups;
  /// Arrival times of sends not yet received, by (from, to, tag).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<double>> channels;
  /// When each directed link is free.
  std::map<std::pair<int64_t, int64_t>, double> linkFree;
  /// Per group, how many of its ranks have one of its collectives at the
  /// head of their queue; a group whose count reached its size is ready.
  std::vector<int64_t> headCount;
  std::vector<int64_t> readyGroups;
  Result result;

  std::string where(int64_t rank, size_t index) const;
  std::string validate() const;
  double depsEnd(int64_t rank, const Instruction &inst, bool &ready) const;
  /// Places the instruction at the rank's pc; false when it must wait.
  bool step(int64_t rank);
  bool stepCompute(int64_t rank, const Instruction &inst, double ready);
  bool stepCollective(int64_t rank, const Instruction &inst, double ready);
  /// Begins every collective whose group's ranks all started it.
  bool resolveCollectives();
  /// One more rank of `group` has its collective at the head of its queue.
  void countHead(int64_t group) {
    if (++headCount[group] == static_cast<int64_t>(groups[group].size()))
      readyGroups.push_back(group);
  }
  std::string describeBlocked(int64_t rank) const;
  void emit(int64_t rank, size_t index, Stream stream, double start,
            double end) {
    const Instruction &inst = schedule.ranks[rank][index];
    result.events.push_back({rank, static_cast<int64_t>(index),
                             labelOf(inst, index), stream, start, end,
                             inst.name, inst.category});
  }
};

} // namespace

std::string Simulator::where(int64_t rank, size_t index) const {
  const Instruction &inst = schedule.ranks[rank][index];
  return "rank " + std::to_string(rank) + " instruction #" +
         std::to_string(labelOf(inst, index)) + " (" + inst.name + ")";
}

std::string Simulator::validate() const {
  int64_t n = static_cast<int64_t>(schedule.ranks.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty())
      return "group " + std::to_string(g) + " has no ranks";
    for (int64_t r : groups[g])
      if (r < 0 || r >= n)
        return "group " + std::to_string(g) + " names rank " +
               std::to_string(r) + " of a " + std::to_string(n) +
               "-rank schedule";
  }
  for (int64_t r = 0; r < n; ++r)
    for (size_t i = 0; i < schedule.ranks[r].size(); ++i) {
      const Instruction &inst = schedule.ranks[r][i];
      for (int64_t a : inst.after)
        if (a < 0 || a >= static_cast<int64_t>(i))
          return where(r, i) + ": 'after' names #" + std::to_string(a) +
                 ", not an earlier instruction";
      bool p2p =
          inst.kind == Instruction::Send || inst.kind == Instruction::Recv;
      if (p2p && (inst.peer < 0 || inst.peer >= n || inst.peer == r))
        return where(r, i) + ": peer " + std::to_string(inst.peer) +
               " is not another rank";
      bool coll = inst.kind == Instruction::Collective ||
                  inst.kind == Instruction::CollectiveStart;
      if (coll && (inst.group < 0 ||
                   inst.group >= static_cast<int64_t>(groups.size()) ||
                   !std::count(groups[inst.group].begin(),
                               groups[inst.group].end(), r)))
        return where(r, i) + ": group " + std::to_string(inst.group) +
               " does not exist or does not hold the rank";
      if (inst.seconds < 0 || inst.bytes < 0 || !std::isfinite(inst.seconds) ||
          !std::isfinite(inst.bytes))
        return where(r, i) + ": negative or non-finite seconds or bytes";
    }
  return "";
}

double Simulator::depsEnd(int64_t rank, const Instruction &inst,
                          bool &ready) const {
  double t = state[rank].host;
  ready = true;
  for (int64_t a : inst.after) {
    double end = state[rank].endOf[a];
    if (end == kUnknown) {
      ready = false;
      return t;
    }
    t = std::max(t, end);
  }
  return t;
}

bool Simulator::stepCompute(int64_t rank, const Instruction &inst,
                            double ready) {
  RankState &s = state[rank];
  double &free = s.streamFree[static_cast<int>(Stream::Compute)];
  double start = std::max(ready, free);
  double end = start + inst.seconds;
  free = end;
  s.stats.busy += inst.seconds;
  s.endOf[s.pc] = end;
  if (!inst.async)
    s.host = end;
  emit(rank, s.pc, Stream::Compute, start, end);
  return true;
}

bool Simulator::stepCollective(int64_t rank, const Instruction &inst,
                               double ready) {
  RankState &s = state[rank];
  if (!s.issuedAtPc) {
    s.collectives.push_back({rank, static_cast<int64_t>(s.pc), ready});
    if (s.collectives.size() == 1)
      countHead(inst.group);
    s.issuedAtPc = true;
    if (inst.kind == Instruction::CollectiveStart) {
      if (!s.handles.emplace(inst.handle, s.pc).second) {
        result.error = where(rank, s.pc) + ": handle " +
                       std::to_string(inst.handle) + " is already in flight";
        return false;
      }
      return true;
    }
    resolveCollectives();
  }
  if (s.endOf[s.pc] == kUnknown)
    return false;
  double end = std::max(s.host, s.endOf[s.pc]);
  s.stats.commWait += end - s.host;
  s.host = end;
  return true;
}

bool Simulator::step(int64_t rank) {
  RankState &s = state[rank];
  const Instruction &inst = schedule.ranks[rank][s.pc];
  bool depsReady = false;
  double ready = depsEnd(rank, inst, depsReady);
  if (!depsReady)
    return false;
  switch (inst.kind) {
  case Instruction::Compute:
    return stepCompute(rank, inst, ready);
  case Instruction::Send: {
    const Link &link = system.linkBetween(rank, inst.peer);
    double &free = linkFree[{rank, inst.peer}];
    double start = std::max(ready, free);
    double arrival = start + link.transferSeconds(inst.bytes);
    free = arrival;
    channels[{rank, inst.peer, inst.tag}].push_back(arrival);
    s.endOf[s.pc] = arrival;
    emit(rank, s.pc, Stream::Comm, start, arrival);
    return true;
  }
  case Instruction::Recv: {
    auto it = channels.find({inst.peer, rank, inst.tag});
    if (it == channels.end() || it->second.empty())
      return false;
    double end = std::max(ready, it->second.front());
    it->second.pop_front();
    s.stats.bubble += end - s.host;
    s.host = end;
    s.endOf[s.pc] = end;
    return true;
  }
  case Instruction::CollectiveStart:
  case Instruction::Collective:
    return stepCollective(rank, inst, ready);
  case Instruction::CopyStart: {
    if (!s.handles.emplace(inst.handle, s.pc).second) {
      result.error = where(rank, s.pc) + ": handle " +
                     std::to_string(inst.handle) + " is already in flight";
      return false;
    }
    double &free = s.streamFree[static_cast<int>(Stream::Copy)];
    double start = std::max(ready, free);
    double end = start + system.host.transferSeconds(inst.bytes);
    free = end;
    s.endOf[s.pc] = end;
    emit(rank, s.pc, Stream::Copy, start, end);
    return true;
  }
  case Instruction::Wait: {
    auto it = s.handles.find(inst.handle);
    if (it == s.handles.end()) {
      result.error = where(rank, s.pc) + ": waits for handle " +
                     std::to_string(inst.handle) + ", which no start began";
      return false;
    }
    double started = s.endOf[it->second];
    if (started == kUnknown)
      return false;
    double end = std::max(ready, started);
    s.stats.commWait += end - s.host;
    s.host = end;
    s.endOf[s.pc] = end;
    s.handles.erase(it);
    return true;
  }
  }
  return false;
}

bool Simulator::resolveCollectives() {
  bool any = false;
  while (!readyGroups.empty() && result.ok()) {
    int64_t group = readyGroups.back();
    readyGroups.pop_back();
    const std::vector<int64_t> &members = groups[group];
    int64_t first = members.front();
    const Instruction &inst =
        schedule.ranks[first][state[first].collectives.front().index];
    double start = 0;
    for (int64_t m : members) {
      const PendingCollective &head = state[m].collectives.front();
      const Instruction &other = schedule.ranks[m][head.index];
      if (other.bytes != inst.bytes) {
        result.error = where(m, head.index) + " moves " +
                       std::to_string(other.bytes) + " bytes but " +
                       where(first, state[first].collectives.front().index) +
                       " moves " + std::to_string(inst.bytes);
        return any;
      }
      start = std::max({start, head.issued,
                        state[m].streamFree[static_cast<int>(Stream::Comm)]});
    }
    const Link &link =
        inst.kind == Instruction::CollectiveStart && system.asyncCollectives
            ? *system.asyncCollectives
            : system.linkOfGroup(members);
    double end =
        start + ringAllReduceSeconds(
                    inst.bytes, static_cast<int64_t>(members.size()), link);
    headCount[group] = 0;
    for (int64_t m : members) {
      PendingCollective c = state[m].collectives.front();
      state[m].collectives.pop_front();
      state[m].streamFree[static_cast<int>(Stream::Comm)] = end;
      state[m].endOf[c.index] = end;
      emit(m, c.index, Stream::Comm, start, end);
    }
    for (int64_t m : members)
      if (!state[m].collectives.empty())
        countHead(schedule.ranks[m][state[m].collectives.front().index].group);
    any = true;
  }
  return any;
}

std::string Simulator::describeBlocked(int64_t rank) const {
  const RankState &s = state[rank];
  const Instruction &inst = schedule.ranks[rank][s.pc];
  std::string what = where(rank, s.pc);
  switch (inst.kind) {
  case Instruction::Recv:
    return what + " waits for rank " + std::to_string(inst.peer) + " tag " +
           std::to_string(inst.tag) + ", which it has not sent";
  case Instruction::Collective:
    return what + " waits for the other ranks of group " +
           std::to_string(inst.group) + " to join";
  case Instruction::Wait:
    return what + " waits for handle " + std::to_string(inst.handle) +
           ", whose collective the other ranks have not joined";
  default:
    return what + " waits for an earlier instruction ('after')";
  }
}

Result Simulator::run() {
  groups = schedule.groups;
  int64_t n = static_cast<int64_t>(schedule.ranks.size());
  if (groups.empty()) {
    groups.emplace_back();
    for (int64_t r = 0; r < n; ++r)
      groups.back().push_back(r);
  }
  result.error = validate();
  if (!result.ok())
    return result;
  state.resize(n);
  headCount.assign(groups.size(), 0);
  for (int64_t r = 0; r < n; ++r)
    state[r].endOf.assign(schedule.ranks[r].size(), kUnknown);
  for (bool progress = true; progress && result.ok();) {
    progress = false;
    for (int64_t r = 0; r < n && result.ok(); ++r)
      while (state[r].pc < schedule.ranks[r].size() && step(r)) {
        ++state[r].pc;
        state[r].issuedAtPc = false;
        progress = true;
      }
    if (resolveCollectives())
      progress = true;
  }
  if (!result.ok())
    return result;
  std::string blocked;
  for (int64_t r = 0; r < n; ++r)
    if (state[r].pc < schedule.ranks[r].size())
      blocked += "\n  " + describeBlocked(r);
  if (!blocked.empty()) {
    result.error = "deadlock: no rank can go on:" + blocked;
    return result;
  }
  for (int64_t r = 0; r < n; ++r) {
    if (!state[r].collectives.empty()) {
      result.error = where(r, state[r].collectives.front().index) +
                     " is never joined by the other ranks of its group";
      return result;
    }
    if (!state[r].handles.empty()) {
      result.error =
          where(r, state[r].handles.begin()->second) + " is never waited for";
      return result;
    }
  }
  for (auto &[key, arrivals] : channels)
    if (!arrivals.empty()) {
      auto [from, to, tag] = key;
      result.error = "rank " + std::to_string(from) + " sends rank " +
                     std::to_string(to) + " tag " + std::to_string(tag) +
                     ", which it never receives";
      return result;
    }
  for (int64_t r = 0; r < n; ++r) {
    RankState &s = state[r];
    double end = s.host;
    for (double e : s.endOf)
      end = std::max(end, e);
    s.stats.end = end;
    result.stepSeconds = std::max(result.stepSeconds, end);
  }
  for (RankState &s : state) {
    s.stats.idle = result.stepSeconds - s.stats.busy;
    result.ranks.push_back(s.stats);
  }
  return result;
}

Result mlir::strata::timeline::simulate(const Schedule &schedule,
                                        const System &system) {
  return Simulator(schedule, system).run();
}
