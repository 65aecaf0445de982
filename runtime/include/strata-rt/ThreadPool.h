//===- ThreadPool.h - Fixed-size worker pool ---------------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_THREADPOOL_H
#define STRATA_RT_THREADPOOL_H

#include <cstdint>
#include <functional>
#include <memory>

namespace strata::rt {

/// A fixed set of worker threads. `parallelFor` splits [0, n) into at most
/// `size()` contiguous chunks whose bounds depend only on n and size(), so a
/// kernel that writes each output from exactly one chunk is deterministic for
/// a given thread count.
class ThreadPool {
public:
  /// `threads` <= 0 means one per hardware thread. Throws
  /// std::runtime_error (with every thread it started joined again) when the
  /// system cannot start them all.
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const;
  /// Runs fn(begin, end) over a static partition of [0, n); returns when all
  /// chunks are done. The calling thread runs one chunk itself.
  void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)> &fn);

private:
  /// Stops and joins the worker threads.
  void stopWorkers();

  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace strata::rt

#endif // STRATA_RT_THREADPOOL_H
