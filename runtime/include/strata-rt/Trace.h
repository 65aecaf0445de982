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

/// One executed instruction.
struct TraceEvent {
  /// The op.
  std::string name;
  /// The phase ("forward", "backward", "update"), or "" for none.
  std::string category;
  /// Start and duration in microseconds.
  double startUs = 0;
  double durationUs = 0;
  int64_t rank = 0;
  int64_t layer = -1;
  int64_t instruction = 0;
  int64_t step = 0;
  /// Track within the rank: 0 the program, 1 communication in flight.
  int64_t thread = 0;
};

/// Collects events and writes them as a Chrome trace.
class TraceWriter {
public:
  void add(TraceEvent event) { events.push_back(std::move(event)); }
  const std::vector<TraceEvent> &getEvents() const { return events; }

  /// The trace as JSON text: process/thread name metadata events, then one
  /// "X" event per recorded event (pid = rank, tid = thread, args {layer,
  /// instruction, step}).
  std::string toJson() const;

  /// Writes toJson() to `path` atomically.
  Status write(const std::string &path) const;

private:
  std::vector<TraceEvent> events;
};

} // namespace strata::rt

#endif // STRATA_RT_TRACE_H
