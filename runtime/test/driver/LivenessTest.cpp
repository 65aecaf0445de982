//===- LivenessTest.cpp - Buffer lifetimes and the overlap check ----------===//

#include "strata-rt/Liveness.h"

#include <gtest/gtest.h>

#include <random>

using namespace strata::rt;

namespace {

TEST(Liveness, FirstToLastUse) {
  // 0 -> 1 -> 2, and 0 read again at the end.
  std::vector<std::vector<LiveInstruction>> programs = {
      {{{0}, {1}}, {{1}, {2}}, {{0, 2}, {3}}}};
  std::vector<LiveInterval> live =
      computeLiveness(programs, {false, false, false, false, false});
  ASSERT_EQ(live.size(), 5u);
  EXPECT_EQ(live[0].first, 0);
  EXPECT_EQ(live[0].last, 2);
  EXPECT_EQ(live[1].first, 0);
  EXPECT_EQ(live[1].last, 1);
  EXPECT_EQ(live[3].first, 2);
  EXPECT_EQ(live[3].last, 2);   // Written, never read.
  EXPECT_FALSE(live[4].live()); // Never touched.
}

TEST(Liveness, PersistentAndSends) {
  // A send of 1 at step 1 keeps 1 until the in-place update at step 3; a
  // send of 4 after the last update keeps 4 to the end; 0 is persistent.
  LiveInstruction send1{{1}, {}, false, true};
  LiveInstruction update{{0, 2}, {0}, true, false};
  LiveInstruction send4{{4}, {}, false, true};
  std::vector<std::vector<LiveInstruction>> programs = {
      {{{}, {1}}, send1, {{1}, {2}}, update, {{}, {4}}, send4, {{}, {5}}}};
  std::vector<LiveInterval> live =
      computeLiveness(programs, {true, false, false, false, false, false});
  EXPECT_EQ(live[0].first, 0);
  EXPECT_EQ(live[0].last, 6);
  EXPECT_EQ(live[1].last, 3);
  EXPECT_EQ(live[4].last, 6);
}

TEST(Liveness, ProgramsFollowEachOther) {
  std::vector<std::vector<LiveInstruction>> programs = {{{{}, {0}}, {{0}, {}}},
                                                        {{{}, {1}}, {{1}, {}}}};
  std::vector<LiveInterval> live = computeLiveness(programs, {false, false});
  EXPECT_EQ(live[0].first, 0);
  EXPECT_EQ(live[0].last, 1);
  EXPECT_EQ(live[1].first, 2);
  EXPECT_EQ(live[1].last, 3);
  EXPECT_TRUE(computeLiveness({{{{}, {7}}}}, {false}).empty()); // Bad id.
}

TEST(Liveness, LowerBoundAligns) {
  std::vector<LiveInterval> live = {{0, 1}, {1, 2}, {2, 2}};
  EXPECT_EQ(liveBytesLowerBound(live, {10, 100, 64}, 64), 64 + 128);
  EXPECT_EQ(liveBytesLowerBound(live, {10, 100, 64}, 1), 164);
}

TEST(Liveness, OverlapCheckNamesBothBuffers) {
  std::vector<LiveInterval> live = {{0, 1}, {1, 2}, {2, 3}};
  // 0 and 2 never meet: they may share bytes; 1 meets both.
  EXPECT_EQ(checkNoLiveOverlap(live, {0, 64, 0}, {64, 64, 64}), "");
  std::string message = checkNoLiveOverlap(live, {0, 32, 0}, {64, 64, 64});
  EXPECT_NE(message.find("buffer 1"), std::string::npos) << message;
  EXPECT_NE(message.find("buffer 0"), std::string::npos) << message;
}

TEST(Liveness, OverlapCheckAgreesWithPairwiseCheck) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    int n = 1 + rng() % 8;
    std::vector<LiveInterval> live(n);
    std::vector<int64_t> offsets(n), bytes(n);
    for (int i = 0; i < n; ++i) {
      int64_t a = rng() % 6, b = rng() % 6;
      live[i] = {std::min(a, b), std::max(a, b)};
      offsets[i] = rng() % 8;
      bytes[i] = rng() % 4;
    }
    bool clash = false;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        clash |= live[i].overlaps(live[j]) && bytes[i] > 0 && bytes[j] > 0 &&
                 offsets[i] < offsets[j] + bytes[j] &&
                 offsets[j] < offsets[i] + bytes[i];
    EXPECT_EQ(!checkNoLiveOverlap(live, offsets, bytes).empty(), clash)
        << "trial " << trial;
  }
}

} // namespace
