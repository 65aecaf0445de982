//===- GradCheck.cpp - Whole-model gradient check -------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/GradCheck.h"

#include "strata-rt/Data.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Init.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace strata::rt {

namespace {

/// Indices of `count` elements of `grad`: the largest magnitudes first, then
/// distinct random ones.
std::vector<int64_t> pickElements(const float *grad, int64_t n, int64_t count,
                                  uint64_t seed, const std::string &name) {
  count = std::min(count, n);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  int64_t largest = (count + 1) / 2;
  std::partial_sort(order.begin(), order.begin() + largest, order.end(),
                    [&](int64_t a, int64_t b) {
                      return std::fabs(grad[a]) > std::fabs(grad[b]);
                    });
  std::vector<int64_t> picked(order.begin(), order.begin() + largest);
  for (uint64_t draw = 0; static_cast<int64_t>(picked.size()) < count; ++draw) {
    auto index = static_cast<int64_t>(
        randomBits(seed, fnv1a64(name + "#gradcheck"), draw) %
        static_cast<uint64_t>(n));
    if (std::find(picked.begin(), picked.end(), index) == picked.end())
      picked.push_back(index);
  }
  return picked;
}

/// One gradient check: the analytic gradients of one step against central
/// differences of the forward loss.
class GradChecker {
public:
  GradChecker(Executor &executor, const GradCheckOptions &options,
              GradCheckResult &result)
      : executor(executor), options(options), result(result),
        tensors(executor.getTensors()) {}

  /// Runs forward and backward once and keeps the analytic gradients.
  Status computeGradients();
  /// Checks sampled elements of parameter `p` and two directional
  /// derivatives over the whole tensor.
  Status checkParameter(size_t p);
  /// Restores the forward at the original point and judges the samples.
  Status finish();

private:
  /// The forward loss at the parameters' current values.
  Status forward(double &value) {
    float loss = 0;
    Status status = executor.runStep(kStep, loss, Executor::StepPart::Forward);
    value = loss;
    return status;
  }
  /// Appends `sample`, judged with `tolerance` (besides noise).
  void record(GradCheckSample sample, double tolerance, int64_t &passed,
              double &worst);
  Status checkElement(const Parameter &param, const std::vector<float> &grad,
                      double rms, int64_t index, int64_t &passed,
                      double &worst);
  Status checkDirection(const Parameter &param, const std::vector<float> &grad,
                        double norm, int direction, int64_t &passed,
                        double &worst);

  static constexpr int64_t kStep = 1;
  Executor &executor;
  const GradCheckOptions &options;
  GradCheckResult &result;
  const std::vector<Tensor> &tensors;
  /// Rounding noise of a central difference of the f32 loss.
  double noise = 0;
  /// Analytic gradients by parameter (empty for one without a gradient).
  std::vector<std::vector<float>> grads;
};

Status GradChecker::computeGradients() {
  float loss = 0;
  Status status =
      executor.runStep(kStep, loss, Executor::StepPart::ForwardBackward);
  if (!status.ok())
    return status;
  noise = 4.0 * std::fabs(static_cast<double>(loss)) *
          std::numeric_limits<float>::epsilon() / (2.0 * options.epsilon);
  // Keep the analytic gradients: the forward runs below overwrite nothing
  // but activations, yet copying makes the check independent of buffer reuse.
  for (const Parameter &param : executor.getPlan().parameters) {
    if (param.grad < 0) {
      grads.emplace_back();
      continue;
    }
    const Tensor &g = tensors[param.grad];
    grads.emplace_back(g.f32(), g.f32() + g.numel());
  }
  return Status::success();
}

void GradChecker::record(GradCheckSample sample, double tolerance,
                         int64_t &passed, double &worst) {
  double difference = std::fabs(sample.analytic - sample.numeric);
  double scale =
      std::max(std::fabs(sample.analytic), std::fabs(sample.numeric));
  sample.passed =
      difference <= tolerance + options.relTolerance * scale + noise;
  if (sample.passed) {
    ++passed;
    worst = std::max(worst, scale > 0 ? difference / scale : 0);
  }
  result.samples.push_back(sample);
}

Status GradChecker::checkElement(const Parameter &param,
                                 const std::vector<float> &grad, double rms,
                                 int64_t index, int64_t &passed,
                                 double &worst) {
  float *values = tensors[param.buffer].f32();
  float saved = values[index];
  double plus = 0, minus = 0;
  values[index] = static_cast<float>(saved + options.epsilon);
  double up = static_cast<double>(values[index]) - saved;
  Status status = forward(plus);
  values[index] = static_cast<float>(saved - options.epsilon);
  double down = saved - static_cast<double>(values[index]);
  if (status.ok())
    status = forward(minus);
  values[index] = saved;
  if (!status.ok())
    return status;
  GradCheckSample sample;
  sample.parameter = param.name;
  sample.index = index;
  sample.analytic = grad[index];
  // Divide by the steps actually taken after rounding to f32.
  sample.numeric = (plus - minus) / (up + down);
  record(sample, options.absTolerance * rms, passed, worst);
  return Status::success();
}

Status GradChecker::checkDirection(const Parameter &param,
                                   const std::vector<float> &grad, double norm,
                                   int direction, int64_t &passed,
                                   double &worst) {
  float *values = tensors[param.buffer].f32();
  int64_t n = static_cast<int64_t>(grad.size());
  std::vector<float> savedValues(values, values + n);
  std::vector<double> d(n);
  double dnorm = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool positive =
        randomBits(options.seed, fnv1a64(param.name + "#dir"), i) & 1;
    d[i] = direction == 0 ? grad[i] / norm : (positive ? 1.0 : -1.0);
    dnorm += d[i] * d[i];
  }
  double analytic = 0;
  for (int64_t i = 0; i < n; ++i) {
    d[i] /= std::sqrt(dnorm);
    analytic += grad[i] * d[i];
  }
  double plus = 0, minus = 0;
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(savedValues[i] + options.epsilon * d[i]);
  Status status = forward(plus);
  for (int64_t i = 0; i < n; ++i)
    values[i] = static_cast<float>(savedValues[i] - options.epsilon * d[i]);
  if (status.ok())
    status = forward(minus);
  std::copy(savedValues.begin(), savedValues.end(), values);
  if (!status.ok())
    return status;
  GradCheckSample sample;
  sample.parameter =
      param.name + (direction == 0 ? "<along grad>" : "<random dir>");
  sample.index = -1;
  sample.analytic = analytic;
  sample.numeric = (plus - minus) / (2 * options.epsilon);
  record(sample, 0, passed, worst);
  return Status::success();
}

Status GradChecker::checkParameter(size_t p) {
  const Parameter &param = executor.getPlan().parameters[p];
  const std::vector<float> &grad = grads[p];
  if (grad.empty())
    return Status::success();
  double sumSquares = 0;
  for (float g : grad)
    sumSquares += static_cast<double>(g) * g;
  double rms = std::sqrt(sumSquares / static_cast<double>(grad.size()));
  double worst = 0;
  int64_t passedHere = 0;
  std::vector<int64_t> picked =
      pickElements(grad.data(), static_cast<int64_t>(grad.size()),
                   options.samplesPerParameter, options.seed, param.name);
  for (int64_t index : picked)
    if (Status status =
            checkElement(param, grad, rms, index, passedHere, worst);
        !status.ok())
      return status;
  // Directional derivatives over the whole tensor: along the analytic
  // gradient (the derivative is |g|, far above single-element noise) and
  // along a random +-1 direction (catches a gradient of the right size
  // pointing the wrong way).
  double norm = std::sqrt(sumSquares);
  for (int direction = 0; direction < 2 && norm > 0; ++direction)
    if (Status status =
            checkDirection(param, grad, norm, direction, passedHere, worst);
        !status.ok())
      return status;
  result.passed += passedHere;
  result.worstRelativeError = std::max(result.worstRelativeError, worst);
  if (options.log)
    std::fprintf(options.log,
                 "gradcheck %-28s %2lld/%zu within tolerance, rms grad %.3e, "
                 "worst relative error of those %.2e\n",
                 param.name.c_str(), static_cast<long long>(passedHere),
                 picked.size() + (norm > 0 ? 2 : 0), rms, worst);
  return Status::success();
}

Status GradChecker::finish() {
  // Leave the model as it was: recompute the forward at the original point.
  executor.setBf16Products(true);
  double unused = 0;
  if (Status status = forward(unused); !status.ok())
    return status;
  int64_t total = static_cast<int64_t>(result.samples.size());
  if (options.log && executor.countBf16Products() > 0)
    std::fprintf(options.log,
                 "gradcheck: gradients of the plan's bf16 step against "
                 "differences of its %s forward (%zu bf16 instructions)\n",
                 options.f32Reference ? "f32" : "bf16",
                 executor.countBf16Products());
  if (options.log)
    std::fprintf(options.log,
                 "gradcheck: %lld of %lld elements within tolerance "
                 "(|a - n| <= %.3g rms + %.3g max(|a|, |n|) + %.2e, eps "
                 "%.3g)\n",
                 static_cast<long long>(result.passed),
                 static_cast<long long>(total), options.absTolerance,
                 options.relTolerance, noise, options.epsilon);
  if (static_cast<double>(result.passed) >=
      options.requiredPassFraction * static_cast<double>(total))
    return Status::success();
  for (const GradCheckSample &sample : result.samples)
    if (!sample.passed && options.log)
      std::fprintf(
          options.log, "gradcheck FAIL %s[%lld]: analytic %.6e numeric %.6e\n",
          sample.parameter.c_str(), static_cast<long long>(sample.index),
          sample.analytic, sample.numeric);
  return Status::failure(
      "gradient check failed: " + std::to_string(result.passed) + " of " +
      std::to_string(total) + " elements within tolerance");
}

} // namespace

Status checkGradients(Executor &executor, DataSource &data,
                      const GradCheckOptions &options,
                      GradCheckResult &result) {
  result = GradCheckResult();
  data.fill(/*step=*/1, executor.getTensors(), &executor.getPool());
  // Every forward run updates batch_norm's running statistics (they do not
  // change the loss in training mode): keep them as they were.
  std::vector<std::pair<const Tensor *, std::vector<char>>> running;
  for (const State &state : executor.getPlan().states)
    if (state.running) {
      const Tensor &t = executor.getTensor(state.buffer);
      const char *bytes = static_cast<const char *>(t.data);
      running.push_back({&t, std::vector<char>(bytes, bytes + t.desc.bytes())});
    }
  GradChecker checker(executor, options, result);
  Status status = checker.computeGradients();
  // The differences below run the f32 forward of a mixed-precision plan.
  if (options.f32Reference)
    executor.setBf16Products(false);
  for (size_t p = 0; status.ok() && p < executor.getPlan().parameters.size();
       ++p)
    status = checker.checkParameter(p);
  if (status.ok())
    status = checker.finish();
  else
    executor.setBf16Products(true);
  for (auto &[tensor, bytes] : running)
    std::memcpy(tensor->data, bytes.data(), bytes.size());
  if (!running.empty())
    executor.markHostModified();
  return status;
}

} // namespace strata::rt
