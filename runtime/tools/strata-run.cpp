//===- strata-run.cpp - Runs a Strata plan
//---------------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//   strata-run PLAN [--steps N] [--seed S] [--threads T] [--init FILE]
//              [--save FILE] [--resume FILE] [--data FILE] [--trace FILE]
//              [--profile FILE]
//              [--log-every K] [--quiet] [--straggler ...] ... (--help)
//
// Exit codes: 0 success, 1 run-time failure (I/O, an id out of range, a
// non-finite loss), 2 bad command line, 3 invalid plan, checkpoint or data
// file.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Device.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Train.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>

using namespace strata::rt;

static const char *const kUsage = R"(usage: strata-run PLAN [options]

Runs the training steps of a Strata plan (docs/plan-format.md) on the CPU or
on a GPU.

options:
  --steps N         steps to run (default 10; after the resumed step)
  --seed S          seed of initialisation and data (default 0; a resumed
                    run keeps its checkpoint's seed unless one is given)
  --threads T       kernel threads, 1-1024 (default: one per hardware
                    thread)
  --init FILE       start from the parameters in FILE (.safetensors)
  --save FILE       save parameters, optimizer state and step to FILE
  --resume FILE     continue from a checkpoint written by --save
  --data FILE       byte-level text for a language model (default:
                    synthetic data)
  --trace FILE      write a Chrome trace (Perfetto) of every instruction
  --profile FILE    write the per-layer profile of the steps (forward,
                    backward and update seconds, activation, stash,
                    parameter and optimizer bytes; the input of
                    --strata-partition-pipeline profile=FILE)
  --log-every K     print every K-th step (default 1)
  --eval-data FILE  evaluate on labelled arrays (.safetensors "inputs",
                    "labels") after the last step: mean loss, top-1 and
                    top-5 accuracy (one-rank CPU runs); with --steps 0, the
                    parameters as loaded (--init, --resume)
  --infer           with --init W --data FILE: no training; evaluate the
                    plan (an inference plan from strata-translate
                    --export-plan --forward-only, or a training plan) on the
                    FILE arrays: loss, top-1 and top-5 accuracy
  --eval-fraction F hold the last F of the --data arrays out of training and
                    evaluate on them
  --eval-every K    also evaluate every K steps
  --save-every K    with --save FILE, also write FILE.stepN every K steps
                    (atomically), keeping the newest --keep N (default 3)
  --compress-every K
                    a plan with compressed activations under an error
                    budget (--strata-compress-activations budget=E):
                    measure every candidate format of every tensor on the
                    first step and every K steps (default 100; 0: first
                    step only) and move each tensor to the narrowest format
                    within the budget; the log says what changed and why
  --compress-calibrate tensor|gradient|gradient-noise
                    what those measurements choose by: each tensor's
                    relative error (tensor, the default), or its effect on
                    the gradient (gradient: GACT's calibration; forward and
                    backward once per compressed tensor, then formats with
                    few bytes whose combined gradient error is within the
                    budget; one CPU rank, no --emulate-compute);
                    gradient-noise: the same with the budget times the
                    gradient's noise (how far the next batch's gradient
                    is from this one's, relative; one more pass)
  --resume-latest FILE
                    resume from the newest of FILE and FILE.stepN
  --clip-norm C     clip the gradients to global L2 norm C before each
                    update (torch.nn.utils.clip_grad_norm_); prints the norm
                    before clipping (no pipelines or lagging gradients)
  --log-json FILE    rank 0 writes one JSON record per logged step to FILE
                    (step, loss, samples_per_s, ms, elapsed_s[, lr])
  --lr-schedule KIND[,key=value...]
                    scale the plan's learning rate per step: constant,
                    linear-warmup (warmup=W [start=F]), cosine (total=T
                    [min-lr=M]), warmup-cosine (warmup=W total=T [min-lr=M]),
                    step (every=K [gamma=G]); formulas in Schedule.h (as
                    PyTorch's LinearLR, CosineAnnealingLR, StepLR)
  --quiet           print only the summary
  --emulate-link bandwidth=GB/s,latency=us
                    multi-rank runs: delay every transfer to what such a
                    link would take
  --emulate-compute R
                    CPU ranks: every kernel takes R times as long (R >= 1):
                    each kernel's first six runs (the first six steps)
                    measure it unslowed; later runs spin until R times
                    that has passed, to emulate a slower device for
                    strata-sim (the summary's mean includes the unslowed
                    steps; --profile leaves them out)
  --straggler rank=R,delay-ms=D[,every=K]
                    inject a straggler: rank R sleeps D ms before the
                    backward pass of every K-th step it computes (default
                    every step)
  --lag-grace F     lagging gradients (a plan with staleness > 0): a rank
                    that has no gradient set when half of the other ranks
                    have joined a step's aggregate, plus F times the time
                    they took, joins without it (default 0.25)
  --lag-log FILE    lagging gradients: log the sets each rank computed and
                    the (rank, version) sets of every aggregate (rank R > 0
                    writes FILE.rankR)
  --save-all-ranks  with --save FILE, every rank writes its checkpoint (rank
                    R > 0 to FILE.rankR)
  --check-gradients K
                    instead of training, compare K gradient elements per
                    parameter with finite differences of the loss (exit 1
                    when more than 5% disagree)
  --check-rtol R, --check-atol A, --check-epsilon E, --check-pass-fraction F
                    --check-gradients' bounds: an element passes when
                    |analytic - numeric| <= A rms + R max(|analytic|,
                    |numeric|) + rounding noise, with steps of E, and the
                    check when a fraction F pass (defaults 0.05, 0.02, 1e-3,
                    0.95; a bf16 plan needs wider ones: see README, Mixed
                    precision)
  --check-bf16-forward
                    a mixed-precision plan: difference its bf16 forward
                    (default: the f32 forward, the plan's bf16 products
                    computed in f32, against the bf16 step's gradients)
  --device D        cpu, cuda (the GPU of the local rank) or cuda:N
                    (default: what the plan says, normally cpu)
  --gemm E          GPU matmuls: cublas (default) or strata (Strata's own
                    tiled CUDA GEMM)
  --tf32            GPU matmuls through cuBLAS may use TF32 tensor cores
                    (default: full FP32)
  --devices         list the devices this runtime can use and exit
  --help            print this help

A plan for N ranks (e.g. strata-opt --strata-data-parallel=replicas=N) runs
as N processes: mpirun -np N strata-run PLAN ... (GPU ranks reduce through
NCCL, bootstrapped over MPI).

exit codes: 0 success, 1 run-time failure, 2 usage error, 3 invalid plan,
checkpoint or data file
)";

namespace {

struct Flag {
  const char *name;
  /// Null for a switch without a value.
  std::string *value;
};

/// A finite number in [lo, hi], the whole text; false otherwise.
bool parseReal(const std::string &text, double lo, double hi, double &value) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !(v >= lo) || !(v <= hi))
    return false;
  value = v;
  return true;
}

bool parseInteger(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = v;
  return true;
}

bool parseSeed(const std::string &text, uint64_t &value) {
  if (text.empty() || text[0] < '0' || text[0] > '9')
    return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  value = v;
  return true;
}

Status numberError(const char *flag, const std::string &text) {
  return Status::usage(std::string(flag) + ": invalid number '" + text + "'");
}

struct CommandLine {
  TrainOptions options;
  bool help = false;
  bool devices = false;
};

Status parseNumbers(const std::string &steps, const std::string &seed,
                    const std::string &threads, const std::string &logEvery,
                    TrainOptions &options) {
  if (!steps.empty() && !parseInteger(steps, options.steps))
    return numberError("--steps", steps);
  if (!seed.empty()) {
    if (!parseSeed(seed, options.seed))
      return numberError("--seed", seed);
    options.seedGiven = true;
  }
  int64_t count = 0;
  if (!threads.empty()) {
    if (!parseInteger(threads, count))
      return numberError("--threads", threads);
    if (count < 1 || count > kMaxThreads)
      return Status::usage("--threads must be between 1 and " +
                           std::to_string(kMaxThreads) + ", got " + threads);
    options.threads = static_cast<int>(count);
  }
  if (!logEvery.empty() && !parseInteger(logEvery, options.logEvery))
    return numberError("--log-every", logEvery);
  return Status::success();
}

Status parseCommandLine(int argc, char **argv, CommandLine &cl) {
  TrainOptions &o = cl.options;
  bool infer = false;
  std::string steps, seed, threads, logEvery, quiet, help, gradients, gemm,
      grace, evalFraction, evalEvery, clipNorm, saveEvery, keep, compressEvery,
      compressCalibrate, emulateCompute, checkRtol, checkAtol, checkEpsilon,
      checkPass;
  Flag flags[] = {
      {"--steps", &steps},
      {"--seed", &seed},
      {"--threads", &threads},
      {"--init", &o.initPath},
      {"--save", &o.savePath},
      {"--resume", &o.resumePath},
      {"--data", &o.dataPath},
      {"--trace", &o.tracePath},
      {"--profile", &o.profilePath},
      {"--log-every", &logEvery},
      {"--quiet", nullptr},
      {"--check-gradients", &gradients},
      {"--check-rtol", &checkRtol},
      {"--check-atol", &checkAtol},
      {"--check-epsilon", &checkEpsilon},
      {"--check-pass-fraction", &checkPass},
      {"--emulate-link", &o.emulateLink},
      {"--emulate-compute", &emulateCompute},
      {"--device", &o.device},
      {"--gemm", &gemm},
      {"--tf32", nullptr},
      {"--straggler", &o.straggler},
      {"--lr-schedule", &o.lrSchedule},
      {"--log-json", &o.logJsonPath},
      {"--eval-data", &o.evalDataPath},
      {"--eval-fraction", &evalFraction},
      {"--eval-every", &evalEvery},
      {"--clip-norm", &clipNorm},
      {"--save-every", &saveEvery},
      {"--keep", &keep},
      {"--compress-every", &compressEvery},
      {"--compress-calibrate", &compressCalibrate},
      {"--resume-latest", &o.resumeLatestPath},
      {"--lag-grace", &grace},
      {"--lag-log", &o.lagLogPath},
      {"--save-all-ranks", nullptr},
      {"--check-bf16-forward", nullptr},
      {"--infer", nullptr},
      {"--devices", nullptr},
      {"--help", nullptr},
      {"-h", nullptr},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!o.planPath.empty())
        return Status::usage("unexpected argument '" + arg +
                             "' (the plan is '" + o.planPath + "')");
      o.planPath = arg;
      continue;
    }
    std::string name = arg, value;
    size_t equals = arg.find('=');
    bool inlineValue = equals != std::string::npos;
    if (inlineValue) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    }
    const Flag *flag = nullptr;
    for (const Flag &f : flags)
      if (name == f.name)
        flag = &f;
    if (!flag)
      return Status::usage("unknown option '" + name + "'");
    if (!flag->value) {
      if (inlineValue)
        return Status::usage("option '" + name + "' takes no value");
      if (name == "--quiet")
        o.quiet = true;
      else if (name == "--devices")
        cl.devices = true;
      else if (name == "--infer")
        infer = true;
      else if (name == "--tf32")
        o.allowTf32 = true;
      else if (name == "--save-all-ranks")
        o.saveAllRanks = true;
      else if (name == "--check-bf16-forward")
        o.gradientCheck.f32Reference = false;
      else
        cl.help = true;
      continue;
    }
    if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::usage("option '" + name + "' needs a value");
      value = argv[++i];
    }
    if (value.empty())
      return Status::usage("option '" + name + "' needs a non-empty value");
    *flag->value = value;
  }
  if (cl.help || cl.devices)
    return Status::success();
  if (o.planPath.empty())
    return Status::usage("missing the PLAN argument");
  if (!gradients.empty() && !parseInteger(gradients, o.gradientSamples))
    return numberError("--check-gradients", gradients);
  // The bounds of --check-gradients (GradCheckOptions).
  struct Bound {
    const char *flag;
    const std::string &text;
    double lo, hi;
    const char *what;
    double &value;
  } bounds[] = {{"--check-rtol", checkRtol, 0, 1e6, "a non-negative number",
                 o.gradientCheck.relTolerance},
                {"--check-atol", checkAtol, 0, 1e6, "a non-negative number",
                 o.gradientCheck.absTolerance},
                {"--check-epsilon", checkEpsilon, 1e-12, 1e6,
                 "a positive number", o.gradientCheck.epsilon},
                {"--check-pass-fraction", checkPass, 1e-12, 1,
                 "a number in (0, 1]", o.gradientCheck.requiredPassFraction}};
  for (const Bound &b : bounds) {
    if (b.text.empty())
      continue;
    if (gradients.empty())
      return Status::usage(std::string(b.flag) +
                           " bounds --check-gradients; give that too");
    if (!parseReal(b.text, b.lo, b.hi, b.value))
      return Status::usage(std::string(b.flag) + ": " + b.what + ", got '" +
                           b.text + "'");
  }
  if (!gemm.empty() && gemm != "cublas" && gemm != "strata")
    return Status::usage("--gemm must be cublas or strata, got '" + gemm + "'");
  o.strataGemm = gemm == "strata";
  if (!grace.empty() && !parseReal(grace, 0, 1e6, o.lagGrace))
    return Status::usage("--lag-grace: invalid non-negative number '" + grace +
                         "'");
  if (!emulateCompute.empty() &&
      !parseReal(emulateCompute, 1, 1000, o.emulateCompute))
    return Status::usage("--emulate-compute: a number between 1 and 1000, "
                         "got '" +
                         emulateCompute + "'");
  if (!evalFraction.empty() &&
      (!parseReal(evalFraction, 0, 1, o.evalFraction) || o.evalFraction == 0 ||
       o.evalFraction == 1))
    return Status::usage("--eval-fraction: a number in (0, 1), got '" +
                         evalFraction + "'");
  if (!clipNorm.empty() &&
      (!parseReal(clipNorm, 0, 1e12, o.clipNorm) || o.clipNorm == 0))
    return Status::usage("--clip-norm: a positive number, got '" + clipNorm +
                         "'");
  if (!saveEvery.empty() && !parseInteger(saveEvery, o.saveEvery))
    return numberError("--save-every", saveEvery);
  if (!keep.empty() && !parseInteger(keep, o.keep))
    return numberError("--keep", keep);
  if (!compressEvery.empty() && !parseInteger(compressEvery, o.compressEvery))
    return numberError("--compress-every", compressEvery);
  if (!compressCalibrate.empty()) {
    if (compressCalibrate != "tensor" && compressCalibrate != "gradient" &&
        compressCalibrate != "gradient-noise")
      return Status::usage(
          "--compress-calibrate: tensor, gradient or gradient-noise, got '" +
          compressCalibrate + "'");
    o.compressBudgetByNoise = compressCalibrate == "gradient-noise";
    o.compressByGradient =
        compressCalibrate == "gradient" || o.compressBudgetByNoise;
  }
  if (!evalEvery.empty() && !parseInteger(evalEvery, o.evalEvery))
    return numberError("--eval-every", evalEvery);
  if (infer) {
    // Inference: no training steps; the --data arrays are evaluated.
    if (!steps.empty() && steps != "0")
      return Status::usage("--infer runs no training steps; drop --steps");
    if (o.initPath.empty() && o.resumePath.empty() &&
        o.resumeLatestPath.empty())
      return Status::usage("--infer needs the weights (--init FILE)");
    if (o.dataPath.empty() || !o.evalDataPath.empty())
      return Status::usage("--infer evaluates the --data FILE arrays");
    o.evalDataPath = o.dataPath;
    o.dataPath.clear();
    steps = "0";
  }
  return parseNumbers(steps, seed, threads, logEvery, o);
}

} // namespace

int main(int argc, char **argv) {
  CommandLine cl;
  Status status = parseCommandLine(argc, argv, cl);
  if (status.ok() && cl.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (status.ok() && cl.devices) {
    std::string why;
    int gpus = cudaDeviceCount(&why);
    std::printf("cpu: %u hardware threads\n",
                std::thread::hardware_concurrency());
    std::printf("cuda backend: %s\n",
                haveCudaBackend() ? "built" : "not built");
    std::printf("cuda devices: %d%s\n", gpus,
                gpus ? "" : (" (" + why + ")").c_str());
    return 0;
  }
  if (status.ok() && cl.options.emulateCompute > 1 &&
      cl.options.steps <= kEmulateUnslowedRuns)
    std::fprintf(stderr,
                 "strata-run: warning: --emulate-compute slows nothing in "
                 "%lld steps: each kernel's first %lld runs measure it "
                 "unslowed\n",
                 static_cast<long long>(cl.options.steps),
                 static_cast<long long>(kEmulateUnslowedRuns));
  if (status.ok()) {
    TrainResult result;
    status = train(cl.options, result);
  }
  if (status.ok())
    return 0;
  std::fflush(stdout);
  std::fprintf(stderr, "strata-run: error: %s\n", status.message().c_str());
  if (status.code() == Status::Code::Usage)
    std::fprintf(stderr, "run 'strata-run --help' for usage\n");
  return status.exitCode();
}
