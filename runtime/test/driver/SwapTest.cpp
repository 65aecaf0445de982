//===- SwapTest.cpp - Activation swapping and recomputation ---------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The copy engine on its own (concurrency, byte-exact copies, errors,
// destruction with jobs queued), then whole steps of mlp.json with an
// activation swapped out and back in (TestUtil.h, mlpWithSwap) or
// recomputed in the backward pass, which must be bit-identical to the plain
// plan, and their traces.
//
//===----------------------------------------------------------------------===//

#include "../common/SameBits.h"
#include "TestUtil.h"

#include "strata-rt/CopyEngine.h"
#include "strata-rt/Executor.h"
#include "strata-rt/Trace.h"
#include "strata-rt/Train.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <random>
#include <thread>

using namespace strata::rt;
using namespace strata::rt::test;
using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// CopyEngine
//===----------------------------------------------------------------------===//

TEST(CopyEngine, ManyJobsCopyEveryByte) {
  std::mt19937 rng(7);
  constexpr int kSlots = 64;
  std::vector<std::vector<unsigned char>> src(kSlots), dst(kSlots);
  for (int s = 0; s < kSlots; ++s) {
    src[s].resize(1 + rng() % 50000);
    for (unsigned char &b : src[s])
      b = static_cast<unsigned char>(rng());
    dst[s].assign(src[s].size(), 0);
  }
  CopyEngine engine;
  for (int s = 0; s < kSlots; ++s)
    ASSERT_TRUE(
        engine.startCopy(s, "copy", dst[s].data(), src[s].data(), src[s].size())
            .ok());
  // Waits in an order other than the FIFO's.
  std::vector<int> order(kSlots);
  for (int s = 0; s < kSlots; ++s)
    order[s] = s;
  std::shuffle(order.begin(), order.end(), rng);
  for (int s : order) {
    Status status = engine.wait(s);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(dst[s], src[s]) << "slot " << s;
  }
  std::vector<CopySpan> spans = engine.takeSpans();
  ASSERT_EQ(spans.size(), size_t(kSlots));
  for (int s = 0; s < kSlots; ++s) {
    // One thread, FIFO: in start order, one after the other.
    EXPECT_EQ(spans[s].slot, s);
    EXPECT_EQ(spans[s].bytes, static_cast<int64_t>(src[s].size()));
    EXPECT_LE(spans[s].startNs, spans[s].endNs);
    if (s > 0)
      EXPECT_LE(spans[s - 1].endNs, spans[s].startNs);
  }
  EXPECT_TRUE(engine.takeSpans().empty());
}

TEST(CopyEngine, StartReturnsBeforeTheJobRuns) {
  // The job runs only once the caller has returned from start and released
  // it: a copy engine that ran jobs inline would time out here.
  CopyEngine engine;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> sawRelease{false};
  std::thread::id jobThread;
  ASSERT_TRUE(engine
                  .start(3, "gated", 0,
                         [&] {
                           jobThread = std::this_thread::get_id();
                           sawRelease =
                               released.wait_for(std::chrono::seconds(10)) ==
                               std::future_status::ready;
                           return Status::success();
                         })
                  .ok());
  EXPECT_TRUE(engine.outstanding(3));
  release.set_value();
  ASSERT_TRUE(engine.wait(3).ok());
  EXPECT_TRUE(sawRelease);
  EXPECT_NE(jobThread, std::this_thread::get_id());
  EXPECT_FALSE(engine.outstanding(3));
}

TEST(CopyEngine, ErrorsAreStatuses) {
  CopyEngine engine;
  // Waiting for a slot with nothing started.
  Status status = engine.wait(5);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("slot 5 has no copy in flight"),
            std::string::npos)
      << status.message();
  // A job that fails, one that throws.
  ASSERT_TRUE(
      engine.start(1, "bad", 0, [] { return Status::failure("no luck"); })
          .ok());
  ASSERT_TRUE(
      engine
          .start(2, "throws", 0,
                 []() -> Status { throw std::runtime_error("exploded"); })
          .ok());
  // A second job on a busy slot is refused.
  status = engine.start(1, "again", 0, [] { return Status::success(); });
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("slot 1 is still busy"), std::string::npos);
  status = engine.wait(1);
  EXPECT_EQ(status.message(), "no luck");
  status = engine.wait(2);
  EXPECT_NE(status.message().find("exploded"), std::string::npos);
  // A null pointer is an error, not a crash.
  char byte = 0;
  ASSERT_TRUE(engine.startCopy(4, "null", &byte, nullptr, 1).ok());
  EXPECT_FALSE(engine.wait(4).ok());
  // The slots are free again.
  ASSERT_TRUE(engine.start(1, "ok", 0, [] { return Status::success(); }).ok());
  EXPECT_TRUE(engine.wait(1).ok());
}

TEST(CopyEngine, FinishAllCompletesAndForgetsOutstandingJobs) {
  CopyEngine engine;
  std::atomic<int> ran{0};
  for (int s = 0; s < 8; ++s)
    ASSERT_TRUE(engine
                    .start(s, "sleepy", 0,
                           [&ran, s] {
                             std::this_thread::sleep_for(
                                 std::chrono::milliseconds(2));
                             ++ran;
                             return s == 5 ? Status::failure("slot five")
                                           : Status::success();
                           })
                    .ok());
  Status status = engine.finishAll();
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(status.message(), "slot five");
  for (int s = 0; s < 8; ++s)
    EXPECT_FALSE(engine.outstanding(s));
  EXPECT_TRUE(engine.finishAll().ok());
}

TEST(CopyEngine, DestructionRunsEveryQueuedJob) {
  std::atomic<int> ran{0};
  std::vector<char> src(1 << 16, 'x'), dst(1 << 16, 0);
  {
    CopyEngine engine;
    for (int s = 0; s < 20; ++s)
      ASSERT_TRUE(engine
                      .start(s, "sleepy", 0,
                             [&ran] {
                               std::this_thread::sleep_for(
                                   std::chrono::milliseconds(1));
                               ++ran;
                               return Status::success();
                             })
                      .ok());
    ASSERT_TRUE(
        engine.startCopy(20, "last", dst.data(), src.data(), src.size()).ok());
  }
  EXPECT_EQ(ran.load(), 20);
  EXPECT_EQ(dst, src);
}

TEST(SwapPool, OneAllocationPerSlot) {
  SwapPool pool;
  ASSERT_TRUE(pool.allocate({{0, 4096}, {7, 12}}).ok());
  EXPECT_EQ(pool.numSlots(), 2u);
  EXPECT_EQ(pool.totalBytes(), 4108);
  int64_t bytes = 0;
  char *a = static_cast<char *>(pool.slot(7, bytes));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(bytes, 12);
  EXPECT_EQ(pool.slot(1, bytes), nullptr);
  EXPECT_EQ(bytes, 0);
}

//===----------------------------------------------------------------------===//
// Swapping and recomputing in whole steps
//===----------------------------------------------------------------------===//

namespace {

json mlpJson() { return json::parse(readText(inputPath("mlp.json"))); }

/// mlp.json with relu0 recomputed in the backward pass: the backward matmul
/// reads "relu0.recomputed", which a clone of the forward relu (phase
/// "recompute") writes just before it.
json mlpWithRecompute() {
  json plan = mlpJson();
  json &buffers = plan["buffers"];
  int64_t relu0 = -1;
  for (const json &b : buffers)
    if (b["name"] == "relu0")
      relu0 = b["id"];
  int64_t id = static_cast<int64_t>(buffers.size());
  int64_t arena = plan["ranks"][0]["arena_bytes"];
  json copy = buffers[relu0];
  copy["id"] = id;
  copy["name"] = "relu0.recomputed";
  copy["offset"] = arena;
  buffers.push_back(copy);
  plan["ranks"][0]["arena_bytes"] = arena + copy["bytes"].get<int64_t>();
  json program = json::array();
  json forwardRelu;
  for (json inst : plan["ranks"][0]["program"]) {
    if (inst["op"] == "relu")
      forwardRelu = inst;
    if (inst["phase"] == "backward" && inst["in"].size() > 0 &&
        inst["in"][0] == relu0) {
      json clone = forwardRelu;
      clone["out"] = {id};
      clone["phase"] = "recompute";
      program.push_back(clone);
      inst["in"][0] = id;
    }
    program.push_back(inst);
  }
  plan["ranks"][0]["program"] = program;
  return plan;
}

std::unique_ptr<Executor> executorFor(const json &text) {
  Plan plan;
  Status status = parsePlan(text.dump(), "test.json", plan);
  EXPECT_TRUE(status.ok()) << status.message();
  std::unique_ptr<Executor> executor;
  ExecutorOptions o;
  o.threads = 2;
  status = Executor::create(std::move(plan), o, executor);
  EXPECT_TRUE(status.ok()) << status.message();
  return executor;
}

/// Runs `steps` steps on fixed random inputs; returns the losses followed by
/// every parameter's values.
std::vector<float> runSteps(Executor &executor, int steps,
                            Executor::StepPart part = Executor::StepPart::All) {
  const Plan &plan = executor.getPlan();
  executor.initialize(42);
  std::vector<float> result;
  for (int step = 1; step <= steps; ++step) {
    std::mt19937 rng(step);
    std::uniform_real_distribution<float> uniform(-1, 1);
    for (const Input &input : plan.inputs) {
      const Tensor &t = executor.getTensor(input.buffer);
      for (int64_t i = 0; i < t.numel(); ++i)
        if (t.desc.dtype == DType::I32)
          t.i32()[i] = static_cast<int32_t>(rng() % 4);
        else
          t.f32()[i] = uniform(rng);
    }
    float loss = 0;
    Status status = executor.runStep(step, loss, part);
    EXPECT_TRUE(status.ok()) << status.message();
    result.push_back(loss);
  }
  for (const Parameter &param : plan.parameters) {
    const Tensor &t = executor.getTensor(param.buffer);
    result.insert(result.end(), t.f32(), t.f32() + t.numel());
  }
  return result;
}

} // namespace

TEST(Swap, StepsAreBitIdenticalToThePlanWithoutSwaps) {
  std::unique_ptr<Executor> plain = executorFor(mlpJson());
  std::unique_ptr<Executor> swapped = executorFor(mlpWithSwap(mlpJson()));
  ASSERT_TRUE(plain && swapped);
  ASSERT_NE(swapped->getSwapPool(), nullptr);
  EXPECT_EQ(swapped->getSwapPool()->totalBytes(), 4096);
  EXPECT_EQ(plain->getSwapPool(), nullptr);
  std::vector<float> expected = runSteps(*plain, 4);
  std::vector<float> actual = runSteps(*swapped, 4);
  EXPECT_TRUE(sameBits(expected, actual));
  // The parameters moved, so the comparison means something.
  std::unique_ptr<Executor> fresh = executorFor(mlpJson());
  fresh->initialize(42);
  EXPECT_NE(fresh->getTensor(fresh->getPlan().parameters[2].buffer).f32()[0],
            plain->getTensor(plain->getPlan().parameters[2].buffer).f32()[0]);
  // Both copies of the last step ran on the copy thread.
  std::vector<Executor::CopyTime> copies = swapped->getLastStepCopies();
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].name, "swap_out");
  EXPECT_EQ(copies[1].name, "swap_in");
  for (const Executor::CopyTime &copy : copies) {
    EXPECT_EQ(copy.slot, 0);
    EXPECT_EQ(copy.bytes, 4096);
    EXPECT_GE(copy.durationUs, 0);
  }
  EXPECT_LE(copies[0].startUs + copies[0].durationUs, copies[1].startUs);
}

TEST(Swap, ForwardOnlyAndSplitStepsRun) {
  // Evaluation runs the forward part (swap_out and its wait only); a step
  // split into forward-backward and update is the whole step.
  std::unique_ptr<Executor> plain = executorFor(mlpJson());
  std::unique_ptr<Executor> swapped = executorFor(mlpWithSwap(mlpJson()));
  EXPECT_TRUE(sameBits(runSteps(*plain, 2, Executor::StepPart::Forward),
                       runSteps(*swapped, 2, Executor::StepPart::Forward)));
  EXPECT_TRUE(
      sameBits(runSteps(*plain, 2, Executor::StepPart::ForwardBackward),
               runSteps(*swapped, 2, Executor::StepPart::ForwardBackward)));
}

TEST(Recompute, StepsAreBitIdenticalAndRecomputeIsBackward) {
  std::unique_ptr<Executor> plain = executorFor(mlpJson());
  std::unique_ptr<Executor> recompute = executorFor(mlpWithRecompute());
  EXPECT_TRUE(sameBits(runSteps(*plain, 3), runSteps(*recompute, 3)));
  // The forward part leaves the recompute instruction out (a fresh
  // executor: instructions that did not run keep a zero start).
  std::unique_ptr<Executor> forward = executorFor(mlpWithRecompute());
  const std::vector<Instruction> &program = forward->getProgram();
  size_t at = 0;
  while (at < program.size() && program[at].phase != Phase::Recompute)
    ++at;
  ASSERT_LT(at, program.size());
  runSteps(*forward, 1, Executor::StepPart::Forward);
  EXPECT_EQ(forward->getLastStepTimes()[at].startUs, 0.0)
      << "a forward-only step ran the recompute instruction";
  EXPECT_GT(forward->getLastStepTimes()[0].startUs, 0.0);
}

TEST(Swap, TraceHasCopyAndRecomputeTracks) {
  TempDir dir;
  json plan = mlpWithSwap(mlpJson());
  writeText(dir.path("swap.json"), plan.dump());
  writeText(dir.path("recompute.json"), mlpWithRecompute().dump());
  for (const char *name : {"swap.json", "recompute.json"}) {
    bool swap = std::string(name) == "swap.json";
    TrainOptions o;
    o.planPath = dir.path(name);
    o.steps = 2;
    o.threads = 2;
    std::FILE *log = std::tmpfile();
    ASSERT_NE(log, nullptr);
    o.log = log;
    o.tracePath = dir.path(std::string(name) + ".trace");
    TrainResult result;
    Status status = train(o, result);
    ASSERT_TRUE(status.ok()) << status.message();
    std::rewind(log);
    std::string text;
    char chunk[4096];
    while (size_t n = std::fread(chunk, 1, sizeof(chunk), log))
      text.append(chunk, n);
    std::fclose(log);
    EXPECT_EQ(text.find("host swap pool 4096 bytes in 1 slots") !=
                  std::string::npos,
              swap)
        << text;

    json trace = json::parse(readText(o.tracePath), nullptr, false);
    ASSERT_FALSE(trace.is_discarded());
    int copyEvents = 0, recomputeEvents = 0;
    std::map<int64_t, std::string> trackNames;
    for (const json &e : trace["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "thread_name")
        trackNames[e["tid"].get<int64_t>()] = e["args"]["name"];
      if (e["ph"] != "X")
        continue;
      if (e["tid"] == kTraceCopyThread) {
        ++copyEvents;
        EXPECT_EQ(e["cat"], "copy");
        EXPECT_EQ(e["args"]["instruction"], -1);
        EXPECT_TRUE(e["name"] == "swap_out slot 0" ||
                    e["name"] == "swap_in slot 0")
            << e["name"];
      }
      if (e["tid"] == kTraceRecomputeThread) {
        ++recomputeEvents;
        EXPECT_EQ(e["cat"], "recompute");
        EXPECT_EQ(e["name"], "relu");
      }
    }
    EXPECT_EQ(copyEvents, swap ? 4 : 0) << name;
    EXPECT_EQ(recomputeEvents, swap ? 0 : 2) << name;
    EXPECT_EQ(trackNames[kTraceProgramThread], "program");
    if (swap)
      EXPECT_EQ(trackNames[kTraceCopyThread], "copy");
    else
      EXPECT_EQ(trackNames[kTraceRecomputeThread], "recompute");
  }
}
