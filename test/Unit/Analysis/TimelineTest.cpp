//===- TimelineTest.cpp - The timeline model on hand-built schedules ------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/Timeline.h"

#include <gtest/gtest.h>

using namespace mlir::strata::timeline;
using I = Instruction;

namespace {

/// One node, links of 1 GB/s without latency unless a test changes them.
System makeSystem(double latency = 0, double bandwidth = 1e9) {
  System system;
  system.intraNode = {latency, bandwidth};
  system.interNode = {10 * latency, bandwidth / 10};
  system.host = {0, bandwidth};
  return system;
}

Result run(const Schedule &schedule, const System &system = makeSystem()) {
  Result result = simulate(schedule, system);
  EXPECT_TRUE(result.ok()) << result.error;
  return result;
}

// One rank, sequential compute: the step is the sum, no idle time.
TEST(Timeline, SequentialCompute) {
  Schedule s;
  s.ranks = {
      {I::compute("a", 1.0), I::compute("b", 2.5), I::compute("c", 0.5)}};
  Result r = run(s);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 4.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].busy, 4.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle, 0.0);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_DOUBLE_EQ(r.events[1].start, 1.0);
  EXPECT_DOUBLE_EQ(r.events[1].end, 3.5);
}

// An asynchronous all-reduce overlaps the compute issued after its start;
// the wait costs only what is left of the transfer.
TEST(Timeline, CollectiveOverlapsCompute) {
  // Two ranks, 1e9 bytes at 1 GB/s, ring: 2 (p-1)/p * 1e9 / 1e9 = 1 s.
  Schedule s;
  for (int r = 0; r < 2; ++r)
    s.ranks.push_back(
        {I::compute("grad", 1.0), I::collectiveStart(0, 1e9, /*handle=*/7),
         I::compute("more", 0.25), I::wait(7), I::compute("update", 0.5)});
  Result r = run(s);
  // start at 1, comm ends at 2, wait until 2, update until 2.5.
  EXPECT_DOUBLE_EQ(r.stepSeconds, 2.5);
  EXPECT_DOUBLE_EQ(r.ranks[0].busy, 1.75);
  EXPECT_DOUBLE_EQ(r.ranks[0].commWait, 0.75);
  EXPECT_DOUBLE_EQ(r.ranks[1].idle, 0.75);
}

// A blocking all-reduce starts when the slowest rank joins.
TEST(Timeline, CollectiveWaitsForSlowestRank) {
  System system = makeSystem(/*latency=*/1e-3);
  Schedule s;
  s.ranks = {{I::compute("f", 1.0), I::collective(0, 3e9)},
             {I::compute("f", 2.0), I::collective(0, 3e9)},
             {I::compute("f", 1.5), I::collective(0, 3e9)}};
  Result r = run(s, system);
  // p = 3: 4 latencies + 4/3 * 3 s = 4.004 s after t = 2.
  EXPECT_NEAR(r.stepSeconds, 2.0 + 4e-3 + 4.0, 1e-12);
  EXPECT_NEAR(r.ranks[0].commWait, 1.0 + 4.004, 1e-12);
  EXPECT_NEAR(r.ranks[1].commWait, 4.004, 1e-12);
}

// Collectives of one rank take its communication stream one after another.
TEST(Timeline, CollectivesSerialiseOnTheStream) {
  Schedule s;
  for (int r = 0; r < 2; ++r)
    s.ranks.push_back({I::collectiveStart(0, 1e9, 0),
                       I::collectiveStart(0, 1e9, 1), I::wait(0), I::wait(1)});
  Result r = run(s);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 2.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].commWait, 2.0);
}

// A slower asynchronous path applies to started collectives only.
TEST(Timeline, AsyncCollectivesLink) {
  System system = makeSystem();
  system.asyncCollectives = Link{0, 0.5e9};
  Schedule s;
  for (int r = 0; r < 2; ++r)
    s.ranks.push_back(
        {I::collective(0, 1e9), I::collectiveStart(0, 1e9, 0), I::wait(0)});
  Result r = run(s, system);
  // 1 s blocking, then 2 s at half the bandwidth.
  EXPECT_DOUBLE_EQ(r.stepSeconds, 3.0);
}

// A group that spans nodes uses the inter-node link.
TEST(Timeline, GroupAcrossNodesUsesInterNodeLink) {
  System system = makeSystem();
  system.nodeOfRank = {0, 1};
  Schedule s;
  s.ranks = {{I::collective(0, 1e9)}, {I::collective(0, 1e9)}};
  Result r = run(s, system);
  // 1e8 B/s: 1e9 bytes take 10 s.
  EXPECT_DOUBLE_EQ(r.stepSeconds, 10.0);
}

// A two-stage pipeline of two micro-batches (GPipe): the second stage idles
// until the first activation arrives; the first stage idles while the second
// runs its backward passes: the known 2-stage, 2-micro-batch timeline.
TEST(Timeline, PipelineBubbles) {
  System system = makeSystem(/*latency=*/0, /*bandwidth=*/1e9);
  Schedule s;
  // F = 1 s, B = 2 s, activations and gradients 0.5e9 bytes (0.5 s).
  s.ranks = {{I::compute("F0", 1), I::send(1, 0, 0.5e9), I::compute("F1", 1),
              I::send(1, 1, 0.5e9), I::recv(1, 10), I::compute("B0", 2),
              I::recv(1, 11), I::compute("B1", 2)},
             {I::recv(0, 0), I::compute("F0", 1), I::recv(0, 1),
              I::compute("F1", 1), I::compute("B0", 2), I::send(0, 10, 0.5e9),
              I::compute("B1", 2), I::send(0, 11, 0.5e9)}};
  Result r = run(s, system);
  // Stage 1: F0 1.5-2.5, F1 2.5-3.5 (arrived at 2.5), B0 3.5-5.5,
  // B1 5.5-7.5. Stage 0: B0 after 6.0 (5.5 + 0.5) to 8.0, B1 needs 8.0.
  EXPECT_DOUBLE_EQ(r.ranks[1].bubble, 1.5);
  EXPECT_DOUBLE_EQ(r.ranks[0].bubble, 6.0 - 2.0);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 10.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].idle, 10.0 - 6.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].idle, 10.0 - 6.0);
}

// Transfers of one directed link go one after another.
TEST(Timeline, SendsSerialiseOnTheLink) {
  Schedule s;
  s.ranks = {{I::send(1, 0, 1e9), I::send(1, 1, 1e9)},
             {I::recv(0, 1), I::recv(0, 0)}};
  Result r = run(s);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 2.0);
  EXPECT_DOUBLE_EQ(r.ranks[1].bubble, 2.0);
}

// Swap copies run on the copy stream beside compute.
TEST(Timeline, CopiesOverlapCompute) {
  Schedule s;
  s.ranks = {{I::copyStart(2e9, 3), I::compute("f", 1.0), I::wait(3),
              I::compute("g", 1.0)}};
  Result r = run(s);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 3.0);
  EXPECT_DOUBLE_EQ(r.ranks[0].commWait, 1.0);
}

// An asynchronous kernel with an `after` dependency: the host goes on, the
// dependent kernel waits for the copy.
TEST(Timeline, AfterDependency) {
  Schedule s;
  I consumer = I::compute("use", 1.0);
  consumer.after = {0};
  s.ranks = {{I::copyStart(3e9, 0), consumer, I::wait(0)}};
  Result r = run(s);
  EXPECT_DOUBLE_EQ(r.stepSeconds, 4.0);
  EXPECT_DOUBLE_EQ(r.events.back().start, 3.0);
}

// Two ranks that receive before they send cannot go on: a clear error.
TEST(Timeline, DeadlockIsReported) {
  Schedule s;
  s.ranks = {{I::recv(1, 0), I::send(1, 1, 4)},
             {I::recv(0, 1), I::send(0, 0, 4)}};
  Result r = simulate(s, makeSystem());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("deadlock"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("rank 0 instruction #0 (recv) waits for rank 1 tag 0"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("rank 1 instruction #0 (recv)"), std::string::npos);
}

// A collective that only some ranks of its group join never ends.
TEST(Timeline, MissingCollectiveIsReported) {
  Schedule s;
  s.ranks = {{I::collective(0, 4)}, {I::compute("f", 1)}};
  Result r = simulate(s, makeSystem());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("group 0 to join"), std::string::npos) << r.error;
}

TEST(Timeline, UnreceivedSendIsReported) {
  Schedule s;
  s.ranks = {{I::send(1, 5, 4)}, {}};
  Result r = simulate(s, makeSystem());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("tag 5, which it never receives"), std::string::npos)
      << r.error;
}

TEST(Timeline, InvalidInputIsReported) {
  Schedule s;
  s.ranks = {{I::wait(9)}};
  EXPECT_NE(simulate(s, makeSystem()).error.find("which no start began"),
            std::string::npos);
  s.ranks = {{I::send(0, 0, 4)}};
  EXPECT_NE(simulate(s, makeSystem()).error.find("is not another rank"),
            std::string::npos);
  s.ranks = {{I::collective(3, 4)}};
  EXPECT_NE(simulate(s, makeSystem()).error.find("group 3 does not exist"),
            std::string::npos);
  s.ranks = {{I::compute("x", -1)}};
  EXPECT_NE(simulate(s, makeSystem()).error.find("negative"),
            std::string::npos);
}

TEST(Timeline, RingFormula) {
  Link link{1e-6, 1e9};
  EXPECT_DOUBLE_EQ(ringAllReduceSeconds(1e9, 1, link), 0.0);
  EXPECT_DOUBLE_EQ(ringAllReduceSeconds(1e9, 4, link), 6e-6 + 1.5);
}

TEST(Timeline, TraceAndSvgNameEveryRow) {
  Schedule s;
  s.ranks = {{I::compute("a\"b", 1.0), I::collective(0, 1e9)},
             {I::compute("c", 1.0), I::collective(0, 1e9)}};
  Result r = run(s);
  std::string trace = toChromeTrace(r);
  EXPECT_NE(trace.find("\"rank 1\""), std::string::npos);
  EXPECT_NE(trace.find("a\\\"b"), std::string::npos);
  EXPECT_NE(trace.find("\"comm\""), std::string::npos);
  std::string svg = toSvg(r, "t<1>");
  EXPECT_NE(svg.find("rank 1 comm"), std::string::npos);
  EXPECT_NE(svg.find("t&lt;1&gt;"), std::string::npos);
}

} // namespace
