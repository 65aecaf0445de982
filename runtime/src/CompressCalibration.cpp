//===- CompressCalibration.cpp - Formats chosen by gradient error ---------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/CompressCalibration.h"

#include "strata-rt/Executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

namespace strata::rt {

namespace {

/// The buffers a step's forward and backward parts update in place
/// (batch_norm's running statistics), saved once and put back before each
/// pass, so every pass starts from the same state.
class PassState {
public:
  explicit PassState(Executor &executor) : executor(executor) {
    for (int64_t buffer :
         updatedInPlace(executor.getProgram(), /*forwardBackward=*/true)) {
      const Tensor &t = executor.getTensor(buffer);
      const char *bytes = static_cast<const char *>(t.data);
      saved[buffer].assign(bytes, bytes + t.desc.bytes());
    }
  }
  void restore() {
    for (const auto &[buffer, bytes] : saved)
      std::memcpy(executor.getTensor(buffer).data, bytes.data(), bytes.size());
  }

private:
  Executor &executor;
  std::map<int64_t, std::vector<char>> saved;
};

/// Runs forward and backward of `step` from the saved state and gathers the
/// rank's gradients into `grads`.
Status gradientPass(Executor &executor, PassState &state, int64_t step,
                    std::vector<float> &grads, int64_t &passes) {
  state.restore();
  float loss = 0;
  Status status =
      executor.runStep(step, loss, Executor::StepPart::ForwardBackward);
  if (!status.ok())
    return status;
  ++passes;
  grads.clear();
  for (const Tensor &g : rankGradients(executor))
    grads.insert(grads.end(), g.f32(), g.f32() + g.numel());
  return Status::success();
}

/// ||g - ref|| / ||ref|| (0 when both are zero). measureCandidates has its
/// own loop: a zero or NaN tensor measures 0 there, where a calibration must
/// see a non-finite error and stop.
double relativeError(const std::vector<float> &g,
                     const std::vector<float> &ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = double(g[i]) - ref[i];
    diff += d * d;
    norm += double(ref[i]) * ref[i];
  }
  if (norm == 0)
    return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

} // namespace

Status checkGradientCalibration(const Executor &executor) {
  const char *why = nullptr;
  if (!executor.getCompression() || executor.getCompression()->empty())
    why = "the plan compresses no activations";
  else if (executor.getDevice() != DeviceKind::Cpu)
    why = "it runs on the CPU executor only";
  else if (executor.getPlan().worldSize() > 1)
    why = "it runs on one rank only";
  else if (executor.carriesOver())
    why = "the plan carries micro-batches over between steps";
  if (!why)
    return Status::success();
  return Status::usage(std::string("--compress-calibrate gradient: ") + why);
}

namespace {

/// The candidates chooseWithinGradientBudget may pick for `site` (a fixed
/// site: its current format alone), as indices into its candidates.
std::vector<size_t> choices(const CompressionSite &site) {
  if (!site.movable())
    return {site.current};
  std::vector<size_t> all(site.candidates.size());
  for (size_t c = 0; c < all.size(); ++c)
    all[c] = c;
  return all;
}

} // namespace

Status calibrateByGradient(Executor &executor, int64_t step,
                           GradientCalibration &result,
                           const FillBatch &fillBatch) {
  if (Status status = checkGradientCalibration(executor); !status.ok())
    return status;
  CompressionState &state = *executor.getCompression();
  auto &sites = state.getSites();
  result = GradientCalibration();
  PassState passState(executor);
  // The reference, twice: a plan whose passes are not repeatable cannot be
  // calibrated this way.
  for (auto &[id, site] : sites)
    site.exact = true;
  std::vector<float> ref, grads;
  auto pass = [&](std::vector<float> &out) {
    return gradientPass(executor, passState, step, out, result.passes);
  };
  auto finish = [&](Status status) {
    for (auto &[id, site] : sites) {
      site.exact = false;
      std::vector<float>().swap(site.stash);
    }
    passState.restore();
    return status;
  };
  if (Status s = pass(grads); !s.ok())
    return finish(s);
  // The next step's batch at the same parameters, every site exact; before
  // the second reference pass, which leaves the sites' stashes (the tensors
  // measured below) from this step's batch.
  // (Fixed formats have no budget to scale: no pass.)
  bool relative = fillBatch && std::any_of(sites.begin(), sites.end(),
                                           [](const auto &entry) {
                                             return entry.second.movable();
                                           });
  std::vector<float> other;
  if (relative) {
    fillBatch(step + 1);
    Status s = pass(other);
    fillBatch(step);
    if (!s.ok())
      return finish(s);
  }
  if (Status s = pass(ref); !s.ok())
    return finish(s);
  // Bit for bit (a NaN equals itself here).
  if (grads.size() != ref.size() ||
      std::memcmp(grads.data(), ref.data(), ref.size() * sizeof(float)) != 0)
    return finish(Status::failure(
        "--compress-calibrate gradient: two forward-backward passes of step " +
        std::to_string(step) + " gave different gradients"));
  if (relative) {
    result.noise = relativeError(other, ref);
    std::vector<float>().swap(other); // Not needed by the passes below.
    if (!std::isfinite(result.noise))
      return finish(Status::failure(
          "--compress-calibrate gradient-noise: step " + std::to_string(step) +
          ": the relative difference of two batches' gradients is not "
          "finite"));
  }
  // Tensor errors of every candidate, then one pass per site.
  std::vector<std::vector<double>> errors;
  std::vector<int64_t> ids;
  double budget = 0;
  for (auto &[id, site] : sites) {
    if (static_cast<int64_t>(site.stash.size()) != site.numel)
      return finish(Status::failure(
          "--compress-calibrate gradient: the compress of site " +
          std::to_string(id) + " did not run in forward and backward"));
    std::vector<double> te =
        measureCandidates(executor.getPool(), site, site.stash.data(),
                          site.numel, state.siteSeed(id));
    size_t probe = site.current;
    for (size_t c : choices(site))
      if (te[c] > te[probe])
        probe = c;
    double gradError = 0;
    if (te[probe] > 0) {
      size_t saved = site.current;
      site.exact = false;
      site.current = probe;
      Status s = pass(grads);
      site.current = saved;
      site.exact = true;
      if (!s.ok())
        return finish(s);
      gradError = relativeError(grads, ref);
    }
    double k = te[probe] > 0 ? gradError / te[probe] : 0;
    result.sites.push_back({id, probe, te[probe], gradError});
    std::vector<double> estimated;
    for (double e : te)
      estimated.push_back(k * e);
    ids.push_back(id);
    errors.push_back(std::move(estimated));
    if (site.movable())
      budget = std::max(budget, site.budget * state.budgetScale);
  }
  if (relative) {
    result.planBudget = budget;
    budget *= result.noise;
  }
  for (size_t i = 0; i < ids.size(); ++i)
    for (double e : errors[i])
      if (!std::isfinite(e))
        return finish(Status::failure(
            "--compress-calibrate gradient: step " + std::to_string(step) +
            ": the gradient error of site " + std::to_string(ids[i]) +
            " is not finite"));
  // Choose among each site's choices; a fixed site has one.
  std::vector<std::vector<double>> choiceErrors;
  std::vector<std::vector<int64_t>> choiceBytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    const CompressionSite &site = sites.at(ids[i]);
    choiceErrors.emplace_back();
    choiceBytes.emplace_back();
    for (size_t c : choices(site)) {
      choiceErrors.back().push_back(errors[i][c]);
      choiceBytes.back().push_back(
          strata_plan::actPackedBytes(site.candidates[c], site.numel));
    }
  }
  std::vector<size_t> pick =
      chooseWithinGradientBudget(choiceErrors, choiceBytes, budget);
  result.budget = budget;
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    CompressionSite &site = sites.at(ids[i]);
    size_t chosen = choices(site)[pick[i]];
    sum += errors[i][chosen] * errors[i][chosen];
    if (site.movable())
      state.assign(ids[i], chosen, errors[i], budget);
  }
  result.predicted = std::sqrt(sum);
  // The chosen formats together.
  for (auto &[id, site] : sites)
    site.exact = false;
  Status s = pass(grads);
  if (s.ok())
    result.measured = relativeError(grads, ref);
  return finish(s);
}

} // namespace strata::rt
