//===- CApiReferenceTest.cpp - The C API against the C++ runtime ----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The C API adds nothing to the arithmetic: the same plan, seed and batches
// give bit-identical losses and parameters through strata_rt.h and through
// the Executor directly, and synthetic batches reproduce train() (what
// strata-run runs).
//
//===----------------------------------------------------------------------===//

#include "../common/SameBits.h"
#include "strata-rt/strata_rt.h"

#include "strata-rt/Executor.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Train.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace strata::rt;
using strata::rt::test::sameBits;

namespace {

std::string inputPath(const std::string &name) {
  return std::string(STRATA_DRIVER_INPUTS) + "/" + name;
}

/// Deterministic f32 values in [-1, 1) and i32 values in [0, classes).
struct Batch {
  std::vector<float> features;
  std::vector<int32_t> labels;
};

Batch makeBatch(int64_t samples, int64_t width, int32_t classes,
                uint32_t seed) {
  Batch batch;
  uint32_t state = seed;
  auto next = [&] { return state = state * 1664525u + 1013904223u; };
  for (int64_t i = 0; i < samples * width; ++i)
    batch.features.push_back(static_cast<float>(next() >> 8) / 8388608.0f -
                             1.0f);
  for (int64_t i = 0; i < samples; ++i)
    batch.labels.push_back(static_cast<int32_t>(next() >> 8) % classes);
  return batch;
}

strata_rt_session *openSession(const std::string &plan, uint64_t seed) {
  strata_rt_options options;
  strata_rt_options_init(&options);
  options.threads = 2;
  options.seed = seed;
  strata_rt_session *session = nullptr;
  EXPECT_EQ(
      strata_rt_session_create_from_file(plan.c_str(), &options, &session),
      STRATA_RT_OK)
      << strata_rt_last_error();
  return session;
}

constexpr int kSteps = 6;

TEST(CApiReference, MatchesTheExecutor) {
  std::string path = inputPath("mlp.json");
  // Four batches of the MLP plan's [32, 16] features and 4 classes, cycled.
  std::vector<Batch> batches;
  for (uint32_t i = 0; i < 4; ++i)
    batches.push_back(makeBatch(32, 16, 4, 100 + i));

  Plan plan;
  ASSERT_TRUE(loadPlan(path, plan).ok());
  const Input *data = plan.findInput(InputRole::Data);
  const Input *labels = plan.findInput(InputRole::Labels);
  ASSERT_TRUE(data && labels);
  int64_t dataId = data->buffer, labelsId = labels->buffer;
  ExecutorOptions executorOptions;
  executorOptions.threads = 2;
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(plan, executorOptions, executor).ok());
  executor->initialize(5);
  std::vector<float> expected;
  for (int step = 1; step <= kSteps; ++step) {
    const Batch &batch = batches[step % batches.size()];
    std::memcpy(executor->getTensor(dataId).data, batch.features.data(),
                batch.features.size() * sizeof(float));
    std::memcpy(executor->getTensor(labelsId).data, batch.labels.data(),
                batch.labels.size() * sizeof(int32_t));
    float loss = 0;
    ASSERT_TRUE(executor->runStep(step, loss).ok());
    expected.push_back(loss);
  }

  strata_rt_session *session = openSession(path, 5);
  ASSERT_NE(session, nullptr);
  std::vector<float> actual;
  for (int step = 1; step <= kSteps; ++step) {
    const Batch &batch = batches[step % batches.size()];
    ASSERT_EQ(strata_rt_bind_input(session, "features", STRATA_RT_F32,
                                   batch.features.data(),
                                   batch.features.size() * sizeof(float)),
              STRATA_RT_OK);
    ASSERT_EQ(strata_rt_bind_input(session, "labels", STRATA_RT_I32,
                                   batch.labels.data(),
                                   batch.labels.size() * sizeof(int32_t)),
              STRATA_RT_OK);
    float loss = 0;
    ASSERT_EQ(strata_rt_step(session, &loss), STRATA_RT_OK)
        << strata_rt_last_error();
    actual.push_back(loss);
  }
  EXPECT_TRUE(sameBits(expected, actual));
  for (const Parameter &param : executor->getPlan().parameters) {
    const Tensor &tensor = executor->getTensor(param.buffer);
    std::vector<float> reference(tensor.f32(), tensor.f32() + tensor.numel());
    std::vector<float> read(reference.size());
    ASSERT_EQ(strata_rt_get_parameter(session, param.name.c_str(), read.data(),
                                      read.size() * sizeof(float)),
              STRATA_RT_OK);
    EXPECT_TRUE(sameBits(reference, read)) << param.name;
  }
  strata_rt_session_destroy(session);
}

/// strata_rt_bind_synthetic gives what train() (strata-run) trains on.
TEST(CApiReference, SyntheticBatchesMatchTrain) {
  for (const char *name : {"mlp.json", "regression.json", "lm.json"}) {
    SCOPED_TRACE(name);
    TrainOptions options;
    options.planPath = inputPath(name);
    options.steps = kSteps;
    options.seed = 3;
    options.threads = 2;
    options.log = nullptr;
    TrainResult result;
    ASSERT_TRUE(train(options, result).ok());
    std::vector<float> expected;
    for (const StepRecord &record : result.steps)
      expected.push_back(record.loss);

    strata_rt_session *session = openSession(options.planPath, 3);
    ASSERT_NE(session, nullptr);
    std::vector<float> actual;
    for (int step = 1; step <= kSteps; ++step) {
      float loss = 0;
      ASSERT_EQ(strata_rt_bind_synthetic(session, step), STRATA_RT_OK)
          << strata_rt_last_error();
      ASSERT_EQ(strata_rt_step(session, &loss), STRATA_RT_OK)
          << strata_rt_last_error();
      actual.push_back(loss);
    }
    EXPECT_TRUE(sameBits(expected, actual));
    strata_rt_session_destroy(session);
  }
}

} // namespace
