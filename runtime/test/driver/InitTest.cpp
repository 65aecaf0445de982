//===- InitTest.cpp - Tests of the random numbers and initialisers --------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Known values come from an independent Python implementation of
// docs/plan-format.md "Initialisation".
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Init.h"
#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace strata::rt;

TEST(Random, KnownValues) {
  // The first output of the reference SplitMix64 seeded with 0.
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  // FNV-1a-64 test vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  uint64_t key = fnv1a64("fc0.weight");
  EXPECT_EQ(key, 0x93584f42b051fa4cULL);
  EXPECT_EQ(randomBits(0, key, 0), 0xae269b3c1e6a6f19ULL);
  EXPECT_EQ(randomBits(0, key, 1), 0xa07ade0b7e358fd6ULL);
  EXPECT_DOUBLE_EQ(randomUniform(0, key, 0), 0.6802765867018167);
  EXPECT_DOUBLE_EQ(randomUniform(0, key, 2), 0.6398960043648154);
  EXPECT_NEAR(randomNormal(0, key, 0), -1.0551950420023049, 1e-14);
  EXPECT_NEAR(randomNormal(0, key, 1), 1.364827904588348, 1e-14);
  EXPECT_NEAR(randomNormal(0, key, 2), 0.5520856631014062, 1e-14);
}

TEST(Random, InitialisedTensorsMatchKnownValues) {
  std::vector<float> data(4);
  Tensor t{data.data(), {DType::F32, {4}}};
  InitSpec normal{InitKind::Normal, 1.0, 0, 0};
  initializeTensor(t, normal, 42, "w");
  EXPECT_EQ(data,
            (std::vector<float>{0.9110382795333862f, -0.1667434722185135f,
                                -2.3861806392669678f, 1.8343532085418701f}));
  InitSpec xavier{InitKind::XavierUniform, 1.0, 16, 32};
  initializeTensor(t, xavier, 7, "fc0.weight");
  EXPECT_EQ(data,
            (std::vector<float>{-0.24402034282684326f, 0.11666437983512878f,
                                -0.34948402643203735f, 0.2115606963634491f}));
}

TEST(Random, KeyedBySeedNameAndIndex) {
  uint64_t a = fnv1a64("a"), b = fnv1a64("b");
  EXPECT_EQ(randomBits(1, a, 5), randomBits(1, a, 5));
  EXPECT_NE(randomBits(1, a, 5), randomBits(2, a, 5));
  EXPECT_NE(randomBits(1, a, 5), randomBits(1, b, 5));
  EXPECT_NE(randomBits(1, a, 5), randomBits(1, a, 6));
  for (uint64_t i = 0; i < 10000; ++i) {
    double u = randomUniform(3, a, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

namespace {
struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Moments moments(const std::vector<float> &v) {
  Moments m;
  double sum = 0, sq = 0;
  m.min = m.max = v[0];
  for (float x : v) {
    sum += x;
    sq += double(x) * x;
    m.min = std::min<double>(m.min, x);
    m.max = std::max<double>(m.max, x);
  }
  m.mean = sum / v.size();
  m.stddev = std::sqrt(sq / v.size() - m.mean * m.mean);
  return m;
}

std::vector<float> initialized(const InitSpec &spec, int64_t n,
                               ThreadPool *pool = nullptr,
                               const char *name = "p") {
  std::vector<float> data(n);
  initializeTensor(Tensor{data.data(), {DType::F32, {n}}}, spec, 1234, name,
                   pool);
  return data;
}
} // namespace

// One million samples: the standard error of the mean is 1e-3 * std, of the
// standard deviation about 7e-4 * std; the tolerances are > 4 of those.
constexpr int64_t kSamples = 1000000;

TEST(Init, NormalStatistics) {
  Moments m = moments(initialized({InitKind::Normal, 0.5, 0, 0}, kSamples));
  EXPECT_NEAR(m.mean, 0.0, 0.5 * 0.005);
  EXPECT_NEAR(m.stddev, 0.5, 0.5 * 0.004);
  // The tails exist (P(|z| > 4) ~ 6e-5, so ~60 samples beyond 2.0).
  EXPECT_GT(m.max, 2.0);
  EXPECT_LT(m.min, -2.0);
}

TEST(Init, KaimingNormalStatistics) {
  InitSpec spec{InitKind::KaimingNormal, 1.0, 50, 7};
  Moments m = moments(initialized(spec, kSamples));
  double want = std::sqrt(2.0 / 50);
  EXPECT_DOUBLE_EQ(initScale(spec), want);
  EXPECT_NEAR(m.mean, 0.0, want * 0.005);
  EXPECT_NEAR(m.stddev, want, want * 0.004);
}

TEST(Init, XavierUniformBoundAndStatistics) {
  InitSpec spec{InitKind::XavierUniform, 2.0, 100, 200};
  double bound = 2.0 * std::sqrt(6.0 / 300);
  EXPECT_DOUBLE_EQ(initScale(spec), bound);
  Moments m = moments(initialized(spec, kSamples));
  EXPECT_GE(m.min, -static_cast<float>(bound));
  EXPECT_LE(m.max, static_cast<float>(bound));
  EXPECT_LT(m.min, -0.999 * bound);
  EXPECT_GT(m.max, 0.999 * bound);
  EXPECT_NEAR(m.mean, 0.0, bound * 0.003);
  EXPECT_NEAR(m.stddev, bound / std::sqrt(3.0), bound * 0.003);
}

TEST(Init, UniformZerosOnes) {
  Moments u = moments(initialized({InitKind::Uniform, 0.1, 0, 0}, 10000));
  EXPECT_GE(u.min, -0.1f);
  EXPECT_LE(u.max, 0.1f);
  for (float x : initialized({InitKind::Zeros, 5.0, 0, 0}, 100))
    ASSERT_EQ(x, 0.0f);
  for (float x : initialized({InitKind::Ones, 5.0, 0, 0}, 100))
    ASSERT_EQ(x, 1.0f);
}

TEST(Init, IndependentOfThreadsAndOrder) {
  ThreadPool pool(3);
  for (InitKind kind : {InitKind::Normal, InitKind::XavierUniform}) {
    InitSpec spec{kind, 1.0, 10, 10};
    EXPECT_EQ(initialized(spec, 100001), initialized(spec, 100001, &pool));
    // A tensor's values depend on its name, not on what came before.
    std::vector<float> a = initialized(spec, 1000, nullptr, "a");
    std::vector<float> b = initialized(spec, 1000, nullptr, "b");
    EXPECT_NE(a, b);
    EXPECT_EQ(a, initialized(spec, 1000, nullptr, "a"));
    // A prefix of a larger tensor of the same name is the smaller tensor.
    std::vector<float> big = initialized(spec, 2000, nullptr, "a");
    EXPECT_EQ(a, std::vector<float>(big.begin(), big.begin() + 1000));
  }
}
