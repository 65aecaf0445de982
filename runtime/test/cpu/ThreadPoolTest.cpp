//===- ThreadPoolTest.cpp - Tests of the worker pool ----------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace strata::rt {
namespace {

/// The chunks of one parallelFor, sorted by begin.
std::vector<std::pair<int64_t, int64_t>> chunksOf(ThreadPool &pool, int64_t n) {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  pool.parallelFor(n, [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    chunks.push_back({begin, end});
  });
  std::sort(chunks.begin(), chunks.end());
  return chunks;
}

TEST(ThreadPool, Size) {
  EXPECT_EQ(ThreadPool(1).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
  EXPECT_GE(ThreadPool(0).size(), 1);
  EXPECT_GE(ThreadPool(-1).size(), 1);
}

// [0, n) is split into min(n, size()) contiguous chunks whose bounds depend
// only on n and size().
TEST(ThreadPool, StaticContiguousPartition) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 5, 7, 8, 100, 1001}) {
      auto chunks = chunksOf(pool, n);
      int64_t expected = std::min<int64_t>(n, threads);
      ASSERT_EQ((int64_t)chunks.size(), expected) << threads << " " << n;
      int64_t next = 0;
      for (auto [begin, end] : chunks) {
        EXPECT_EQ(begin, next);
        EXPECT_LT(begin, end);
        next = end;
      }
      EXPECT_EQ(next, n);
      EXPECT_EQ(chunks, chunksOf(pool, n));
    }
  }
}

TEST(ThreadPool, EmptyRangeRunsNothing) {
  ThreadPool pool(2);
  bool called = false;
  pool.parallelFor(0, [&](int64_t, int64_t) { called = true; });
  pool.parallelFor(-3, [&](int64_t, int64_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPool, RunsOnSeveralThreads) {
  ThreadPool pool(2);
  std::mutex mutex;
  std::set<std::thread::id> ids;
  pool.parallelFor(2, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids.count(std::this_thread::get_id()));
}

// Kernels call parallelFor thousands of times per step.
TEST(ThreadPool, ManySmallCalls) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    std::vector<int64_t> data(64, 0);
    auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 20000; ++call)
      pool.parallelFor(64, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          ++data[i];
      });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    for (int64_t v : data)
      ASSERT_EQ(v, 20000);
    // Generous: a few microseconds per call when threads have cores.
    EXPECT_LT(seconds, 20.0) << threads;
  }
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.parallelFor(4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallelFor(10, [&](int64_t b, int64_t e) { total += e - b; });
  });
  EXPECT_EQ(total.load(), 40);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallelFor(2,
                                [&](int64_t begin, int64_t) {
                                  if (begin == 1)
                                    throw std::runtime_error("chunk 1");
                                }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> calls{0};
  pool.parallelFor(2, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls.load(), 2);
}

TEST(ThreadPool, CallsFromSeveralThreads) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int call = 0; call < 200; ++call)
        pool.parallelFor(8, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(total.load(), 3 * 200 * 8);
}

} // namespace
} // namespace strata::rt
