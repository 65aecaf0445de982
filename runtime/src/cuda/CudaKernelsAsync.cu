//===- CudaKernelsAsync.cu - Bucketed asynchronous all-reduce -------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `all_reduce_start` packs a bucket of device tensors into the bucket's
// device staging buffer with stream-ordered copies on ctx.stream and enqueues
// one all-reduce on it through ctx.comm (the group's communicator). The NCCL
// communicator enqueues the collective on its communication stream after an
// event recorded on the compute stream, so the host returns at once and the
// kernels enqueued next (the rest of the backward pass) overlap the
// transfer. `all_reduce_wait` calls Request::wait, which makes the compute
// stream wait for the collective's completion event (the host does not
// block), then unpacks the reduced tensors into its outputs on ctx.stream.
//
// Staging buffers are allocated on a bucket's first start and kept (per
// context and bucket) for the life of the process, like the plan's arena.
//
//===----------------------------------------------------------------------===//

#include "CudaKernelsInternal.h"

#include "strata-rt/Comm.h"
#include "strata-rt/Kernels.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace strata::rt::cuda::detail {
namespace {

struct DeviceBucket {
  void *staging = nullptr;
  size_t bytes = 0;
  std::unique_ptr<Request> request;
  bool inFlight = false;
};

/// Buckets by (context, bucket number): one context per executor.
std::mutex gBucketsMutex;
std::map<std::pair<const CudaContext *, int64_t>, DeviceBucket> gBuckets;

DeviceBucket &lookupBucket(const CudaContext &ctx, int64_t bucket) {
  std::lock_guard<std::mutex> lock(gBucketsMutex);
  return gBuckets[{&ctx, bucket}];
}

void runAllReduceStart(CudaContext &ctx, const Tensors &inputs, const Tensors &,
                       const OpAttrs &attrs) {
  int64_t bucketId = attrs.bucket;
  Communicator *comm =
      resolveCollectiveGroup(ctx.comm, ctx.groups, attrs, "all_reduce_start");
  if (attrs.host)
    throw std::runtime_error(
        "all_reduce_start: host accumulation (accumulate=host) runs on CPU "
        "ranks only; GPU ranks all-reduce on the device (NCCL)");
  DeviceBucket &bucket = lookupBucket(ctx, bucketId);
  if (bucket.inFlight)
    throw std::runtime_error("bucket " + std::to_string(bucketId) +
                             " is already in flight");
  int64_t count = 0;
  for (const Tensor &t : inputs)
    count += t.numel();
  size_t bytes = static_cast<size_t>(count) * sizeof(float);
  if (bucket.bytes < bytes) {
    if (bucket.staging)
      STRATA_CUDA_CHECK(cudaFree(bucket.staging));
    bucket.staging = nullptr;
    bucket.bytes = 0;
    STRATA_CUDA_CHECK(cudaMalloc(&bucket.staging, bytes));
    bucket.bytes = bytes;
  }
  char *packed = static_cast<char *>(bucket.staging);
  for (const Tensor &t : inputs) {
    copyDevice(ctx, packed, t.data, t.desc.bytes());
    packed += t.desc.bytes();
  }
  bucket.inFlight = true;
  if (!comm || comm->size() == 1)
    return;
  ReduceOp op = attrs.mean ? ReduceOp::Mean : ReduceOp::Sum;
  bucket.request =
      comm->startAllReduce(static_cast<float *>(bucket.staging), count, op);
}

void runAllReduceWait(CudaContext &ctx, const Tensors &, const Tensors &outputs,
                      const OpAttrs &attrs) {
  int64_t bucketId = attrs.bucket;
  DeviceBucket &bucket = lookupBucket(ctx, bucketId);
  if (!bucket.inFlight)
    throw std::runtime_error("bucket " + std::to_string(bucketId) +
                             " was not started");
  bucket.inFlight = false;
  if (bucket.request) {
    Status status = bucket.request->wait();
    bucket.request.reset();
    if (!status.ok())
      throw std::runtime_error(status.message());
  }
  const char *packed = static_cast<const char *>(bucket.staging);
  for (const Tensor &t : outputs) {
    copyDevice(ctx, t.data, packed, t.desc.bytes());
    packed += t.desc.bytes();
  }
}

} // namespace

void appendAsyncCudaKernels(std::vector<CudaKernelEntry> &kernels) {
  kernels.push_back({OpCode::AllReduceStart, runAllReduceStart});
  kernels.push_back({OpCode::AllReduceWait, runAllReduceWait});
}

} // namespace strata::rt::cuda::detail
