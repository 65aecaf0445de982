//===- Train.cpp - The training loop of strata-run ------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Train.h"
#include "strata-rt/Schedule.h"

#include "strata-rt/Checkpoint.h"
#include "strata-rt/Comm.h"
#include "strata-rt/CompressCalibration.h"
#include "strata-rt/Data.h"
#include "strata-rt/Device.h"
#include "strata-rt/Eval.h"
#include "strata-rt/Executor.h"
#include "strata-rt/GradCheck.h"
#include "strata-rt/Lagging.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Profile.h"
#include "strata-rt/Trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sys/resource.h>

namespace strata::rt {

namespace {

/// printf to the log (if any) and flush, so progress shows as it happens.
void logLine(std::FILE *log, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void logLine(std::FILE *log, const char *format, ...) {
  if (!log)
    return;
  va_list args;
  va_start(args, format);
  std::vfprintf(log, format, args);
  va_end(args);
  std::fflush(log);
}

Status checkOptions(const TrainOptions &options) {
  if (options.saveEvery < 0 || options.keep < 1)
    return Status::usage("--save-every must be non-negative and --keep at "
                         "least 1");
  if (options.saveEvery > 0 && options.savePath.empty())
    return Status::usage("--save-every needs --save FILE");
  if (!options.resumePath.empty() && !options.resumeLatestPath.empty())
    return Status::usage("give --resume or --resume-latest, not both");
  if (!options.initPath.empty() && !options.resumeLatestPath.empty())
    return Status::usage("--init and --resume-latest cannot be combined");
  if (!options.initPath.empty() && !options.resumePath.empty())
    return Status::usage("--init and --resume cannot be combined (a resumed "
                         "run takes its parameters from the checkpoint)");
  if (options.steps < 0)
    return Status::usage("--steps must be non-negative, got " +
                         std::to_string(options.steps));
  if (options.gradientSamples < 0)
    return Status::usage("--check-gradients must be positive");
  if (options.gradientSamples > 0 &&
      (!options.savePath.empty() || !options.tracePath.empty()))
    return Status::usage("--check-gradients runs no training: it cannot be "
                         "combined with --save or --trace");
  if (options.logEvery < 1)
    return Status::usage("--log-every must be at least 1, got " +
                         std::to_string(options.logEvery));
  if (!(options.lagGrace >= 0))
    return Status::usage("--lag-grace must be non-negative");
  if (options.saveAllRanks && options.savePath.empty())
    return Status::usage("--save-all-ranks needs --save FILE");
  if (!(options.evalFraction >= 0 && options.evalFraction < 1))
    return Status::usage("--eval-fraction must be in [0, 1)");
  if (!(options.clipNorm >= 0 && options.clipNorm <= 1e12))
    return Status::usage("--clip-norm must be a non-negative number");
  if (options.evalEvery < 0)
    return Status::usage("--eval-every must be non-negative");
  if (options.compressEvery < 0)
    return Status::usage("--compress-every must be non-negative");
  if (options.compressBudgetByNoise && !options.compressByGradient)
    return Status::usage("a budget relative to the gradient's noise needs "
                         "gradient calibration (--compress-calibrate "
                         "gradient-noise sets both)");
  if (options.compressByGradient && options.emulateCompute != 1)
    return Status::usage(
        "--compress-calibrate gradient cannot be combined with "
        "--emulate-compute (its passes would be timed and padded as steps)");
  if ((options.evalEvery > 0 || options.evalFraction > 0) &&
      options.evalDataPath.empty() && options.evalFraction == 0)
    return Status::usage("--eval-every needs --eval-data or --eval-fraction");
  return Status::success();
}

/// Whether `straggler` delays the `computed`-th gradient set (1-based) of
/// `rank`.
bool delays(const Straggler &straggler, int rank, int64_t computed) {
  return straggler.enabled() && straggler.rank == rank &&
         computed % straggler.every == 0;
}

/// Resolves --device against the plan's choice for `rank`.
Status chooseDevice(const TrainOptions &options, const Plan &plan, int64_t rank,
                    DeviceKind &kind, DeviceOptions &device) {
  kind = plan.ranks[rank].device;
  device = DeviceOptions();
  device.strataGemm = options.strataGemm;
  device.allowTf32 = options.allowTf32;
  const std::string &text = options.device;
  if (text.empty()) {
  } else if (text == "cpu") {
    kind = DeviceKind::Cpu;
  } else if (text == "cuda") {
    kind = DeviceKind::Cuda;
  } else if (text.rfind("cuda:", 0) == 0) {
    std::string digits = text.substr(5);
    int64_t ordinal = digits.empty() || digits.size() > 4 ? -1 : 0;
    for (char c : digits)
      ordinal =
          c >= '0' && c <= '9' && ordinal >= 0 ? ordinal * 10 + (c - '0') : -1;
    if (ordinal < 0)
      return Status::usage("--device: invalid GPU number in '" + text + "'");
    kind = DeviceKind::Cuda;
    device.ordinal = static_cast<int>(ordinal);
  } else {
    return Status::usage("--device must be cpu, cuda or cuda:N, got '" + text +
                         "'");
  }
  if (kind == DeviceKind::Cpu && options.allowTf32)
    return Status::usage("--tf32 selects a GPU math mode; it needs a CUDA "
                         "device");
  if (options.allowTf32 && options.strataGemm)
    return Status::usage("--tf32 applies to cuBLAS; Strata's GEMM "
                         "(--gemm=strata) computes in FP32");
  if (kind == DeviceKind::Cpu && options.strataGemm)
    return Status::usage("--gemm=strata selects a GPU GEMM; it needs a CUDA "
                         "device");
  if (kind == DeviceKind::Cuda && options.gradientSamples > 0)
    return Status::usage("--check-gradients runs on the CPU (--device=cpu)");
  return Status::success();
}

/// One communicator per plan group: the world communicator for a group of
/// every rank, a sub-communicator otherwise (nullptr where this rank is not
/// a member).
Status createGroups(const Plan &plan, Communicator &world,
                    std::vector<std::unique_ptr<Communicator>> &owned,
                    std::vector<Communicator *> &groups) {
  for (const CommGroup &group : plan.groups) {
    if (static_cast<int64_t>(group.ranks.size()) == plan.worldSize()) {
      groups.push_back(&world);
      continue;
    }
    std::vector<int> ranks(group.ranks.begin(), group.ranks.end());
    std::unique_ptr<Communicator> sub;
    Status status = world.createGroup(ranks, sub);
    if (!status.ok())
      return Status::failure("group \"" + group.name +
                             "\": " + status.message());
    groups.push_back(sub.get());
    if (sub)
      owned.push_back(std::move(sub));
  }
  return Status::success();
}

/// Pipelines on GPUs: the directed links (sending rank, receiving rank)
/// that the plan's sends use, for openNcclLinks (the same list on every
/// rank).
std::vector<std::pair<int, int>> pipelineLinks(const Plan &plan) {
  std::set<std::pair<int, int>> links;
  for (const RankPlan &rank : plan.ranks)
    for (const Instruction &inst : plan.programOf(rank.rank))
      if (inst.info().sends())
        links.insert(
            {static_cast<int>(rank.rank),
             static_cast<int>(plan.rankOf(inst.attrs.peer, rank.replica))});
  return {links.begin(), links.end()};
}

/// Initialises or restores parameters and states; sets the start step and
/// the seed of the run.
Status prepareState(const TrainOptions &options, Executor &executor,
                    TrainResult &result) {
  result.seed = options.seed;
  std::string resume = options.resumePath;
  if (!options.resumeLatestPath.empty())
    if (Status status = findLatestCheckpoint(options.resumeLatestPath, resume);
        !status.ok())
      return status;
  if (!resume.empty()) {
    CheckpointInfo info;
    Status status =
        loadCheckpoint(executor, resume, CheckpointContents::Everything, info);
    if (!status.ok())
      return status;
    result.startStep = info.step;
    if (!options.seedGiven)
      result.seed = info.seed;
    if (info.refills && !options.quiet)
      logLine(options.log,
              "warning: %s keeps no pipeline in flight (a plan that drains "
              "every step wrote it): the pipeline fills again, so the first "
              "steps read the newest weights, not the older versions an "
              "uninterrupted run would\n",
              resume.c_str());
    return Status::success();
  }
  executor.initialize(result.seed);
  if (options.initPath.empty())
    return Status::success();
  CheckpointInfo info;
  return loadCheckpoint(executor, options.initPath,
                        CheckpointContents::Parameters, info);
}

void recordTrace(const Executor &executor, int64_t step, TraceWriter &trace) {
  const std::vector<Instruction> &program = executor.getProgram();
  const std::vector<InstructionTime> &times = executor.getLastStepTimes();
  trace.setClockOriginUs(executor.getClockOriginUs());
  for (size_t i = 0; i < program.size(); ++i) {
    TraceEvent event;
    event.name = program[i].name();
    event.category = phaseName(program[i].phase);
    event.startUs = times[i].startUs;
    event.durationUs = times[i].durationUs;
    event.layer = program[i].layer;
    event.instruction = static_cast<int64_t>(i);
    event.step = step;
    // Recomputed forward instructions, on their own track.
    if (program[i].phase == Phase::Recompute)
      event.thread = kTraceRecomputeThread;
    trace.add(std::move(event));
  }
  // Host copies of swapped activations as the copy thread ran them, on
  // their own track.
  for (const Executor::CopyTime &copy : executor.getLastStepCopies()) {
    TraceEvent event;
    event.name = copy.name + " slot " + std::to_string(copy.slot);
    event.category = "copy";
    event.startUs = copy.startUs;
    event.durationUs = copy.durationUs;
    event.instruction = -1;
    event.step = step;
    event.thread = kTraceCopyThread;
    trace.add(std::move(event));
  }
  // Bucket all-reduces in flight, on their own track.
  for (const Executor::TransferTime &transfer :
       executor.getLastStepTransfers()) {
    TraceEvent event;
    event.name = "all_reduce bucket " + std::to_string(transfer.bucket);
    event.category = "communication";
    event.startUs = transfer.startUs;
    event.durationUs = transfer.durationUs;
    event.instruction = -1;
    event.step = step;
    event.thread = kTraceCommunicationThread;
    trace.add(std::move(event));
  }
}

double perSecond(int64_t count, double milliseconds) {
  return milliseconds > 0 ? count * 1000.0 / milliseconds : 0.0;
}

/// Moves `bytes` from rank `owner` to rank 0 (in 4-byte words: states are
/// f32, carried values f32 or i32); a no-op on other ranks and when the
/// owner is rank 0. Every rank of the pair calls it with the same tag.
Status toRankZero(Communicator &comm, int64_t rank, int64_t owner, void *bytes,
                  int64_t size, int tag, const char *what) {
  if (owner == 0 || (rank != owner && rank != 0))
    return Status::success();
  float *words = static_cast<float *>(bytes);
  int64_t count = size / static_cast<int64_t>(sizeof(float));
  Status status =
      rank == owner
          ? comm.startSend(words, count, 0, tag)->wait()
          : comm.startRecv(words, count, static_cast<int>(owner), tag)->wait();
  if (!status.ok())
    return Status::failure(std::string("gathering ") + what +
                           " for the checkpoint: " + status.message());
  return Status::success();
}

/// Replicated stages of a pipeline kept in flight: every rank's carried
/// values go to rank 0 (Executor::getRankCarries), as each replica carries
/// its own micro-batches (every rank calls it).
Status gatherRankCarries(Executor &executor, Communicator &comm, int64_t rank) {
  const Plan &plan = executor.getPlan();
  std::map<std::string, std::vector<char>> &carries = executor.getRankCarries();
  carries.clear();
  if (plan.replicas <= 1 || executor.getInFlight().empty())
    return Status::success();
  constexpr int kCarryTag = 32002;
  for (int64_t r = 0; r < plan.worldSize(); ++r) {
    if (rank != r && rank != 0)
      continue;
    for (int64_t buffer : updatedInPlace(plan.programOf(r))) {
      const State *carry = plan.carryIn(buffer);
      if (!carry)
        continue;
      const Tensor &tensor = executor.getTensor(buffer);
      std::vector<char> &bytes =
          carries[carry->name + "@rank" + std::to_string(r)];
      bytes.resize(tensor.desc.bytes());
      if (r == 0)
        std::memcpy(bytes.data(), tensor.data, bytes.size());
      void *data = rank == r ? tensor.data : bytes.data();
      if (Status status = toRankZero(comm, rank, r, data,
                                     static_cast<int64_t>(bytes.size()),
                                     kCarryTag, "the ranks' carried values");
          !status.ok())
        return status;
    }
    if (rank == r && r != 0)
      carries.clear();
  }
  return Status::success();
}

/// Pipelines: sends every parameter and state that a stage other than 0
/// updates from that stage's replica-0 rank to rank 0, so that rank 0 holds
/// the whole model, and with it the stages' kept in-flight state (every
/// rank calls it, in the same order).
Status gatherStages(Executor &executor, Communicator &comm, int64_t rank) {
  const Plan &plan = executor.getPlan();
  // GPU ranks gather host copies: the owners bring theirs back from the
  // device, and rank 0's host arena, which receives, is then newer than its
  // device arena (markHostModified: the checkpoint reads the host copy).
  if (Status status = executor.syncToHost(); !status.ok())
    return status;
  // Buffer -> the stage whose program updates it in place (parameters,
  // optimizer states, running statistics, carried values).
  std::map<int64_t, int64_t> ownerStage;
  for (int64_t stage = 0; stage < plan.stages; ++stage)
    for (int64_t buffer : updatedInPlace(plan.programOf(plan.rankOf(stage, 0))))
      ownerStage[buffer] = stage;
  constexpr int kGatherTag = 32000;
  // A drained pipeline's in-flight state (Executor::drain), which every
  // rank kept or none did.
  std::map<int64_t, std::vector<char>> &flight = executor.getInFlight();
  bool kept = !flight.empty();
  for (const auto &[buffer, stage] : ownerStage) {
    int64_t owner = plan.rankOf(stage, 0);
    const Tensor &tensor = executor.getTensor(buffer);
    if (Status status =
            toRankZero(comm, rank, owner, tensor.data, tensor.desc.bytes(),
                       kGatherTag, "the pipeline stages");
        !status.ok())
      return status;
    if (!kept || plan.isCarry(buffer) || (rank != owner && rank != 0))
      continue;
    std::vector<char> &bytes = flight[buffer];
    bytes.resize(tensor.desc.bytes());
    if (Status status = toRankZero(
            comm, rank, owner, bytes.data(), static_cast<int64_t>(bytes.size()),
            kGatherTag + 1, "the pipeline stages' in-flight state");
        !status.ok())
      return status;
  }
  if (Status status = gatherRankCarries(executor, comm, rank); !status.ok())
    return status;
  if (rank == 0)
    executor.markHostModified();
  return Status::success();
}

/// Runs the steps; stops at the first failure or non-finite loss.
/// Runs of at least this many steps print elapsed time and an ETA.
constexpr int64_t kProgressSteps = 100;

std::string formatLr(double lr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", lr);
  return text;
}

/// One JSON Lines record of a logged step (--log-json).
void logJsonRecord(std::FILE *file, int64_t step, float loss, double lr,
                   bool scheduled, double samplesPerSecond, double ms,
                   double elapsedSeconds, double gradNorm) {
  if (!file)
    return;
  char number[32];
  std::snprintf(number, sizeof(number), "%.9g", loss);
  std::fprintf(file,
               "{\"step\": %lld, \"loss\": %s, \"samples_per_s\": %.6g, "
               "\"ms\": %.6g, \"elapsed_s\": %.6g",
               static_cast<long long>(step),
               std::isfinite(loss) ? number : "null", samplesPerSecond, ms,
               elapsedSeconds);
  if (scheduled)
    std::fprintf(file, ", \"lr\": %.9g", lr);
  if (gradNorm >= 0)
    std::fprintf(file, ", \"grad_norm\": %.9g", gradNorm);
  std::fprintf(file, "}\n");
  std::fflush(file);
}

/// Compressed activations under a budget: whether step `i` (1-based in this
/// run) measures the candidate formats. Gradient calibration also measures
/// fixed formats (it reports their gradient error and changes nothing).
bool measuresCompression(const TrainOptions &options, Executor &executor,
                         int64_t i) {
  CompressionState *compression = executor.getCompression();
  if (!compression || compression->empty() ||
      (!compression->adaptive() && !options.compressByGradient))
    return false;
  return i == 1 ||
         (options.compressEvery > 0 && (i - 1) % options.compressEvery == 0);
}

/// The loss trend of an adaptive compression run: the mean loss of the steps
/// since the last measurement and of the interval before it.
struct LossTrend {
  double sum = 0;
  int64_t count = 0;
  double previous = -1;

  void add(float loss) {
    sum += loss;
    ++count;
  }
  /// At a measurement step: halves the budgets when the last interval's
  /// mean loss rose above the one before it (and says so), then starts a new
  /// interval.
  void check(std::FILE *log, CompressionState &compression, int64_t step) {
    if (count == 0)
      return;
    double mean = sum / count;
    if (previous >= 0 && mean > previous) {
      compression.budgetScale *= 0.5;
      logLine(log,
              "compress step %lld: mean loss rose from %.6f to %.6f over the "
              "last %lld steps: budgets scaled by %.4g (wider formats)\n",
              static_cast<long long>(step), previous, mean,
              static_cast<long long>(count), compression.budgetScale);
    }
    previous = mean;
    sum = 0;
    count = 0;
  }
};

/// Logs what the measurement of step `step` changed and the bytes the
/// compressed activations take now. A gradient calibration's errors are
/// estimated gradient errors, held to the budget together, not one by one.
void logCompression(std::FILE *log, Executor &executor, int64_t step,
                    bool byGradient) {
  CompressionState &compression = *executor.getCompression();
  std::vector<CompressionChange> changes = compression.takeChanges();
  for (const CompressionChange &c : changes) {
    const CompressionSite &site = compression.getSites().at(c.site);
    std::string held = byGradient ? "estimated gradient error" : "error";
    char number[64];
    std::snprintf(number, sizeof(number), " %.4g", c.error);
    held += number;
    if (!byGradient) {
      std::snprintf(number, sizeof(number), " budget %.4g", c.budget);
      held += c.error <= c.budget ? " <=" : " > (none within)";
      held += number;
    }
    logLine(log,
            "compress step %lld: tensor %lld (layer %lld, %lld elements) %s "
            "-> %s: %s\n",
            static_cast<long long>(step), static_cast<long long>(c.site),
            static_cast<long long>(site.layer),
            static_cast<long long>(site.numel), c.from.c_str(), c.to.c_str(),
            held.c_str());
  }
  int64_t packed = compression.packedBytes(), f32 = compression.f32Bytes();
  logLine(log,
          "compress step %lld: %zu changes; %zu tensors take %lld bytes "
          "(%.2fx smaller than f32)\n",
          static_cast<long long>(step), changes.size(),
          compression.getSites().size(), static_cast<long long>(packed),
          packed ? static_cast<double>(f32) / packed : 0.0);
}

/// Gradient calibration before step `step` (CompressCalibration.h): logs
/// each tensor's measured sensitivity, the changes, and the combined
/// gradient error predicted and measured. With `noiseData`, the budget is
/// relative to the gradient's batch-to-batch noise (the next step's batch
/// comes from it).
Status calibrateCompression(std::FILE *log, Executor &executor, int64_t step,
                            const DataSource *noiseData) {
  auto start = std::chrono::steady_clock::now();
  GradientCalibration calibration;
  FillBatch fill;
  if (noiseData)
    fill = [&](int64_t s) {
      noiseData->fill(s, executor.getTensors(), &executor.getPool());
    };
  if (Status status = calibrateByGradient(executor, step, calibration, fill);
      !status.ok())
    return status;
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const auto &sites = executor.getCompression()->getSites();
  for (const GradientCalibration::Site &s : calibration.sites) {
    const CompressionSite &site = sites.at(s.site);
    logLine(log,
            "compress step %lld: tensor %lld (layer %lld) in %s: tensor "
            "error %.4g, gradient error %.4g\n",
            static_cast<long long>(step), static_cast<long long>(s.site),
            static_cast<long long>(site.layer),
            strata_plan::actFormatName(site.candidates[s.probe]).c_str(),
            s.tensorError, s.gradError);
  }
  if (noiseData && calibration.noise > 0)
    logLine(log,
            "compress step %lld: gradient noise %.4g (the next batch's "
            "gradient against this one's, relative); budget %.4g x %.4g = "
            "%.4g\n",
            static_cast<long long>(step), calibration.noise,
            calibration.planBudget, calibration.noise, calibration.budget);
  else if (noiseData && calibration.planBudget > 0)
    logLine(log,
            "compress step %lld: gradient noise 0: the next batch's gradient "
            "equals this one's (does the data change from step to step?); "
            "budget 0 keeps every tensor in its most accurate candidate\n",
            static_cast<long long>(step));
  logCompression(log, executor, step, /*byGradient=*/true);
  logLine(log,
          "compress step %lld: gradient calibration: %lld forward-backward "
          "passes in %.2f s; combined gradient error %.4g predicted, %.4g "
          "measured (budget %.4g)\n",
          static_cast<long long>(step),
          static_cast<long long>(calibration.passes), took.count(),
          calibration.predicted, calibration.measured, calibration.budget);
  return Status::success();
}

/// What runSteps does besides training; every member is optional.
struct StepHooks {
  const LrSchedule *schedule = nullptr;
  TraceWriter *trace = nullptr;
  ProfileRecorder *profile = nullptr;
  std::FILE *jsonLog = nullptr;
  const Evaluator *eval = nullptr;
  int64_t evalEvery = 0;
  double clipNorm = 0;
  /// The ranks' communicator for clipping's norm (nullptr on one rank).
  Communicator *comm = nullptr;
  /// Called after every `saveEvery`-th step but the last (periodic
  /// checkpoints); empty when off.
  std::function<Status(int64_t step)> save;
  int64_t saveEvery = 0;
};

/// Gradient clipping: runs forward and backward (gradient syncs included),
/// clips this rank's gradients by the whole model's global norm
/// (clipGradientsByNorm, over `comm`), then runs the updates. Sets `norm` to
/// the norm before clipping.
Status runClippedStep(Executor &executor, Communicator *comm, int64_t step,
                      double maxNorm, float &loss, double &norm) {
  Status status =
      executor.runStep(step, loss, Executor::StepPart::ForwardBackward);
  if (!status.ok())
    return status;
  norm = clipGradientsByNorm(rankGradients(executor), maxNorm, comm,
                             executor.getPlan().replicas, status);
  if (!status.ok())
    return status;
  float unused = 0;
  return executor.runStep(step, unused, Executor::StepPart::Update);
}

/// Drains a pipeline that carries micro-batches over, after step `step`
/// (Executor::drain): its carried updates keep step `step`'s learning rate.
Status drainPipeline(std::FILE *log, const LrSchedule *schedule,
                     Executor &executor, int64_t step) {
  auto start = std::chrono::steady_clock::now();
  if (schedule)
    executor.setLearningRates(
        [&](double planned) { return schedule->lr(planned, step + 1); },
        [&](double planned) { return schedule->lr(planned, step); });
  if (Status status = executor.drain(step + 1); !status.ok())
    return status;
  std::chrono::duration<double, std::milli> took =
      std::chrono::steady_clock::now() - start;
  logLine(log, "pipeline drained after step %lld: ms %.3f\n",
          static_cast<long long>(step), took.count());
  return Status::success();
}

/// Evaluates after step `step` and logs the result (text and JSON).
Status evaluate(std::FILE *log, const StepHooks &hooks, Executor &executor,
                int64_t step) {
  EvalResult r;
  if (Status status = hooks.eval->run(executor, step, r); !status.ok())
    return status;
  std::string accuracy;
  char text[96];
  if (r.top1 >= 0) {
    std::snprintf(text, sizeof(text), " top1 %.4f", r.top1);
    accuracy += text;
  }
  if (r.top5 >= 0) {
    std::snprintf(text, sizeof(text), " top5 %.4f", r.top5);
    accuracy += text;
  }
  logLine(log, "eval step %lld loss %.6f%s (%lld samples)\n",
          static_cast<long long>(step), r.loss, accuracy.c_str(),
          static_cast<long long>(r.samples));
  if (hooks.jsonLog) {
    std::fprintf(hooks.jsonLog,
                 "{\"step\": %lld, \"eval_loss\": %.9g, \"eval_samples\": "
                 "%lld",
                 static_cast<long long>(step), r.loss,
                 static_cast<long long>(r.samples));
    if (r.top1 >= 0)
      std::fprintf(hooks.jsonLog, ", \"eval_top1\": %.6g", r.top1);
    if (r.top5 >= 0)
      std::fprintf(hooks.jsonLog, ", \"eval_top5\": %.6g", r.top5);
    std::fprintf(hooks.jsonLog, "}\n");
    std::fflush(hooks.jsonLog);
  }
  return Status::success();
}

Status runSteps(const TrainOptions &options, const Straggler &straggler,
                const StepHooks &hooks, Executor &executor,
                const DataSource &data, TrainResult &result) {
  std::FILE *log = options.quiet ? nullptr : options.log;
  const LrSchedule *schedule = hooks.schedule;
  auto runStart = std::chrono::steady_clock::now();
  // No steps: evaluate the parameters as they are.
  if (options.steps == 0 && hooks.eval)
    return evaluate(log, hooks, executor, result.startStep);
  if (hooks.clipNorm > 0 && executor.carriesOver())
    return Status::usage(
        "--clip-norm: the plan's pipeline carries micro-batches over from one "
        "step to the next (--strata-schedule-pipeline drain=run), so a step's "
        "gradients mix two steps' micro-batches; schedule it with drain=step");
  LossTrend trend;
  for (int64_t i = 1; i <= options.steps; ++i) {
    int64_t step = result.startStep + i;
    data.fill(step, executor.getTensors(), &executor.getPool());
    double lr = 0;
    // The previous step's carried updates keep that step's rate.
    if (schedule)
      executor.setLearningRates(
          [&](double planned) { return lr = schedule->lr(planned, step); },
          [&](double planned) { return schedule->lr(planned, step - 1); });
    bool measuring = measuresCompression(options, executor, i);
    if (measuring) {
      // Fixed formats (calibration only reports them) have no budget.
      if (executor.getCompression()->adaptive())
        trend.check(log, *executor.getCompression(), step);
      if (!options.compressByGradient)
        executor.getCompression()->measureNextStep();
      else if (Status status = calibrateCompression(
                   log, executor, step,
                   options.compressBudgetByNoise ? &data : nullptr);
               !status.ok())
        return status;
    }
    // After the calibration's passes: the step itself is delayed.
    if (delays(straggler, result.rank, i))
      executor.setBackwardDelay(straggler.delayMs);
    float loss = 0;
    double gradNorm = -1;
    auto start = std::chrono::steady_clock::now();
    Status status = hooks.clipNorm > 0
                        ? runClippedStep(executor, hooks.comm, step,
                                         hooks.clipNorm, loss, gradNorm)
                        : executor.runStep(step, loss);
    std::chrono::duration<double, std::milli> elapsed =
        std::chrono::steady_clock::now() - start;
    if (!status.ok())
      return status;
    if (measuring && !options.compressByGradient)
      logCompression(log, executor, step, /*byGradient=*/false);
    if (hooks.trace)
      recordTrace(executor, step, *hooks.trace);
    if (hooks.profile)
      hooks.profile->record(executor.getLastStepTimes());
    result.steps.push_back({step, loss, elapsed.count()});
    trend.add(loss);
    bool finite = std::isfinite(loss);
    if (!finite || i % options.logEvery == 0 || i == options.steps) {
      double rate = perSecond(result.samplesPerStep, elapsed.count());
      std::string extra = schedule ? " lr " + formatLr(lr) : "";
      if (gradNorm >= 0)
        extra += " grad-norm " + formatLr(gradNorm);
      std::chrono::duration<double> sofar =
          std::chrono::steady_clock::now() - runStart;
      // Long runs say how far along they are.
      if (options.steps >= kProgressSteps) {
        char progress[64];
        std::snprintf(progress, sizeof(progress), " elapsed %.1f s eta %.1f s",
                      sofar.count(), sofar.count() / i * (options.steps - i));
        extra += progress;
      }
      logLine(log, "step %lld loss %.6f samples/s %.1f ms %.3f%s\n",
              static_cast<long long>(step), loss, rate, elapsed.count(),
              extra.c_str());
      std::chrono::duration<double> total =
          std::chrono::steady_clock::now() - runStart;
      logJsonRecord(hooks.jsonLog, step, loss, lr, schedule != nullptr, rate,
                    elapsed.count(), total.count(), gradNorm);
    }
    // A pipeline that carries micro-batches over between steps drains where
    // the run needs whole weights: its end and a checkpoint (evaluation
    // refuses pipeline stages). The drain keeps the in-flight state: the
    // checkpoint saves it, and a run that goes on puts it back.
    bool saving =
        finite && hooks.save && i % hooks.saveEvery == 0 && i != options.steps;
    bool drained =
        finite && (i == options.steps || saving) && executor.pipelineInFlight();
    if (drained)
      if (Status status = drainPipeline(log, schedule, executor, step);
          !status.ok())
        return status;
    if (saving)
      if (Status status = hooks.save(step); !status.ok())
        return status;
    if (drained && i != options.steps)
      executor.resumeInFlight();
    if (finite && hooks.eval &&
        ((hooks.evalEvery > 0 && i % hooks.evalEvery == 0) ||
         i == options.steps))
      if (Status status = evaluate(log, hooks, executor, step); !status.ok())
        return status;
    if (!finite)
      return Status::failure("step " + std::to_string(step) + ": the loss is " +
                             (std::isnan(loss) ? "nan" : "infinite") +
                             "; stopping");
  }
  return Status::success();
}

/// Lagging gradients (Lagging.h): the main thread computes gradient sets on
/// the newest parameters it has and applies every finished aggregate in step
/// order; the aggregator thread joins each step's aggregate for it.
Status runLaggingSteps(const TrainOptions &options, const Straggler &straggler,
                       Executor &executor, const DataSource &data,
                       Communicator &comm, int64_t samplesPerSet,
                       TrainResult &result) {
  std::FILE *log = options.quiet ? nullptr : options.log;
  const Plan &plan = executor.getPlan();
  int64_t setFloats = 0;
  for (const Instruction &inst : executor.getProgram())
    if (inst.has(kAsyncStart))
      for (int64_t id : inst.in)
        setFloats += plan.buffers[id].desc.numel();
  std::FILE *lagLog = nullptr;
  if (!options.lagLogPath.empty()) {
    std::string path = result.rank == 0 ? options.lagLogPath
                                        : options.lagLogPath + ".rank" +
                                              std::to_string(result.rank);
    lagLog = std::fopen(path.c_str(), "w");
    if (!lagLog)
      return Status::failure("cannot write " + path + ": " +
                             std::strerror(errno));
  }
  struct Closer {
    std::FILE *file;
    ~Closer() {
      if (file)
        std::fclose(file);
    }
  } closer{lagLog};
  LaggingOptions lagging;
  lagging.staleness = plan.staleness;
  lagging.firstStep = result.startStep + 1;
  lagging.lastStep = result.startStep + options.steps;
  lagging.setFloats = setFloats;
  lagging.grace = options.lagGrace;
  lagging.log = lagLog;
  std::unique_ptr<LaggingAggregator> aggregator;
  if (Status s = LaggingAggregator::create(comm, lagging, aggregator); !s.ok())
    return s;
  executor.setDeferCollectives(true);
  std::map<int64_t, BucketTransfer> &buckets = executor.getBuckets();
  std::vector<float> set(static_cast<size_t>(setFloats));
  int64_t computed = 0, staleSets = 0, maxStaleness = 0;
  for (;;) {
    std::vector<LaggingAggregate> ready;
    int64_t version = 0;
    if (Status s = aggregator->takeFinished(ready, version); !s.ok())
      return s;
    for (LaggingAggregate &aggregate : ready) {
      // The aggregate goes where the waits unpack it from.
      const float *from = aggregate.gradients.data();
      for (auto &[id, bucket] : buckets) {
        std::copy(from, from + bucket.staging.size(), bucket.staging.begin());
        from += bucket.staging.size();
      }
      float unused = 0;
      if (Status s = executor.runStep(aggregate.step, unused,
                                      Executor::StepPart::Apply);
          !s.ok())
        return s;
      int64_t stale = 0;
      for (auto [rank, setVersion] : aggregate.sets) {
        stale += setVersion < aggregate.step;
        maxStaleness = std::max(maxStaleness, aggregate.step - setVersion);
      }
      staleSets += stale;
      int64_t samples =
          static_cast<int64_t>(aggregate.sets.size()) * samplesPerSet;
      result.steps.push_back(
          {aggregate.step, aggregate.loss, aggregate.milliseconds, samples});
      int64_t i = aggregate.step - result.startStep;
      bool finite = std::isfinite(aggregate.loss);
      if (!finite || i % options.logEvery == 0 || i == options.steps)
        logLine(log,
                "step %lld loss %.6f samples/s %.1f ms %.3f sets %zu "
                "(%lld stale)\n",
                static_cast<long long>(aggregate.step), aggregate.loss,
                perSecond(samples, aggregate.milliseconds),
                aggregate.milliseconds, aggregate.sets.size(),
                static_cast<long long>(stale));
      if (!finite)
        return Status::failure(
            "step " + std::to_string(aggregate.step) + ": the loss is " +
            (std::isnan(aggregate.loss) ? "nan" : "infinite") + "; stopping");
    }
    if (version > lagging.lastStep)
      break;
    data.fill(version, executor.getTensors(), &executor.getPool());
    if (delays(straggler, result.rank, ++computed))
      executor.setBackwardDelay(straggler.delayMs);
    float loss = 0;
    if (Status s =
            executor.runStep(version, loss, Executor::StepPart::Gradients);
        !s.ok())
      return s;
    float *to = set.data();
    for (auto &[id, bucket] : buckets)
      to = std::copy(bucket.staging.begin(), bucket.staging.end(), to);
    if (Status s = aggregator->submit(version, set.data(), loss); !s.ok())
      return s;
  }
  int64_t sets = 0;
  for (const StepRecord &record : result.steps)
    sets += record.samples / std::max<int64_t>(samplesPerSet, 1);
  logLine(log,
          "lagging gradients: staleness bound %lld, %lld steps, %lld gradient "
          "sets applied (%lld stale, largest staleness %lld)\n",
          static_cast<long long>(plan.staleness),
          static_cast<long long>(result.steps.size()),
          static_cast<long long>(sets), static_cast<long long>(staleSets),
          static_cast<long long>(maxStaleness));
  return Status::success();
}

void summarize(const TrainOptions &options, TrainResult &result) {
  const std::vector<StepRecord> &steps = result.steps;
  if (steps.empty()) {
    logLine(options.log, "summary: no steps run\n");
    return;
  }
  size_t first = steps.size() > 1 ? 1 : 0;
  double total = 0;
  int64_t samples = 0;
  for (size_t i = first; i < steps.size(); ++i) {
    total += steps[i].milliseconds;
    samples += steps[i].samples ? steps[i].samples : result.samplesPerStep;
  }
  result.meanMilliseconds = total / static_cast<double>(steps.size() - first);
  std::string tokens;
  if (result.tokensPerStep > 0) {
    char buffer[64];
    std::snprintf(buffer, sizeof(buffer), " tokens/s %.1f",
                  perSecond(result.tokensPerStep * samples /
                                std::max<int64_t>(result.samplesPerStep, 1),
                            total));
    tokens = buffer;
  }
  logLine(options.log,
          "summary: steps %lld-%lld mean ms %.3f%s samples/s %.1f%s final "
          "loss %.9g\n",
          static_cast<long long>(steps.front().step),
          static_cast<long long>(steps.back().step), result.meanMilliseconds,
          first ? " (excluding the first step)" : "", perSecond(samples, total),
          tokens.c_str(), static_cast<double>(steps.back().loss));
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0)
    logLine(options.log, "memory: peak RSS %.1f MiB\n",
            static_cast<double>(usage.ru_maxrss) / 1024.0);
}

} // namespace

Status Straggler::parse(const std::string &text, Straggler &straggler) {
  straggler = Straggler();
  auto bad = [&](const std::string &why) {
    return Status::usage("--straggler: " + why + " (expected " +
                         "rank=R,delay-ms=D[,every=K], got '" + text + "')");
  };
  bool haveRank = false, haveDelay = false;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    size_t equals = item.find('=');
    if (equals == std::string::npos)
      return bad("'" + item + "' is not key=value");
    std::string key = item.substr(0, equals), value = item.substr(equals + 1);
    char *stop = nullptr;
    errno = 0;
    double number = std::strtod(value.c_str(), &stop);
    if (value.empty() || *stop != '\0' || errno != 0 || !std::isfinite(number))
      return bad("invalid number '" + value + "' for " + key);
    bool integral = number == std::floor(number);
    if (key == "rank") {
      if (!integral || number < 0 || number > 1e9)
        return bad("rank must be a non-negative integer");
      straggler.rank = static_cast<int64_t>(number);
      haveRank = true;
    } else if (key == "delay-ms") {
      if (number < 0 || number > 3.6e6)
        return bad("delay-ms must be between 0 and 3600000");
      straggler.delayMs = number;
      haveDelay = true;
    } else if (key == "every") {
      if (!integral || number < 1 || number > 1e9)
        return bad("every must be a positive integer");
      straggler.every = static_cast<int64_t>(number);
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  if (!haveRank || !haveDelay)
    return bad(haveRank ? "missing delay-ms" : "missing rank");
  return Status::success();
}

namespace {

/// What a run owns besides the executor: the communicators, which must
/// outlive it.
struct RunResources {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Communicator> nccl;
  std::vector<std::unique_ptr<Communicator>> groups;
  Straggler straggler;
  /// --lr-schedule, when given.
  LrSchedule schedule;
  bool scheduled = false;
  /// --eval-data / --eval-fraction, when given.
  std::unique_ptr<Evaluator> evaluator;
  /// Lagging gradients (a multi-rank plan with staleness > 0).
  bool lagging = false;
};

/// Starts the ranks' communicator for a multi-rank plan (MPI) and checks the
/// options that depend on the run's shape.
Status connectRanks(const TrainOptions &options, const Plan &plan,
                    RunResources &run, TrainResult &result) {
  // A multi-rank plan runs on as many ranks started by mpirun; each runs its
  // rank's program and fills its replica's shard of the global batch.
  if (plan.worldSize() > 1 || launchedByMpi()) {
    LinkEmulation link;
    if (!options.emulateLink.empty())
      if (Status status = LinkEmulation::parse(options.emulateLink, link);
          !status.ok())
        return status;
    if (Status status =
            createMpiCommunicator(link, options.commTimeoutSeconds, run.comm);
        !status.ok())
      return status;
    result.rank = run.comm->rank();
    result.ranks = run.comm->size();
    if (result.ranks != plan.worldSize())
      return Status::usage(
          plan.path + " is a plan for " + std::to_string(plan.worldSize()) +
          " rank(s), but the run has " + std::to_string(result.ranks) +
          " ranks (start it with mpirun -np " +
          std::to_string(plan.worldSize()) + ")");
  } else if (!options.emulateLink.empty()) {
    return Status::usage("--emulate-link needs a multi-rank run");
  }
  if (run.straggler.rank >= result.ranks)
    return Status::usage(
        "--straggler: rank " + std::to_string(run.straggler.rank) +
        " is not a rank of this " + std::to_string(result.ranks) + "-rank run");
  // Lagging gradients need ranks to lag: a one-rank run is synchronous.
  run.lagging = plan.staleness > 0 && run.comm && result.ranks > 1;
  if (!run.lagging && !options.lagLogPath.empty())
    return Status::usage("--lag-log needs a multi-rank plan with staleness > "
                         "0 (--strata-insert-grad-sync staleness=s)");
  if (run.lagging && !options.tracePath.empty())
    return Status::usage("--trace is not supported with lagging gradients "
                         "(a plan with staleness > 0) yet");
  if (run.lagging && !options.logJsonPath.empty())
    return Status::usage("--log-json is not supported with lagging gradients "
                         "(a plan with staleness > 0) yet");
  if (options.clipNorm > 0 && run.lagging)
    return Status::usage("--clip-norm is not supported with lagging "
                         "gradients (a plan with staleness > 0) yet");
  // Clipping runs every gradient of the step, then its update: a plan whose
  // updates run between the forward and backward passes cannot be split so.
  if (options.clipNorm > 0 && plan.updatesPerStep > 1)
    return Status::usage(
        "--clip-norm clips the gradients of a step's one update, but " +
        plan.path + " updates the weights " +
        std::to_string(plan.updatesPerStep) +
        " times per step (an asynchronous pipeline schedule: pipedream or "
        "2bw)");
  if (run.lagging && run.scheduled)
    return Status::usage("--lr-schedule is not supported with lagging "
                         "gradients (a plan with staleness > 0) yet");
  if (run.lagging && !options.profilePath.empty())
    return Status::usage("--profile is not supported with lagging gradients "
                         "(a plan with staleness > 0) yet");
  return Status::success();
}

/// Chooses the rank's device and the communicators its executor uses: NCCL
/// (bootstrapped over MPI) for GPU ranks, MPI for CPU ranks.
Status setUpDevice(const TrainOptions &options, const Plan &plan,
                   RunResources &run, const TrainResult &result,
                   ExecutorOptions &executorOptions) {
  executorOptions.threads = options.threads;
  executorOptions.rank = result.rank;
  executorOptions.computeScale = options.emulateCompute;
  DeviceOptions deviceOptions;
  if (Status status = chooseDevice(options, plan, result.rank,
                                   executorOptions.device, deviceOptions);
      !status.ok())
    return status;
  if (executorOptions.device != DeviceKind::Cuda) {
    if (!run.comm)
      return Status::success();
    executorOptions.comm = run.comm.get();
    return createGroups(plan, *run.comm, run.groups, executorOptions.groups);
  }
  if (options.emulateCompute != 1)
    return Status::usage("--emulate-compute pads CPU kernels; this rank would "
                         "run on a GPU (use --device=cpu)");
  if (run.lagging)
    return Status::usage(
        "lagging gradients (a plan with staleness " +
        std::to_string(plan.staleness) +
        ") run on CPU ranks only; this rank would run on a GPU (use "
        "--device=cpu, or compile with staleness=0)");
  // A step waiting on a dead peer's collective fails like a CPU rank's
  // wait does.
  if (run.comm)
    deviceOptions.timeoutSeconds = options.commTimeoutSeconds;
  std::unique_ptr<DeviceBackend> backend;
  if (Status status = createCudaBackend(deviceOptions, backend); !status.ok())
    return status;
  executorOptions.backend = std::move(backend);
  if (!run.comm)
    return Status::success();
  // GPU ranks reduce device buffers through NCCL, bootstrapped over MPI; the
  // plan's groups are NCCL communicators split from it, and a pipeline's
  // sends and receives run on one NCCL link per direction.
  std::vector<std::pair<int, int>> links = pipelineLinks(plan);
  Status status =
      createNcclCommunicator(*run.comm, *executorOptions.backend, run.nccl);
  if (status.ok() && !links.empty())
    status = openNcclLinks(*run.nccl, links);
  if (status.ok())
    status = createGroups(plan, *run.nccl, run.groups, executorOptions.groups);
  executorOptions.comm = run.nccl.get();
  return status;
}

/// Prints what runs where: ranks, plan, memory, data (rank 0 only).
void logRunHeader(std::FILE *log, const Executor &executor,
                  const DataSource &data, const Communicator *comm,
                  const TrainResult &result, const TrainOptions &options) {
  int64_t steps = options.steps;
  const Plan &loaded = executor.getPlan();
  if (result.ranks > 1 && loaded.stages > 1)
    logLine(log,
            "ranks: %d (%lld pipeline stages x %lld data-parallel replicas) "
            "over %s (global batch %lld)\n",
            result.ranks, static_cast<long long>(loaded.stages),
            static_cast<long long>(loaded.replicas), comm->engine(),
            static_cast<long long>(result.samplesPerStep));
  else if (result.ranks > 1)
    logLine(log,
            "ranks: %d (%lld data-parallel replicas) over %s (global batch "
            "%lld)\n",
            result.ranks, static_cast<long long>(loaded.replicas),
            comm->engine(), static_cast<long long>(result.samplesPerStep));
  logLine(log,
          "plan %s (%s): %zu instructions, %zu buffers, arena %lld bytes, "
          "%s, seed %llu, steps %lld-%lld\n",
          loaded.path.c_str(), loaded.model.c_str(),
          executor.getProgram().size(), loaded.buffers.size(),
          static_cast<long long>(loaded.ranks[result.rank].arenaBytes),
          executor.describeDevice().c_str(),
          static_cast<unsigned long long>(result.seed),
          static_cast<long long>(result.startStep + 1),
          static_cast<long long>(result.startStep + steps));
  int64_t arenaBytes = loaded.ranks[result.rank].arenaBytes;
  std::string swapPool;
  std::map<int64_t, int64_t> slots =
      swapSlotBytes(loaded, executor.getProgram());
  if (!slots.empty()) {
    int64_t poolBytes = 0;
    for (auto [slot, bytes] : slots)
      poolBytes += bytes;
    swapPool = ", host swap pool " + std::to_string(poolBytes) + " bytes in " +
               std::to_string(slots.size()) + " slots";
  }
  logLine(log,
          "memory: arena %lld bytes, live lower bound %lld bytes (arena / "
          "bound %.3f)%s, %s\n",
          static_cast<long long>(arenaBytes),
          static_cast<long long>(loaded.liveLowerBound),
          loaded.liveLowerBound
              ? static_cast<double>(arenaBytes) / loaded.liveLowerBound
              : 1.0,
          swapPool.c_str(),
          loaded.memoryPlanStrategy.empty()
              ? "buffers not planned (every buffer its own bytes)"
              : ("planned with " + loaded.memoryPlanStrategy).c_str());
  if (const CompressionState *compression = executor.getCompression()) {
    int64_t f32 = compression->f32Bytes();
    int64_t packed = compression->packedBytes();
    logLine(log,
            "compressed activations: %zu tensors, %lld bytes (%lld as f32, "
            "%.2fx)%s\n",
            compression->getSites().size(), static_cast<long long>(packed),
            static_cast<long long>(f32),
            packed ? static_cast<double>(f32) / packed : 0.0,
            !compression->adaptive() ? ""
            : options.compressBudgetByNoise
                ? ", formats chosen by gradient calibration within the "
                  "combined gradient-error budget times the gradient's noise"
            : options.compressByGradient
                ? ", formats chosen by gradient calibration within the "
                  "combined gradient-error budget"
                : ", formats chosen per tensor within the error budget");
  }
  logLine(log, "data: %s\n", data.getDescription().c_str());
}

/// `path` for rank 0, `path` + ".rank<R>" + `suffix` for the others.
std::string rankPath(const std::string &path, int rank, const char *suffix) {
  return rank == 0 ? path : path + ".rank" + std::to_string(rank) + suffix;
}

/// Writes the checkpoint of `step` (rank 0, or every rank with
/// --save-all-ranks) to --save's file, or with `periodic` to its
/// .step<step> sibling, dropping all but the newest --keep of those; first
/// gathers the parameters and states of the other pipeline stages (every
/// rank takes part).
Status saveCheckpointOf(const TrainOptions &options, RunResources &run,
                        Executor &executor, const TrainResult &result,
                        int64_t step, bool periodic) {
  if (executor.getPlan().stages > 1)
    if (Status status = gatherStages(executor, *run.comm, result.rank);
        !status.ok())
      return status;
  if (result.rank != 0 && !options.saveAllRanks)
    return Status::success();
  std::string base = rankPath(options.savePath, result.rank, "");
  std::string path = periodic ? periodicCheckpointPath(base, step) : base;
  if (Status status = saveCheckpoint(executor, path, step, result.seed);
      !status.ok())
    return status;
  return periodic ? prunePeriodicCheckpoints(base, options.keep)
                  : Status::success();
}

/// Runs the steps, then writes the profile, the trace and the checkpoint.
Status runAndSave(const TrainOptions &options, const TrainOptions &rankOptions,
                  RunResources &run, Executor &executor, DataSource &data,
                  TrainResult &result) {
  if (options.compressByGradient)
    if (Status status = checkGradientCalibration(executor); !status.ok())
      return status;
  TraceWriter trace;
  bool tracing = !options.tracePath.empty();
  // With --emulate-compute the profile describes the slowed steps.
  ProfileRecorder profile(options.emulateCompute > 1 ? kEmulateUnslowedRuns
                                                     : 1);
  bool profiling = !options.profilePath.empty();
  Status status;
  std::FILE *jsonLog = nullptr;
  if (!options.logJsonPath.empty() && result.rank == 0) {
    jsonLog = std::fopen(options.logJsonPath.c_str(), "w");
    if (!jsonLog)
      return Status::failure("cannot write " + options.logJsonPath + ": " +
                             std::strerror(errno));
  }
  if (run.lagging)
    status = runLaggingSteps(rankOptions, run.straggler, executor, data,
                             *run.comm, data.getSamplesPerStep(), result);
  else {
    StepHooks hooks;
    hooks.schedule = run.scheduled ? &run.schedule : nullptr;
    hooks.trace = tracing ? &trace : nullptr;
    hooks.profile = profiling ? &profile : nullptr;
    hooks.jsonLog = jsonLog;
    hooks.eval = run.evaluator.get();
    hooks.evalEvery = options.evalEvery;
    hooks.clipNorm = options.clipNorm;
    hooks.comm = run.comm.get();
    if (options.saveEvery > 0) {
      hooks.saveEvery = options.saveEvery;
      hooks.save = [&](int64_t step) {
        return saveCheckpointOf(options, run, executor, result, step,
                                /*periodic=*/true);
      };
    }
    status =
        runSteps(rankOptions, run.straggler, hooks, executor, data, result);
  }
  if (jsonLog && std::fclose(jsonLog) != 0 && status.ok())
    status = Status::failure("cannot write " + options.logJsonPath + ": " +
                             std::strerror(errno));
  if (status.ok() && profiling)
    status = profile.write(executor.getPlan(), executor.getProgram(),
                           rankPath(options.profilePath, result.rank, ".json"));
  // A trace of the steps that ran is useful even when a step failed.
  if (tracing) {
    Status written = trace.write(rankOptions.tracePath);
    if (status.ok())
      status = written;
  }
  if (!status.ok() || options.savePath.empty())
    return status;
  // A pipeline still in flight (a resumed run of no steps) drains first, so
  // the checkpoint holds whole weights beside the kept in-flight state.
  if (executor.pipelineInFlight())
    if (Status drained =
            drainPipeline(rankOptions.quiet ? nullptr : rankOptions.log,
                          run.scheduled ? &run.schedule : nullptr, executor,
                          result.startStep + options.steps);
        !drained.ok())
      return drained;
  // Replicas hold identical parameters: rank 0 writes the checkpoint (every
  // rank with --save-all-ranks), after gathering the parameters and states
  // of the other pipeline stages.
  return saveCheckpointOf(options, run, executor, result,
                          result.startStep + options.steps,
                          /*periodic=*/false);
}

/// Reads the evaluation samples (--eval-data, or the held-out end of the
/// --data arrays with --eval-fraction) and makes the evaluator. With
/// --eval-fraction the data file is read here, once: `trainArrays` gets the
/// samples before the held-out ones, for the data source.
Status setUpEvaluation(const TrainOptions &options, const Executor &executor,
                       RunResources &run, SafetensorsFile &trainArrays) {
  bool fromFile = !options.evalDataPath.empty();
  if (!fromFile && options.evalFraction == 0)
    return Status::success();
  if (fromFile && options.evalFraction != 0)
    return Status::usage("give --eval-data or --eval-fraction, not both");
  // Data-parallel replicas hold the same parameters: each evaluates every
  // batch (the loss's all-reduce keeps them in step); rank 0 reports.
  if (executor.getPlan().stages > 1 || executor.getDevice() != DeviceKind::Cpu)
    return Status::usage("evaluation (--eval-data, --eval-fraction) runs on "
                         "CPU ranks without pipeline stages only, for now");
  std::string path = fromFile ? options.evalDataPath : options.dataPath;
  SafetensorsFile file;
  if (Status status = readArrayFile(path, file); !status.ok())
    return status;
  const StoredTensor *inputs = file.find("inputs");
  const StoredTensor *labels = file.find("labels");
  if (!inputs || !labels)
    return Status::invalid(path + ": evaluation needs tensors \"inputs\" "
                                  "and \"labels\"");
  StoredTensor evalInputs = *inputs, evalLabels = *labels;
  if (!fromFile) {
    StoredTensor trainInputs = *inputs, trainLabels = *labels;
    if (Status status = holdOut(trainInputs, trainLabels, options.evalFraction,
                                evalInputs, evalLabels);
        !status.ok())
      return status;
    trainArrays.tensors = {std::move(trainInputs), std::move(trainLabels)};
    path +=
        " (the last " + std::to_string(evalInputs.desc.shape[0]) + " samples)";
  }
  return Evaluator::create(executor, std::move(evalInputs),
                           std::move(evalLabels), path, run.evaluator);
}

} // namespace

Status train(const TrainOptions &options, TrainResult &result) {
  result = TrainResult();
  if (Status status = checkOptions(options); !status.ok())
    return status;
  Plan plan;
  RunResources run;
  ExecutorOptions executorOptions;
  Status status = Status::success();
  if (!options.straggler.empty())
    status = Straggler::parse(options.straggler, run.straggler);
  run.scheduled = !options.lrSchedule.empty();
  if (status.ok() && run.scheduled)
    status = LrSchedule::parse(options.lrSchedule, run.schedule);
  if (status.ok())
    status = loadPlan(options.planPath, plan);
  if (status.ok())
    status = connectRanks(options, plan, run, result);
  if (status.ok())
    status = setUpDevice(options, plan, run, result, executorOptions);
  if (status.ok() && options.clipNorm > 0 &&
      executorOptions.device != DeviceKind::Cpu)
    status = Status::usage("--clip-norm runs on CPU ranks only, for now");
  if (!status.ok())
    return status;
  int64_t perReplicaBatch = 0;
  if (const Input *input = plan.findInput(InputRole::Data))
    if (!plan.buffers[input->buffer].desc.shape.empty())
      perReplicaBatch = plan.buffers[input->buffer].desc.shape[0];
  int64_t replica = plan.ranks[result.rank].replica;

  std::unique_ptr<Executor> executor;
  status = Executor::create(std::move(plan), executorOptions, executor);
  if (status.ok())
    status = prepareState(options, *executor, result);
  if (status.ok())
    executor->setSeed(result.seed);
  SafetensorsFile trainArrays;
  if (status.ok())
    status = setUpEvaluation(options, *executor, run, trainArrays);
  std::unique_ptr<DataSource> data;
  if (status.ok())
    status = DataSource::create(
        executor->getPlan(),
        DataOptions{result.seed, options.dataPath, replica * perReplicaBatch,
                    options.evalFraction > 0 ? &trainArrays : nullptr},
        data);
  if (!status.ok())
    return status;
  int64_t replicas = executor->getPlan().replicas;
  result.samplesPerStep = data->getSamplesPerStep() * replicas;
  result.tokensPerStep = data->getTokensPerStep() * replicas;

  // Every rank computes the same (all-reduced) loss; rank 0 reports it.
  std::FILE *log = options.quiet || result.rank != 0 ? nullptr : options.log;
  logRunHeader(log, *executor, *data, executorOptions.comm, result, options);
  if (run.scheduled)
    logLine(log, "lr schedule: %s\n", run.schedule.describe().c_str());
  if (run.evaluator)
    logLine(log, "eval: %s\n", run.evaluator->describe().c_str());

  // Ranks other than 0 train silently.
  TrainOptions rankOptions = options;
  if (result.rank != 0)
    rankOptions.log = nullptr;
  if (result.ranks > 1 && !options.tracePath.empty())
    rankOptions.tracePath = rankPath(options.tracePath, result.rank, ".json");

  if (options.gradientSamples > 0) {
    GradCheckOptions check = options.gradientCheck;
    check.samplesPerParameter = options.gradientSamples;
    check.seed = result.seed;
    check.log = rankOptions.log;
    GradCheckResult checked;
    return checkGradients(*executor, *data, check, checked);
  }
  status = runAndSave(options, rankOptions, run, *executor, *data, result);
  if (!status.ok())
    return status;
  summarize(rankOptions, result);
  return Status::success();
}

} // namespace strata::rt
