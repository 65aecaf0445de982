//===- Lagging.h - Lagging gradients, bounded staleness ---------*- C++ -*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Seed 000's lagging gradients for a data-parallel plan whose
// all_reduce_start instructions carry `staleness` s > 0. Each rank runs a
// LaggingAggregator: a thread that owns every collective of the run and takes
// part in the aggregate of each step u on the rank's behalf, whether or not
// the rank's main thread (which computes gradient sets) has finished:
//
// - The main thread computes one gradient set at a time, on the newest
//   parameters it has (version v: it has applied the aggregates of steps
//   before v), hands it over (submit), and waits for the aggregate that took
//   it; then it applies every finished aggregate, in step order.
// - For aggregate u the thread joins with the set it holds (a set the main
//   thread submitted and no aggregate took yet), or, when it holds none,
//   waits for the deadline: half of the other ranks (at least one) have
//   joined with a set, plus a grace of `grace` times how long they took
//   (from the previous aggregate's end until the last of that half joined).
//   At the deadline it joins with no set. It never skips when the set the
//   main thread is computing would then be more than s steps old when
//   applied, nor at the run's last step: then it waits for that set
//   (synchronous fallback).
// - Joining is one all-reduce (sum) of [set, loss, one slot per rank holding
//   the version of the rank's set or 0]; every rank gets the same sums, so
//   the aggregate (set sum and loss sum divided by the number of sets, the
//   nonzero slots) and the list of (rank, version) it holds are identical
//   everywhere. Before it joins, a rank tells every other rank whether it
//   joins with a set (a 1-float message), which is how the others see the
//   deadline come.
//
// Every set is applied exactly once: a set is held by exactly one rank's
// thread, which gives it to the first aggregate it joins after the set was
// submitted and then drops it; every rank applies every aggregate once, in
// step order. See docs/plan-format.md, "Lagging gradients".
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_LAGGING_H
#define STRATA_RT_LAGGING_H

#include "strata-rt/Support.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

namespace strata::rt {

class Communicator;

struct LaggingOptions {
  /// The staleness bound s (>= 1): a set of version v is applied by an
  /// aggregate of step u with u - v <= s.
  int64_t staleness = 1;
  /// The steps of the run: aggregates firstStep..lastStep.
  int64_t firstStep = 1;
  int64_t lastStep = 1;
  /// Floats of one gradient set (every bucket, packed in bucket order).
  int64_t setFloats = 0;
  /// The deadline's grace, as a fraction of the time the first half of the
  /// other ranks took to join.
  double grace = 0.25;
  /// Where this rank logs what it computed, how it joined each aggregate and
  /// what each aggregate held (nullptr: no log).
  std::FILE *log = nullptr;
};

/// One finished aggregate.
struct LaggingAggregate {
  int64_t step = 0;
  /// The mean of the sets it holds.
  std::vector<float> gradients;
  /// The mean of their losses.
  float loss = 0;
  /// (rank, version) of each set it holds, in rank order.
  std::vector<std::pair<int, int64_t>> sets;
  /// Milliseconds from the previous aggregate's end (or the aggregator's
  /// start) to this one's, on this rank's clock.
  double milliseconds = 0;
};

class LaggingAggregator {
public:
  /// Starts the thread; `comm` (every rank of the run) must outlive it and
  /// no other thread may use it meanwhile.
  static Status create(Communicator &comm, const LaggingOptions &options,
                       std::unique_ptr<LaggingAggregator> &aggregator);
  /// Joins the thread (after the last aggregate or a failure).
  ~LaggingAggregator();

  /// Moves the finished aggregates the main thread has not taken yet into
  /// `ready` (in step order) and says which version the main thread computes
  /// next: one past the last finished aggregate (lastStep + 1 when the run is
  /// over). Fails when the thread failed.
  Status takeFinished(std::vector<LaggingAggregate> &ready, int64_t &version);
  /// Hands over the set of `version` (setFloats floats) and its loss, then
  /// blocks until the aggregate that took it has finished.
  Status submit(int64_t version, const float *set, float loss);

  struct Impl;

private:
  explicit LaggingAggregator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace strata::rt

#endif // STRATA_RT_LAGGING_H
