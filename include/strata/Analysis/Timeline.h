//===- Timeline.h - Replays per-rank instruction lists ---------*- C++ -*-===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//
//
// The one timeline model of Strata (issue 17): it replays the instruction
// lists of every rank of one training step over three streams per rank
// (compute, copy, communication) and predicts when each instruction starts
// and ends, the step time, and per rank the busy, idle and bubble time.
//
// Execution model (the CPU executor's, docs/plan-format.md):
//   - every rank has one host thread that issues its instructions in order;
//   - `Compute` occupies the compute stream for its seconds; the host waits
//     for it (CPU kernels are synchronous) unless it is marked asynchronous;
//   - `Send` puts the transfer on the directed link (rank, peer) as soon as
//     it is issued (transfers of one link go one after another) and returns;
//     `Recv` blocks until the matching send's bytes arrived. Sends and recvs
//     match by (sender, receiver, tag), in order;
//   - `CollectiveStart` starts an all-reduce on the rank's communication
//     stream and returns; it begins when every rank of its group started
//     its k-th collective of the group and their communication streams are
//     free, and lasts 2 (p - 1) latency + 2 (p - 1) / p bytes / bandwidth
//     (a ring) on the slowest link level the group spans. `Wait` blocks the
//     host until the start with the same handle ended; `Collective` is a
//     start and its wait;
//   - `CopyStart` puts a host copy of `bytes` on the copy stream (host link);
//     `Wait` on its handle blocks until it is done;
//   - `after` lists earlier instructions of the same rank that must have
//     ended before an instruction starts (in addition to the above).
//
// A rank is busy while its compute stream runs; idle is the rest of the
// step; the bubble is the part of idle in which its host was blocked at a
// recv (waiting for another rank's data, a pipeline bubble); the
// communication wait is the part blocked at collectives and copies.
//
// Plain C++ (no MLIR), so the passes, strata-sim and the unit tests share it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_ANALYSIS_TIMELINE_H
#define STRATA_ANALYSIS_TIMELINE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::timeline {

enum class Stream { Compute = 0, Copy = 1, Comm = 2 };
constexpr int kNumStreams = 3;

/// "compute", "copy", "comm".
const char *getStreamName(Stream stream);

/// A link level: a fixed latency per message plus a bandwidth term.
struct Link {
  double latencySeconds = 0;
  /// Bytes per second; must be positive.
  double bytesPerSecond = 1e9;
  double transferSeconds(double bytes) const {
    return latencySeconds + bytes / bytesPerSecond;
  }
};

/// The machine: ranks on nodes and the link of each level.
struct System {
  /// Node of each rank (empty: every rank on node 0).
  std::vector<int64_t> nodeOfRank;
  Link intraNode;
  Link interNode;
  /// Device to host memory (swap copies).
  Link host;
  /// When set, asynchronous collectives (CollectiveStart) take this link
  /// instead of their group's level: a runtime whose background progress is
  /// slower than its blocking path (strata-sim --calibrate measures both).
  std::optional<Link> asyncCollectives;
  /// Node of `rank`.
  int64_t nodeOf(int64_t rank) const;
  /// The link between two ranks.
  const Link &linkBetween(int64_t a, int64_t b) const;
  /// The slowest level among `ranks`: inter-node when they span nodes.
  const Link &linkOfGroup(const std::vector<int64_t> &ranks) const;
};

/// Seconds of a ring all-reduce of `bytes` over `ranks` ranks on `link`:
/// 2 (p - 1) latency + 2 (p - 1) / p * bytes / bandwidth (0 for one rank).
double ringAllReduceSeconds(double bytes, int64_t ranks, const Link &link);

struct Instruction {
  enum Kind {
    Compute,
    Send,
    Recv,
    CollectiveStart,
    Collective,
    CopyStart,
    Wait
  };
  Kind kind = Compute;
  /// Shown in traces and messages.
  std::string name;
  /// Compute: its duration.
  double seconds = 0;
  /// Send, collectives, copies: the bytes moved.
  double bytes = 0;
  /// Send: the receiver; Recv: the sender.
  int64_t peer = -1;
  int64_t tag = 0;
  /// Collectives: index into Schedule::groups.
  int64_t group = 0;
  /// CollectiveStart, CopyStart: names the transfer; Wait: the one it
  /// waits for (unique among the rank's unfinished starts).
  int64_t handle = 0;
  /// Compute only: does not block the host (a device kernel).
  bool async = false;
  /// Indices of earlier instructions of the rank that must have ended.
  std::vector<int64_t> after;
  /// Free-form category for traces ("forward", "backward", ...).
  std::string category;
  /// The number traces and messages give it (an instruction of a plan's
  /// program that the schedule splits keeps its number); -1: its index in
  /// the rank's list; kNotAnInstruction: none of the plan's (traces give
  /// -1, as the runtime's do for work outside its instructions).
  int64_t label = -1;
  static constexpr int64_t kNotAnInstruction = -2;

  static Instruction compute(std::string name, double seconds);
  static Instruction send(int64_t peer, int64_t tag, double bytes);
  static Instruction recv(int64_t peer, int64_t tag);
  static Instruction collective(int64_t group, double bytes);
  static Instruction collectiveStart(int64_t group, double bytes,
                                     int64_t handle);
  static Instruction copyStart(double bytes, int64_t handle);
  static Instruction wait(int64_t handle);
};

struct Schedule {
  /// Instructions of each rank, in issue order.
  std::vector<std::vector<Instruction>> ranks;
  /// Communicator groups (ranks ascending); a schedule without any has one
  /// group of every rank.
  std::vector<std::vector<int64_t>> groups;
};

/// One placed instruction (or a transfer it caused).
struct Event {
  int64_t rank = 0;
  /// Index in the rank's instruction list.
  int64_t index = 0;
  /// Its instruction's label (its index when it has none).
  int64_t label = 0;
  Stream stream = Stream::Compute;
  double start = 0;
  double end = 0;
  std::string name;
  std::string category;
};

struct RankStats {
  /// When the rank's last instruction (and every stream) finished.
  double end = 0;
  /// Compute stream busy.
  double busy = 0;
  /// Step time minus busy.
  double idle = 0;
  /// Host blocked at recvs.
  double bubble = 0;
  /// Host blocked at collectives and copy waits.
  double commWait = 0;
};

struct Result {
  /// The step: when the last rank finished.
  double stepSeconds = 0;
  std::vector<RankStats> ranks;
  /// Compute, copy and communication events, in placement order.
  std::vector<Event> events;
  /// Empty when the replay succeeded, else why not (a deadlock naming each
  /// blocked rank and instruction, an unmatched send, an invalid handle).
  std::string error;
  bool ok() const { return error.empty(); }
};

/// Replays `schedule` on `system`.
Result simulate(const Schedule &schedule, const System &system);

/// Chrome trace-event JSON of `result` (one process per rank, one thread per
/// stream; times in microseconds).
std::string toChromeTrace(const Result &result);

/// An SVG drawing: one row per rank and stream, one box per event.
std::string toSvg(const Result &result, const std::string &title);

} // namespace mlir::strata::timeline

#endif // STRATA_ANALYSIS_TIMELINE_H
