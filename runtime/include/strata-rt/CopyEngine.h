//===- CopyEngine.h - Asynchronous host copies of swapped buffers -*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Activation swapping (`swap_out`, `swap_in`, docs/plan-format.md) on the
// CPU: a CopyEngine is one dedicated copy thread with a FIFO of jobs, each
// job belonging to a slot; `start` queues a job and returns at once, `wait`
// blocks until that slot's job is done, so the copy runs while the program's
// kernels compute. A SwapPool holds the host copy of each slot (one
// allocation per slot, sized from the slot's swap_out input). An executor
// has both only when its program swaps.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_COPYENGINE_H
#define STRATA_RT_COPYENGINE_H

#include "strata-rt/Plan.h"
#include "strata-rt/Support.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::rt {

/// A finished copy job, for traces: when the copy thread ran it (steady
/// clock, ns; steadyNowNs).
struct CopySpan {
  int64_t slot = 0;
  int64_t bytes = 0;
  /// What the job was ("swap_out", "swap_in").
  std::string name;
  int64_t startNs = 0;
  int64_t endNs = 0;
};

/// One copy thread running jobs in the order they were started. At most one
/// job per slot is outstanding (started and not yet waited for). Errors are
/// Status values (a job that fails or throws), never aborts.
class CopyEngine {
public:
  using Job = std::function<Status()>;

  /// Starts the copy thread; throws std::system_error when it cannot.
  CopyEngine();
  /// Runs every job still queued, then joins the copy thread.
  ~CopyEngine();
  CopyEngine(const CopyEngine &) = delete;
  CopyEngine &operator=(const CopyEngine &) = delete;

  /// Queues `job` for `slot` (its span reports `name` and `bytes`) and
  /// returns at once. Fails, queuing nothing, when a job of `slot` is still
  /// outstanding.
  Status start(int64_t slot, std::string name, int64_t bytes, Job job);
  /// Queues a memcpy of `bytes` bytes from `src` to `dst` for `slot`.
  Status startCopy(int64_t slot, std::string name, void *dst, const void *src,
                   size_t bytes);
  /// Blocks until the outstanding job of `slot` is done and returns its
  /// result; the slot is then free for the next job. Fails when no job of
  /// `slot` is outstanding.
  Status wait(int64_t slot);
  /// Blocks until every queued job is done and forgets the outstanding
  /// ones (the end of a step); returns the first failure among the jobs it
  /// forgot, or success.
  Status finishAll();
  /// Whether a job of `slot` is outstanding.
  bool outstanding(int64_t slot) const;
  /// The spans of the jobs completed since the last call.
  std::vector<CopySpan> takeSpans();

private:
  struct Queued {
    int64_t slot;
    std::string name;
    int64_t bytes;
    Job job;
  };
  struct SlotState {
    bool done = false;
    Status status;
  };
  void run();

  mutable std::mutex mutex_;
  std::condition_variable queued_, finished_;
  std::deque<Queued> queue_;
  /// Outstanding jobs by slot.
  std::map<int64_t, SlotState> slots_;
  /// Jobs queued or running.
  size_t inFlight_ = 0;
  std::vector<CopySpan> spans_;
  bool stopping_ = false;
  std::thread thread_;
};

/// The host copies of swapped buffers: one zeroed allocation per slot.
class SwapPool {
public:
  /// Allocates `bytes` for each slot (slot -> bytes); a failure names the
  /// slot and size.
  Status allocate(const std::map<int64_t, int64_t> &slotBytes);
  /// The host bytes of `slot` and their size, or nullptr when the pool has
  /// no such slot.
  void *slot(int64_t slot, int64_t &bytes) const;
  int64_t totalBytes() const { return total_; }
  size_t numSlots() const { return slots_.size(); }

private:
  struct Slot {
    std::unique_ptr<char[]> data;
    int64_t bytes = 0;
  };
  std::map<int64_t, Slot> slots_;
  int64_t total_ = 0;
};

/// The host swap slots of a program that passed the loader: slot -> bytes
/// of its swap_out's input (empty when the program does not swap).
std::map<int64_t, int64_t>
swapSlotBytes(const Plan &plan, const std::vector<Instruction> &program);

} // namespace strata::rt

#endif // STRATA_RT_COPYENGINE_H
