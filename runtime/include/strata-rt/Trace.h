//===- Trace.h - Chrome trace-event output -----------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Traces are Chrome trace-event JSON ({"traceEvents": [...]}), which Perfetto
// and chrome://tracing open: one complete ("ph": "X") event per executed
// instruction.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TRACE_H
#define STRATA_RT_TRACE_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

/// The tracks (trace-event thread ids) of a rank, named by thread_name
/// metadata events: the program's instructions, bucket all-reduces in
/// flight, host copies of swapped activations as the copy thread ran them,
/// and recomputed forward instructions (phase "recompute").
constexpr int64_t kTraceProgramThread = 0;
constexpr int64_t kTraceCommunicationThread = 1;
constexpr int64_t kTraceCopyThread = 2;
constexpr int64_t kTraceRecomputeThread = 3;
/// "program", "communication", "copy", "recompute".
const char *traceThreadName(int64_t thread);

/// One executed instruction.
struct TraceEvent {
  /// The op.
  std::string name;
  /// The phase ("forward", "backward", "update", "recompute"), "" for
  /// none, or "communication" / "copy" for transfers.
  std::string category;
  /// Start and duration in microseconds.
  double startUs = 0;
  double durationUs = 0;
  int64_t rank = 0;
  int64_t layer = -1;
  int64_t instruction = 0;
  int64_t step = 0;
  /// Track within the rank (kTrace...Thread).
  int64_t thread = 0;
};

/// Collects events and writes them as a Chrome trace.
class TraceWriter {
public:
  void add(TraceEvent event) { events.push_back(std::move(event)); }
  const std::vector<TraceEvent> &getEvents() const { return events; }
  /// Where the events' clock starts, in microseconds of the machine's
  /// monotonic clock (written as "otherData": {"clock_origin_us": ...}).
  void setClockOriginUs(double us) { clockOriginUs = us; }

  /// The trace as JSON text: process/thread name metadata events, then one
  /// "X" event per recorded event (pid = rank, tid = thread, args {layer,
  /// instruction, step}), and the clock origin.
  std::string toJson() const;

  /// Writes toJson() to `path` atomically.
  Status write(const std::string &path) const;

private:
  std::vector<TraceEvent> events;
  double clockOriginUs = 0;
};

} // namespace strata::rt

#endif // STRATA_RT_TRACE_H
