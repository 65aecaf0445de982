//===- SimCalibrateTest.cpp - strata-sim's link fit -----------------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include <gtest/gtest.h>

using namespace mlir::strata::sim;

namespace {

// Samples drawn from 2 (p-1) latency + 2 (p-1)/p bytes / bandwidth give the
// latency and bandwidth back.
TEST(SimCalibrate, FitsLatencyAndBandwidth) {
  double latency = 30e-6, bandwidth = 2e9;
  std::vector<CollectiveSample> samples;
  for (double bytes : {4e3, 1e5, 1e6, 4e6}) {
    CollectiveSample s;
    s.bytes = bytes;
    s.ranks = 4;
    s.seconds = 6 * latency + 1.5 * bytes / bandwidth;
    samples.push_back(s);
  }
  std::optional<LinkFit> fit = fitLink(samples);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->latencySeconds, latency, 1e-9);
  EXPECT_NEAR(fit->bytesPerSecond, bandwidth, 1e3);
}

// A busy period of several messages counts a latency per message.
TEST(SimCalibrate, CountsMessagesOfABusyPeriod) {
  double latency = 10e-6, bandwidth = 1e9;
  std::vector<CollectiveSample> samples;
  for (int64_t messages : {1, 3, 5}) {
    CollectiveSample s;
    s.bytes = 1e6 * static_cast<double>(messages);
    s.ranks = 2;
    s.messages = messages;
    s.seconds = static_cast<double>(messages) * (2 * latency + 1e6 / bandwidth);
    samples.push_back(s);
  }
  samples[0].bytes = 3e6; // not proportional to the messages
  samples[0].seconds = 2 * latency + 3e6 / bandwidth;
  std::optional<LinkFit> fit = fitLink(samples);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->latencySeconds, latency, 1e-9);
  EXPECT_NEAR(fit->bytesPerSecond, bandwidth, 1e3);
}

// One size cannot separate latency from bandwidth: all time is bandwidth.
TEST(SimCalibrate, OneSizeGivesBandwidthOnly) {
  std::vector<CollectiveSample> samples(3);
  for (CollectiveSample &s : samples) {
    s.bytes = 1e6;
    s.seconds = 2e-3;
  }
  std::optional<LinkFit> fit = fitLink(samples);
  ASSERT_TRUE(fit);
  EXPECT_EQ(fit->latencySeconds, 0);
  EXPECT_NEAR(fit->bytesPerSecond, 1e6 / 2e-3, 1e-3);
}

TEST(SimCalibrate, NoSamplesNoFit) {
  EXPECT_FALSE(fitLink({}));
  CollectiveSample alone;
  alone.ranks = 1;
  alone.seconds = 1;
  EXPECT_FALSE(fitLink({alone}));
}

} // namespace
