//===- Lagging.cpp - Lagging gradients with a staleness bound -------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// The aggregator thread of Lagging.h. Per aggregate u it posts one receive
// per other rank (any source, tag kNoticeTag + u % 2: a rank's notices of
// u + 1 can only be sent once aggregate u finished, which needed this rank's
// receives of u, so two tags keep the steps apart), decides how it joins,
// sends its notice to every other rank and joins the all-reduce. The
// communicator completes requests in the order they were issued, and
// receives from any source match messages in arrival order, so the k-th
// receive finishing means k other ranks have joined.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Lagging.h"

#include "strata-rt/Comm.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace strata::rt {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kNoticeTag = 30000;

double millisecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

} // namespace

struct LaggingAggregator::Impl {
  Impl(Communicator &comm, const LaggingOptions &options)
      : comm(comm), options(options), rank(comm.rank()), size(comm.size()),
        lastFinished(options.firstStep - 1), computing(options.firstStep) {}

  Communicator &comm;
  LaggingOptions options;
  int rank, size;

  std::mutex mutex;
  std::condition_variable cv;
  // Shared with the main thread (under `mutex`).
  /// The set submitted and not yet taken by an aggregate.
  bool holding = false;
  int64_t heldVersion = 0;
  std::vector<float> held;
  float heldLoss = 0;
  /// The aggregate that took the last submitted set (0: none yet).
  int64_t takenBy = 0;
  std::deque<LaggingAggregate> finished;
  int64_t lastFinished;
  /// The lowest version the main thread may be computing now.
  int64_t computing;
  Status failure;
  bool failed = false;
  bool stopping = false;

  std::thread thread;

  void logLine(const std::string &line) {
    if (!options.log)
      return;
    std::fputs(line.c_str(), options.log);
    std::fputc('\n', options.log);
    std::fflush(options.log);
  }

  void run();
  /// Runs aggregate `step`; `previousEnd` is when the one before finished.
  Status aggregate(int64_t step, Clock::time_point &previousEnd);
};

void LaggingAggregator::Impl::run() {
  Clock::time_point previousEnd = Clock::now();
  for (int64_t step = options.firstStep; step <= options.lastStep; ++step) {
    Status status = aggregate(step, previousEnd);
    if (status.ok())
      continue;
    std::lock_guard<std::mutex> lock(mutex);
    failed = true;
    failure = status;
    cv.notify_all();
    return;
  }
}

Status LaggingAggregator::Impl::aggregate(int64_t step,
                                          Clock::time_point &previousEnd) {
  int tag = kNoticeTag + static_cast<int>(step % 2);
  int others = size - 1;
  std::vector<float> notices(static_cast<size_t>(others));
  std::vector<std::unique_ptr<Request>> receives;
  for (int i = 0; i < others; ++i)
    receives.push_back(comm.startRecv(&notices[i], 1, kAnySource, tag));

  // Half of the other ranks (at least one) joining with a set starts the
  // deadline's grace.
  int quorum = std::max(1, size / 2);
  int64_t n = options.setFloats;
  std::vector<float> buffer(static_cast<size_t>(n + 1 + size), 0.0f);
  float notice = 0;
  std::string how;
  {
    std::unique_lock<std::mutex> lock(mutex);
    size_t seen = 0;
    int withSets = 0;
    bool deadlineSet = false;
    Clock::time_point quorumAt, deadline;
    for (;;) {
      if (stopping)
        return Status::failure("lagging aggregator stopped");
      if (holding)
        break;
      // Deferring the set being computed past this step would make it more
      // than s steps old when applied; the last step takes every set.
      bool mustWait =
          step == options.lastStep || computing + options.staleness <= step;
      if (mustWait) {
        // submit (or takeFinished, which may end the need) notifies.
        cv.wait(lock);
        continue;
      }
      {
        while (seen < receives.size() && receives[seen]->test()) {
          if (Status s = receives[seen]->wait(); !s.ok())
            return s;
          withSets += notices[seen] > 0;
          ++seen;
        }
        Clock::time_point now = Clock::now();
        if (!deadlineSet && withSets >= quorum) {
          deadlineSet = true;
          quorumAt = now;
          deadline = now + std::chrono::duration_cast<Clock::duration>(
                               (now - previousEnd) * options.grace);
        }
        if (deadlineSet && now >= deadline) {
          how = "without a set (deadline: " + std::to_string(withSets) +
                " other rank(s) joined with sets after " +
                std::to_string(millisecondsBetween(previousEnd, quorumAt)) +
                " ms, grace " +
                std::to_string(millisecondsBetween(quorumAt, deadline)) +
                " ms; computing version " + std::to_string(computing) + ")";
          break;
        }
      }
      // Requests cannot notify: poll the notices, at 2% of the time the
      // step has taken so far (50 us to 2 ms), or sooner when submit
      // notifies.
      auto poll = std::clamp<Clock::duration>((Clock::now() - previousEnd) / 50,
                                              std::chrono::microseconds(50),
                                              std::chrono::milliseconds(2));
      if (deadlineSet)
        poll = std::min<Clock::duration>(
            poll, std::max<Clock::duration>(deadline - Clock::now(),
                                            Clock::duration::zero()));
      cv.wait_for(lock, poll);
    }
    if (holding) {
      std::copy(held.begin(), held.end(), buffer.begin());
      buffer[n] = heldLoss;
      buffer[n + 1 + rank] = static_cast<float>(heldVersion);
      notice = 1;
      how = "with version " + std::to_string(heldVersion) + " (staleness " +
            std::to_string(step - heldVersion) + ")";
      holding = false;
      takenBy = step;
      // The main thread computes its next set once this step finished.
      computing = step + 1;
    }
    logLine("join step " + std::to_string(step) + " rank " +
            std::to_string(rank) + " " + how);
  }

  std::vector<std::unique_ptr<Request>> sends;
  for (int peer = 0; peer < size; ++peer)
    if (peer != rank)
      sends.push_back(comm.startSend(&notice, 1, peer, tag));
  std::unique_ptr<Request> sum =
      comm.startAllReduce(buffer.data(), n + 1 + size, ReduceOp::Sum);
  Status status = sum->wait();
  for (auto &request : receives)
    if (Status s = request->wait(); status.ok() && !s.ok())
      status = s;
  for (auto &request : sends)
    if (Status s = request->wait(); status.ok() && !s.ok())
      status = s;
  if (!status.ok())
    return status;

  LaggingAggregate result;
  result.step = step;
  for (int r = 0; r < size; ++r)
    if (buffer[n + 1 + r] > 0)
      result.sets.push_back({r, static_cast<int64_t>(buffer[n + 1 + r])});
  if (result.sets.empty())
    return Status::failure("lagging aggregate of step " + std::to_string(step) +
                           " holds no gradient set");
  float scale = 1.0f / static_cast<float>(result.sets.size());
  result.gradients.assign(buffer.begin(), buffer.begin() + n);
  for (float &g : result.gradients)
    g *= scale;
  result.loss = buffer[n] * scale;
  Clock::time_point end = Clock::now();
  result.milliseconds = millisecondsBetween(previousEnd, end);
  previousEnd = end;

  std::string line = "aggregate step " + std::to_string(step) + " count " +
                     std::to_string(result.sets.size()) + " sets";
  for (auto [r, version] : result.sets)
    line += " " + std::to_string(r) + ":" + std::to_string(version);
  std::lock_guard<std::mutex> lock(mutex);
  logLine(line);
  finished.push_back(std::move(result));
  lastFinished = step;
  cv.notify_all();
  return Status::success();
}

LaggingAggregator::LaggingAggregator(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

LaggingAggregator::~LaggingAggregator() {
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->stopping = true;
  }
  impl->cv.notify_all();
  if (impl->thread.joinable())
    impl->thread.join();
}

Status LaggingAggregator::create(Communicator &comm,
                                 const LaggingOptions &options,
                                 std::unique_ptr<LaggingAggregator> &result) {
  if (options.staleness < 1)
    return Status::usage("lagging gradients need staleness >= 1");
  if (options.firstStep < 1 || options.lastStep < options.firstStep)
    return Status::usage("lagging gradients need at least one step");
  // Versions travel as floats: exact up to 2^24.
  if (options.lastStep >= (int64_t(1) << 24))
    return Status::usage("lagging gradients support at most 16777215 steps");
  if (!(options.grace >= 0))
    return Status::usage("the lagging deadline's grace must be >= 0");
  auto impl = std::make_unique<Impl>(comm, options);
  Impl *raw = impl.get();
  result.reset(new LaggingAggregator(std::move(impl)));
  raw->thread = std::thread([raw] { raw->run(); });
  return Status::success();
}

Status LaggingAggregator::takeFinished(std::vector<LaggingAggregate> &ready,
                                       int64_t &version) {
  std::lock_guard<std::mutex> lock(impl->mutex);
  if (impl->failed)
    return impl->failure;
  for (LaggingAggregate &aggregate : impl->finished)
    ready.push_back(std::move(aggregate));
  impl->finished.clear();
  version = impl->lastFinished + 1;
  impl->computing = version;
  impl->cv.notify_all();
  return Status::success();
}

Status LaggingAggregator::submit(int64_t version, const float *set,
                                 float loss) {
  std::unique_lock<std::mutex> lock(impl->mutex);
  if (impl->failed)
    return impl->failure;
  impl->held.assign(set, set + impl->options.setFloats);
  impl->heldLoss = loss;
  impl->heldVersion = version;
  impl->holding = true;
  impl->takenBy = 0;
  impl->logLine("computed rank " + std::to_string(impl->rank) + " version " +
                std::to_string(version));
  impl->cv.notify_all();
  impl->cv.wait(lock, [&] {
    return impl->failed ||
           (impl->takenBy != 0 && impl->lastFinished >= impl->takenBy);
  });
  if (impl->failed)
    return impl->failure;
  return Status::success();
}

} // namespace strata::rt
