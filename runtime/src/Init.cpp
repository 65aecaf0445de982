//===- Init.cpp - Counter-based random numbers and initialisers -----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Init.h"

#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <cmath>

namespace strata::rt {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t randomBits(uint64_t seed, uint64_t key, uint64_t index) {
  return splitmix64(seed ^ (key + index));
}

double randomUniform(uint64_t seed, uint64_t key, uint64_t index) {
  return static_cast<double>(randomBits(seed, key, index) >> 11) * 0x1.0p-53;
}

double randomNormal(uint64_t seed, uint64_t key, uint64_t index) {
  const double twoPi = 6.283185307179586476925286766559;
  double u1 = randomUniform(seed, key, 2 * index);
  double u2 = randomUniform(seed, key, 2 * index + 1);
  // 1 - u1 is in (0, 1], so the logarithm is finite.
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(twoPi * u2);
}

double initScale(const InitSpec &spec) {
  switch (spec.kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    return 0;
  case InitKind::Normal:
  case InitKind::Uniform:
    return spec.scale;
  case InitKind::XavierUniform:
    return spec.scale *
           std::sqrt(6.0 / static_cast<double>(spec.fanIn + spec.fanOut));
  case InitKind::KaimingNormal:
    return spec.scale * std::sqrt(2.0 / static_cast<double>(spec.fanIn));
  }
  return 0;
}

/// Runs fn(begin, end) over [0, n), on `pool` when there is one.
static void forRange(ThreadPool *pool, int64_t n,
                     const std::function<void(int64_t, int64_t)> &fn) {
  if (pool && n >= 4096)
    pool->parallelFor(n, fn);
  else
    fn(0, n);
}

void initializeTensor(const Tensor &t, const InitSpec &spec, uint64_t seed,
                      std::string_view name, ThreadPool *pool) {
  float *data = t.f32();
  int64_t n = t.numel();
  uint64_t key = fnv1a64(name);
  double scale = initScale(spec);
  switch (spec.kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    std::fill(data, data + n, spec.kind == InitKind::Ones ? 1.0f : 0.0f);
    return;
  case InitKind::Uniform:
  case InitKind::XavierUniform:
    forRange(pool, n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = static_cast<float>(
            (2.0 * randomUniform(seed, key, static_cast<uint64_t>(i)) - 1.0) *
            scale);
    });
    return;
  case InitKind::Normal:
  case InitKind::KaimingNormal:
    forRange(pool, n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        data[i] = static_cast<float>(
            randomNormal(seed, key, static_cast<uint64_t>(i)) * scale);
    });
    return;
  }
}

} // namespace strata::rt
