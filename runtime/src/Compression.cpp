//===- Compression.cpp - Compressed activations of a running plan ---------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Compression.h"

#include "strata-rt/Compress.h"
#include "strata-rt/Plan.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace strata::rt {

using strata_plan::ActFormat;

int64_t CompressionSite::bytes() const {
  return strata_plan::actPackedBytes(format(), numel);
}

/// The formats of a compress instruction's codes (the loader checked them).
static std::vector<ActFormat> candidateFormats(const OpAttrs &attrs,
                                               size_t &current) {
  std::vector<int64_t> codes = attrs.candidates;
  if (codes.empty())
    codes.push_back(attrs.format);
  std::vector<ActFormat> formats;
  current = 0;
  for (int64_t code : codes) {
    ActFormat format;
    std::string error;
    if (!strata_plan::decodeActFormat(code, format, error))
      throw std::runtime_error("compress: " + error);
    if (code == attrs.format)
      current = formats.size();
    formats.push_back(format);
  }
  return formats;
}

CompressionState::CompressionState(const std::vector<Instruction> &program,
                                   const std::vector<Tensor> &tensors) {
  for (const Instruction &inst : program) {
    if (inst.op != OpCode::Compress)
      continue;
    CompressionSite site;
    site.candidates = candidateFormats(inst.attrs, site.current);
    site.budget = inst.attrs.budget;
    site.numel = tensors.at(inst.in.at(0)).numel();
    site.layer = inst.layer;
    sites[inst.attrs.site] = std::move(site);
  }
}

bool CompressionState::adaptive() const {
  for (const auto &[id, site] : sites)
    if (site.movable())
      return true;
  return false;
}

CompressionSite &CompressionState::site(int64_t id, const char *op) {
  auto it = sites.find(id);
  if (it == sites.end())
    throw std::runtime_error(std::string(op) + ": the plan has no site " +
                             std::to_string(id));
  return it->second;
}

void CompressionState::choose(int64_t id, std::vector<double> errors) {
  CompressionSite &s = site(id, "compress");
  // The narrowest candidate within the budget (the more accurate of equal
  // sizes); the most accurate when none is within it.
  auto bytesOf = [&](size_t i) {
    return strata_plan::actPackedBytes(s.candidates[i], s.numel);
  };
  double budget = s.budget * budgetScale;
  auto preferred = [&](size_t a, size_t b) {
    bool fitsA = errors[a] <= budget, fitsB = errors[b] <= budget;
    if (fitsA != fitsB)
      return fitsA;
    if (fitsA && bytesOf(a) != bytesOf(b))
      return bytesOf(a) < bytesOf(b);
    return errors[a] < errors[b];
  };
  size_t best = 0;
  for (size_t i = 1; i < s.candidates.size(); ++i)
    if (preferred(i, best))
      best = i;
  assign(id, best, std::move(errors), budget);
}

void CompressionState::assign(int64_t id, size_t index,
                              std::vector<double> errors, double budget) {
  CompressionSite &s = site(id, "compress");
  if (index != s.current)
    changes.push_back({id, strata_plan::actFormatName(s.format()),
                       strata_plan::actFormatName(s.candidates[index]),
                       errors[index], budget});
  s.current = index;
  s.errors = std::move(errors);
}

std::vector<CompressionChange> CompressionState::takeChanges() {
  std::vector<CompressionChange> out;
  out.swap(changes);
  return out;
}

int64_t CompressionState::packedBytes() const {
  int64_t total = 0;
  for (const auto &[id, site] : sites)
    total += site.bytes();
  return total;
}

int64_t CompressionState::f32Bytes() const {
  int64_t total = 0;
  for (const auto &[id, site] : sites)
    total += 4 * site.numel;
  return total;
}

std::vector<double> measureCandidates(ThreadPool &pool,
                                      const CompressionSite &site,
                                      const float *x, int64_t n,
                                      uint64_t seed) {
  int64_t widest = 0;
  for (const ActFormat &f : site.candidates)
    widest = std::max(widest, strata_plan::actPackedBytes(f, n));
  std::vector<uint8_t> packed(static_cast<size_t>(widest));
  std::vector<float> back(static_cast<size_t>(n));
  double norm = 0;
  for (int64_t i = 0; i < n; ++i)
    norm += double(x[i]) * x[i];
  std::vector<double> errors;
  for (const ActFormat &f : site.candidates) {
    compressActivations(pool, f, x, n, packed.data(), seed);
    decompressActivations(pool, f, packed.data(), n, back.data());
    double diff = 0;
    for (int64_t i = 0; i < n; ++i) {
      double d = double(x[i]) - back[i];
      diff += d * d;
    }
    errors.push_back(norm > 0 ? std::sqrt(diff / norm) : 0.0);
  }
  return errors;
}

std::vector<size_t>
chooseWithinGradientBudget(const std::vector<std::vector<double>> &errors,
                           const std::vector<std::vector<int64_t>> &bytes,
                           double budget) {
  size_t n = errors.size();
  std::vector<size_t> pick(n, 0);
  auto square = [](double e) { return e * e; };
  double total = 0;
  // The smallest candidate of each site (the more accurate of equal sizes).
  for (size_t s = 0; s < n; ++s) {
    for (size_t c = 1; c < errors[s].size(); ++c)
      if (bytes[s][c] < bytes[s][pick[s]] ||
          (bytes[s][c] == bytes[s][pick[s]] &&
           errors[s][c] < errors[s][pick[s]]))
        pick[s] = c;
    total += square(errors[s][pick[s]]);
  }
  double limit = square(budget);
  // Widen where a byte buys the most squared error.
  while (total > limit) {
    double bestGain = 0;
    size_t bestSite = n, bestCandidate = 0;
    for (size_t s = 0; s < n; ++s) {
      double now = square(errors[s][pick[s]]);
      for (size_t c = 0; c < errors[s].size(); ++c) {
        double removed = now - square(errors[s][c]);
        int64_t added = bytes[s][c] - bytes[s][pick[s]];
        if (removed <= 0)
          continue;
        // An equal-size candidate that is more accurate is free.
        double gain = added <= 0 ? std::numeric_limits<double>::infinity()
                                 : removed / static_cast<double>(added);
        if (gain > bestGain) {
          bestGain = gain;
          bestSite = s;
          bestCandidate = c;
        }
      }
    }
    if (bestSite == n)
      break;
    total += square(errors[bestSite][bestCandidate]) -
             square(errors[bestSite][pick[bestSite]]);
    pick[bestSite] = bestCandidate;
  }
  if (total > limit)
    return pick;
  // Give back what the last widenings overshot: narrow the site that saves
  // the most bytes while the sum stays within the budget, until none can.
  for (;;) {
    int64_t bestSaving = 0;
    size_t bestSite = n, bestCandidate = 0;
    for (size_t s = 0; s < n; ++s)
      for (size_t c = 0; c < errors[s].size(); ++c) {
        int64_t saving = bytes[s][pick[s]] - bytes[s][c];
        double after =
            total - square(errors[s][pick[s]]) + square(errors[s][c]);
        if (saving > bestSaving && after <= limit) {
          bestSaving = saving;
          bestSite = s;
          bestCandidate = c;
        }
      }
    if (bestSite == n)
      return pick;
    total += square(errors[bestSite][bestCandidate]) -
             square(errors[bestSite][pick[bestSite]]);
    pick[bestSite] = bestCandidate;
  }
}

} // namespace strata::rt
