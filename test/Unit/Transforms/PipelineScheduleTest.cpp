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
/// after B(c, m). Returns whether every action ran.
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
    EXPECT_EQ(order.size(), perChunk * shape.virtualStages);
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
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                ScheduleKind::ZeroBubbleH1})
        checkSchedule({kind, devices, 1, m});
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

TEST(PipelineSchedule, ShapesThatCannotBeScheduled) {
  EXPECT_NE(checkShape({ScheduleKind::Interleaved, 4, 2, 6}), "");
  EXPECT_NE(checkShape({ScheduleKind::OneFOneB, 4, 2, 8}), "");
  EXPECT_NE(checkShape({ScheduleKind::GPipe, 0, 1, 8}), "");
  EXPECT_NE(checkShape({ScheduleKind::GPipe, 2, 1, 0}), "");
}

} // namespace
