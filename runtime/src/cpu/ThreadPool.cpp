//===- ThreadPool.cpp - Fixed-size worker pool ----------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Workers persist for the pool's lifetime. A parallelFor publishes a job by
// bumping a generation counter; workers spin briefly on it (kernels are
// launched back to back, thousands of times per step) and then sleep on a
// condition variable. Every worker acknowledges every generation, so the job
// description is never rewritten while a worker may still read it.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpuRelax() { _mm_pause(); }

/// One iteration of a spin-wait. Every few iterations the thread offers its
/// core to the scheduler, so that when more threads are runnable than there
/// are cores (two runs side by side, say) spinning does not starve the
/// thread being waited for.
static inline void relax(int iteration) {
  if ((iteration & 15) == 15)
    std::this_thread::yield();
  else
    cpuRelax();
}
#else
static inline void cpuRelax() {}
#endif

namespace strata::rt {

namespace {
/// Set while the current thread runs a chunk of some pool's parallelFor; a
/// nested parallelFor then runs inline instead of deadlocking.
thread_local int insideParallelRegion = 0;

struct RegionGuard {
  RegionGuard() { ++insideParallelRegion; }
  ~RegionGuard() { --insideParallelRegion; }
};
} // namespace

struct ThreadPool::Impl {
  int numThreads = 1;
  /// How many times a waiting thread polls before it sleeps.
  int spinIterations = 0;
  std::vector<std::thread> workers;

  /// Serialises parallelFor calls from different external threads.
  std::mutex callMutex;

  std::mutex mutex;
  std::condition_variable wakeWorkers;
  std::condition_variable wakeCaller;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  bool stopping = false;

  // The current job; written only while no worker can read it.
  const std::function<void(int64_t, int64_t)> *fn = nullptr;
  int64_t total = 0;
  int64_t chunks = 0;
  std::vector<std::exception_ptr> errors;

  void runChunk(int64_t index) {
    if (index >= chunks)
      return;
    int64_t begin = total * index / chunks;
    int64_t end = total * (index + 1) / chunks;
    RegionGuard guard;
    try {
      (*fn)(begin, end);
    } catch (...) {
      errors[index] = std::current_exception();
    }
  }

  void workerLoop(int index) {
    uint64_t seen = 0;
    for (;;) {
      for (int i = 0; i < spinIterations &&
                      generation.load(std::memory_order_acquire) == seen;
           ++i)
        relax(i);
      if (generation.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex);
        wakeWorkers.wait(lock, [&] {
          return generation.load(std::memory_order_acquire) != seen;
        });
      }
      seen = generation.load(std::memory_order_acquire);
      if (stopping)
        return;
      runChunk(index);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        wakeCaller.notify_one();
      }
    }
  }

  void publish() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      pending.store(numThreads - 1, std::memory_order_relaxed);
      generation.fetch_add(1, std::memory_order_release);
    }
    wakeWorkers.notify_all();
  }

  void waitWorkers() {
    for (int i = 0;
         i < spinIterations && pending.load(std::memory_order_acquire) != 0;
         ++i)
      relax(i);
    if (pending.load(std::memory_order_acquire) == 0)
      return;
    std::unique_lock<std::mutex> lock(mutex);
    wakeCaller.wait(
        lock, [&] { return pending.load(std::memory_order_acquire) == 0; });
  }
};

ThreadPool::ThreadPool(int threads) : impl(std::make_unique<Impl>()) {
  int hardware = std::max(1u, std::thread::hardware_concurrency());
  if (threads <= 0)
    threads = hardware;
  impl->numThreads = threads;
  // Spinning only pays when every thread has a core of its own.
  impl->spinIterations = threads <= hardware ? 20000 : 0;
  impl->errors.resize(threads);
  impl->workers.reserve(threads - 1);
  try {
    for (int i = 1; i < threads; ++i)
      impl->workers.emplace_back([this, i] { impl->workerLoop(i); });
  } catch (const std::system_error &e) {
    // The workers started so far wait on the pool's condition variable: stop
    // and join them before the pool goes away.
    size_t started = impl->workers.size();
    stopWorkers();
    throw std::runtime_error("cannot start kernel thread " +
                             std::to_string(started + 1) + " of " +
                             std::to_string(threads) + ": " + e.what());
  }
}

void ThreadPool::stopWorkers() {
  if (impl->workers.empty())
    return;
  {
    std::lock_guard<std::mutex> lock(impl->mutex);
    impl->stopping = true;
    impl->generation.fetch_add(1, std::memory_order_release);
  }
  impl->wakeWorkers.notify_all();
  for (std::thread &t : impl->workers)
    t.join();
  impl->workers.clear();
}

ThreadPool::~ThreadPool() { stopWorkers(); }

int ThreadPool::size() const { return impl->numThreads; }

void ThreadPool::parallelFor(int64_t n,
                             const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  if (impl->numThreads == 1 || n == 1 || insideParallelRegion) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> callLock(impl->callMutex);
  impl->fn = &fn;
  impl->total = n;
  impl->chunks = std::min<int64_t>(n, impl->numThreads);
  std::fill(impl->errors.begin(), impl->errors.end(), nullptr);
  impl->publish();
  impl->runChunk(0);
  impl->waitWorkers();
  impl->fn = nullptr;
  for (std::exception_ptr &error : impl->errors)
    if (error)
      std::rethrow_exception(error);
}

} // namespace strata::rt
