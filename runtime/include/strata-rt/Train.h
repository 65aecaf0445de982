//===- Train.h - The training loop of strata-run -----------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `train` is everything `strata-run` does after parsing its command line:
// load and validate the plan, set up the executor, initialise or restore
// parameters, run the steps on the data stream, and write the checkpoint and
// trace. Embedders and tests call it directly.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_TRAIN_H
#define STRATA_RT_TRAIN_H

#include "strata-rt/GradCheck.h"
#include "strata-rt/Support.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace strata::rt {

/// The most kernel threads a run may ask for.
constexpr int kMaxThreads = 1024;

struct TrainOptions {
  std::string planPath;
  /// Steps to run (after the resumed step, if any).
  int64_t steps = 10;
  uint64_t seed = 0;
  /// Whether `seed` was chosen explicitly; if not, a resumed run takes the
  /// checkpoint's seed.
  bool seedGiven = false;
  /// Kernel worker threads; <= 0 means one per hardware thread. strata-run
  /// takes 1 to kMaxThreads.
  int threads = 0;
  /// Parameters to start from (a safetensors file), instead of the plan's
  /// initialisers.
  std::string initPath;
  /// A checkpoint to continue from (parameters, states, step and seed).
  std::string resumePath;
  /// Where to save a checkpoint after the last step.
  std::string savePath;
  /// Byte-level text for a language model (see Data.h).
  std::string dataPath;
  /// Where to write a Chrome trace of every executed instruction.
  std::string tracePath;
  /// Where to write the per-layer profile of the steps (Profile.h).
  std::string profilePath;
  /// Print every logEvery-th step (and the last).
  int64_t logEvery = 1;
  /// Where progress goes: one line per logged step and a summary; nullptr
  /// prints nothing.
  std::FILE *log = stdout;
  /// Print only the summary.
  bool quiet = false;
  /// When positive, check this many gradient elements per parameter against
  /// finite differences (GradCheck.h) instead of training.
  int64_t gradientSamples = 0;
  /// The check's bounds (step, tolerances, pass fraction); its samples, seed
  /// and log come from the fields above.
  GradCheckOptions gradientCheck;
  /// "bandwidth=GB/s,latency=us": delay every transfer between ranks to what
  /// such a link would take ("" for none).
  std::string emulateLink;
  /// Every CPU kernel takes this many times as long (>= 1): after each
  /// instruction's first kEmulateUnslowedRuns runs (Executor.h), which
  /// measure it unslowed, the executor spins until R times that has passed
  /// (strata-run --emulate-compute, to check strata-sim's compute ratio).
  double emulateCompute = 1;
  /// How long a rank waits for the others before declaring one dead.
  double commTimeoutSeconds = 60;
  /// Where to run: "" (what the plan says), "cpu", "cuda" (the GPU of the
  /// local rank) or "cuda:N".
  std::string device;
  /// On a GPU, matmuls through Strata's own CUDA GEMM instead of cuBLAS.
  bool strataGemm = false;
  /// On a GPU, let cuBLAS use TF32 tensor cores for FP32 matmuls.
  bool allowTf32 = false;
  /// "rank=R,delay-ms=D[,every=K]": an injected straggler (see Straggler;
  /// "" for none).
  std::string straggler;
  /// Lagging gradients (a plan with staleness > 0): the deadline's grace as a
  /// fraction of the time half of the other ranks took (Lagging.h).
  double lagGrace = 0.25;
  /// Lagging gradients: where each rank logs the sets it computed, how it
  /// joined each step's aggregate and the (rank, version) sets each
  /// aggregate held; rank r > 0 writes lagLogPath + ".rankR" ("" for none).
  std::string lagLogPath;
  /// Every rank writes its checkpoint: rank 0 to savePath, rank r > 0 to
  /// savePath + ".rankR" (to check that the replicas agree).
  bool saveAllRanks = false;
  /// A learning-rate schedule ("KIND[,key=value...]", Schedule.h) applied
  /// to the plan's optimizer updates; "" for the plan's constant rate.
  std::string lrSchedule;
  /// Rank 0 writes one JSON record per logged step here (JSON Lines: step,
  /// loss (null when not finite), samples_per_s, ms, elapsed_s, and lr with
  /// a schedule).
  std::string logJsonPath;
  /// Evaluation (Eval.h): labelled arrays to evaluate on, or the fraction of
  /// the --data arrays held out for it (0: none), every `evalEvery` steps
  /// (0: after the last step only).
  std::string evalDataPath;
  double evalFraction = 0;
  int64_t evalEvery = 0;
  /// Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_ with
  /// max_norm = clipNorm): when the L2 norm of all gradients exceeds it,
  /// they are scaled by clipNorm / (norm + 1e-6) before the update; 0: off.
  double clipNorm = 0;
  /// With savePath: also write savePath.step<N> every `saveEvery` steps
  /// (0: never), keeping the newest `keep` of them.
  int64_t saveEvery = 0;
  int64_t keep = 3;
  /// Resume from the newest of this file and its periodic checkpoints.
  std::string resumeLatestPath;
  /// A plan whose compressed activations carry a budget: measure every
  /// candidate format of every tensor on the first step and every
  /// `compressEvery` steps after it (0: the first step only), and move each
  /// tensor to the narrowest format within its budget (Compression.h).
  int64_t compressEvery = 100;
  /// What those measurements choose by: each tensor's own relative error
  /// (false), or its estimated effect on the gradient (true: gradient
  /// calibration, CompressCalibration.h; one CPU rank).
  bool compressByGradient = false;
  /// With compressByGradient: the budget is relative to the gradient's
  /// batch-to-batch noise (--compress-calibrate gradient-noise).
  bool compressBudgetByNoise = false;
};

/// A deterministic straggler: rank `rank` sleeps `delayMs` before the first
/// backward instruction of every `every`-th step it computes (the 1st, 2nd,
/// ... gradient set of this run; with lagging gradients a late rank computes
/// fewer sets than there are steps).
struct Straggler {
  int64_t rank = -1;
  double delayMs = 0;
  int64_t every = 1;
  bool enabled() const { return rank >= 0; }
  /// Parses "rank=R,delay-ms=D[,every=K]" (R >= 0, D >= 0, K >= 1).
  static Status parse(const std::string &text, Straggler &straggler);
};

struct StepRecord {
  int64_t step = 0;
  float loss = 0;
  double milliseconds = 0;
  /// Samples of the step's gradients (all replicas); 0: the plan's global
  /// batch. With lagging gradients a step holds the sets it aggregated.
  int64_t samples = 0;
};

struct TrainResult {
  /// The steps this run executed, in order.
  std::vector<StepRecord> steps;
  /// The step the run started after (0, or the resumed checkpoint's step).
  int64_t startStep = 0;
  uint64_t seed = 0;
  /// Samples and tokens of the global batch (all replicas) per step.
  int64_t samplesPerStep = 0;
  int64_t tokensPerStep = 0;
  /// This process's rank and the number of ranks of the run.
  int rank = 0;
  int ranks = 1;
  /// Mean step time excluding the first step of the run (all steps when
  /// there is only one).
  double meanMilliseconds = 0;
};

/// Runs a training job. Errors carry the exit code of strata-run: `Invalid`
/// for a bad plan, checkpoint or data file; `Usage` for contradictory
/// options; `Failure` for I/O and run-time errors (a non-finite loss, an id
/// out of range). No output file is left half-written.
Status train(const TrainOptions &options, TrainResult &result);

} // namespace strata::rt

#endif // STRATA_RT_TRAIN_H
