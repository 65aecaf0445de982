//===- Mpi.cpp - The MPI communicator engine -----------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Built with STRATA_HAVE_MPI, `createMpiCommunicator` initialises MPI once per
// process (MPI_Init_thread asking for MPI_THREAD_MULTIPLE) on a dedicated
// engine thread, which also calls MPI_Finalize at process exit when it was the
// one to initialise MPI.
//
// Progress: every `start...` builds an operation and posts it to a progress
// thread, which starts the nonblocking MPI call (MPI_Iallreduce, ...) at once
// and polls all in-flight operations with MPI_Test, yielding and then
// sleeping between polls; the caller's thread keeps computing.
// Operations are started in issue order; collectives complete in issue order
// (a collective's Request completes only after every earlier collective of
// that thread), sends and receives as soon as they are done. With
// MPI_THREAD_MULTIPLE each communicator has its own progress thread, and
// sends and receives start on the calling thread, which also tests them
// (CallerRequest; MPI progresses them in that thread's later MPI calls and
// the progress thread's: an idle progress thread probing every 200 us for
// them made a 1F1B step 24.5 -> 30 ms on 2 cores and was removed). The
// progress thread shares the cores with the ranks' compute threads and can
// take milliseconds to get to a new operation, and wakes its caller 40-150 us
// after a transfer ends: a 2-stage GPipe step of an 8-layer MLP ran 30.5 ms
// with every start on the progress thread, 26.6 ms with sends and receives
// started on the caller, 25.3 ms tested there too (bench/p2p-start.md;
// STRATA_MPI_SERIAL=1 runs everything on the progress thread); with less,
// every MPI call of the process goes through the engine thread (the one that
// called MPI_Init_thread), so FUNNELED and SERIALIZED are honoured.
//
// Timeouts: an operation that has not completed `timeoutSeconds` after it
// started fails with "rank R: no answer from the other ranks within T s (a
// rank may have died)". A timed-out receive is cancelled and the communicator
// stays usable; any other timed-out operation leaves an MPI request that can
// never be completed, so the communicator is marked broken (later operations
// fail at once with the same status) and the process calls MPI_Abort instead
// of MPI_Finalize at exit, which also takes the other ranks down promptly.
//
// Link emulation (see LinkEmulation in Comm.h for the byte model): once the
// real transfer completed, the operation completes no sooner than latency +
// bytes / bandwidth after its `start...` call, or after the previous
// operation of the communicator released the emulated link (operations in
// flight together share it one after another; collectives take it in issue
// order once their real transfers completed, stamped sends when they start,
// other sends and receives when their transfer completed). On one machine a
// collective counts from the last rank's call (an MPI_MAX all-reduce of the
// calls' times beside it): counted from each rank's own call, a rank that
// arrived first also left first, and the ranks stayed apart for good (150 us on
// average per all-reduce of a data-parallel step at 1 GB/s). A send's emulated
// arrival is the sender's: where all ranks share one monotonic clock (one
// machine), each send carries that time point in a small stamp message (tag +
// 32768; every rank of the communicator stamps or none does, agreed at
// creation) and the receive completes no sooner than it, so a receive posted
// after the message came through the emulated link does not pay for the link a
// second time. (Carrying the stamp in the message itself, as an MPI struct
// type over the data and the stamp, made Open MPI pack the message instead
// of its single-copy path: a 32 KiB activation took 270 instead of 30 us.)
// Stamps pair with messages in order per peer and tag: a receive cancelled
// after its message matched, or a receive from any rank overtaken by one
// from its sender with the same tag, would shift them (emulation only; the
// runtime's pipelines do neither).
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Comm.h"

#ifndef STRATA_HAVE_MPI

namespace strata::rt {

bool haveMpi() { return false; }

Status createMpiCommunicator(const LinkEmulation &, double,
                             std::unique_ptr<Communicator> &comm) {
  comm.reset();
  return Status::failure(
      "this runtime was built without MPI: the 'mpi' communicator engine is "
      "not available (rebuild with an MPI installation that CMake's "
      "find_package(MPI COMPONENTS CXX) finds)");
}

} // namespace strata::rt

#else // STRATA_HAVE_MPI

#include "LinkOrder.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace strata::rt {

bool haveMpi() { return true; }

namespace {

using Clock = std::chrono::steady_clock;

/// `at` in nanoseconds of Clock (steadyNowNs's clock).
int64_t toNs(Clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             at.time_since_epoch())
      .count();
}

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

/// Set once MPI_Finalize (or MPI_Abort) was called: no MPI call after it.
std::atomic<bool> gFinalized{false};
/// Set when an operation timed out and left an MPI request behind: the
/// process aborts MPI at exit instead of finalizing it (which could hang).
std::atomic<bool> gNeedAbort{false};

/// The completion shared by a Request and the progress thread.
struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Status status;
  /// When complete() ran (steady_clock nanoseconds).
  int64_t doneNs = 0;

  void complete(Status result) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      status = std::move(result);
      done = true;
      doneNs = steadyNowNs();
    }
    cv.notify_all();
  }
};

/// How long a thread waiting for a transfer spins before it sleeps.
constexpr std::chrono::milliseconds kSpinBeforeSleep(5);

class AsyncRequest final : public Request {
public:
  explicit AsyncRequest(std::shared_ptr<Completion> completion)
      : completion_(std::move(completion)) {}
  /// The transfer uses the caller's buffers: it must end before they may go.
  ~AsyncRequest() override { wait(); }
  Status wait() override {
    // Spin first (yielding the core): a thread woken from a condition
    // variable runs 50-100 us late on a busy machine.
    Clock::time_point begin = Clock::now();
    while (!test() && Clock::now() - begin < kSpinBeforeSleep)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(completion_->mutex);
    completion_->cv.wait(lock, [&] { return completion_->done; });
    return completion_->status;
  }
  bool test() override {
    std::lock_guard<std::mutex> lock(completion_->mutex);
    return completion_->done;
  }
  int64_t completedNs() const override {
    std::lock_guard<std::mutex> lock(completion_->mutex);
    return completion_->doneNs;
  }

private:
  std::shared_ptr<Completion> completion_;
};

class DoneRequest final : public Request {
public:
  explicit DoneRequest(Status status) : status_(std::move(status)) {}
  Status wait() override { return status_; }
  bool test() override { return true; }

private:
  Status status_;
};

/// A communicator's state; after creation only its progress thread changes
/// `comm`. `broken` is set once (markBroken: by the progress thread or by a
/// thread testing its own send), `brokenStatus` written before it and read
/// after it is seen set.
struct CommState {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  LinkEmulation link;
  double timeoutSeconds = 60;
  std::atomic<bool> broken{false};
  Status brokenStatus;
  /// When the emulated link is free again (under linkMutex: the progress
  /// thread's collectives and the callers' sends take it).
  Clock::time_point linkFreeAt;
  std::mutex linkMutex;
  /// Sends stamp their emulated arrival time (steady_clock) for the
  /// receiver: every rank emulates the link and runs on this machine, and
  /// the tag space has room for the stamps' tags.
  bool stampSends = false;
  /// Set once by the first operation that breaks the communicator, which
  /// then writes brokenStatus and sets `broken` (several threads poll).
  std::atomic<bool> breaking{false};
};

/// The calling thread's timer slack for its sleeps (0: the default, 50 us);
/// a no-op where Linux's prctl is not available.
void setTimerSlackNs(unsigned long ns) {
#ifdef __linux__
  prctl(PR_SET_TIMERSLACK, ns, 0UL, 0UL, 0UL);
#else
  (void)ns;
#endif
}
constexpr unsigned long kFineTimerSlackNs = 1000;

/// How long before an emulated transfer's end its waiting thread stops
/// sleeping and spins. It sleeps with a 1 us timer slack (set around that
/// sleep only, in loop()): on the 2-core EPYC a 100 us sleep then wakes
/// 18-34 us late (p50-p99) beside two busy threads, 69-93 us with the
/// default slack. The spin used to be 300 us, and a 32 KiB activation's
/// whole emulated transfer was spin, which slowed the ranks' kernels by
/// 5-22% (docs/strata-sim.md, run 16).
constexpr std::chrono::microseconds kEmulationSpin(50);

/// Marks `s` broken with `status` unless an earlier failure did.
void markBroken(CommState &s, const Status &status) {
  if (s.breaking.exchange(true))
    return;
  s.brokenStatus = status;
  s.broken.store(true, std::memory_order_release);
}

/// Sends and receives of stamps use the message's tag plus this.
constexpr int kStampTagOffset = 32768;

/// When a transfer of `op`'s size issued at `issued` leaves the emulated
/// link (latency + bytes / bandwidth after `issued` or after the previous
/// transfer released the link, whichever is later).
Clock::time_point takeLink(CommState &s, double bytes,
                           Clock::time_point issued) {
  if (!s.link.enabled() || s.size <= 1)
    return issued;
  double seconds =
      s.link.latencyUs * 1e-6 + bytes / (s.link.bandwidthGBps * 1e9);
  std::lock_guard<std::mutex> lock(s.linkMutex);
  s.linkFreeAt = std::max(issued, s.linkFreeAt) +
                 std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(seconds));
  return s.linkFreeAt;
}

/// One MPI operation, owned by a progress thread once posted.
struct Op {
  std::string name;
  std::shared_ptr<CommState> state;
  /// Starts the nonblocking MPI call; returns its MPI error code.
  std::function<int(MPI_Request *)> start;
  /// Runs on the progress thread once the transfer completed (Mean).
  std::function<void()> finish;
  /// Bytes this rank moves, for the link emulation.
  double bytes = 0;
  /// A receive: a timed-out one is cancelled instead of breaking the comm.
  bool cancellable = false;
  /// A send or receive: completes as soon as it is done, not in issue order.
  bool pointToPoint = false;
  /// A stamped send or receive (CommState::stampSends): the emulated
  /// arrival, in steady_clock nanoseconds, sent beside the message.
  bool stamped = false;
  bool sendsStamp = false;
  /// A receive from any rank: its stamp is received from the sender once
  /// the message came.
  bool stampFromSender = false;
  int stampPeer = 0;
  int stampTag = 0;
  /// A stamped collective: the ranks' latest start (an MPI_MAX all-reduce
  /// of their `issued` beside the collective), when its emulated transfer
  /// begins (a real one cannot begin before every rank joined).
  bool stampCollective = false;
  int64_t stampNs = 0;
  std::shared_ptr<Completion> completion;

  /// When `start...` was called: the emulated link starts then.
  Clock::time_point issued = Clock::now();

  // Progress-thread bookkeeping.
  /// The stamp's request and the message's.
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  Clock::time_point started;
  Clock::time_point readyAt;
  bool transferred = false;
  /// readyAt is known. A collective takes the emulated link in issue order,
  /// once every earlier collective took it (ProgressThread::takeLinks):
  /// taken as their real transfers completed, in whatever order MPI
  /// finished them, a later bucket could take the link first, from its
  /// later start, and leave it idle before it.
  bool linkTaken = false;
  bool failed = false;
  Status status;
};

/// "rank R: OP: MPI's message for `rc`".
Status mpiFailure(const Op &op, int rc) {
  return Status::failure("rank " + std::to_string(op.state->rank) + ": " +
                         op.name + ": " + mpiError(rc));
}

/// Starts `op`'s nonblocking MPI calls (on its progress thread, or on the
/// caller's thread for sends and receives under MPI_THREAD_MULTIPLE, which
/// then tests them itself: CallerRequest).
void startOp(Op &op) {
  op.started = Clock::now();
  if (gFinalized) {
    op.failed = true;
    op.status = Status::failure(op.name + ": MPI was already finalized");
    return;
  }
  if (op.state->broken.load(std::memory_order_acquire)) {
    op.failed = true;
    op.status = op.state->brokenStatus;
    return;
  }
  // The stamp first: if the message cannot start, nothing of it is left in
  // flight but the stamp, which is cancelled.
  int rc = MPI_SUCCESS;
  if (op.stampCollective)
    rc = MPI_Iallreduce(MPI_IN_PLACE, &op.stampNs, 1, MPI_INT64_T, MPI_MAX,
                        op.state->comm, &op.requests[0]);
  else if (op.stamped)
    rc = op.sendsStamp
             ? MPI_Isend(&op.stampNs, 1, MPI_INT64_T, op.stampPeer, op.stampTag,
                         op.state->comm, &op.requests[0])
             : MPI_Irecv(&op.stampNs, 1, MPI_INT64_T, op.stampPeer, op.stampTag,
                         op.state->comm, &op.requests[0]);
  if (rc == MPI_SUCCESS)
    rc = op.start(&op.requests[1]);
  if (rc != MPI_SUCCESS && op.requests[0] != MPI_REQUEST_NULL) {
    // A stamp receive can be cancelled; a stamp already sent or a stamp
    // all-reduce cannot be taken back: the ranks' pairing is out of step.
    if (op.stamped && !op.sendsStamp) {
      MPI_Cancel(&op.requests[0]);
      MPI_Wait(&op.requests[0], MPI_STATUS_IGNORE);
    } else {
      markBroken(*op.state, mpiFailure(op, rc));
      gNeedAbort = true;
    }
  }
  if (rc != MPI_SUCCESS) {
    op.failed = true;
    op.status = mpiFailure(op, rc);
  }
}

/// Operations of one communicator share its emulated link: each holds it
/// for latency + bytes / bandwidth from its start call or from when the
/// previous one released it, whichever is later.
Clock::time_point emulatedEnd(const Op &op) {
  Clock::time_point stamp{
      Clock::duration(std::chrono::nanoseconds(op.stampNs))};
  // A stamped message arrives when its sender's link carried it.
  if (op.stamped)
    return std::max(op.issued, stamp);
  // A stamped collective takes the link from the last rank's start.
  if (op.stampCollective)
    return takeLink(*op.state, op.bytes, std::max(op.issued, stamp));
  return takeLink(*op.state, op.bytes, op.issued);
}

/// Tests one in-flight operation; returns whether its state changed.
bool poll(Op &op, Clock::time_point now) {
  if (op.transferred || op.failed)
    return false;
  int flag = 0;
  MPI_Status statuses[2];
  int rc = MPI_Testall(2, op.requests, &flag, statuses);
  if (rc == MPI_SUCCESS && flag && op.stampFromSender) {
    // A receive from any rank: the stamp follows from the sender found.
    op.stampFromSender = false;
    op.stamped = true;
    op.stampPeer = statuses[1].MPI_SOURCE;
    rc = MPI_Irecv(&op.stampNs, 1, MPI_INT64_T, op.stampPeer, op.stampTag,
                   op.state->comm, &op.requests[0]);
    if (rc == MPI_SUCCESS)
      return true; // Changed: test again at once (the stamp is likely in).
  }
  if (rc != MPI_SUCCESS) {
    op.failed = true;
    op.status = mpiFailure(op, rc);
    return true;
  }
  if (flag) {
    op.transferred = true;
    if (op.finish)
      op.finish();
    if (op.pointToPoint) {
      op.readyAt = emulatedEnd(op);
      op.linkTaken = true;
    }
    return true;
  }
  double waited = std::chrono::duration<double>(now - op.started).count();
  if (waited < op.state->timeoutSeconds)
    return false;
  op.failed = true;
  op.status =
      Status::failure("rank " + std::to_string(op.state->rank) +
                      ": no answer from the other ranks within " +
                      formatSeconds(op.state->timeoutSeconds) +
                      " s (a rank may have died) while waiting for " + op.name);
  if (op.cancellable) {
    for (MPI_Request &request : op.requests)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
  } else {
    markBroken(*op.state, op.status);
    gNeedAbort = true;
  }
  return true;
}

/// A send or receive started on the caller's thread (MPI_THREAD_MULTIPLE):
/// the caller tests it itself, so a message that already arrived completes
/// at once, not once the progress thread noticed it and woke the caller (40
/// us on a busy core). Waits spin (yielding the core) for 5 ms, then nap.
class CallerRequest final : public Request {
public:
  explicit CallerRequest(std::unique_ptr<Op> op) : op_(std::move(op)) {}
  /// The transfer uses the caller's buffers: it must end before they may go.
  ~CallerRequest() override { wait(); }
  Status wait() override {
    Clock::time_point begin = Clock::now();
    while (!test()) {
      if (Clock::now() - begin < kSpinBeforeSleep)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return op_->status;
  }
  bool test() override {
    Op &op = *op_;
    if (done_)
      return true;
    if (gFinalized && !op.transferred && !op.failed) {
      op.failed = true;
      op.status = Status::failure(op.name + ": MPI was already finalized");
    }
    Clock::time_point now = Clock::now();
    poll(op, now);
    done_ = op.failed || (op.transferred && now >= op.readyAt);
    if (done_)
      doneNs_ = steadyNowNs();
    return done_;
  }
  int64_t completedNs() const override { return doneNs_; }

private:
  std::unique_ptr<Op> op_;
  bool done_ = false;
  int64_t doneNs_ = 0;
};

/// A thread that runs MPI operations (posted, started at once, polled and
/// completed in order) and synchronous tasks (run once no operation is in
/// flight).
class ProgressThread {
public:
  ProgressThread() : thread_([this] { loop(); }) {}
  ~ProgressThread() { stop(); }

  void post(std::unique_ptr<Op> op) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(Item{std::move(op), nullptr});
    }
    cv_.notify_one();
  }

  /// Runs `task` on this thread after every operation posted before it
  /// completed; blocks until it ran.
  void runSync(std::function<void()> task) {
    if (std::this_thread::get_id() == thread_.get_id()) {
      task();
      return;
    }
    std::promise<void> ran;
    std::future<void> future = ran.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(Item{nullptr, [&] {
                              task();
                              ran.set_value();
                            }});
    }
    cv_.notify_one();
    future.wait();
  }

  /// Lets the in-flight operations finish, then joins.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable())
      thread_.join();
  }

private:
  struct Item {
    std::unique_ptr<Op> op;
    std::function<void()> task;
  };

  void loop() {
    std::deque<std::unique_ptr<Op>> inflight;
    Clock::time_point lastProgress = Clock::now();
    for (;;) {
      std::vector<Item> arrived;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (queue_.empty() && inflight.empty()) {
          if (stopping_)
            return;
          cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
          continue;
        }
        // Operations are taken at once; a task waits until nothing is in
        // flight (counting the operations taken with it).
        while (!queue_.empty()) {
          if (queue_.front().task && (!inflight.empty() || !arrived.empty()))
            break;
          arrived.push_back(std::move(queue_.front()));
          queue_.pop_front();
          if (arrived.back().task)
            break;
        }
      }
      for (Item &item : arrived) {
        if (item.task) {
          item.task();
          continue;
        }
        startOp(*item.op);
        inflight.push_back(std::move(item.op));
      }

      Clock::time_point now = Clock::now();
      bool progressed = !arrived.empty();
      for (auto &op : inflight)
        progressed |= poll(*op, now);
      now = Clock::now();
      // Collectives complete in issue order; a send or receive completes as
      // soon as it is done: a receive must not wait for an earlier send
      // whose peer is itself waiting for that receive's data (pipeline
      // stages exchange activations and gradients in both directions).
      takeLinks(inflight);
      bool collectivePending = false;
      for (auto it = inflight.begin(); it != inflight.end();) {
        Op &op = **it;
        bool done =
            op.failed || (op.transferred && op.linkTaken && now >= op.readyAt);
        if (!done || (!op.pointToPoint && collectivePending)) {
          collectivePending |= !op.pointToPoint;
          ++it;
          continue;
        }
        op.completion->complete(op.failed ? op.status : Status::success());
        it = inflight.erase(it);
        progressed = true;
      }
      if (inflight.empty())
        continue;
      if (progressed)
        lastProgress = now;

      // Back off: yield briefly, then sleep in short naps (woken by new
      // operations); only emulation waits left: sleep until the first ends.
      bool transferring = false;
      for (auto &op : inflight)
        transferring |= !op->transferred && !op->failed;
      std::unique_lock<std::mutex> lock(mutex_);
      if (!queue_.empty())
        continue;
      if (!transferring) {
        // Failed operations wait for earlier collectives only (their
        // readyAt is unset).
        Clock::time_point first = Clock::time_point::max();
        for (auto &op : inflight)
          if (!op->failed)
            first = std::min(first, op->readyAt);
        // Sleep until shortly before, then spin (yielding the core): a
        // sleeping thread wakes late (kEmulationSpin), which an emulated
        // link would add to every transfer.
        if (first - now > kEmulationSpin) {
          // A fine timer slack for this sleep only: the progress thread's
          // other naps stay coarse, so an idle thread wakes no more often.
          setTimerSlackNs(kFineTimerSlackNs);
          cv_.wait_until(lock, first - kEmulationSpin,
                         [&] { return !queue_.empty(); });
          setTimerSlackNs(0);
        } else {
          lock.unlock();
          std::this_thread::yield();
        }
        continue;
      }
      auto idle = now - lastProgress;
      if (idle < std::chrono::microseconds(100)) {
        lock.unlock();
        std::this_thread::yield();
      } else {
        auto nap = idle < std::chrono::milliseconds(5)
                       ? std::chrono::microseconds(20)
                       : std::chrono::microseconds(200);
        cv_.wait_for(lock, nap, [&] { return !queue_.empty(); });
      }
    }
  }

  /// The emulated ends of the transferred collectives, in issue order:
  /// up to the first one still transferring (LinkOrder.h).
  static void takeLinks(std::deque<std::unique_ptr<Op>> &inflight) {
    detail::takeLinksInIssueOrder(inflight, [](Op &op) {
      op.readyAt = emulatedEnd(op);
      op.linkTaken = true;
    });
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread thread_; // Last: started once the members above exist.
};

/// The process-wide MPI state. Never destroyed (the atexit handler uses it).
struct Engine {
  ProgressThread thread; // Called MPI_Init_thread; serves all MPI calls
                         // unless MPI_THREAD_MULTIPLE was provided.
  Status initStatus;
  bool initializedByUs = false;
  int provided = MPI_THREAD_SINGLE;
  int worldRank = 0;
};

std::mutex gEngineMutex;
Engine *gEngine = nullptr;

void finalizeAtExit() {
  Engine *engine = gEngine;
  if (!engine || !engine->initializedByUs)
    return;
  engine->thread.runSync([] {
    if (gFinalized.exchange(true))
      return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    if (gNeedAbort) {
      std::fflush(stdout);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
  });
}

Engine *getEngine() {
  std::lock_guard<std::mutex> lock(gEngineMutex);
  if (gEngine)
    return gEngine;
  Engine *engine = new Engine;
  engine->thread.runSync([engine] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE,
                               &engine->provided);
      if (rc != MPI_SUCCESS) {
        engine->initStatus =
            Status::failure("MPI_Init_thread failed: " + mpiError(rc));
        return;
      }
      engine->initializedByUs = true;
    } else {
      MPI_Query_thread(&engine->provided);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &engine->worldRank);
  });
  if (engine->initializedByUs)
    std::atexit(finalizeAtExit);
  gEngine = engine;
  return engine;
}

std::unique_ptr<Request> done(Status status) {
  return std::make_unique<DoneRequest>(std::move(status));
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(std::shared_ptr<CommState> state, Engine &engine)
      : state_(std::move(state)) {
    if (engine.provided == MPI_THREAD_MULTIPLE) {
      own_ = std::make_unique<ProgressThread>();
      thread_ = own_.get();
      startPointToPointHere_ = std::getenv("STRATA_MPI_SERIAL") == nullptr;
    } else {
      thread_ = &engine.thread;
    }
  }

  ~MpiCommunicator() override {
    std::shared_ptr<CommState> state = state_;
    thread_->runSync([state] {
      if (!gFinalized && !state->broken && state->comm != MPI_COMM_NULL)
        MPI_Comm_free(&state->comm);
    });
    own_.reset();
  }

  int rank() const override { return state_->rank; }
  int size() const override { return state_->size; }
  const char *engine() const override { return "mpi"; }

  std::unique_ptr<Request> startAllReduce(float *data, int64_t count,
                                          ReduceOp op) override {
    if (Status s = checkCount("all-reduce", count, data); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("all-reduce of " + std::to_string(count) + " floats");
    o->bytes = 2.0 * (size() - 1) / size() * 4.0 * count;
    o->start = [state, data, n](MPI_Request *r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM,
                            state->comm, r);
    };
    if (op == ReduceOp::Mean)
      o->finish = meanOf(data, count);
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startAllReduceInto(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp op) override {
    if (input == output)
      return startAllReduce(output, count, op);
    if (Status s = checkCount("all-reduce", count, input); !s.ok())
      return done(s);
    if (Status s = checkCount("all-reduce", count, output); !s.ok())
      return done(s);
    if (overlaps(input, count, output, count))
      return done(Status::failure("mpi all-reduce: input and output overlap"));
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("all-reduce of " + std::to_string(count) + " floats");
    o->bytes = 2.0 * (size() - 1) / size() * 4.0 * count;
    o->start = [state, input, output, n](MPI_Request *r) {
      return MPI_Iallreduce(input, output, n, MPI_FLOAT, MPI_SUM, state->comm,
                            r);
    };
    if (op == ReduceOp::Mean)
      o->finish = meanOf(output, count);
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startBroadcast(float *data, int64_t count,
                                          int root) override {
    if (Status s = checkCount("broadcast", count, data); !s.ok())
      return done(s);
    if (Status s = checkRank("broadcast root", root); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("broadcast of " + std::to_string(count) +
                    " floats from rank " + std::to_string(root));
    o->bytes = 4.0 * count;
    o->start = [state, data, n, root](MPI_Request *r) {
      return MPI_Ibcast(data, n, MPI_FLOAT, root, state->comm, r);
    };
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startSend(const float *data, int64_t count, int peer,
                                     int tag) override {
    if (Status s = checkCount("send", count, data); !s.ok())
      return done(s);
    if (Status s = checkRank("send peer", peer); !s.ok())
      return done(s);
    if (Status s = checkTag(tag); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o =
        makeOp("send of " + std::to_string(count) + " floats to rank " +
               std::to_string(peer) + " (tag " + std::to_string(tag) + ")");
    o->bytes = 4.0 * count;
    o->pointToPoint = true;
    o->start = [state, data, n, peer, tag](MPI_Request *r) {
      return MPI_Isend(const_cast<float *>(data), n, MPI_FLOAT, peer, tag,
                       state->comm, r);
    };
    if (state->stampSends) {
      o->stamped = o->sendsStamp = true;
      o->stampPeer = peer;
      o->stampTag = tag + kStampTagOffset;
      o->stampNs = toNs(takeLink(*state, o->bytes, o->issued));
    }
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startRecv(float *data, int64_t count, int peer,
                                     int tag) override {
    if (Status s = checkCount("recv", count, data); !s.ok())
      return done(s);
    if (peer != kAnySource)
      if (Status s = checkRank("recv peer", peer); !s.ok())
        return done(s);
    if (Status s = checkTag(tag); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("recv of " + std::to_string(count) + " floats from " +
                    (peer == kAnySource ? std::string("any rank")
                                        : "rank " + std::to_string(peer)) +
                    " (tag " + std::to_string(tag) + ")");
    o->bytes = 4.0 * count;
    o->cancellable = true;
    o->pointToPoint = true;
    int source = peer == kAnySource ? MPI_ANY_SOURCE : peer;
    o->start = [state, data, n, source, tag](MPI_Request *r) {
      return MPI_Irecv(data, n, MPI_FLOAT, source, tag, state->comm, r);
    };
    if (state->stampSends) {
      o->stamped = peer != kAnySource;
      o->stampFromSender = peer == kAnySource;
      o->stampPeer = peer;
      o->stampTag = tag + kStampTagOffset;
    }
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startReduceScatter(const float *input, float *output,
                                              int64_t count,
                                              ReduceOp op) override {
    if (Status s = checkCount("reduce-scatter", count * size(), input); !s.ok())
      return done(s);
    if (Status s = checkCount("reduce-scatter", count, output); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("reduce-scatter of " + std::to_string(count) +
                    " floats per rank");
    o->bytes = 4.0 * count * (size() - 1);
    // Overlapping buffers: in place when output is the start of input (the
    // result lands there, as MPI_IN_PLACE defines), else from a copy.
    const float *send = input;
    bool inPlace = input == output;
    std::shared_ptr<std::vector<float>> copy;
    if (!inPlace && overlaps(input, count * size(), output, count)) {
      copy =
          std::make_shared<std::vector<float>>(input, input + count * size());
      send = copy->data();
    }
    o->start = [state, copy, send, output, n, inPlace](MPI_Request *r) {
      return MPI_Ireduce_scatter_block(inPlace ? MPI_IN_PLACE : send, output, n,
                                       MPI_FLOAT, MPI_SUM, state->comm, r);
    };
    if (op == ReduceOp::Mean)
      o->finish = meanOf(output, count);
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startReduce(float *data, int64_t count, ReduceOp op,
                                       int root) override {
    if (Status s = checkCount("reduce", count, data); !s.ok())
      return done(s);
    if (Status s = checkRank("reduce root", root); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("reduce of " + std::to_string(count) + " floats to rank " +
                    std::to_string(root));
    o->bytes = 4.0 * count;
    bool isRoot = rank() == root;
    o->start = [state, data, n, root, isRoot](MPI_Request *r) {
      return MPI_Ireduce(isRoot ? MPI_IN_PLACE : data, isRoot ? data : nullptr,
                         n, MPI_FLOAT, MPI_SUM, root, state->comm, r);
    };
    if (op == ReduceOp::Mean && isRoot)
      o->finish = meanOf(data, count);
    return submit(std::move(o));
  }

  std::unique_ptr<Request> startAllGather(const float *input, float *output,
                                          int64_t count) override {
    if (Status s = checkCount("all-gather", count * size(), output); !s.ok())
      return done(s);
    if (Status s = checkCount("all-gather", count, input); !s.ok())
      return done(s);
    int n = static_cast<int>(count);
    std::shared_ptr<CommState> state = state_;
    auto o =
        makeOp("all-gather of " + std::to_string(count) + " floats per rank");
    o->bytes = 4.0 * count * (size() - 1);
    const float *send = input;
    bool inPlace = input == output + count * rank();
    std::shared_ptr<std::vector<float>> copy;
    if (!inPlace && overlaps(input, count, output, count * size())) {
      copy = std::make_shared<std::vector<float>>(input, input + count);
      send = copy->data();
    }
    o->start = [state, copy, send, output, n, inPlace](MPI_Request *r) {
      return MPI_Iallgather(inPlace ? MPI_IN_PLACE : send, n, MPI_FLOAT, output,
                            n, MPI_FLOAT, state->comm, r);
    };
    return submit(std::move(o));
  }

  Status barrier() override {
    std::shared_ptr<CommState> state = state_;
    auto o = makeOp("barrier");
    o->start = [state](MPI_Request *r) { return MPI_Ibarrier(state->comm, r); };
    return submit(std::move(o))->wait();
  }
  Status createGroup(const std::vector<int> &ranks,
                     std::unique_ptr<Communicator> &group) override {
    group.reset();
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] < 0 || ranks[i] >= size() ||
          (i > 0 && ranks[i] <= ranks[i - 1]))
        return Status::failure("mpi group: ranks must be distinct, ascending "
                               "ranks of a " +
                               std::to_string(size()) + "-rank communicator");
    if (ranks.empty())
      return Status::failure("mpi group: needs at least one rank");
    // MPI_Comm_split blocks; a bounded barrier first makes sure every rank
    // is alive and has arrived, so it cannot hang on a dead peer.
    if (Status s = barrier(); !s.ok())
      return s;
    bool member = std::binary_search(ranks.begin(), ranks.end(), rank());
    auto sub = std::make_shared<CommState>();
    sub->timeoutSeconds = state_->timeoutSeconds;
    sub->link = state_->link;
    sub->stampSends = state_->stampSends;
    std::shared_ptr<CommState> state = state_;
    int rc = MPI_SUCCESS;
    thread_->runSync([&] {
      rc = MPI_Comm_split(state->comm, member ? 0 : MPI_UNDEFINED, rank(),
                          &sub->comm);
      if (rc == MPI_SUCCESS && sub->comm != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(sub->comm, MPI_ERRORS_RETURN);
        MPI_Comm_rank(sub->comm, &sub->rank);
        MPI_Comm_size(sub->comm, &sub->size);
      }
    });
    if (rc != MPI_SUCCESS)
      return Status::failure("mpi group: MPI_Comm_split failed: " +
                             mpiError(rc));
    if (member)
      group = std::make_unique<MpiCommunicator>(std::move(sub), *getEngine());
    return Status::success();
  }

private:
  std::unique_ptr<Op> makeOp(std::string name) {
    auto op = std::make_unique<Op>();
    op->name = std::move(name);
    op->state = state_;
    op->completion = std::make_shared<Completion>();
    return op;
  }

  std::unique_ptr<Request> submit(std::unique_ptr<Op> op) {
    if (state_->stampSends && !op->pointToPoint) {
      op->stampCollective = true;
      op->stampNs = toNs(op->issued);
    }
    if (startPointToPointHere_ && op->pointToPoint) {
      startOp(*op);
      return std::make_unique<CallerRequest>(std::move(op));
    }
    auto request = std::make_unique<AsyncRequest>(op->completion);
    thread_->post(std::move(op));
    return request;
  }

  std::function<void()> meanOf(float *data, int64_t count) const {
    float scale = 1.0f / static_cast<float>(size());
    return [data, count, scale] {
      for (int64_t i = 0; i < count; ++i)
        data[i] *= scale;
    };
  }

  static bool overlaps(const float *a, int64_t na, const float *b, int64_t nb) {
    return na > 0 && nb > 0 && a < b + nb && b < a + na;
  }

  Status checkCount(const char *what, int64_t count, const void *data) const {
    if (count < 0 || count > INT_MAX)
      return Status::failure(std::string("mpi ") + what + ": count " +
                             std::to_string(count) +
                             " is outside [0, INT_MAX]");
    if (count > 0 && !data)
      return Status::failure(std::string("mpi ") + what + ": null buffer");
    return Status::success();
  }

  Status checkRank(const char *what, int rank) const {
    if (rank < 0 || rank >= size())
      return Status::failure(std::string("mpi ") + what + " " +
                             std::to_string(rank) + " is not a rank of a " +
                             std::to_string(size()) + "-rank communicator");
    return Status::success();
  }

  static Status checkTag(int tag) {
    if (tag < 0 || tag > 32767)
      return Status::failure("mpi: tag " + std::to_string(tag) +
                             " is outside [0, 32767]");
    return Status::success();
  }

  std::shared_ptr<CommState> state_;
  std::unique_ptr<ProgressThread> own_;
  ProgressThread *thread_ = nullptr;
  /// Sends and receives start on the calling thread (MPI_THREAD_MULTIPLE,
  /// unless STRATA_MPI_SERIAL is set).
  bool startPointToPointHere_ = false;
};

} // namespace

/// Sets state->stampSends where every rank of state->comm emulates a link
/// and runs on this machine (one steady_clock) and the tag space holds the
/// stamps' tags. Every rank takes part (a collective), whatever its own
/// --emulate-link.
static Status checkSharedClock(Engine &engine,
                               const std::shared_ptr<CommState> &state,
                               bool emulates) {
  // The largest host-name hash, the largest complement (one host when they
  // are each other's complements) and whether any rank does not emulate.
  auto values = std::make_shared<std::array<uint64_t, 3>>();
  auto op = std::make_unique<Op>();
  op->name = "link emulation set-up (MPI_Iallreduce)";
  op->state = state;
  op->completion = std::make_shared<Completion>();
  op->start = [state, values, emulates](MPI_Request *r) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    uint64_t hash = std::hash<std::string>()(std::string(name, length));
    *values = {hash, ~hash, emulates ? 0u : 1u};
    return MPI_Iallreduce(MPI_IN_PLACE, values->data(), 3, MPI_UINT64_T,
                          MPI_MAX, state->comm, r);
  };
  op->finish = [state, values] {
    const std::array<uint64_t, 3> &v = *values;
    void *value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    bool roomy = found && *static_cast<int *>(value) >= kStampTagOffset + 32767;
    state->stampSends = roomy && v[0] == ~v[1] && v[2] == 0;
  };
  AsyncRequest request(op->completion);
  engine.thread.post(std::move(op));
  return request.wait();
}

Status createMpiCommunicator(const LinkEmulation &link, double timeoutSeconds,
                             std::unique_ptr<Communicator> &comm) {
  comm.reset();
  if (!(timeoutSeconds > 0))
    return Status::usage(
        "mpi communicator: the timeout must be positive, got " +
        formatSeconds(timeoutSeconds) + " s");
  if (link.bandwidthGBps < 0 || link.latencyUs < 0)
    return Status::usage("mpi communicator: negative link emulation");
  Engine *engine = getEngine();
  if (!engine->initStatus.ok())
    return engine->initStatus;
  if (gFinalized)
    return Status::failure("mpi communicator: MPI was already finalized");

  // Duplicate MPI_COMM_WORLD on the engine thread, bounded by the timeout.
  auto state = std::make_shared<CommState>();
  state->rank = engine->worldRank;
  state->timeoutSeconds = timeoutSeconds;
  auto op = std::make_unique<Op>();
  op->name = "communicator creation (MPI_Comm_idup)";
  op->state = state;
  op->completion = std::make_shared<Completion>();
  op->start = [state](MPI_Request *r) {
    return MPI_Comm_idup(MPI_COMM_WORLD, &state->comm, r);
  };
  op->finish = [state] {
    MPI_Comm_rank(state->comm, &state->rank);
    MPI_Comm_size(state->comm, &state->size);
  };
  AsyncRequest request(op->completion);
  engine->thread.post(std::move(op));
  if (Status s = request.wait(); !s.ok())
    return s;
  // The set-up runs unemulated (the link is set after it).
  if (state->size > 1)
    if (Status s = checkSharedClock(*engine, state, link.enabled()); !s.ok())
      return s;
  state->link = link;
  comm = std::make_unique<MpiCommunicator>(std::move(state), *engine);
  return Status::success();
}

} // namespace strata::rt

#endif // STRATA_HAVE_MPI
