//===- GradCheck.h - Whole-model gradient check ------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Compares the gradients a plan's backward pass computes with central finite
// differences of its forward pass, element by element, for a sample of the
// elements of every parameter. This checks the compiler's differentiation of
// a whole model end to end (kernels, autodiff rules, gradient accumulation).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_GRADCHECK_H
#define STRATA_RT_GRADCHECK_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace strata::rt {

class DataSource;
class Executor;

struct GradCheckOptions {
  /// Elements checked per parameter tensor: half the largest-magnitude
  /// gradients, half chosen at random.
  int64_t samplesPerParameter = 4;
  /// Finite-difference step (absolute) of single elements and along unit
  /// directions. Larger steps cross kinks of relu and max pooling (where the
  /// derivative jumps) too often in deep convolutional nets.
  double epsilon = 1e-3;
  /// An element passes when |analytic - numeric| <= absTolerance * rms +
  /// relTolerance * max(|analytic|, |numeric|) + noise, where rms is the root
  /// mean square of that parameter's analytic gradient and noise =
  /// 4 |loss| FLT_EPSILON / (2 epsilon) is what rounding the f32 loss alone
  /// can do to a central difference.
  double relTolerance = 5e-2;
  double absTolerance = 2e-2;
  /// Fraction of elements that must pass (finite differences across a kink
  /// of relu or max pooling legitimately disagree).
  double requiredPassFraction = 0.95;
  /// Mixed precision (instructions marked `bf16`): take the finite
  /// differences of the f32 forward (the marks off for those runs; the
  /// analytic gradients still come from the plan's bf16 step), so the check
  /// bounds the distance of the bf16 gradients from the true ones. A forward
  /// that rounds its products to bf16 is piecewise constant at the scale of
  /// an element's step, so its differences are mostly rounding noise.
  /// false differences the plan's own forward.
  bool f32Reference = true;
  uint64_t seed = 0;
  /// Where the per-parameter report goes (nullptr: nowhere).
  std::FILE *log = nullptr;
};

struct GradCheckSample {
  std::string parameter;
  int64_t index = 0;
  double analytic = 0;
  double numeric = 0;
  bool passed = false;
};

struct GradCheckResult {
  std::vector<GradCheckSample> samples;
  int64_t passed = 0;
  double worstRelativeError = 0;
};

/// Runs the check on the batch of step 1 from `data`; the executor's
/// parameters must be initialised and are restored afterwards. Fails
/// (`Failure`) when fewer than `requiredPassFraction` of the samples pass.
Status checkGradients(Executor &executor, DataSource &data,
                      const GradCheckOptions &options, GradCheckResult &result);

} // namespace strata::rt

#endif // STRATA_RT_GRADCHECK_H
