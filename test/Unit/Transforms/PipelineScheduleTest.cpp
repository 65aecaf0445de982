//===- PipelineScheduleTest.cpp - Invariants of every pipeline schedule --===//
//
// For every schedule and many (devices, chunks, micro-batches): each device
// runs each of its (chunk, micro-batch) passes exactly once, forward before
// backward before weight gradients, backward passes of a chunk in
// micro-batch order; the devices can run their orders together without
// deadlock under the pipeline's dependencies; and the activations in flight
// stay within what each schedule promises.
//
//===----------------------------------------------------------------------===//

#include "strata/Transforms/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

using namespace mlir::strata::pipeline;

namespace {

using Key = std::tuple<int, int64_t, int64_t>;

Key keyOf(const Action &a) { return {a.kind, a.chunk, a.microBatch}; }

/// Runs every device's order; an action may start once its dependencies ran:
/// F(c, m) after F(c - 1, m); B(c, m) after B(c + 1, m) and F(c, m); W(c, m)
/// and U(c, m) after B(c, m). Returns whether every action ran.
bool runsWithoutDeadlock(const std::vector<std::vector<Action>> &orders,
                         int64_t chunks) {
  std::set<Key> done;
  std::vector<size_t> next(orders.size(), 0);
  size_t total = 0;
  for (const auto &order : orders)
    total += order.size();
  auto ready = [&](const Action &a) {
    switch (a.kind) {
    case Action::F:
      return a.chunk == 0 || done.count({Action::F, a.chunk - 1, a.microBatch});
    case Action::B:
      return done.count({Action::F, a.chunk, a.microBatch}) &&
             (a.chunk == chunks - 1 ||
              done.count({Action::B, a.chunk + 1, a.microBatch}));
    case Action::W:
    case Action::U:
      return done.count({Action::B, a.chunk, a.microBatch}) != 0;
    }
    return false;
  };
  while (done.size() < total) {
    bool progress = false;
    for (size_t d = 0; d < orders.size(); ++d)
      while (next[d] < orders[d].size() && ready(orders[d][next[d]])) {
        done.insert(keyOf(orders[d][next[d]++]));
        progress = true;
      }
    if (!progress)
      return false;
  }
  return true;
}

void checkSchedule(const ScheduleShape &shape) {
  SCOPED_TRACE(std::string(getScheduleName(shape.kind)) + " devices " +
               std::to_string(shape.devices) + " chunks/device " +
               std::to_string(shape.virtualStages) + " micro-batches " +
               std::to_string(shape.microBatches));
  ASSERT_EQ(checkShape(shape), "");
  std::vector<std::vector<Action>> orders = buildSchedule(shape);
  ASSERT_EQ(static_cast<int64_t>(orders.size()), shape.devices);
  int64_t chunks = shape.devices * shape.virtualStages;
  bool splitW = shape.kind == ScheduleKind::ZeroBubbleH1;
  // The asynchronous schedules update after each window's last backward.
  int64_t window = updateWindow(shape);
  size_t updates = isAsynchronous(shape.kind)
                       ? static_cast<size_t>(shape.microBatches / window)
                       : 0;
  for (int64_t d = 0; d < shape.devices; ++d) {
    const std::vector<Action> &order = orders[d];
    std::map<Key, size_t> position;
    for (size_t i = 0; i < order.size(); ++i) {
      const Action &a = order[i];
      EXPECT_EQ(a.chunk % shape.devices, d) << "chunk on the wrong device";
      EXPECT_TRUE(position.emplace(keyOf(a), i).second) << "action repeated";
    }
    size_t perChunk =
        static_cast<size_t>(shape.microBatches) * (splitW ? 3 : 2);
    EXPECT_EQ(order.size(), perChunk * shape.virtualStages + updates);
    for (int64_t v = 0; v < shape.virtualStages; ++v) {
      int64_t c = v * shape.devices + d;
      for (int64_t m = 0; m < shape.microBatches; ++m) {
        auto at = [&](int kind, int64_t micro) -> size_t {
          auto it = position.find(Key{kind, c, micro});
          EXPECT_TRUE(it != position.end()) << "missing action";
          return it == position.end() ? 0 : it->second;
        };
        EXPECT_LT(at(Action::F, m), at(Action::B, m));
        if (splitW)
          EXPECT_LT(at(Action::B, m), at(Action::W, m));
        // An update right after the backward pass closing its window.
        if (updates > 0 && (m + 1) % window == 0)
          EXPECT_EQ(at(Action::U, m), at(Action::B, m) + 1);
        if (m > 0) {
          EXPECT_LT(at(Action::B, m - 1), at(Action::B, m));
          if (splitW)
            EXPECT_LT(at(Action::W, m - 1), at(Action::W, m));
        }
      }
    }
    // Activations in flight (forward done, backward not yet).
    int64_t bound = shape.microBatches;
    switch (shape.kind) {
    case ScheduleKind::GPipe:
      break;
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubbleH1:
    case ScheduleKind::PipeDream:
    case ScheduleKind::TwoBW:
      bound = std::min(shape.microBatches, shape.devices - d);
      break;
    case ScheduleKind::Interleaved:
      bound = std::min(shape.microBatches * shape.virtualStages,
                       (shape.devices - d - 1) * 2 +
                           (shape.virtualStages - 1) * shape.devices + 1);
      break;
    }
    EXPECT_LE(maxInFlight(order), bound) << "device " << d;
  }
  EXPECT_TRUE(runsWithoutDeadlock(orders, chunks));
}

TEST(PipelineSchedule, EveryScheduleKeepsItsInvariants) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t m = 1; m <= 12; ++m) {
      for (ScheduleKind kind :
           {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
            ScheduleKind::ZeroBubbleH1, ScheduleKind::PipeDream})
        checkSchedule({kind, devices, 1, m});
      for (int64_t window = std::max<int64_t>(devices - 1, 1); window <= m;
           ++window)
        if (m % window == 0)
          checkSchedule({ScheduleKind::TwoBW, devices, 1, m, window});
      if (m % devices == 0)
        for (int64_t v = 1; v <= 3; ++v)
          checkSchedule({ScheduleKind::Interleaved, devices, v, m});
    }
}

TEST(PipelineSchedule, OneFOneBHoldsFewerActivationsThanGPipe) {
  auto orders = buildSchedule({ScheduleKind::OneFOneB, 4, 1, 8});
  auto gpipe = buildSchedule({ScheduleKind::GPipe, 4, 1, 8});
  EXPECT_EQ(maxInFlight(orders[0]), 4);
  EXPECT_EQ(maxInFlight(orders[3]), 1);
  EXPECT_EQ(maxInFlight(gpipe[0]), 8);
}

TEST(PipelineSchedule, ZeroBubbleDefersWeightGradientsOnEarlyStages) {
  auto orders = buildSchedule({ScheduleKind::ZeroBubbleH1, 4, 1, 8});
  // The last device runs each W right after its B; device 0 ends with the
  // three W passes it deferred.
  const std::vector<Action> &last = orders[3];
  for (size_t i = 0; i + 1 < last.size(); ++i)
    if (last[i].kind == Action::B)
      EXPECT_EQ(last[i + 1].kind, Action::W);
  // Device d defers up to devices - d - 1 W passes: after its last B it runs
  // the one that B released and the deferred ones.
  for (int64_t d = 0; d < 4; ++d) {
    const std::vector<Action> &order = orders[d];
    int64_t trailing = 0;
    for (auto it = order.rbegin(); it != order.rend() && it->kind == Action::W;
         ++it)
      ++trailing;
    EXPECT_EQ(trailing, 4 - d) << "device " << d;
  }
}

/// Replays `order` (one device's) and checks that the forward and backward
/// passes read versions the device keeps, and that every forward pass of
/// micro-batch m finds exactly weightVersion(m) updates applied: the
/// version the asynchronous semantics name is the one the order provides
/// (for pipedream, PipeDream's own: what the 1F1B order has applied).
void checkVersions(const ScheduleShape &shape, int64_t d,
                   const std::vector<Action> &order) {
  int64_t applied = 0;
  for (const Action &a : order) {
    if (a.kind == Action::U)
      ++applied;
    if (a.kind != Action::F && a.kind != Action::B)
      continue;
    int64_t version = weightVersion(shape, d, a.microBatch);
    // Both passes read a version the device still keeps.
    EXPECT_GE(version, applied - keptVersions(shape, d));
    if (a.kind == Action::B)
      continue;
    if (shape.kind == ScheduleKind::PipeDream)
      EXPECT_EQ(std::max<int64_t>(version, 0), applied)
          << "device " << d << " micro-batch " << a.microBatch;
    else
      // 2bw reads the version before the newest: never one not yet made.
      EXPECT_LE(version, applied)
          << "device " << d << " micro-batch " << a.microBatch;
    // Never older than the versions kept from the previous step.
    EXPECT_GE(version, -keptVersions(shape, d));
  }
}

TEST(PipelineSchedule, AsynchronousVersionsMatchTheOrder) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t m = 1; m <= 12; ++m) {
      ScheduleShape pipedream{ScheduleKind::PipeDream, devices, 1, m};
      auto orders = buildSchedule(pipedream);
      for (int64_t d = 0; d < devices; ++d)
        checkVersions(pipedream, d, orders[d]);
      for (int64_t window = std::max<int64_t>(devices - 1, 1); window <= m;
           ++window) {
        if (m % window)
          continue;
        ScheduleShape twoBW{ScheduleKind::TwoBW, devices, 1, m, window};
        auto twoOrders = buildSchedule(twoBW);
        for (int64_t d = 0; d < devices; ++d)
          checkVersions(twoBW, d, twoOrders[d]);
      }
    }
}

TEST(PipelineSchedule, WeightVersions) {
  // pipedream on 4 devices: device d's micro-batch m reads the weights after
  // m - (3 - d) updates; device 0 keeps 3 older versions, device 3 none.
  ScheduleShape pipedream{ScheduleKind::PipeDream, 4, 1, 8};
  EXPECT_EQ(weightVersion(pipedream, 0, 0), -3);
  EXPECT_EQ(weightVersion(pipedream, 0, 5), 2);
  EXPECT_EQ(weightVersion(pipedream, 3, 5), 5);
  EXPECT_EQ(keptVersions(pipedream, 0), 3);
  EXPECT_EQ(keptVersions(pipedream, 3), 0);
  EXPECT_EQ(updateWindow(pipedream), 1);
  // 2bw with windows of 4: every micro-batch of window t reads t - 1.
  ScheduleShape twoBW{ScheduleKind::TwoBW, 4, 1, 8, 4};
  EXPECT_EQ(weightVersion(twoBW, 0, 3), -1);
  EXPECT_EQ(weightVersion(twoBW, 3, 4), 0);
  EXPECT_EQ(keptVersions(twoBW, 2), 1);
  EXPECT_EQ(updateWindow(twoBW), 4);
  EXPECT_EQ(updateWindow({ScheduleKind::TwoBW, 4, 1, 8}), 8);
  // The flushed schedules read the step's weights.
  EXPECT_EQ(weightVersion({ScheduleKind::OneFOneB, 4, 1, 8}, 0, 7), 0);
  EXPECT_EQ(keptVersions({ScheduleKind::OneFOneB, 4, 1, 8}, 0), 0);
}

TEST(PipelineSchedule, ShapesThatCannotBeScheduled) {
  EXPECT_NE(checkShape({ScheduleKind::Interleaved, 4, 2, 6}), "");
  EXPECT_NE(checkShape({ScheduleKind::OneFOneB, 4, 2, 8}), "");
  EXPECT_NE(checkShape({ScheduleKind::GPipe, 0, 1, 8}), "");
  EXPECT_NE(checkShape({ScheduleKind::GPipe, 2, 1, 0}), "");
  // 2bw: the window divides the micro-batches and spans the pipeline.
  EXPECT_NE(checkShape({ScheduleKind::TwoBW, 4, 1, 8, 3}), "");
  EXPECT_NE(checkShape({ScheduleKind::TwoBW, 4, 1, 8, 2}), "");
  EXPECT_EQ(checkShape({ScheduleKind::TwoBW, 4, 1, 8, 4}), "");
  EXPECT_EQ(checkShape({ScheduleKind::TwoBW, 3, 1, 4, 2}), "");
}

/// carryOver: three steps of every device's order in a row (micro-batch m
/// of step s numbered s * M + m; a carried pass of step s belongs to step
/// s - 1; the first step skips them, as a run's first step does) run
/// without deadlock; each device alternates one forward and one backward
/// pass, with at most devices - d micro-batches in flight; and every pass
/// reads a weight version the device keeps, the forward passes of pipedream
/// exactly the updates applied before them (counting from the step's start,
/// which is carriedUpdates short).
void checkCarryOver(const ScheduleShape &shape) {
  SCOPED_TRACE(std::string(getScheduleName(shape.kind)) + " devices " +
               std::to_string(shape.devices) + " micro-batches " +
               std::to_string(shape.microBatches) + " window " +
               std::to_string(shape.window));
  ASSERT_EQ(checkShape(shape), "");
  std::vector<std::vector<Action>> orders = buildSchedule(shape);
  int64_t m = shape.microBatches;
  std::vector<std::vector<Action>> steps(orders.size());
  for (int64_t d = 0; d < shape.devices; ++d) {
    const std::vector<Action> &order = orders[d];
    int64_t w = carriedMicroBatches(shape, d);
    EXPECT_EQ(w, shape.devices - d - 1);
    EXPECT_LE(maxInFlight(order), shape.devices - d) << "device " << d;
    int64_t applied = -carriedUpdates(shape, d), passes = 0;
    for (const Action &a : order) {
      if (a.kind == Action::U) {
        ++applied;
        continue;
      }
      // F, B, F, B, ...: the k-th forward is micro-batch k, the k-th
      // backward micro-batch k - w.
      EXPECT_EQ(a.kind, passes % 2 == 0 ? Action::F : Action::B);
      EXPECT_EQ(a.microBatch, passes / 2 - (a.kind == Action::B ? w : 0));
      ++passes;
      int64_t version = weightVersion(shape, d, a.microBatch);
      EXPECT_GE(version, applied - keptVersions(shape, d))
          << "device " << d << " micro-batch " << a.microBatch;
      if (a.kind == Action::F && shape.kind == ScheduleKind::PipeDream)
        EXPECT_EQ(version, applied) << "device " << d;
      if (a.kind == Action::F)
        EXPECT_LE(version, applied) << "device " << d;
    }
    EXPECT_EQ(passes, 2 * m);
    // The step applies updatesPerStep updates in all.
    EXPECT_EQ(applied + carriedUpdates(shape, d), updatesPerStep(shape));
    for (int64_t s = 0; s < 3; ++s)
      for (Action a : order) {
        if (s == 0 && a.microBatch < 0)
          continue;
        a.microBatch += s * m;
        steps[d].push_back(a);
      }
  }
  EXPECT_TRUE(runsWithoutDeadlock(steps, shape.devices));
}

TEST(PipelineSchedule, CarryOverRunsAcrossSteps) {
  for (int64_t devices = 1; devices <= 6; ++devices)
    for (int64_t m = devices; m <= 12; ++m) {
      checkCarryOver({ScheduleKind::PipeDream, devices, 1, m, 0, true});
      for (int64_t window = std::max<int64_t>(devices - 1, 1); window <= m;
           ++window)
        if (m % window == 0)
          checkCarryOver({ScheduleKind::TwoBW, devices, 1, m, window, true});
    }
  // Device 0 of 4 carries 3 micro-batches and their 3 updates (pipedream),
  // or the one update of the window they close (2bw).
  EXPECT_EQ(carriedUpdates({ScheduleKind::PipeDream, 4, 1, 8, 0, true}, 0), 3);
  EXPECT_EQ(carriedUpdates({ScheduleKind::TwoBW, 4, 1, 8, 4, true}, 0), 1);
  EXPECT_EQ(carriedUpdates({ScheduleKind::PipeDream, 4, 1, 8, 0, false}, 0), 0);
  // A carried micro-batch reads its version counted from this step: 2bw's
  // last window of the previous step read version -2.
  EXPECT_EQ(weightVersion({ScheduleKind::TwoBW, 4, 1, 8, 4, true}, 0, -1), -2);
  EXPECT_EQ(weightVersion({ScheduleKind::TwoBW, 4, 1, 8, 4, true}, 0, -4), -2);
  EXPECT_EQ(weightVersion({ScheduleKind::PipeDream, 4, 1, 8, 0, true}, 0, -3),
            -6);
}

TEST(PipelineSchedule, CarryOverNeedsAnAsynchronousScheduleAndEnoughMicro) {
  EXPECT_NE(checkShape({ScheduleKind::OneFOneB, 4, 1, 8, 0, true}), "");
  EXPECT_NE(checkShape({ScheduleKind::PipeDream, 4, 1, 3, 0, true}), "");
  EXPECT_EQ(checkShape({ScheduleKind::PipeDream, 4, 1, 4, 0, true}), "");
}

} // namespace
