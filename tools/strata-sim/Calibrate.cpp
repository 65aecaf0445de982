//===- Calibrate.cpp - strata-sim --calibrate -----------------------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"
#include "PlanSchedule.h"

#include "strata-rt/Profile.h"
#include "strata-rt/Trace.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sched.h>
#include <thread>
#include <tuple>

using namespace mlir::strata;
using namespace mlir::strata::sim;
namespace rt = ::strata::rt;

std::optional<LinkFit>
sim::fitLink(const std::vector<CollectiveSample> &samples) {
  // Least squares of seconds = u * latency + x / bandwidth, with
  // u = 2 (p - 1) messages and x = 2 (p - 1) / p * bytes on the wire.
  double uu = 0, ux = 0, xx = 0, uy = 0, xy = 0, xSum = 0, ySum = 0;
  for (const CollectiveSample &s : samples) {
    if (s.ranks < 2)
      continue;
    double p = static_cast<double>(s.ranks);
    double u = 2 * (p - 1) * static_cast<double>(s.messages);
    double x = 2 * (p - 1) / p * s.bytes, y = s.seconds;
    uu += u * u, ux += u * x, xx += x * x, uy += u * y, xy += x * y;
    xSum += x, ySum += y;
  }
  if (ySum <= 0)
    return std::nullopt;
  double det = uu * xx - ux * ux;
  LinkFit fit;
  if (det > 1e-12 * uu * xx) {
    double latency = (uy * xx - ux * xy) / det;
    double inverse = (uu * xy - ux * uy) / det;
    if (latency >= 0 && inverse > 0) {
      fit.latencySeconds = latency;
      fit.bytesPerSecond = 1 / inverse;
      return fit;
    }
  }
  fit.bytesPerSecond = xSum / ySum;
  return fit;
}

static std::string quote(const std::string &text) {
  std::string out = "'";
  for (char c : text)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// `base` for rank 0, else base.rankR.json (strata-run's per-rank files).
static std::string rankFile(const std::string &base, int64_t rank) {
  return rank == 0 ? base : base + ".rank" + std::to_string(rank) + ".json";
}

static llvm::Expected<llvm::json::Value> readJson(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(path + ": " + buffer.getError().message());
  auto parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return llvm::createStringError(path + ": " +
                                   llvm::toString(parsed.takeError()));
  return parsed;
}

/// Group size of collective `inst`.
static int64_t groupSize(const rt::Plan &plan, const rt::Instruction &inst) {
  if (plan.groups.empty())
    return plan.worldSize();
  return static_cast<int64_t>(plan.groups[inst.attrs.group].ranks.size());
}

/// One bucket transfer of a trace: its step, start and end (seconds).
struct BucketSpan {
  int64_t step;
  double start, end, bytes;
  int64_t ranks, bucket;
};

/// A bucket of a program: its bytes (0: no such bucket), group size, and
/// whether it is accumulated on the host.
struct BucketInfo {
  double bytes = 0;
  int64_t ranks = 0;
  bool host = false;
};

/// Bucket `bucket` of `program` (from its start).
static BucketInfo bucketOf(const rt::Plan &plan,
                           const std::vector<rt::Instruction> &program,
                           int64_t bucket) {
  for (const rt::Instruction &inst : program)
    if (inst.op == rt::OpCode::AllReduceStart && inst.attrs.bucket == bucket)
      return {inputBytes(plan, inst), groupSize(plan, inst), inst.attrs.host};
  return {};
}

/// The busy periods of the communication stream: bucket transfers complete
/// in issue order, so one that starts before the previous ended waits for
/// it; a period (its total bytes over its span) is one sample.
static void addBusyPeriods(std::vector<BucketSpan> spans,
                           std::vector<CollectiveSample> &samples) {
  std::sort(spans.begin(), spans.end(), [](const auto &a, const auto &b) {
    return std::tie(a.step, a.start) < std::tie(b.step, b.start);
  });
  for (size_t i = 0; i < spans.size();) {
    CollectiveSample period;
    period.ranks = spans[i].ranks;
    period.messages = 0;
    double start = spans[i].start, end = spans[i].end;
    size_t j = i;
    for (; j < spans.size() && spans[j].step == spans[i].step &&
           (j == i || spans[j].start < end);
         ++j) {
      end = std::max(end, spans[j].end);
      period.bytes += spans[j].bytes;
      ++period.messages;
    }
    period.seconds = end - start;
    samples.push_back(period);
    i = j;
  }
}

/// Host copies around bucket transfers: bytes copied and seconds taken.
struct HostCopies {
  double bytes = 0, seconds = 0;
  int64_t count = 0;
};

/// A bucket wait's span on the program thread (seconds).
struct WaitSpan {
  int64_t step, bucket;
  double start, seconds, bytes;
};

/// The waits that began once their bucket's transfer had completed: their
/// time is the unpack alone (a wait that began earlier also waited for the
/// transfer).
static void addUnpacks(const std::vector<WaitSpan> &waits,
                       const std::vector<BucketSpan> &spans,
                       HostCopies &unpacks) {
  std::map<std::pair<int64_t, int64_t>, double> completed;
  for (const BucketSpan &span : spans)
    completed[{span.step, span.bucket}] = span.end;
  for (const WaitSpan &w : waits) {
    auto it = completed.find({w.step, w.bucket});
    if (it == completed.end() || w.start < it->second)
      continue;
    unpacks.bytes += w.bytes;
    unpacks.seconds += w.seconds;
    ++unpacks.count;
  }
}

/// What the program threads' spans give (seconds): the kernels' times, the
/// gaps between two consecutive kernels of a step (the executor's
/// dispatch), and per step of rank 0 its measured time (strata-run's "ms",
/// the time of Executor::runStep) beyond the span from its first
/// instruction's start to its last one's end.
struct ProgramTimes {
  std::vector<double> dispatch, step;
  /// Per kernel signature: the seconds of its instructions' spans over the
  /// traced steps, and how many spans.
  std::map<std::string, std::pair<double, int64_t>> kernelTime;
  /// Rank 0's first start and last end per step.
  std::map<int64_t, std::pair<double, double>> spanOfStep;
};

/// One instruction's span on the program thread.
struct ProgramSpan {
  int64_t step, instruction;
  double start, end;
};

static void addProgramSpans(const rt::Plan &plan, int64_t rank,
                            std::vector<ProgramSpan> spans,
                            ProgramTimes &times) {
  const std::vector<rt::Instruction> &program = plan.programOf(rank);
  // Each instruction's signature once (a span per step refers to it).
  std::vector<std::string> signature(program.size());
  for (size_t i = 0; i < program.size(); ++i)
    if (!isCommunication(program[i]))
      signature[i] = rt::kernelSignature(plan, program[i]);
  // A multi-tensor group runs as one kernel, its members' spans laid end to
  // end: no dispatch between them.
  std::vector<size_t> runs = rt::multiTensorRuns(program);
  std::sort(spans.begin(), spans.end(), [](const auto &a, const auto &b) {
    return std::tie(a.step, a.start) < std::tie(b.step, b.start);
  });
  for (size_t i = 0; i < spans.size(); ++i) {
    const ProgramSpan &next = spans[i];
    if (!isCommunication(program[next.instruction])) {
      auto &entry = times.kernelTime[signature[next.instruction]];
      entry.first += next.end - next.start;
      ++entry.second;
    }
    if (rank == 0) {
      auto [it, fresh] = times.spanOfStep.try_emplace(
          next.step, std::make_pair(next.start, next.end));
      if (!fresh)
        it->second.second = std::max(it->second.second, next.end);
    }
    if (i == 0)
      continue;
    const ProgramSpan &prev = spans[i - 1];
    if (next.step == prev.step && runs[next.instruction] != 0 &&
        !isCommunication(program[prev.instruction]) &&
        !isCommunication(program[next.instruction]))
      times.dispatch.push_back(std::max(0.0, next.start - prev.end));
  }
}

/// Rank 0's step times (milliseconds) from strata-run's log: "step N loss L
/// samples/s S ms M" lines.
static std::map<int64_t, double> stepTimes(const std::string &log) {
  std::map<int64_t, double> times;
  auto buffer = llvm::MemoryBuffer::getFile(log);
  if (!buffer)
    return times;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> words;
    line.split(words, ' ', -1, false);
    int64_t step = 0;
    double ms = 0;
    if (words.size() < 8 || words[0] != "step" || words[2] != "loss" ||
        words[6] != "ms" || words[1].getAsInteger(10, step) ||
        words[7].getAsDouble(ms))
      continue;
    times[step] = ms;
  }
  return times;
}

/// The cores this process may run on (its affinity mask), else the
/// hardware threads.
static int64_t usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return CPU_COUNT(&set);
  return static_cast<int64_t>(std::thread::hardware_concurrency());
}

static double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2,
                   values.end());
  return values[values.size() / 2];
}

/// The all-reduces of rank `rank` in its trace (the first step left out):
/// each blocking one (into `samples`), each busy period of the bucket
/// transfers (into `bucketSamples`), each bucket start, whose time on the
/// compute thread is the copy that packs the bucket (into `copies`), and the
/// program thread's kernel times and gaps (into `times`).
static void collectSamples(const rt::Plan &plan, int64_t rank,
                           const llvm::json::Value &trace,
                           std::vector<CollectiveSample> &samples,
                           std::vector<CollectiveSample> &bucketSamples,
                           HostCopies &copies, HostCopies &unpacks,
                           ProgramTimes &times) {
  const std::vector<rt::Instruction> &program = plan.programOf(rank);
  const llvm::json::Object *root = trace.getAsObject();
  const llvm::json::Array *events =
      root ? root->getArray("traceEvents") : trace.getAsArray();
  if (!events)
    return;
  std::vector<BucketSpan> spans;
  std::vector<WaitSpan> waits;
  std::vector<ProgramSpan> programSpans;
  for (const llvm::json::Value &value : *events) {
    const llvm::json::Object *e = value.getAsObject();
    if (!e || e->getString("ph") != "X")
      continue;
    const llvm::json::Object *args = e->getObject("args");
    std::optional<int64_t> step =
        args ? args->getInteger("step") : std::nullopt;
    std::optional<double> ts = e->getNumber("ts"), dur = e->getNumber("dur");
    std::optional<llvm::StringRef> name = e->getString("name");
    if (!step || *step <= 1 || !ts || !dur || !name)
      continue;
    llvm::StringRef bucketName = *name;
    std::optional<int64_t> index = args->getInteger("instruction");
    bool inProgram =
        index && *index >= 0 && *index < static_cast<int64_t>(program.size());
    // Recomputed instructions run on the program thread too (their own
    // track in the trace).
    std::optional<int64_t> tid = e->getInteger("tid");
    if (inProgram &&
        (tid == rt::kTraceProgramThread || tid == rt::kTraceRecomputeThread))
      programSpans.push_back({*step, *index, *ts * 1e-6, (*ts + *dur) * 1e-6});
    if (*name == "all_reduce" && inProgram) {
      const rt::Instruction &inst = program[*index];
      samples.push_back({static_cast<double>(plan.buffers[inst.in[0]].bytes),
                         groupSize(plan, inst), *dur * 1e-6, 1});
      continue;
    }
    // A host-accumulated bucket's start also waits for the earlier host
    // buckets' sums: no copy sample.
    if (*name == "all_reduce_start" && inProgram &&
        !program[*index].attrs.host) {
      copies.bytes += inputBytes(plan, program[*index]);
      copies.seconds += *dur * 1e-6;
      ++copies.count;
      continue;
    }
    // A host-accumulated bucket's wait does more than unpack (its start
    // carries the attribute, the wait does not).
    if (*name == "all_reduce_wait" && inProgram) {
      int64_t bucket = program[*index].attrs.bucket;
      BucketInfo info = bucketOf(plan, program, bucket);
      if (!info.host && info.bytes > 0)
        waits.push_back({*step, bucket, *ts * 1e-6, *dur * 1e-6, info.bytes});
      continue;
    }
    int64_t bucket = 0;
    if (!bucketName.consume_front("all_reduce bucket ") ||
        bucketName.getAsInteger(10, bucket))
      continue;
    BucketInfo info = bucketOf(plan, program, bucket);
    if (info.bytes > 0)
      spans.push_back({*step, *ts * 1e-6, (*ts + *dur) * 1e-6, info.bytes,
                       info.ranks, bucket});
  }
  addUnpacks(waits, spans, unpacks);
  addBusyPeriods(std::move(spans), bucketSamples);
  addProgramSpans(plan, rank, std::move(programSpans), times);
}

std::string sim::calibrate(const rt::Plan &plan,
                           const CalibrateOptions &options) {
  std::string profileBase = options.out + ".run.json";
  std::string traceBase = options.out + ".trace.json";
  std::string log = options.out + ".log";
  int64_t world = plan.worldSize();
  std::string command =
      (world > 1 ? options.mpirun + " -np " + std::to_string(world) + " "
                 : std::string()) +
      quote(options.strataRun) + " " + quote(plan.path) + " --steps " +
      std::to_string(options.steps) + " " + options.runFlags + " --profile " +
      quote(profileBase) + " --trace " + quote(traceBase) + " > " + quote(log) +
      " 2>&1";
  if (int status = std::system(command.c_str()); status != 0)
    return "the calibration run failed (exit status " + std::to_string(status) +
           "): " + command + " (output in " + log + ")";
  std::vector<CollectiveSample> samples, bucketSamples;
  HostCopies copies, unpacks;
  ProgramTimes times;
  // Rank 0's profile is the file's base (its layers and edges); the kernel
  // times come from the traces.
  auto profile = readJson(profileBase);
  if (!profile)
    return llvm::toString(profile.takeError());
  if (!profile->getAsObject())
    return profileBase + ": not a JSON object";
  llvm::json::Object root = *profile->getAsObject();
  for (int64_t rank = 0; rank < world; ++rank) {
    auto trace = readJson(rankFile(traceBase, rank));
    if (!trace)
      return llvm::toString(trace.takeError());
    collectSamples(plan, rank, *trace, samples, bucketSamples, copies, unpacks,
                   times);
  }
  // Kernel times: the mean of every traced span of a signature (all ranks,
  // the first step left out). A step sums hundreds of kernels, so its
  // typical time is the sum of their means; strata-run's profile keeps
  // per-instruction medians, which run a few percent short on a loaded
  // machine.
  llvm::json::Array merged;
  for (auto &[kernel, entry] : times.kernelTime)
    merged.push_back(llvm::json::Object{
        {"kernel", kernel},
        {"seconds", entry.first / static_cast<double>(entry.second)},
        {"count", entry.second}});
  root["kernels"] = std::move(merged);
  root["producer"] = "strata-sim --calibrate";
  auto linkJson = [](const LinkFit &fit, size_t count) {
    return llvm::json::Object{{"latency_us", fit.latencySeconds * 1e6},
                              {"bandwidth_gb_per_s", fit.bytesPerSecond * 1e-9},
                              {"samples", static_cast<int64_t>(count)}};
  };
  // Blocking all-reduces give the link; bucket transfers the link of
  // asynchronous collectives (and the link, when there is nothing else).
  // Samples of a few bytes (a loss all-reduce) measure only how long one
  // rank waited for the other: fit nothing from less than 1 MiB in all.
  auto fitEnough = [](const std::vector<CollectiveSample> &list) {
    double bytes = 0;
    for (const CollectiveSample &s : list)
      bytes += s.bytes;
    return bytes >= 1 << 20 ? fitLink(list) : std::nullopt;
  };
  std::optional<LinkFit> blocking = fitEnough(samples);
  std::optional<LinkFit> buckets = fitEnough(bucketSamples);
  if (blocking)
    root["link"] = linkJson(*blocking, samples.size());
  else if (buckets)
    root["link"] = linkJson(*buckets, bucketSamples.size());
  if (buckets)
    root["async_link"] = linkJson(*buckets, bucketSamples.size());
  // Total bytes over total time: a start's fixed costs (handing the
  // transfer to the progress thread; the first start of a step is slower)
  // are part of what the replay charges per byte.
  if (copies.bytes >= 1 << 20 && copies.seconds > 0)
    root["host_copy"] = llvm::json::Object{
        {"bandwidth_gb_per_s", copies.bytes / copies.seconds * 1e-9},
        {"samples", copies.count}};
  // The unpacks: the waits that began after their transfer completed (the
  // copy alone: no hand-off to the progress thread, unlike a start's).
  if (unpacks.bytes >= 1 << 20 && unpacks.seconds > 0)
    root["host_unpack"] = llvm::json::Object{
        {"bandwidth_gb_per_s", unpacks.bytes / unpacks.seconds * 1e-9},
        {"samples", unpacks.count}};
  // Rank 0's time inside each step beyond its instructions' span (the
  // steps the trace has: the first left out).
  std::map<int64_t, double> measured = stepTimes(log);
  for (auto [step, span] : times.spanOfStep)
    if (auto it = measured.find(step); it != measured.end())
      times.step.push_back(
          std::max(0.0, it->second * 1e-3 - (span.second - span.first)));
  // Medians: a rank the shared machine preempts now and then should not
  // charge every kernel for it.
  if (!times.dispatch.empty())
    root["kernel_overhead_us"] = median(times.dispatch) * 1e6;
  if (!times.step.empty())
    root["step_overhead_us"] = median(times.step) * 1e6;
  // The cores the calibration's ranks could use (their CPU affinity):
  // more ranks than cores time-share them (strata-sim stretches kernels).
  if (int64_t cores = usableCores(); cores > 0)
    root["host_cores"] = cores;
  std::error_code ec;
  llvm::raw_fd_ostream os(options.out, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return options.out + ": " + ec.message();
  os << llvm::formatv("{0:1}", llvm::json::Value(std::move(root))) << "\n";
  return "";
}
