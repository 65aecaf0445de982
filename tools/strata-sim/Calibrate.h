//===- Calibrate.h - strata-sim --calibrate ---------------------*- C++ -*-===//
//
// Part of the Strata project.
//
// `strata-sim PLAN --calibrate OUT` runs PLAN on this machine for a few steps
// (strata-run --profile --trace, under mpirun for a multi-rank plan) and
// writes OUT: a strata profile whose "kernels" merge every rank's measured
// kernel times, plus "link": the latency and bandwidth that a least-squares
// fit of the plan's measured blocking all-reduces (duration = 2 (p - 1)
// latency + 2 (p - 1) / p bytes / bandwidth) gives, and "async_link", the
// same fit of its bucket transfers (asynchronous all-reduces, which complete
// in issue order: one sample per busy period). `--profile OUT` then
// predicts with them.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_TOOLS_STRATA_SIM_CALIBRATE_H
#define STRATA_TOOLS_STRATA_SIM_CALIBRATE_H

#include "strata-rt/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::strata::sim {

/// One measured all-reduce, or a run of `messages` back-to-back ones (the
/// asynchronous buckets of a busy period of the communication stream).
struct CollectiveSample {
  double bytes = 0;
  int64_t ranks = 2;
  double seconds = 0;
  int64_t messages = 1;
};

/// Latency and bandwidth fitted to `samples`; nullopt when there are none.
/// With fewer than two sizes (or a non-positive slope) the latency is 0 and
/// the bandwidth the ratio of total ring bytes to total time.
struct LinkFit {
  double latencySeconds = 0;
  double bytesPerSecond = 0;
};
std::optional<LinkFit> fitLink(const std::vector<CollectiveSample> &samples);

struct CalibrateOptions {
  std::string out;
  int64_t steps = 10;
  /// strata-run (and mpirun for a multi-rank plan).
  std::string strataRun;
  std::string mpirun = "mpirun --allow-run-as-root --oversubscribe";
  /// Extra strata-run flags (--emulate-link ..., --emulate-compute ...).
  std::string runFlags;
};

/// Runs the calibration; returns an error message, empty on success.
std::string calibrate(const ::strata::rt::Plan &plan,
                      const CalibrateOptions &options);

} // namespace mlir::strata::sim

#endif // STRATA_TOOLS_STRATA_SIM_CALIBRATE_H
