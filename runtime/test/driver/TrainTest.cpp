//===- TrainTest.cpp - Executor, checkpoints, traces, whole runs ----------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// These run real kernels; a test whose plan uses an op that has no kernel
// yet is skipped with a message naming the op.
//
//===----------------------------------------------------------------------===//

#include "../common/SameBits.h"
#include "TestUtil.h"

#include "strata-rt/Checkpoint.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Safetensors.h"
#include "strata-rt/Schedule.h"
#include "strata-rt/Train.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>

using namespace strata::rt;
using namespace strata::rt::test;
using json = nlohmann::json;

namespace {

/// Options of a quiet run of a test plan on two threads.
TrainOptions options(const std::string &plan, int64_t steps) {
  TrainOptions o;
  o.planPath = inputPath(plan);
  o.steps = steps;
  o.threads = 2;
  o.log = nullptr;
  return o;
}

std::vector<float> losses(const TrainResult &result) {
  std::vector<float> out;
  for (const StepRecord &r : result.steps)
    out.push_back(r.loss);
  return out;
}

double mean(const std::vector<float> &v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) /
         static_cast<double>(end - begin);
}

std::unique_ptr<Executor> makeExecutor(const std::string &name) {
  Plan plan;
  Status status = loadPlan(inputPath(name), plan);
  EXPECT_TRUE(status.ok()) << status.message();
  std::unique_ptr<Executor> executor;
  ExecutorOptions o;
  o.threads = 2;
  status = Executor::create(std::move(plan), o, executor);
  EXPECT_TRUE(status.ok()) << status.message();
  return executor;
}

} // namespace

//===----------------------------------------------------------------------===//
// Executor
//===----------------------------------------------------------------------===//

TEST(Executor, BindsBuffersIntoAnAlignedArena) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  std::unique_ptr<Executor> executor = makeExecutor("mlp.json");
  ASSERT_TRUE(executor);
  const Plan &plan = executor->getPlan();
  const char *base = static_cast<const char *>(executor->getTensor(0).data);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % 64, 0u);
  for (const Buffer &b : plan.buffers) {
    EXPECT_EQ(static_cast<const char *>(executor->getTensor(b.id).data),
              base + b.offset);
    EXPECT_EQ(executor->getTensor(b.id).desc.shape, b.desc.shape);
  }
}

TEST(Executor, InitialisesParametersAndZeroesStates) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  std::unique_ptr<Executor> a = makeExecutor("mlp.json");
  std::unique_ptr<Executor> b = makeExecutor("mlp.json");
  a->initialize(3);
  b->initialize(3);
  const Plan &plan = a->getPlan();
  const Tensor &wa = a->getTensor(plan.parameters[0].buffer);
  const Tensor &wb = b->getTensor(plan.parameters[0].buffer);
  EXPECT_EQ(std::memcmp(wa.data, wb.data, wa.desc.bytes()), 0);
  double bound = std::sqrt(6.0 / (16 + 32));
  bool nonzero = false;
  for (int64_t i = 0; i < wa.numel(); ++i) {
    ASSERT_LE(std::fabs(wa.f32()[i]), bound);
    nonzero |= wa.f32()[i] != 0;
  }
  EXPECT_TRUE(nonzero);
  for (const State &s : plan.states) {
    const Tensor &t = a->getTensor(s.buffer);
    for (int64_t i = 0; i < t.numel(); ++i)
      ASSERT_EQ(t.f32()[i], 0.0f);
  }
  b->initialize(4);
  EXPECT_NE(std::memcmp(wa.data, wb.data, wa.desc.bytes()), 0);
}

TEST(Executor, EmbeddingIdOutOfRangeIsARunTimeError) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("lm.json"));
  std::unique_ptr<Executor> executor = makeExecutor("lm.json");
  ASSERT_TRUE(executor);
  executor->initialize(0);
  const Plan &plan = executor->getPlan();
  const Tensor &tokens =
      executor->getTensor(plan.findInput(InputRole::Data)->buffer);
  for (int64_t i = 0; i < tokens.numel(); ++i)
    tokens.i32()[i] = 1;
  tokens.i32()[5] = 300;
  float loss = 0;
  Status status = executor->runStep(1, loss);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find("step 1: instruction #0 (embedding): in[1] "
                                  "(buffer \"tokens\") element 5 is 300, "
                                  "outside [0, 256)"),
            std::string::npos)
      << status.message();
}

//===----------------------------------------------------------------------===//
// Training runs
//===----------------------------------------------------------------------===//

TEST(Train, MlpLossFalls) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  TrainResult result;
  Status status = train(options("mlp.json", 100), result);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> l = losses(result);
  ASSERT_EQ(l.size(), 100u);
  // Four balanced classes: the first loss is near ln 4.
  EXPECT_NEAR(l[0], std::log(4.0), 0.5);
  // Threshold: the mean of the last 10 losses is under half the mean of the
  // first 5.
  EXPECT_LT(mean(l, 90, 100), 0.5 * mean(l, 0, 5))
      << "first " << mean(l, 0, 5) << " last " << mean(l, 90, 100);
  EXPECT_EQ(result.samplesPerStep, 32);
  EXPECT_GT(result.meanMilliseconds, 0.0);
}

TEST(Train, RegressionLossFalls) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("regression.json"));
  TrainResult result;
  Status status = train(options("regression.json", 150), result);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> l = losses(result);
  // Threshold: the last 10 average under a third of the first 5.
  EXPECT_LT(mean(l, 140, 150), mean(l, 0, 5) / 3)
      << "first " << mean(l, 0, 5) << " last " << mean(l, 140, 150);
}

TEST(Train, LanguageModelLossFalls) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("lm.json"));
  TrainResult result;
  Status status = train(options("lm.json", 150), result);
  ASSERT_TRUE(status.ok()) << status.message();
  std::vector<float> l = losses(result);
  // Starts near ln 256 = 5.55; the best bigram loss is ln 4 = 1.39 (four
  // strides). Threshold: the last 10 average under 70% of the first 5.
  EXPECT_NEAR(l[0], std::log(256.0), 0.3);
  EXPECT_LT(mean(l, 140, 150), 0.7 * mean(l, 0, 5))
      << "first " << mean(l, 0, 5) << " last " << mean(l, 140, 150);
  EXPECT_EQ(result.tokensPerStep, 64);
}

TEST(Train, SameSeedIsBitIdentical) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  TrainResult a, b, c;
  ASSERT_TRUE(train(options("mlp.json", 20), a).ok());
  ASSERT_TRUE(train(options("mlp.json", 20), b).ok());
  EXPECT_TRUE(sameBits(losses(a), losses(b)));
  TrainOptions other = options("mlp.json", 20);
  other.seed = 1;
  ASSERT_TRUE(train(other, c).ok());
  EXPECT_NE(losses(a), losses(c));
}

/// Runs `plan` 10 steps straight and as 5 + save + resume 5; both must agree
/// bit for bit, in losses and in the final parameters and states.
static void checkResume(const std::string &plan) {
  TempDir dir;
  TrainOptions straight = options(plan, 10);
  straight.seed = 17;
  straight.savePath = dir.path("straight.safetensors");
  TrainResult full;
  Status status = train(straight, full);
  ASSERT_TRUE(status.ok()) << status.message();

  TrainOptions first = options(plan, 5);
  first.seed = 17;
  first.savePath = dir.path("half.safetensors");
  TrainResult head;
  ASSERT_TRUE(train(first, head).ok());

  // The seed comes from the checkpoint.
  TrainOptions second = options(plan, 5);
  second.resumePath = dir.path("half.safetensors");
  second.savePath = dir.path("resumed.safetensors");
  TrainResult tail;
  status = train(second, tail);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(tail.startStep, 5);
  EXPECT_EQ(tail.seed, 17u);
  ASSERT_EQ(tail.steps.size(), 5u);
  EXPECT_EQ(tail.steps[0].step, 6);

  std::vector<float> joined = losses(head), rest = losses(tail);
  joined.insert(joined.end(), rest.begin(), rest.end());
  EXPECT_TRUE(sameBits(losses(full), joined));

  SafetensorsFile a, b;
  ASSERT_TRUE(readSafetensors(dir.path("straight.safetensors"), a).ok());
  ASSERT_TRUE(readSafetensors(dir.path("resumed.safetensors"), b).ok());
  EXPECT_EQ(a.metadata.at("step"), "10");
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_EQ(a.tensors[i].bytes, b.tensors[i].bytes) << a.tensors[i].name;
  }
}

TEST(Train, ResumeEqualsStraightRunSgd) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  checkResume("mlp.json");
}

TEST(Train, ResumeEqualsStraightRunAdam) {
  // Adam's bias correction reads the step input, so this also checks that
  // the step counter resumes.
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("lm.json"));
  checkResume("lm.json");
}

TEST(Train, InitFromSavedParameters) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  TempDir dir;
  // Zero steps: just the initial parameters of seed 5.
  TrainOptions save = options("mlp.json", 0);
  save.seed = 5;
  save.savePath = dir.path("init.safetensors");
  TrainResult none;
  ASSERT_TRUE(train(save, none).ok());
  EXPECT_TRUE(none.steps.empty());

  // Same data stream (seed 5), parameters from the file: same run.
  TrainOptions fromFile = options("mlp.json", 3);
  fromFile.seed = 5;
  fromFile.initPath = dir.path("init.safetensors");
  TrainOptions direct = options("mlp.json", 3);
  direct.seed = 5;
  TrainResult a, b;
  ASSERT_TRUE(train(fromFile, a).ok());
  ASSERT_TRUE(train(direct, b).ok());
  EXPECT_TRUE(sameBits(losses(a), losses(b)));
}

TEST(Train, TraceHasOneEventPerInstructionAndStep) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  TempDir dir;
  TrainOptions o = options("mlp.json", 3);
  o.tracePath = dir.path("trace.json");
  TrainResult result;
  ASSERT_TRUE(train(o, result).ok());
  EXPECT_EQ(dir.list(), std::vector<std::string>{"trace.json"});
  json trace = json::parse(readText(o.tracePath), nullptr, false);
  ASSERT_FALSE(trace.is_discarded());
  ASSERT_TRUE(trace["traceEvents"].is_array());

  Plan plan;
  ASSERT_TRUE(loadPlan(o.planPath, plan).ok());
  const std::vector<Instruction> &program = plan.ranks[0].program;
  size_t complete = 0;
  double lastStart = -1;
  for (const json &e : trace["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    size_t index = e["args"]["instruction"].get<size_t>();
    ASSERT_LT(index, program.size());
    EXPECT_EQ(e["name"], program[index].name());
    EXPECT_EQ(e["cat"], phaseName(program[index].phase));
    EXPECT_EQ(e["args"]["layer"], program[index].layer);
    EXPECT_EQ(e["args"]["step"], int64_t(complete / program.size() + 1));
    EXPECT_EQ(index, complete % program.size());
    EXPECT_EQ(e["pid"], 0);
    EXPECT_EQ(e["tid"], 0);
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_GE(e["ts"].get<double>(), lastStart);
    lastStart = e["ts"].get<double>();
    ++complete;
  }
  EXPECT_EQ(complete, 3 * program.size());
}

TEST(Train, NonFiniteLossStopsWithoutSaving) {
  STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
  TempDir dir;
  json plan = json::parse(readText(inputPath("mlp.json")));
  for (json &inst : plan["ranks"][0]["program"])
    if (inst["op"] == "sgd_update")
      inst["attrs"]["lr"] = 1e30;
  writeText(dir.path("diverge.json"), plan.dump());
  TrainOptions o = options("mlp.json", 20);
  o.planPath = dir.path("diverge.json");
  o.savePath = dir.path("ck.safetensors");
  TrainResult result;
  Status status = train(o, result);
  EXPECT_EQ(status.code(), Status::Code::Failure);
  EXPECT_NE(status.message().find("the loss is"), std::string::npos)
      << status.message();
  EXPECT_EQ(dir.list(), std::vector<std::string>{"diverge.json"});
}

TEST(Train, OptionErrors) {
  TrainOptions both = options("mlp.json", 1);
  both.initPath = "a";
  both.resumePath = "b";
  TrainResult result;
  EXPECT_EQ(train(both, result).code(), Status::Code::Usage);
  EXPECT_EQ(train(options("mlp.json", -1), result).code(), Status::Code::Usage);
  EXPECT_EQ(train(options("missing.json", 1), result).code(),
            Status::Code::Failure);
}

//===----------------------------------------------------------------------===//
// Checkpoint validation
//===----------------------------------------------------------------------===//

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    STRATA_SKIP_WITHOUT_KERNELS(inputPath("mlp.json"));
    executor = makeExecutor("mlp.json");
    ASSERT_TRUE(executor);
    executor->initialize(0);
    ASSERT_TRUE(
        saveCheckpoint(*executor, dir.path("ck.safetensors"), 7, 9).ok());
    ASSERT_TRUE(readSafetensors(dir.path("ck.safetensors"), file).ok());
  }

  /// Rewrites the checkpoint with `tensors` and `metadata` and loads it.
  Status reload(const std::vector<NamedTensor> &tensors,
                const std::map<std::string, std::string> &metadata,
                CheckpointContents contents) {
    EXPECT_TRUE(
        writeSafetensors(dir.path("edit.safetensors"), tensors, metadata).ok());
    CheckpointInfo info;
    return loadCheckpoint(*executor, dir.path("edit.safetensors"), contents,
                          info);
  }

  std::vector<NamedTensor> stored() {
    std::vector<NamedTensor> tensors;
    for (StoredTensor &t : file.tensors)
      tensors.push_back({t.name, t.view()});
    return tensors;
  }

  static void expectInvalid(const Status &status, const std::string &text) {
    EXPECT_EQ(status.code(), Status::Code::Invalid) << status.message();
    EXPECT_NE(status.message().find(text), std::string::npos)
        << status.message();
  }

  TempDir dir;
  std::unique_ptr<Executor> executor;
  SafetensorsFile file;
};

TEST_F(CheckpointTest, RoundTripRestoresStepAndSeed) {
  EXPECT_EQ(file.metadata.at("format"), "strata-checkpoint");
  EXPECT_EQ(file.metadata.at("plan_format"), "strata-plan 2");
  EXPECT_EQ(file.tensors.size(), 8u);
  CheckpointInfo info;
  Status status = loadCheckpoint(*executor, dir.path("ck.safetensors"),
                                 CheckpointContents::Everything, info);
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(info.step, 7);
  EXPECT_EQ(info.seed, 9u);
}

TEST_F(CheckpointTest, WrongShapeIsRejectedAndChangesNothing) {
  const Tensor &w =
      executor->getTensor(executor->getPlan().parameters[0].buffer);
  std::vector<float> before(w.f32(), w.f32() + w.numel());
  std::vector<NamedTensor> tensors = stored();
  // fc1.bias is stored after fc0.weight in the file; make it the wrong shape.
  for (NamedTensor &t : tensors)
    if (t.name == "fc1.bias")
      t.tensor.desc.shape = {2, 2};
  for (NamedTensor &t : tensors)
    if (t.name == "fc0.weight")
      std::memset(t.tensor.data, 0, t.tensor.desc.bytes());
  expectInvalid(reload(tensors, file.metadata, CheckpointContents::Everything),
                "edit.safetensors: tensor \"fc1.bias\" is f32 [2, 2], the "
                "plan needs f32 [4]");
  EXPECT_EQ(std::vector<float>(w.f32(), w.f32() + w.numel()), before);
}

TEST_F(CheckpointTest, MissingAndUnknownTensors) {
  std::vector<NamedTensor> tensors = stored();
  tensors.erase(tensors.begin());
  expectInvalid(reload(tensors, file.metadata, CheckpointContents::Everything),
                "missing tensor \"fc0.weight\" (a parameter of");
  tensors = stored();
  tensors[0].name = "fc7.weight";
  expectInvalid(reload(tensors, file.metadata, CheckpointContents::Parameters),
                "tensor \"fc7.weight\" is neither a parameter nor a state");
}

TEST_F(CheckpointTest, InitNeedsOnlyParameters) {
  std::vector<NamedTensor> params;
  for (NamedTensor &t : stored())
    if (t.name.find(".velocity") == std::string::npos)
      params.push_back(t);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(reload(params, {}, CheckpointContents::Parameters).ok());
  expectInvalid(reload(params, file.metadata, CheckpointContents::Everything),
                "missing tensor \"fc0.bias.velocity\" (a state of");
}

TEST_F(CheckpointTest, ResumeNeedsStepAndSeed) {
  expectInvalid(reload(stored(), {}, CheckpointContents::Everything),
                "not a resumable checkpoint");
  std::map<std::string, std::string> metadata = file.metadata;
  metadata["step"] = "five";
  expectInvalid(reload(stored(), metadata, CheckpointContents::Everything),
                "metadata step \"five\" is not a step number");
}

TEST_F(CheckpointTest, TruncatedFileIsInvalid) {
  std::string bytes = readText(dir.path("ck.safetensors"));
  writeText(dir.path("cut.safetensors"), bytes.substr(0, bytes.size() - 10));
  CheckpointInfo info;
  expectInvalid(loadCheckpoint(*executor, dir.path("cut.safetensors"),
                               CheckpointContents::Everything, info),
                "cut.safetensors: tensor");
}

// Learning-rate schedules: the values of PyTorch's schedulers in closed form
// (step s of a run is the scheduler's index t = s - 1).
TEST(LrSchedule, MatchesTheClosedForms) {
  LrSchedule s;
  ASSERT_TRUE(LrSchedule::parse("linear-warmup,warmup=4,start=0.25", s).ok());
  // LinearLR(start_factor=0.25, total_iters=4): 0.25, 0.4375, 0.625, ...
  double linear[] = {0.25, 0.4375, 0.625, 0.8125, 1, 1};
  for (int t = 0; t < 6; ++t)
    EXPECT_DOUBLE_EQ(s.lr(2.0, t + 1), 2.0 * linear[t]) << t;
  ASSERT_TRUE(LrSchedule::parse("cosine,total=4,min-lr=0.1", s).ok());
  // CosineAnnealingLR(T_max=4, eta_min=0.1) from 1.0, held after T_max.
  for (int t = 0; t < 7; ++t) {
    double want =
        0.1 +
        0.9 * (1 + std::cos(3.14159265358979323846 * std::min(t, 4) / 4)) / 2;
    EXPECT_NEAR(s.lr(1.0, t + 1), want, 1e-15) << t;
  }
  EXPECT_NEAR(s.lr(1.0, 3), 0.55, 1e-15);
  ASSERT_TRUE(LrSchedule::parse("step,every=3,gamma=0.5", s).ok());
  double stepped[] = {1, 1, 1, 0.5, 0.5, 0.5, 0.25};
  for (int t = 0; t < 7; ++t)
    EXPECT_DOUBLE_EQ(s.lr(1.0, t + 1), stepped[t]) << t;
  ASSERT_TRUE(
      LrSchedule::parse("warmup-cosine,warmup=2,total=6,min-lr=0", s).ok());
  EXPECT_DOUBLE_EQ(s.lr(1.0, 1), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 2), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(1.0, 3), 1.0);
  EXPECT_NEAR(s.lr(1.0, 5), 0.5, 1e-15);
  EXPECT_NEAR(s.lr(1.0, 7), 0.0, 1e-15);
  ASSERT_TRUE(LrSchedule::parse("constant", s).ok());
  EXPECT_EQ(s.lr(0.3, 1000), 0.3);
}

TEST(LrSchedule, RejectsBadText) {
  LrSchedule s;
  for (const char *text :
       {"", "cosin", "cosine", "cosine,total=0", "cosine,total=1.5",
        "cosine,total=4,total=5", "step,every=2,gamma=2", "step,every=-1",
        "linear-warmup,warmup=3,start=1.5", "warmup-cosine,warmup=5,total=5",
        "cosine,total=4,min-lr=inf", "step,every=2,"})
    EXPECT_FALSE(LrSchedule::parse(text, s).ok()) << text;
}

// The committed table of PyTorch's schedulers and clip_grad_norm_ on fixed
// inputs (scripts/torch_reference.py; PyTorch is not needed to run this).
TEST(LrSchedule, EqualsPyTorch) {
  std::ifstream file(inputPath("torch-reference.json"));
  ASSERT_TRUE(file) << "missing torch-reference.json";
  nlohmann::json table = nlohmann::json::parse(file);
  ASSERT_GE(table["schedules"].size(), 4u);
  for (const nlohmann::json &entry : table["schedules"]) {
    LrSchedule s;
    std::string text = entry["strata"];
    ASSERT_TRUE(LrSchedule::parse(text, s).ok()) << text;
    double base = entry["base"];
    const nlohmann::json &lr = entry["lr"];
    for (size_t t = 0; t < lr.size(); ++t)
      EXPECT_NEAR(s.lr(base, static_cast<int64_t>(t) + 1), lr[t].get<double>(),
                  1e-12 * base)
          << text << " (" << entry["torch"].get<std::string>() << ") at t "
          << t;
  }
  ASSERT_GE(table["clip_grad_norm"].size(), 3u);
  for (const nlohmann::json &entry : table["clip_grad_norm"]) {
    std::vector<std::vector<float>> storage;
    std::vector<Tensor> grads;
    for (const nlohmann::json &g : entry["grads"])
      storage.push_back(g.get<std::vector<float>>());
    for (std::vector<float> &g : storage)
      grads.push_back(Tensor{
          g.data(), TensorDesc{DType::F32, {static_cast<int64_t>(g.size())}}});
    Status status;
    double norm = clipGradientsByNorm(grads, entry["max_norm"].get<double>(),
                                      /*comm=*/nullptr, /*replicas=*/1, status);
    ASSERT_TRUE(status.ok());
    EXPECT_NEAR(norm, entry["norm"].get<double>(), 1e-6 * norm);
    for (size_t i = 0; i < storage.size(); ++i)
      for (size_t j = 0; j < storage[i].size(); ++j)
        EXPECT_NEAR(storage[i][j], entry["clipped"][i][j].get<double>(), 1e-6)
            << "max_norm " << entry["max_norm"] << " tensor " << i << "[" << j
            << "]";
  }
}
