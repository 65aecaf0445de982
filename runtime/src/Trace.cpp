//===- Trace.cpp - Chrome trace-event output ------------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Trace.h"

#include <nlohmann/json.hpp>

#include <set>

namespace strata::rt {

using json = nlohmann::json;

const char *traceThreadName(int64_t thread) {
  switch (thread) {
  case kTraceProgramThread:
    return "program";
  case kTraceCommunicationThread:
    return "communication";
  case kTraceCopyThread:
    return "copy";
  case kTraceRecomputeThread:
    return "recompute";
  }
  return "other";
}

static json metadataEvent(const char *name, int64_t pid,
                          const std::string &value) {
  return {{"name", name},
          {"ph", "M"},
          {"pid", pid},
          {"tid", 0},
          {"args", {{"name", value}}}};
}

std::string TraceWriter::toJson() const {
  json list = json::array();
  std::set<int64_t> ranks;
  for (const TraceEvent &e : events)
    ranks.insert(e.rank);
  for (int64_t rank : ranks) {
    list.push_back(
        metadataEvent("process_name", rank, "rank " + std::to_string(rank)));
    list.push_back(metadataEvent("thread_name", rank, "program"));
  }
  // The other tracks are named where they have events.
  std::set<std::pair<int64_t, int64_t>> tracks;
  for (const TraceEvent &e : events)
    if (e.thread != kTraceProgramThread &&
        tracks.insert({e.rank, e.thread}).second) {
      json meta =
          metadataEvent("thread_name", e.rank, traceThreadName(e.thread));
      meta["tid"] = e.thread;
      list.push_back(std::move(meta));
    }
  for (const TraceEvent &e : events) {
    list.push_back({{"name", e.name},
                    {"cat", e.category.empty() ? "none" : e.category},
                    {"ph", "X"},
                    {"ts", e.startUs},
                    {"dur", e.durationUs},
                    {"pid", e.rank},
                    {"tid", e.thread},
                    {"args",
                     {{"layer", e.layer},
                      {"instruction", e.instruction},
                      {"step", e.step}}}});
  }
  json root = {{"traceEvents", std::move(list)},
               {"displayTimeUnit", "ms"},
               {"otherData", {{"clock_origin_us", clockOriginUs}}}};
  return root.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Status TraceWriter::write(const std::string &path) const {
  std::string text;
  try {
    text = toJson();
  } catch (const std::exception &e) {
    return Status::failure(path + ": cannot write the trace: " + e.what());
  }
  return writeFileAtomically(path, text);
}

} // namespace strata::rt
