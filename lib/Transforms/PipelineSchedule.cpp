//===- PipelineSchedule.cpp - Micro-batch orders of pipeline schedules ---===//

#include "strata/Transforms/PipelineSchedule.h"

#include <algorithm>
#include <deque>
#include <limits>

using namespace mlir::strata::pipeline;

const char *mlir::strata::pipeline::getScheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZeroBubbleH1:
    return "zb-h1";
  case ScheduleKind::PipeDream:
    return "pipedream";
  case ScheduleKind::TwoBW:
    return "2bw";
  }
  return "?";
}

bool mlir::strata::pipeline::isAsynchronous(ScheduleKind kind) {
  return kind == ScheduleKind::PipeDream || kind == ScheduleKind::TwoBW;
}

std::string mlir::strata::pipeline::checkShape(const ScheduleShape &shape) {
  if (shape.devices < 1)
    return "needs at least one device, got " + std::to_string(shape.devices);
  if (shape.microBatches < 1)
    return "needs at least one micro-batch, got " +
           std::to_string(shape.microBatches);
  if (shape.virtualStages < 1)
    return "needs at least one chunk per device, got " +
           std::to_string(shape.virtualStages);
  if (shape.kind != ScheduleKind::Interleaved && shape.virtualStages != 1)
    return std::string("the ") + getScheduleName(shape.kind) +
           " schedule runs one chunk per device, got " +
           std::to_string(shape.virtualStages);
  if (shape.kind == ScheduleKind::Interleaved &&
      shape.microBatches % shape.devices != 0)
    return "the interleaved schedule needs the micro-batch count (" +
           std::to_string(shape.microBatches) +
           ") to be a multiple of the devices per pipeline (" +
           std::to_string(shape.devices) + ")";
  if (shape.carryOver && !isAsynchronous(shape.kind))
    return std::string("the ") + getScheduleName(shape.kind) +
           " schedule drains the pipeline at every step (only pipedream and "
           "2bw can carry micro-batches over to the next step)";
  // Device 0 carries devices - 1 backward passes into the next step, each
  // after a forward pass of the step: the step needs more micro-batches, so
  // that a carried micro-batch's values are read before the step's own
  // micro-batch of the same number overwrites them.
  if (shape.carryOver && shape.microBatches < shape.devices)
    return "a pipeline that does not drain between steps needs at least as "
           "many micro-batches (" +
           std::to_string(shape.microBatches) + ") as devices (" +
           std::to_string(shape.devices) + ")";
  if (shape.kind != ScheduleKind::TwoBW)
    return "";
  int64_t window = updateWindow(shape);
  if (window < 1 || shape.microBatches % window != 0)
    return "the 2bw schedule needs the micro-batch count (" +
           std::to_string(shape.microBatches) +
           ") to be a multiple of the window (" + std::to_string(window) + ")";
  // A window's first forward pass on device d runs after the backward pass
  // of micro-batch (first - (devices - d - 1) - 1): with a shorter window,
  // micro-batches of three windows would be in flight, and the two weight
  // versions would not hold them.
  if (window < shape.devices - 1)
    return "the 2bw schedule needs a window of at least devices - 1 (" +
           std::to_string(shape.devices - 1) + ") micro-batches, got " +
           std::to_string(window);
  return "";
}

int64_t mlir::strata::pipeline::updateWindow(const ScheduleShape &shape) {
  switch (shape.kind) {
  case ScheduleKind::PipeDream:
    return 1;
  case ScheduleKind::TwoBW:
    return shape.window > 0 ? shape.window : shape.microBatches;
  default:
    return shape.microBatches;
  }
}

int64_t mlir::strata::pipeline::updatesPerStep(const ScheduleShape &shape) {
  return shape.microBatches / updateWindow(shape);
}

int64_t mlir::strata::pipeline::weightVersion(const ScheduleShape &shape,
                                              int64_t device, int64_t micro) {
  switch (shape.kind) {
  case ScheduleKind::PipeDream:
    return micro - (shape.devices - device - 1);
  case ScheduleKind::TwoBW:
    // A carried micro-batch (negative) reads the version before its
    // window's, counted from this step.
    return floorDiv(micro, updateWindow(shape)) - 1;
  default:
    return 0;
  }
}

int64_t mlir::strata::pipeline::keptVersions(const ScheduleShape &shape,
                                             int64_t device) {
  switch (shape.kind) {
  case ScheduleKind::PipeDream:
    return shape.devices - device - 1;
  case ScheduleKind::TwoBW:
    return 1;
  default:
    return 0;
  }
}

int64_t mlir::strata::pipeline::carriedMicroBatches(const ScheduleShape &shape,
                                                    int64_t device) {
  if (!shape.carryOver)
    return 0;
  return std::min(shape.devices - device - 1, shape.microBatches);
}

int64_t mlir::strata::pipeline::carriedUpdates(const ScheduleShape &shape,
                                               int64_t device) {
  int64_t carried = carriedMicroBatches(shape, device);
  if (carried == 0)
    return 0;
  // The windows that the carried micro-batches M - carried .. M - 1 close.
  int64_t window = updateWindow(shape);
  return (carried + window - 1) / window;
}

/// Warm-up forwards, then one forward and one backward at a time, then the
/// remaining backwards; `forward(k)` / `backward(k)` give the k-th slot.
template <typename Fwd, typename Bwd>
static std::vector<Action> oneForwardOneBackward(int64_t slots, int64_t warmup,
                                                 Fwd forward, Bwd backward) {
  std::vector<Action> order;
  warmup = std::min(warmup, slots);
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(forward(k));
  for (int64_t k = 0; k < slots - warmup; ++k) {
    order.push_back(forward(warmup + k));
    order.push_back(backward(k));
  }
  for (int64_t k = slots - warmup; k < slots; ++k)
    order.push_back(backward(k));
  return order;
}

/// carryOver: moves each update of the previous step's window to just
/// before the first forward pass that reads the version it makes (the end
/// of the step if none does): an update delays the forward passes behind it
/// on the device, and with them the next device (2bw's update of a whole
/// step's window then runs at the step's end, as without carryOver;
/// pipedream's stays right after its backward pass).
static void delayCarriedUpdates(const ScheduleShape &shape, int64_t device,
                                std::vector<Action> &order) {
  std::vector<Action> delayed, result;
  int64_t applied = -carriedUpdates(shape, device);
  auto flush = [&](int64_t beforeVersion) {
    // Updates making versions up to `beforeVersion` go now.
    while (!delayed.empty() && applied + 1 <= beforeVersion) {
      result.push_back(delayed.front());
      delayed.erase(delayed.begin());
      ++applied;
    }
  };
  for (const Action &action : order) {
    if (action.kind == Action::U && action.microBatch < 0) {
      delayed.push_back(action);
      continue;
    }
    if (action.kind == Action::F)
      flush(weightVersion(shape, device, action.microBatch));
    // Updates stay in order: the step's own come after the carried ones.
    if (action.kind == Action::U) {
      flush(std::numeric_limits<int64_t>::max() - 1);
      ++applied;
    }
    result.push_back(action);
  }
  result.insert(result.end(), delayed.begin(), delayed.end());
  order = std::move(result);
}

std::vector<std::vector<Action>>
mlir::strata::pipeline::buildSchedule(const ScheduleShape &shape) {
  int64_t devices = shape.devices, chunksPer = shape.virtualStages,
          m = shape.microBatches;
  std::vector<std::vector<Action>> orders(devices);
  for (int64_t d = 0; d < devices; ++d) {
    std::vector<Action> &order = orders[d];
    switch (shape.kind) {
    case ScheduleKind::GPipe:
      for (int64_t i = 0; i < m; ++i)
        order.push_back({Action::F, d, i});
      for (int64_t i = 0; i < m; ++i)
        order.push_back({Action::B, d, i});
      break;
    case ScheduleKind::PipeDream:
    case ScheduleKind::TwoBW:
      if (shape.carryOver) {
        // The previous step's cool-down backward passes between this
        // step's warm-up forwards: one forward, one backward throughout.
        int64_t w = carriedMicroBatches(shape, d);
        for (int64_t k = 0; k < m; ++k) {
          order.push_back({Action::F, d, k});
          order.push_back({Action::B, d, k - w});
        }
        break;
      }
      [[fallthrough]];
    case ScheduleKind::OneFOneB:
    case ScheduleKind::ZeroBubbleH1:
      order = oneForwardOneBackward(
          m, devices - d - 1,
          [&](int64_t k) { return Action{Action::F, d, k}; },
          [&](int64_t k) { return Action{Action::B, d, k}; });
      break;
    case ScheduleKind::Interleaved: {
      // Megatron-LM's order: slot k of a device belongs to chunk group
      // (k mod (devices * chunks)) / devices and micro-batch
      // (k / (devices * chunks)) * devices + k mod devices; backward walks
      // the chunks in reverse.
      int64_t group = devices * chunksPer;
      auto microOf = [&](int64_t k) {
        return (k / group) * devices + k % devices;
      };
      order = oneForwardOneBackward(
          m * chunksPer, (devices - d - 1) * 2 + (chunksPer - 1) * devices,
          [&](int64_t k) {
            int64_t v = (k % group) / devices;
            return Action{Action::F, v * devices + d, microOf(k)};
          },
          [&](int64_t k) {
            int64_t v = chunksPer - 1 - (k % group) / devices;
            return Action{Action::B, v * devices + d, microOf(k)};
          });
      break;
    }
    }
    if (isAsynchronous(shape.kind)) {
      // An update after each backward pass that closes a window.
      int64_t window = updateWindow(shape);
      std::vector<Action> withUpdates;
      for (const Action &action : order) {
        withUpdates.push_back(action);
        if (action.kind == Action::B && (action.microBatch + 1) % window == 0)
          withUpdates.push_back({Action::U, action.chunk, action.microBatch});
      }
      order = std::move(withUpdates);
      if (shape.carryOver)
        delayCarriedUpdates(shape, d, order);
    }
    if (shape.kind != ScheduleKind::ZeroBubbleH1)
      continue;
    // Split every B into B then W; defer up to devices - d - 1 W passes.
    std::vector<Action> split;
    std::deque<Action> deferred;
    size_t limit = static_cast<size_t>(devices - d - 1);
    for (const Action &action : order) {
      split.push_back(action);
      if (action.kind != Action::B)
        continue;
      deferred.push_back({Action::W, action.chunk, action.microBatch});
      while (deferred.size() > limit) {
        split.push_back(deferred.front());
        deferred.pop_front();
      }
    }
    split.insert(split.end(), deferred.begin(), deferred.end());
    order = std::move(split);
  }
  return orders;
}

int64_t mlir::strata::pipeline::maxInFlight(const std::vector<Action> &order) {
  int64_t inFlight = 0, most = 0;
  for (const Action &action : order)
    if (action.kind == Action::B && action.microBatch < 0)
      ++inFlight;
  most = inFlight;
  for (const Action &action : order) {
    if (action.kind == Action::F)
      most = std::max(most, ++inFlight);
    else if (action.kind == Action::B)
      --inFlight;
  }
  return most;
}
