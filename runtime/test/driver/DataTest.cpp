//===- DataTest.cpp - Tests of the training data streams ------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "strata-rt/Data.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Safetensors.h"
#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace strata::rt;
using namespace strata::rt::test;

namespace {

/// Storage for every buffer of a plan.
struct Buffers {
  explicit Buffers(const Plan &plan) {
    for (const Buffer &b : plan.buffers) {
      storage.emplace_back(static_cast<size_t>(b.desc.numel()));
      tensors.push_back(Tensor{storage.back().data(), b.desc});
    }
  }
  std::vector<std::vector<uint32_t>> storage;
  std::vector<Tensor> tensors;

  const Tensor &of(const Plan &plan, InputRole role) const {
    return tensors[plan.findInput(role)->buffer];
  }
  std::vector<uint32_t> bits(const Plan &plan, InputRole role) const {
    return storage[plan.findInput(role)->buffer];
  }
};

class DataTest : public ::testing::Test {
protected:
  /// Loads a test plan and makes its data source.
  Status make(const std::string &name, DataOptions options = DataOptions()) {
    std::string path = inputPath(name);
    std::string why = missingKernels(path);
    if (!why.empty())
      return Status::failure(why);
    Status status = loadPlan(path, plan);
    if (!status.ok())
      return status;
    return DataSource::create(plan, options, source);
  }

  Plan plan;
  std::unique_ptr<DataSource> source;
};

/// Makes the data source of test plan `name`, or skips without kernels.
#define MAKE_OR_SKIP(name, options)                                            \
  do {                                                                         \
    STRATA_SKIP_WITHOUT_KERNELS(inputPath(name));                              \
    Status status = make(name, options);                                       \
    ASSERT_TRUE(status.ok()) << status.message();                              \
  } while (0)

} // namespace

TEST_F(DataTest, ClassificationIsDeterministicAndLearnable) {
  MAKE_OR_SKIP("mlp.json", DataOptions());
  EXPECT_EQ(source->getSamplesPerStep(), 32);
  EXPECT_EQ(source->getTokensPerStep(), 0);
  Buffers a(plan), b(plan);
  ThreadPool pool(3);
  source->fill(4, a.tensors, nullptr);
  source->fill(4, b.tensors, &pool);
  EXPECT_EQ(a.bits(plan, InputRole::Data), b.bits(plan, InputRole::Data));
  EXPECT_EQ(a.bits(plan, InputRole::Labels), b.bits(plan, InputRole::Labels));
  source->fill(5, b.tensors, nullptr);
  EXPECT_NE(a.bits(plan, InputRole::Data), b.bits(plan, InputRole::Data));

  // Over 50 steps: features ~ N(0, 1), every class well represented.
  int counts[4] = {0, 0, 0, 0};
  double sum = 0, sq = 0;
  int64_t n = 0;
  for (int step = 1; step <= 50; ++step) {
    source->fill(step, a.tensors, nullptr);
    const Tensor &x = a.of(plan, InputRole::Data);
    for (int64_t i = 0; i < x.numel(); ++i, ++n) {
      sum += x.f32()[i];
      sq += x.f32()[i] * x.f32()[i];
    }
    const Tensor &y = a.of(plan, InputRole::Labels);
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_GE(y.i32()[i], 0);
      ASSERT_LT(y.i32()[i], 4);
      ++counts[y.i32()[i]];
    }
  }
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(std::sqrt(sq / n), 1.0, 0.03);
  for (int c = 0; c < 4; ++c)
    EXPECT_GT(counts[c], 1600 / 10) << "class " << c;
}

TEST_F(DataTest, SeedChangesTheStream) {
  MAKE_OR_SKIP("mlp.json", DataOptions());
  Buffers a(plan), b(plan);
  source->fill(1, a.tensors, nullptr);
  std::unique_ptr<DataSource> other;
  ASSERT_TRUE(DataSource::create(plan, DataOptions{1, ""}, other).ok());
  other->fill(1, b.tensors, nullptr);
  EXPECT_NE(a.bits(plan, InputRole::Data), b.bits(plan, InputRole::Data));
}

TEST_F(DataTest, RegressionTargets) {
  MAKE_OR_SKIP("regression.json", DataOptions());
  Buffers a(plan);
  source->fill(1, a.tensors, nullptr);
  const Tensor &t = a.of(plan, InputRole::Labels);
  float lo = 1, hi = -1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    ASSERT_GT(t.f32()[i], -1.0f);
    ASSERT_LT(t.f32()[i], 1.0f);
    lo = std::min(lo, t.f32()[i]);
    hi = std::max(hi, t.f32()[i]);
  }
  EXPECT_GT(hi - lo, 0.5f);
}

TEST_F(DataTest, SyntheticLanguageModel) {
  MAKE_OR_SKIP("lm.json", DataOptions());
  EXPECT_EQ(source->getTokensPerStep(), 4 * 16);
  Buffers a(plan);
  source->fill(3, a.tensors, nullptr);
  const Tensor &tokens = a.of(plan, InputRole::Data);
  const Tensor &labels = a.of(plan, InputRole::Labels);
  for (int64_t b = 0; b < 4; ++b) {
    const int32_t *t = tokens.i32() + b * 16;
    const int32_t *l = labels.i32() + b * 16;
    int32_t stride = (l[0] - t[0] + 256) % 256;
    EXPECT_TRUE(stride == 1 || stride == 2 || stride == 3 || stride == 5)
        << stride;
    for (int s = 0; s < 16; ++s) {
      ASSERT_GE(t[s], 0);
      ASSERT_LT(t[s], 256);
      EXPECT_EQ(l[s], (t[s] + stride) % 256);
      if (s + 1 < 16)
        EXPECT_EQ(l[s], t[s + 1]);
    }
  }
}

TEST_F(DataTest, ByteLevelFile) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 1000; ++i)
    text.push_back(static_cast<char>((i * 7 + i / 13) % 256));
  writeText(dir.path("data.txt"), text);
  DataOptions options{0, dir.path("data.txt")};
  MAKE_OR_SKIP("lm.json", options);
  Buffers a(plan);
  source->fill(2, a.tensors, nullptr);
  const Tensor &tokens = a.of(plan, InputRole::Data);
  const Tensor &labels = a.of(plan, InputRole::Labels);
  std::vector<size_t> offsets;
  for (int64_t b = 0; b < 4; ++b) {
    std::string row, next;
    for (int s = 0; s < 16; ++s) {
      row.push_back(static_cast<char>(tokens.i32()[b * 16 + s]));
      next.push_back(static_cast<char>(labels.i32()[b * 16 + s]));
    }
    size_t at = text.find(row);
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(text.substr(at + 1, 16), next);
    offsets.push_back(at);
  }
  EXPECT_NE(offsets[0], offsets[1]);
}

TEST_F(DataTest, ByteLevelFileErrors) {
  TempDir dir;
  writeText(dir.path("short.txt"), "0123456789");
  Status status = make("lm.json", DataOptions{0, dir.path("short.txt")});
  if (status.message().rfind("no kernel yet", 0) == 0)
    GTEST_SKIP() << status.message();
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(status.message().find("short.txt: 10 bytes is too short for "
                                  "sequences of 16 tokens (needs 17)"),
            std::string::npos)
      << status.message();

  writeText(dir.path("ok.txt"), std::string(100, 'a'));
  status = make("lm_v64.json", DataOptions{0, dir.path("ok.txt")});
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(status.message().find("needs a vocabulary of at least 256"),
            std::string::npos)
      << status.message();

  status = make("lm.json", DataOptions{0, dir.path("missing.txt")});
  EXPECT_EQ(status.code(), Status::Code::Failure);

  status = make("mlp.json", DataOptions{0, dir.path("ok.txt")});
  EXPECT_EQ(status.code(), Status::Code::Usage);
  EXPECT_NE(status.message().find("--data needs a language model"),
            std::string::npos)
      << status.message();
}

// Labelled arrays: every sample once per epoch across the replicas, a new
// order each epoch, the last partial global batch dropped.
TEST_F(DataTest, ArraysCoverEachSampleOncePerEpochAcrossReplicas) {
  Plan loaded;
  ASSERT_TRUE(loadPlan(inputPath("mlp.json"), loaded).ok());
  const Buffer &x = loaded.buffers[loaded.findInput(InputRole::Data)->buffer];
  const Buffer &y = loaded.buffers[loaded.findInput(InputRole::Labels)->buffer];
  int64_t batch = x.desc.shape[0], features = x.desc.shape[1];
  const int64_t samples = 7 * batch + 3, replicas = 2;
  std::vector<float> inputs(samples * features, 0.0f);
  std::vector<int32_t> labels(samples, 0);
  for (int64_t i = 0; i < samples; ++i)
    inputs[i * features] = static_cast<float>(i); // feature 0: the index
  TensorDesc inDesc{DType::F32, {samples, features}};
  TensorDesc labelDesc{DType::I32, {samples}};
  ASSERT_EQ(y.desc.shape, Shape{batch});
  std::string path = ::testing::TempDir() + "/arrays.safetensors";
  ASSERT_TRUE(writeSafetensors(path,
                               {{"inputs", Tensor{inputs.data(), inDesc}},
                                {"labels", Tensor{labels.data(), labelDesc}}},
                               {})
                  .ok());
  loaded.replicas = replicas;
  std::vector<std::unique_ptr<DataSource>> sources(replicas);
  for (int64_t r = 0; r < replicas; ++r) {
    DataOptions options{/*seed=*/5, path, r * batch};
    ASSERT_TRUE(DataSource::create(loaded, options, sources[r]).ok());
  }
  const int64_t stepsPerEpoch = samples / (replicas * batch); // 3
  std::vector<std::vector<int64_t>> epochs;
  Buffers buffers(loaded);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen;
    for (int64_t s = 1; s <= stepsPerEpoch; ++s)
      for (auto &source : sources) {
        source->fill(epoch * stepsPerEpoch + s, buffers.tensors, nullptr);
        const float *rows = buffers.of(loaded, InputRole::Data).f32();
        for (int64_t b = 0; b < batch; ++b)
          seen.push_back(static_cast<int64_t>(rows[b * features]));
      }
    std::vector<int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end())
        << "a sample was read twice in epoch " << epoch;
    EXPECT_EQ(static_cast<int64_t>(seen.size()),
              stepsPerEpoch * replicas * batch);
    EXPECT_GE(sorted.front(), 0);
    EXPECT_LT(sorted.back(), samples);
    epochs.push_back(seen);
  }
  EXPECT_NE(epochs[0], epochs[1]) << "the order must change per epoch";
}

TEST_F(DataTest, ArraysMustMatchThePlan) {
  Plan loaded;
  ASSERT_TRUE(loadPlan(inputPath("mlp.json"), loaded).ok());
  const Buffer &x = loaded.buffers[loaded.findInput(InputRole::Data)->buffer];
  int64_t batch = x.desc.shape[0], features = x.desc.shape[1];
  std::string path = ::testing::TempDir() + "/bad-arrays.safetensors";
  auto write = [&](int64_t n, int64_t f, int32_t label) {
    std::vector<float> in(n * f, 0.5f);
    std::vector<int32_t> lab(n, label);
    TensorDesc a{DType::F32, {n, f}}, b{DType::I32, {n}};
    ASSERT_TRUE(writeSafetensors(path,
                                 {{"inputs", Tensor{in.data(), a}},
                                  {"labels", Tensor{lab.data(), b}}},
                                 {})
                    .ok());
  };
  std::unique_ptr<DataSource> source;
  DataOptions options{1, path, 0};
  write(batch, features + 1, 0);
  Status status = DataSource::create(loaded, options, source);
  EXPECT_EQ(status.code(), Status::Code::Invalid);
  EXPECT_NE(status.message().find("\"inputs\" must be f32"), std::string::npos)
      << status.message();
  write(batch - 1, features, 0);
  status = DataSource::create(loaded, options, source);
  EXPECT_NE(status.message().find("fewer than one global batch"),
            std::string::npos)
      << status.message();
  write(batch, features, 1000);
  status = DataSource::create(loaded, options, source);
  EXPECT_NE(status.message().find("labels[0] is 1000, outside [0, "),
            std::string::npos)
      << status.message();
  write(batch, features, 0);
  EXPECT_TRUE(DataSource::create(loaded, options, source).ok());
}
