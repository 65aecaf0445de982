//===- strata-sim.cpp - Predicts a plan's step time and memory ------------===//
//
// Part of the Strata project.
//
//   strata-sim PLAN --target T [--profile F] [--what-if "link=0.5x,..."]
//              [--trace OUT] [--svg OUT] [--json]
//
// Replays one training step of every rank of a plan on the timeline model
// (strata/Analysis/Timeline.h) and prints the predicted step time, each
// rank's busy, idle and bubble time, and its arena (docs/strata-sim.md).
//
// Exit codes: 0 success, 1 the replay failed (a deadlock) or an output could
// not be written, 2 bad command line or unknown target, 3 invalid plan or
// profile.
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"
#include "PlanSchedule.h"
#include "strata/Analysis/Timeline.h"
#include "strata/Target/TargetDescription.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

using namespace mlir::strata;
namespace rt = ::strata::rt;

static const char *const kUsage = R"(usage: strata-sim PLAN --target T [options]

Predicts one training step of a Strata plan (docs/plan-format.md) on a target
(targets/*.json): the step time, each rank's busy, idle and bubble time, and
its arena.

options:
  --target T        target description: a name (targets/T.json) or a file
  --profile F       kernel times from a measured profile (strata-run
                    --profile F, its "kernels"); kernels it lacks take their
                    roofline time times the measured / roofline ratio of
                    those it has
  --what-if S       change the target by ratios or values, comma-separated:
                    link=0.5x (bandwidth of every device link), link=2GB/s,
                    async-link=1GB/s, async-latency=50us (asynchronous
                    all-reduces, when they differ: --calibrate),
                    latency=2x, latency=50us, compute=0.5x (kernels take
                    twice as long), memory=2x (memory bandwidth), host=0.5x
  --overhead-us U   add U microseconds to every kernel (launch or dispatch
                    cost; default: a calibrated profile's, else 0)
  --calibrate OUT   first run PLAN on this machine (strata-run --profile
                    --trace, under mpirun for several ranks), write OUT (its
                    kernel times, the link latency and bandwidth fitted to
                    its all-reduces, the speed of the host copies that pack
                    and unpack all-reduce buckets, and the median gaps
                    between kernels and between steps) and predict with it
                    (as --profile)
  --calibrate-steps N
                    steps of the calibration run (default 10)
  --calibrate-flags F
                    strata-run flags of the calibration run (default
                    "--threads 1"; e.g. "--threads 1 --emulate-link ...")
  --trace OUT       write a Chrome trace (one process per rank, one thread
                    per stream)
  --svg OUT         write an SVG timeline (one row per rank and stream)
  --json            print the prediction as JSON
  --help            print this help

exit codes: 0 success, 1 the replay failed (deadlock) or an output could not
be written, 2 usage error or unknown target, 3 invalid plan or profile
)";

namespace {

struct Options {
  std::string plan, target, profile, whatIf, trace, svg, calibrate;
  std::string calibrateFlags = "--threads 1";
  double calibrateSteps = 10;
  /// Negative: not given (a calibrated profile's, else 0).
  double overheadUs = -1;
  bool json = false;
};

/// Exits with `code` after printing `message`.
[[noreturn]] void fail(int code, const std::string &message) {
  llvm::errs() << "strata-sim: error: " << message << "\n";
  if (code == 2)
    llvm::errs() << "run 'strata-sim --help' for usage\n";
  std::exit(code);
}

bool parseNumber(llvm::StringRef text, double &value) {
  std::string copy = text.str();
  errno = 0;
  char *end = nullptr;
  value = std::strtod(copy.c_str(), &end);
  return !copy.empty() && errno == 0 && *end == '\0' && value > 0 &&
         value < 1e300;
}

Options parseCommandLine(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      llvm::outs() << kUsage;
      std::exit(0);
    }
    if (arg == "--json") {
      o.json = true;
      continue;
    }
    if (!arg.starts_with("-")) {
      if (!o.plan.empty())
        fail(2, "unexpected argument '" + arg.str() + "'");
      o.plan = arg.str();
      continue;
    }
    auto [name, inlineValue] = arg.split('=');
    std::string value = inlineValue.str();
    if (!arg.contains('=')) {
      if (i + 1 >= argc)
        fail(2, "option '" + name.str() + "' needs a value");
      value = argv[++i];
    }
    if (name == "--target")
      o.target = value;
    else if (name == "--profile")
      o.profile = value;
    else if (name == "--what-if")
      o.whatIf = value;
    else if (name == "--trace")
      o.trace = value;
    else if (name == "--svg")
      o.svg = value;
    else if (name == "--calibrate")
      o.calibrate = value;
    else if (name == "--calibrate-flags")
      o.calibrateFlags = value;
    else if (name == "--calibrate-steps") {
      if (!parseNumber(value, o.calibrateSteps) || o.calibrateSteps < 2 ||
          o.calibrateSteps > 1e6 ||
          o.calibrateSteps != std::floor(o.calibrateSteps))
        fail(2, "--calibrate-steps: an integer from 2, got '" + value + "'");
    } else if (name == "--overhead-us") {
      char *end = nullptr;
      std::string text = value;
      o.overheadUs = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(o.overheadUs >= 0) ||
          o.overheadUs > 1e9)
        fail(2, "--overhead-us: a number of microseconds from 0, got '" +
                    value + "'");
    } else
      fail(2, "unknown option '" + name.str() + "'");
  }
  if (o.plan.empty())
    fail(2, "missing the PLAN argument");
  if (o.target.empty())
    fail(2, "missing --target");
  if (!o.calibrate.empty() && !o.profile.empty())
    fail(2, "--calibrate writes the profile it predicts with; drop --profile");
  return o;
}

/// The factor of "2x", or false.
bool parseRatio(llvm::StringRef text, double &factor) {
  return text.consume_back("x") && parseNumber(text, factor);
}

/// Applies --what-if to the system and the cost options.
void applyWhatIf(llvm::StringRef spec, timeline::System &system,
                 sim::CostOptions &cost) {
  llvm::SmallVector<llvm::StringRef> items;
  spec.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [key, value] = item.trim().split('=');
    double v = 0;
    auto bad = [&](const char *what) {
      fail(2, "--what-if: '" + item.trim().str() + "': " + what);
    };
    // Ratios move the asynchronous collectives' link too; values set the
    // device links only (async-link, async-latency set that one).
    timeline::Link *links[] = {&system.intraNode, &system.interNode};
    std::vector<timeline::Link *> scaled(std::begin(links), std::end(links));
    if (system.asyncCollectives)
      scaled.push_back(&*system.asyncCollectives);
    llvm::StringRef number = value;
    if (key == "link" && parseRatio(value, v)) {
      for (timeline::Link *l : scaled)
        l->bytesPerSecond *= v;
    } else if (key == "link" && number.consume_back("GB/s") &&
               parseNumber(number, v)) {
      for (timeline::Link *l : links)
        l->bytesPerSecond = v * 1e9;
    } else if (key == "latency" && parseRatio(value, v)) {
      for (timeline::Link *l : scaled)
        l->latencySeconds *= v;
    } else if (key == "latency" && number.consume_back("us") &&
               (parseNumber(number, v) || number == "0")) {
      for (timeline::Link *l : links)
        l->latencySeconds = number == "0" ? 0 : v * 1e-6;
    } else if (key == "async-link" && number.consume_back("GB/s") &&
               parseNumber(number, v)) {
      // Asynchronous collectives: what the profile measured, else the link.
      timeline::Link async = system.asyncCollectives.value_or(system.intraNode);
      async.bytesPerSecond = v * 1e9;
      system.asyncCollectives = async;
    } else if (key == "async-latency" && number.consume_back("us") &&
               (parseNumber(number, v) || number == "0")) {
      timeline::Link async = system.asyncCollectives.value_or(system.intraNode);
      async.latencySeconds = number == "0" ? 0 : v * 1e-6;
      system.asyncCollectives = async;
    } else if (key == "compute" && parseRatio(value, v)) {
      cost.computeScale /= v;
    } else if (key == "memory" && parseRatio(value, v)) {
      cost.memoryBandwidth *= v;
    } else if (key == "host" && parseRatio(value, v)) {
      system.host.bytesPerSecond *= v;
    } else if (key == "link" || key == "latency" || key == "compute" ||
               key == "memory" || key == "host" || key == "async-link" ||
               key == "async-latency") {
      bad("expected a positive ratio such as 0.5x (or GB/s for link, us "
          "for latency)");
    } else {
      bad("unknown key (link, latency, async-link, async-latency, compute, "
          "memory, host)");
    }
  }
}

/// The measured kernel times of a strata-run --profile file, and the link
/// that strata-sim --calibrate fitted (when the file has one).
sim::KernelTimes loadProfile(const std::string &path,
                             std::optional<timeline::Link> &link,
                             std::optional<timeline::Link> &asyncLink,
                             double &hostCopyBytesPerSecond,
                             double &hostUnpackBytesPerSecond,
                             std::optional<double> &kernelOverhead,
                             double &stepOverhead, int64_t &hostCores) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    fail(3, path + ": " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    fail(3, path + ": " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != "strata-profile")
    fail(3, path + ": not a strata profile (\"format\": \"strata-profile\")");
  const llvm::json::Array *kernels = root->getArray("kernels");
  if (!kernels)
    fail(3, path + ": has no \"kernels\" times (write the profile with "
                   "strata-run --profile)");
  sim::KernelTimes times;
  for (auto [n, value] : llvm::enumerate(*kernels)) {
    const llvm::json::Object *entry = value.getAsObject();
    std::optional<llvm::StringRef> kernel =
        entry ? entry->getString("kernel") : std::nullopt;
    std::optional<double> seconds =
        entry ? entry->getNumber("seconds") : std::nullopt;
    if (!kernel || !seconds || *seconds < 0 || !std::isfinite(*seconds))
      fail(3, path + ": kernels[" + std::to_string(n) +
                  "] needs a \"kernel\" string and non-negative \"seconds\"");
    times[kernel->str()] = *seconds;
  }
  auto readLink = [&](const char *key, std::optional<timeline::Link> &out) {
    const llvm::json::Object *fitted = root->getObject(key);
    if (!fitted)
      return;
    std::optional<double> latency = fitted->getNumber("latency_us");
    std::optional<double> bandwidth = fitted->getNumber("bandwidth_gb_per_s");
    if (!latency || !bandwidth || *latency < 0 || !(*bandwidth > 0))
      fail(3,
           path + ": \"" + key +
               "\" needs \"latency_us\" >= 0 and \"bandwidth_gb_per_s\" > 0");
    out = timeline::Link{*latency * 1e-6, *bandwidth * 1e9};
  };
  readLink("link", link);
  readLink("async_link", asyncLink);
  auto readCopy = [&](const char *key, double &bytesPerSecond) {
    const llvm::json::Object *copy = root->getObject(key);
    if (!copy)
      return;
    std::optional<double> bandwidth = copy->getNumber("bandwidth_gb_per_s");
    if (!bandwidth || !(*bandwidth > 0) || !std::isfinite(*bandwidth))
      fail(3, path + ": \"" + key + "\" needs \"bandwidth_gb_per_s\" > 0");
    bytesPerSecond = *bandwidth * 1e9;
  };
  readCopy("host_copy", hostCopyBytesPerSecond);
  readCopy("host_unpack", hostUnpackBytesPerSecond);
  auto readMicroseconds = [&](const char *key) -> std::optional<double> {
    const llvm::json::Value *v = root->get(key);
    if (!v)
      return std::nullopt;
    std::optional<double> us = v->getAsNumber();
    if (!us || !(*us >= 0) || !std::isfinite(*us) || *us > 1e9)
      fail(3, path + ": \"" + key + "\" needs a number of microseconds >= 0");
    return *us * 1e-6;
  };
  kernelOverhead = readMicroseconds("kernel_overhead_us");
  stepOverhead = readMicroseconds("step_overhead_us").value_or(0);
  if (const llvm::json::Value *v = root->get("host_cores")) {
    std::optional<int64_t> cores = v->getAsInteger();
    if (!cores || *cores < 1 || *cores > (1 << 20))
      fail(3, path + ": \"host_cores\" needs an integer from 1");
    hostCores = *cores;
  }
  return times;
}

/// Replays `plan`; where `cores` > 0 (a CPU target calibrated on a host
/// with that many cores) and a node holds more ranks than cores, the ranks
/// time-share them. Each rank asks for a core while it runs a kernel or is
/// in a collective (MPI moves and sums the bytes with the CPU on one
/// machine; a collective's wait for a late peer counts too, an
/// approximation); ranks waiting for a message yield theirs.
/// The kernels stretch by s = max(1, demand / (cores x step)), the demand
/// being the node's ranks' busy + collective time of the replay at that s
/// (a fixed point, at most ranks / cores: every rank always asking); sets
/// `stretch`.
timeline::Result simulateSharingCores(const rt::Plan &plan,
                                      const timeline::System &system,
                                      sim::CostOptions cost, int64_t cores,
                                      double &stretch) {
  std::map<int64_t, int64_t> ranksOnNode;
  for (int64_t node : system.nodeOfRank)
    ++ranksOnNode[node];
  int64_t busiest = 0;
  for (auto [node, ranks] : ranksOnNode)
    busiest = std::max(busiest, ranks);
  double base = cost.computeScale;
  timeline::Result result = sim::simulatePlan(plan, cost, system);
  if (cores <= 0 || busiest <= cores || !result.ok())
    return result;
  double most = static_cast<double>(busiest) / static_cast<double>(cores);
  stretch = 1;
  for (int iteration = 0; iteration < 50 && result.stepSeconds > 0;
       ++iteration) {
    std::map<int64_t, double> demand;
    for (size_t r = 0; r < result.ranks.size(); ++r)
      demand[system.nodeOfRank[r]] +=
          result.ranks[r].busy + result.ranks[r].commWait;
    double wanted = 1;
    for (auto [node, seconds] : demand)
      wanted = std::max(
          wanted, seconds / (static_cast<double>(cores) * result.stepSeconds));
    // Halfway: the step grows with the stretch, so a full step can
    // overshoot and oscillate (ranks that always ask take the bound).
    double next = wanted >= most ? most : (stretch + wanted) / 2;
    if (std::abs(next - stretch) < 1e-4)
      break;
    stretch = next;
    cost.computeScale = base * stretch;
    result = sim::simulatePlan(plan, cost, system);
    if (!result.ok())
      return result;
  }
  return result;
}

void writeOutput(const std::string &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    fail(1, path + ": " + ec.message());
  os << text;
}

void printText(const rt::Plan &plan, const Options &o,
               const timeline::Result &result, double stretch) {
  llvm::outs() << "strata-sim: " << plan.path << " on " << o.target << " ("
               << (o.profile.empty() ? "roofline costs"
                                     : "profile " + o.profile)
               << (o.whatIf.empty() ? "" : ", what-if " + o.whatIf) << ")\n";
  llvm::outs() << llvm::formatv("step: {0:F3} ms\n", result.stepSeconds * 1e3);
  llvm::outs() << "rank stage replica    busy_ms    idle_ms  bubble_ms  "
                  "commwait_ms  arena_bytes\n";
  int64_t peak = 0;
  for (int64_t r = 0; r < plan.worldSize(); ++r) {
    const timeline::RankStats &s = result.ranks[r];
    const rt::RankPlan &rp = plan.ranks[r];
    peak = std::max(peak, rp.arenaBytes);
    llvm::outs() << llvm::formatv(
        "{0,4} {1,5} {2,7} {3,10:F3} {4,10:F3} {5,10:F3} {6,12:F3} {7,12}\n", r,
        rp.stage, rp.replica, s.busy * 1e3, s.idle * 1e3, s.bubble * 1e3,
        s.commWait * 1e3, rp.arenaBytes);
  }
  llvm::outs() << "peak arena: " << peak << " bytes (live lower bound "
               << plan.liveLowerBound << " bytes)\n";
  if (stretch > 1)
    llvm::outs() << llvm::formatv("cores: the ranks time-share the host's "
                                  "cores, kernels x {0:F3}\n",
                                  stretch);
}

void printJson(const rt::Plan &plan, const Options &o,
               const timeline::Result &result, double stretch) {
  llvm::json::Array ranks;
  int64_t peak = 0;
  for (int64_t r = 0; r < plan.worldSize(); ++r) {
    const timeline::RankStats &s = result.ranks[r];
    peak = std::max(peak, plan.ranks[r].arenaBytes);
    ranks.push_back(
        llvm::json::Object{{"rank", r},
                           {"stage", plan.ranks[r].stage},
                           {"replica", plan.ranks[r].replica},
                           {"busy_seconds", s.busy},
                           {"idle_seconds", s.idle},
                           {"bubble_seconds", s.bubble},
                           {"comm_wait_seconds", s.commWait},
                           {"end_seconds", s.end},
                           {"arena_bytes", plan.ranks[r].arenaBytes}});
  }
  llvm::json::Object root{{"plan", plan.path},
                          {"target", o.target},
                          {"costs", o.profile.empty() ? "roofline" : "profile"},
                          {"what_if", o.whatIf},
                          {"step_seconds", result.stepSeconds},
                          {"peak_arena_bytes", peak},
                          {"live_lower_bound_bytes", plan.liveLowerBound},
                          {"core_sharing_stretch", stretch},
                          {"ranks", std::move(ranks)}};
  llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(root)))
               << "\n";
}

/// strata-run: $STRATA_RUN, else the one beside this executable.
std::string findStrataRun(const char *argv0) {
  if (const char *env = std::getenv("STRATA_RUN"))
    return env;
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable(argv0, &anchor);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, "strata-run");
  return std::string(path);
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseCommandLine(argc, argv);
  auto target = loadTargetDescription(o.target, getDefaultTargetSearchPath());
  if (!target)
    fail(2, llvm::toString(target.takeError()));
  rt::Plan plan;
  if (rt::Status status = rt::loadPlan(o.plan, plan); !status.ok())
    fail(status.code() == rt::Status::Code::Invalid ? 3 : 1, status.message());
  timeline::System system;
  int64_t perNode = std::max<int64_t>(target->devicesPerNode, 1);
  for (int64_t r = 0; r < plan.worldSize(); ++r)
    system.nodeOfRank.push_back(std::min<int64_t>(
        r / perNode, std::max<int64_t>(target->nodes, 1) - 1));
  system.intraNode = {target->intraNode.latency(),
                      target->intraNode.bandwidth()};
  system.interNode = {target->interNode.latency(),
                      target->interNode.bandwidth()};
  system.host = {target->host.latency(), target->host.bandwidth()};
  sim::CostOptions cost;
  cost.peakFlops = target->peakFlops("f32");
  cost.memoryBandwidth = target->memoryBandwidth();
  cost.kernelOverhead = std::max(o.overheadUs, 0.0) * 1e-6;
  if (!o.calibrate.empty()) {
    sim::CalibrateOptions calibration;
    calibration.out = o.calibrate;
    calibration.steps = static_cast<int64_t>(o.calibrateSteps);
    calibration.strataRun = findStrataRun(argv[0]);
    calibration.runFlags = o.calibrateFlags;
    if (std::string error = sim::calibrate(plan, calibration); !error.empty())
      fail(1, "--calibrate: " + error);
    o.profile = o.calibrate;
  }
  sim::KernelTimes profile;
  int64_t cores = 0;
  if (!o.profile.empty()) {
    std::optional<timeline::Link> link;
    std::optional<double> kernelOverhead;
    int64_t hostCores = 0;
    profile =
        loadProfile(o.profile, link, system.asyncCollectives,
                    cost.hostCopyBytesPerSecond, cost.hostUnpackBytesPerSecond,
                    kernelOverhead, cost.stepOverhead, hostCores);
    if (kernelOverhead && o.overheadUs < 0)
      cost.kernelOverhead = *kernelOverhead;
    if (target->device.kind == "cpu")
      cores = hostCores;
    cost.profile = &profile;
    if (link)
      system.intraNode = system.interNode = *link;
  }
  applyWhatIf(o.whatIf, system, cost);
  double stretch = 1;
  timeline::Result result =
      simulateSharingCores(plan, system, cost, cores, stretch);
  if (!result.ok())
    fail(1, plan.path + ": " + result.error);
  if (!o.trace.empty())
    writeOutput(o.trace, timeline::toChromeTrace(result));
  if (!o.svg.empty())
    writeOutput(o.svg, timeline::toSvg(result, plan.path));
  if (o.json)
    printJson(plan, o, result, stretch);
  else
    printText(plan, o, result, stretch);
  return 0;
}
