//===- CopyEngine.cpp - Asynchronous host copies of swapped buffers -------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/CopyEngine.h"

#include "strata-rt/Kernels.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

namespace strata::rt {

CopyEngine::CopyEngine() : thread_([this] { run(); }) {}

CopyEngine::~CopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  thread_.join();
}

Status CopyEngine::start(int64_t slot, std::string name, int64_t bytes,
                         Job job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (slots_.count(slot))
      return Status::failure("copy slot " + std::to_string(slot) +
                             " is still busy (started and not waited for)");
    slots_[slot] = SlotState();
    queue_.push_back({slot, std::move(name), bytes, std::move(job)});
    ++inFlight_;
  }
  queued_.notify_one();
  return Status::success();
}

Status CopyEngine::startCopy(int64_t slot, std::string name, void *dst,
                             const void *src, size_t bytes) {
  return start(slot, std::move(name), static_cast<int64_t>(bytes),
               [dst, src, bytes] {
                 if (bytes > 0 && (!dst || !src))
                   return Status::failure("copy of " + std::to_string(bytes) +
                                          " bytes with a null pointer");
                 if (bytes > 0)
                   std::memcpy(dst, src, bytes);
                 return Status::success();
               });
}

Status CopyEngine::wait(int64_t slot) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!slots_.count(slot))
    return Status::failure("copy slot " + std::to_string(slot) +
                           " has no copy in flight to wait for");
  finished_.wait(lock, [&] {
    auto it = slots_.find(slot);
    return it == slots_.end() || it->second.done;
  });
  auto it = slots_.find(slot);
  if (it == slots_.end()) // Forgotten by a concurrent finishAll.
    return Status::success();
  Status status = std::move(it->second.status);
  slots_.erase(it);
  return status;
}

Status CopyEngine::finishAll() {
  std::unique_lock<std::mutex> lock(mutex_);
  finished_.wait(lock, [&] { return inFlight_ == 0; });
  Status first = Status::success();
  for (auto &[slot, state] : slots_)
    if (!state.status.ok() && first.ok())
      first = state.status;
  slots_.clear();
  return first;
}

bool CopyEngine::outstanding(int64_t slot) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slots_.count(slot) != 0;
}

std::vector<CopySpan> CopyEngine::takeSpans() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CopySpan> spans;
  spans.swap(spans_);
  return spans;
}

void CopyEngine::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return; // Stopping, and every job ran.
    Queued job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    int64_t startNs = steadyNowNs();
    Status status;
    try {
      status = job.job();
    } catch (const std::exception &e) {
      status = Status::failure(job.name + " (slot " + std::to_string(job.slot) +
                               "): " + e.what());
    } catch (...) {
      status = Status::failure(job.name + " (slot " + std::to_string(job.slot) +
                               "): the copy failed");
    }
    int64_t endNs = steadyNowNs();
    lock.lock();
    // A job forgotten by finishAll has no state any more; its result is
    // dropped.
    if (auto it = slots_.find(job.slot); it != slots_.end()) {
      it->second.done = true;
      it->second.status = std::move(status);
    }
    spans_.push_back({job.slot, job.bytes, job.name, startNs, endNs});
    --inFlight_;
    finished_.notify_all();
  }
}

Status SwapPool::allocate(const std::map<int64_t, int64_t> &slotBytes) {
  slots_.clear();
  total_ = 0;
  for (auto [slot, bytes] : slotBytes) {
    Slot &s = slots_[slot];
    s.bytes = bytes;
    s.data.reset(new (
        std::nothrow) char[static_cast<size_t>(std::max<int64_t>(bytes, 1))]());
    if (!s.data)
      return Status::failure("cannot allocate host swap slot " +
                             std::to_string(slot) + " of " +
                             std::to_string(bytes) + " bytes");
    total_ += bytes;
  }
  return Status::success();
}

void *SwapPool::slot(int64_t slot, int64_t &bytes) const {
  auto it = slots_.find(slot);
  if (it == slots_.end()) {
    bytes = 0;
    return nullptr;
  }
  bytes = it->second.bytes;
  return it->second.data.get();
}

std::map<int64_t, int64_t>
swapSlotBytes(const Plan &plan, const std::vector<Instruction> &program) {
  std::map<int64_t, int64_t> slots;
  for (const Instruction &inst : program)
    if (inst.op == OpCode::SwapOut && !inst.in.empty())
      slots[inst.attrs.slot] = plan.buffers[inst.in[0]].bytes;
  return slots;
}

} // namespace strata::rt
