//===- Compression.h - Compressed activations of a running plan -*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A plan's `compress` instructions each own a site: the tensor it packs,
// the formats it may use (the plan's `candidates`, or its `format` alone),
// the one it uses now, and the relative error budget that chooses among
// them. `decompress` instructions of a site unpack in the format its
// `compress` used in the same step. The trainer asks for a measurement step
// (`measureNextStep`) at the start and every `--compress-every` steps: each
// compress of a site with a budget then packs its tensor in every candidate,
// measures ||x - q(x)|| / ||x||, and moves the site to the narrowest
// candidate within the budget (the most accurate when none is). Formats
// change only between a site's compress and the next step's, never inside a
// step. The trainer also watches the loss trend: when the mean loss of the
// steps since the last measurement is above the mean of the interval before
// it, it halves the budgets before measuring (`budgetScale`), so tensors move
// to wider formats.
//
// With `--compress-calibrate gradient` a measurement step instead estimates
// each tensor's effect on the gradient, as GACT (Liu et al., ICML 2022) does
// (CompressCalibration.h): chooseWithinGradientBudget then picks formats
// with few bytes (a greedy choice) whose combined gradient error stays
// within the budget.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COMPRESSION_H
#define STRATA_RT_COMPRESSION_H

#include "strata-rt/ActivationFormat.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace strata::rt {

struct Instruction;
class ThreadPool;

struct CompressionSite {
  /// The formats the site may use, in the plan's order.
  std::vector<strata_plan::ActFormat> candidates;
  /// Index into `candidates` of the format in use.
  size_t current = 0;
  /// Relative error budget; 0: the format never changes.
  double budget = 0;
  /// Elements of the tensor and the layer of its compress.
  int64_t numel = 0;
  int64_t layer = -1;
  /// The relative error of each candidate at the last measurement (empty
  /// before the first).
  std::vector<double> errors;
  /// Gradient calibration: while set, the site's compress keeps an f32 copy
  /// of its tensor in `stash` (packing nothing) and its decompresses read
  /// that copy back, so the site adds no error.
  bool exact = false;
  std::vector<float> stash;

  /// Whether the runtime may change the site's format.
  bool movable() const { return budget > 0 && candidates.size() > 1; }
  const strata_plan::ActFormat &format() const { return candidates[current]; }
  /// Packed bytes of the format in use (actPackedBytes).
  int64_t bytes() const;
};

/// One format change, for the run log.
struct CompressionChange {
  int64_t site = 0;
  std::string from, to;
  /// The measured error of the new format and the budget it was held to.
  double error = 0, budget = 0;
};

class CompressionState {
public:
  /// Builds the sites of `program`'s compress instructions (decoded by the
  /// loader, which checked their formats); `tensors` are the buffers by id.
  CompressionState(const std::vector<Instruction> &program,
                   const std::vector<Tensor> &tensors);

  bool empty() const { return sites.empty(); }
  /// Whether some site has a budget (its format may change).
  bool adaptive() const;
  std::map<int64_t, CompressionSite> &getSites() { return sites; }
  const std::map<int64_t, CompressionSite> &getSites() const { return sites; }
  /// The site of a compress or decompress instruction; throws
  /// std::runtime_error naming `op` when the plan has no such site.
  CompressionSite &site(int64_t id, const char *op);

  /// The next step measures every candidate of every site with a budget.
  void measureNextStep() { measuring = true; }
  bool isMeasuring() const { return measuring; }
  /// Called by the executor when a step ends.
  void endStep() { measuring = false; }
  /// The seed of this step's stochastic rounding (the executor sets it from
  /// the run's seed and the step number).
  uint64_t seed = 0;
  /// The stochastic-rounding seed of site `id` in this step.
  uint64_t siteSeed(int64_t id) const {
    return seed ^ (static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull);
  }

  /// Scales every site's budget (the trainer halves it when the loss
  /// rises between measurements, so tensors move to wider formats).
  double budgetScale = 1.0;

  /// Sets a measured site to the narrowest candidate within its budget
  /// (times budgetScale); records the change, if any.
  void choose(int64_t id, std::vector<double> errors);
  /// Sets site `id` to candidate `index`, whose error is `errors[index]`
  /// (gradient calibration: the estimated gradient error); records the
  /// change, if any, against the global `budget`.
  void assign(int64_t id, size_t index, std::vector<double> errors,
              double budget);
  /// The changes of the measurements since the last call, which clears them.
  std::vector<CompressionChange> takeChanges();
  /// Packed bytes of every site in its current format, and as f32.
  int64_t packedBytes() const;
  int64_t f32Bytes() const;

private:
  std::map<int64_t, CompressionSite> sites;
  std::vector<CompressionChange> changes;
  bool measuring = false;
};

/// ||x - q(x)|| / ||x|| of each candidate of `site` on the `n` values `x`
/// (0 for a zero tensor): what a measurement step chooses by.
std::vector<double> measureCandidates(ThreadPool &pool,
                                      const CompressionSite &site,
                                      const float *x, int64_t n, uint64_t seed);

/// Gradient calibration's choice among the candidates of n sites: site s in
/// candidate c takes `bytes[s][c]` and adds `errors[s][c]` relative error to
/// the gradient. Taking the sites' errors as independent (they add in
/// quadrature, GACT's assumption), returns per site the index of a candidate
/// such that sqrt(sum_s errors[s][c_s]^2) <= budget with few bytes: every
/// site starts in its smallest candidate, then, while the sum is over the
/// budget, the widening that removes the most squared error per added byte
/// is made; last, sites are narrowed again, largest saving first, where the
/// sum stays within the budget. When no choice meets the budget, each site
/// ends in its most accurate candidate.
std::vector<size_t>
chooseWithinGradientBudget(const std::vector<std::vector<double>> &errors,
                           const std::vector<std::vector<int64_t>> &bytes,
                           double budget);

} // namespace strata::rt

#endif // STRATA_RT_COMPRESSION_H
