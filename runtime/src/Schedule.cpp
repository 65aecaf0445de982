//===- Schedule.cpp - Learning-rate schedules -----------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Schedule.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace strata::rt {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kMaxSteps = 1e9;

const std::map<std::string, LrSchedule::Kind> &kinds() {
  static const std::map<std::string, LrSchedule::Kind> table = {
      {"constant", LrSchedule::Kind::Constant},
      {"linear-warmup", LrSchedule::Kind::LinearWarmup},
      {"cosine", LrSchedule::Kind::Cosine},
      {"warmup-cosine", LrSchedule::Kind::WarmupCosine},
      {"step", LrSchedule::Kind::Step},
  };
  return table;
}

/// The keys each kind takes; the first ones listed are required.
struct KindKeys {
  std::set<std::string> required, optional;
};

KindKeys keysOf(LrSchedule::Kind kind) {
  switch (kind) {
  case LrSchedule::Kind::Constant:
    return {};
  case LrSchedule::Kind::LinearWarmup:
    return {{"warmup"}, {"start"}};
  case LrSchedule::Kind::Cosine:
    return {{"total"}, {"min-lr"}};
  case LrSchedule::Kind::WarmupCosine:
    return {{"warmup", "total"}, {"min-lr"}};
  case LrSchedule::Kind::Step:
    return {{"every"}, {"gamma"}};
  }
  return {};
}

std::string format(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

Status bad(const std::string &message) {
  return Status::usage("--lr-schedule: " + message);
}

/// `value` as a number in [lo, hi] (integral when `integer`).
Status readNumber(const std::string &key, const std::string &value, double lo,
                  double hi, bool integer, double &out) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(value.c_str(), &end);
  std::string range = std::string(integer ? "an integer" : "a number") +
                      " in [" + format(lo) + ", " + format(hi) + "]";
  if (value.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) ||
      v < lo || v > hi || (integer && v != std::floor(v)))
    return bad(key + " must be " + range + ", got '" + value + "'");
  out = v;
  return Status::success();
}

Status setKey(LrSchedule &s, const std::string &key, const std::string &value) {
  double v = 0;
  Status status;
  if (key == "warmup" || key == "total" || key == "every") {
    status = readNumber(key, value, 1, kMaxSteps, true, v);
    int64_t n = static_cast<int64_t>(v);
    (key == "warmup" ? s.warmup : key == "total" ? s.total : s.every) = n;
  } else if (key == "start") {
    status = readNumber(key, value, 0, 1, false, v);
    s.startFactor = v;
  } else if (key == "gamma") {
    status = readNumber(key, value, 0, 1, false, v);
    s.gamma = v;
  } else if (key == "min-lr") {
    status = readNumber(key, value, 0, 1e3, false, v);
    s.minLr = v;
  }
  return status;
}

} // namespace

Status LrSchedule::parse(const std::string &text, LrSchedule &schedule) {
  LrSchedule s;
  size_t comma = text.find(',');
  std::string name = text.substr(0, comma);
  auto kind = kinds().find(name);
  if (kind == kinds().end())
    return bad("unknown schedule '" + name +
               "' (constant, linear-warmup, cosine, warmup-cosine, step)");
  s.kind = kind->second;
  KindKeys keys = keysOf(s.kind);
  std::set<std::string> seen;
  while (comma != std::string::npos) {
    size_t next = text.find(',', comma + 1);
    std::string item = text.substr(comma + 1, next - comma - 1);
    comma = next;
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    if (eq == std::string::npos ||
        (!keys.required.count(key) && !keys.optional.count(key)))
      return bad("'" + item + "' is not a key=value of " + name);
    if (!seen.insert(key).second)
      return bad(key + " is given twice");
    if (Status status = setKey(s, key, item.substr(eq + 1)); !status.ok())
      return status;
  }
  for (const std::string &key : keys.required)
    if (!seen.count(key))
      return bad(name + " needs " + key + "=");
  if (s.kind == Kind::WarmupCosine && s.warmup >= s.total)
    return bad("warmup (" + std::to_string(s.warmup) +
               ") must be less than total (" + std::to_string(s.total) + ")");
  schedule = s;
  return Status::success();
}

double LrSchedule::lr(double baseLr, int64_t step) const {
  double t = static_cast<double>(step - 1);
  auto cosine = [&](double done, double length) {
    double progress = std::min(std::max(done, 0.0), length) / length;
    return minLr + (baseLr - minLr) * (1 + std::cos(kPi * progress)) / 2;
  };
  switch (kind) {
  case Kind::Constant:
    return baseLr;
  case Kind::LinearWarmup:
    return baseLr * (startFactor +
                     (1 - startFactor) * std::min(t, double(warmup)) / warmup);
  case Kind::Cosine:
    return cosine(t, double(total));
  case Kind::WarmupCosine:
    if (t < warmup)
      return baseLr * (t + 1) / warmup;
    return cosine(t - warmup, double(total - warmup));
  case Kind::Step:
    return baseLr * std::pow(gamma, std::floor(t / every));
  }
  return baseLr;
}

std::string LrSchedule::describe() const {
  switch (kind) {
  case Kind::Constant:
    return "constant";
  case Kind::LinearWarmup:
    return "linear-warmup (warmup " + std::to_string(warmup) + ", start " +
           format(startFactor) + ")";
  case Kind::Cosine:
    return "cosine (total " + std::to_string(total) + ", min-lr " +
           format(minLr) + ")";
  case Kind::WarmupCosine:
    return "warmup-cosine (warmup " + std::to_string(warmup) + ", total " +
           std::to_string(total) + ", min-lr " + format(minLr) + ")";
  case Kind::Step:
    return "step (every " + std::to_string(every) + ", gamma " + format(gamma) +
           ")";
  }
  return "";
}

double clipGradientsByNorm(const std::vector<Tensor> &grads, double maxNorm,
                           Communicator *comm, int64_t replicas,
                           Status &status) {
  status = Status::success();
  double squares = 0;
  for (const Tensor &g : grads)
    for (int64_t i = 0, n = g.numel(); i < n; ++i)
      squares += static_cast<double>(g.f32()[i]) * g.f32()[i];
  if (comm && comm->size() > 1) {
    float total = static_cast<float>(squares);
    status = comm->startAllReduce(&total, 1, ReduceOp::Sum)->wait();
    if (!status.ok())
      return 0;
    squares = static_cast<double>(total) / static_cast<double>(replicas);
  }
  double norm = std::sqrt(squares);
  double coefficient = maxNorm / (norm + 1e-6);
  if (coefficient < 1)
    for (const Tensor &g : grads)
      for (int64_t i = 0, n = g.numel(); i < n; ++i)
        g.f32()[i] = static_cast<float>(g.f32()[i] * coefficient);
  return norm;
}

} // namespace strata::rt
