//===- CompressCalibration.h - Formats chosen by gradient error -*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Gradient calibration of compressed activations (`strata-run
// --compress-calibrate gradient`), after GACT (Liu et al., "GACT:
// Activation Compressed Training for Generic Network Architectures", ICML
// 2022): a tensor's relative error says little about what it does to the
// gradient (a layer norm renormalises its input; a softmax's small
// probabilities carry its gradient), so a calibration step measures that
// directly, on the step's own batch and parameters:
//
//  1. forward and backward with every site exact (CompressionSite::exact):
//     the reference gradient g, and each site's tensor x_s;
//  2. per site s, the relative error e_s(c) = ||x_s - q_c(x_s)|| / ||x_s||
//     of every candidate c on x_s;
//  3. per site s, forward and backward with only s packed, in its least
//     accurate candidate p: the gradient error G_s = ||g_s - g|| / ||g||
//     gives the site's sensitivity k_s = G_s / e_s(p), and its other
//     candidates' gradient errors are estimated as k_s * e_s(c) (GACT's
//     linear model: the gradient error grows with the tensor error);
//  4. chooseWithinGradientBudget picks the formats (sites whose format is
//     fixed keep it and count toward the sum);
//  5. forward and backward with the chosen formats: the combined gradient
//     error measured against the sum's prediction.
//
// Each pass starts from the same state: the buffers forward and backward
// update in place (batch_norm's running statistics) are restored before it
// and after the last, and no optimizer update runs, so the step that
// follows is the step the run would have made with those formats.
//
// Budget relative to the gradient's noise (`--compress-calibrate
// gradient-noise`): the error a compressed tensor adds matters next to the
// error SGD already makes by estimating the gradient from one batch (ActNN
// and GACT analyse the compression's error as gradient variance added to
// SGD's own). So the calibration also runs forward and backward, exact, on
// the next step's batch at the same parameters: the noise
// n = ||g' - g|| / ||g|| is how far two batches' gradients are apart, and the
// budget E becomes E * n. Early in training, when the batches agree (n
// small), the budget is tight; it widens as the gradient turns noisy.
//
// The calibration costs at most 3 + (number of sites) forward-backward passes
// (a site whose tensor is zero needs none; relative to the noise, one more
// where a site's format can move) and, while it runs, an f32 copy of every
// site's tensor outside the arena. It runs on one CPU rank whose program
// carries nothing over between steps.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COMPRESSCALIBRATION_H
#define STRATA_RT_COMPRESSCALIBRATION_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace strata::rt {

class Executor;

/// What a calibration measured.
struct GradientCalibration {
  struct Site {
    int64_t site = 0;
    /// The least accurate candidate, packed alone.
    size_t probe = 0;
    /// Its tensor error and the gradient error it caused.
    double tensorError = 0, gradError = 0;
  };
  std::vector<Site> sites;
  /// The budget, and the combined gradient error of the chosen formats as
  /// chooseWithinGradientBudget's sum predicts it and as measured.
  double budget = 0, predicted = 0, measured = 0;
  /// Forward-backward passes run.
  int64_t passes = 0;
  /// With a budget relative to the noise: ||g' - g|| / ||g|| of the next
  /// step's batch against this step's, and the plan's budget it scaled
  /// (budget = planBudget * noise; two equal batches make it 0, and every
  /// tensor its most accurate candidate); both 0 otherwise.
  double noise = 0, planBudget = 0;
};

/// Whether `executor` can be calibrated: a usage error naming the reason
/// (no compressed activations, a GPU, several ranks, a plan that carries
/// over) otherwise.
Status checkGradientCalibration(const Executor &executor);

/// Fills the executor's data inputs for a step (DataSource::fill).
using FillBatch = std::function<void(int64_t step)>;

/// Calibrates the executor's compression sites on step `step` (whose inputs
/// are filled) and moves the movable ones to the chosen formats, recording
/// the changes (CompressionState::takeChanges). With `fillBatch`, the budget
/// is relative to the gradient's noise (above): it fills step + 1's batch
/// for one pass and step's again after it (not when every site's format is
/// fixed: there is no budget to scale). Fails with a usage error on a
/// GPU executor, a multi-rank plan or one that carries over.
Status calibrateByGradient(Executor &executor, int64_t step,
                           GradientCalibration &result,
                           const FillBatch &fillBatch = {});

} // namespace strata::rt

#endif // STRATA_RT_COMPRESSCALIBRATION_H
