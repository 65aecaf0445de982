//===- CudaBackend.cu - The CUDA device backend ---------------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Streams: kernels run in program order on the compute stream; uploads and
// downloads run on the copy stream, ordered against the compute stream with
// events (compute waits for `copied_` after an upload; a download waits for
// `computed_`), and so do the host copies of swapped activations (swap_out,
// swap_in: CudaKernelsCopy.cu, into pinned host slots allocated here); NCCL
// collectives run on the communication stream, pipeline
// sends and receives on their links' streams (NcclCommunicator.cu). Each
// instruction is bracketed by two timing events.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <thread>

namespace strata::rt {

bool haveCudaBackend() { return true; }

int cudaDeviceCount(std::string *why) {
  int count = 0; // Not written when there is no driver.
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    if (why)
      *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error);
    cudaGetLastError(); // Clear the sticky-free error state.
    return 0;
  }
  if (count == 0 && why)
    *why = "no CUDA device";
  return count;
}

Status createCudaBackend(const DeviceOptions &options,
                         std::unique_ptr<DeviceBackend> &backend) {
  return cuda::CudaBackend::create(options, backend);
}

namespace cuda {

static int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status cudaFailure(const std::string &what, cudaError_t error) {
  return Status::failure(what + ": " + cudaGetErrorString(error));
}

#define STRATA_CUDA_TRY(call)                                                  \
  do {                                                                         \
    cudaError_t strataError = (call);                                          \
    if (strataError != cudaSuccess)                                            \
      return cudaFailure(#call, strataError);                                  \
  } while (0)

/// The GPU of this process: the local MPI rank modulo the number of GPUs.
static int localOrdinal(int count) {
  for (const char *name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *value = std::getenv(name))
      return std::atoi(value) % count;
  return 0;
}

Status CudaBackend::create(const DeviceOptions &options,
                           std::unique_ptr<DeviceBackend> &backend) {
  backend.reset();
  std::string why;
  int count = cudaDeviceCount(&why);
  if (count == 0)
    return Status::failure("--device=cuda: no usable GPU (" + why + ")");
  int ordinal = options.ordinal < 0 ? localOrdinal(count) : options.ordinal;
  if (ordinal >= count)
    return Status::usage("--device=cuda:" + std::to_string(ordinal) +
                         ": this machine has " + std::to_string(count) +
                         " GPU(s)");
  std::unique_ptr<CudaBackend> result(new CudaBackend);
  result->ordinal_ = ordinal;
  result->options_ = options;
  result->timeoutSeconds_ = options.timeoutSeconds;
  STRATA_CUDA_TRY(cudaSetDevice(ordinal));
  cudaDeviceProp prop;
  STRATA_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  result->name_ = prop.name;
  result->smCount_ = prop.multiProcessorCount;
  result->memoryBytes_ = prop.totalGlobalMem;
  STRATA_CUDA_TRY(
      cudaStreamCreateWithFlags(&result->compute_, cudaStreamNonBlocking));
  STRATA_CUDA_TRY(
      cudaStreamCreateWithFlags(&result->copy_, cudaStreamNonBlocking));
  STRATA_CUDA_TRY(
      cudaStreamCreateWithFlags(&result->comm_, cudaStreamNonBlocking));
  STRATA_CUDA_TRY(
      cudaEventCreateWithFlags(&result->copied_, cudaEventDisableTiming));
  STRATA_CUDA_TRY(
      cudaEventCreateWithFlags(&result->computed_, cudaEventDisableTiming));
  STRATA_CUDA_TRY(cudaEventCreate(&result->base_));
  cublasStatus_t status = cublasCreate(&result->cublas_);
  if (status != CUBLAS_STATUS_SUCCESS)
    return Status::failure(std::string("cublasCreate: ") +
                           cublasGetStatusString(status));
  cublasSetStream(result->cublas_, result->compute_);
  cublasSetMathMode(result->cublas_, options.allowTf32
                                         ? CUBLAS_TF32_TENSOR_OP_MATH
                                         : CUBLAS_DEFAULT_MATH);
  backend = std::move(result);
  return Status::success();
}

CudaBackend::~CudaBackend() {
  cudaSetDevice(ordinal_);
  if (compute_)
    cudaStreamSynchronize(compute_);
  if (copy_)
    cudaStreamSynchronize(copy_);
  if (comm_)
    cudaStreamSynchronize(comm_);
  for (cudaEvent_t e : starts_)
    cudaEventDestroy(e);
  for (cudaEvent_t e : ends_)
    cudaEventDestroy(e);
  for (cudaEvent_t e : {copied_, computed_, base_})
    if (e)
      cudaEventDestroy(e);
  for (auto &[slot, swap] : context_.swapSlots) {
    if (swap.ready)
      cudaEventDestroy(swap.ready);
    if (swap.done)
      cudaEventDestroy(swap.done);
    if (swap.host)
      cudaFreeHost(swap.host);
  }
  if (cublas_)
    cublasDestroy(cublas_);
  if (scratch_)
    cudaFree(scratch_);
  if (deviceBase_)
    cudaFree(deviceBase_);
  for (cudaStream_t s : {compute_, copy_, comm_})
    if (s)
      cudaStreamDestroy(s);
}

std::string CudaBackend::describe() const {
  return "cuda:" + std::to_string(ordinal_) + " (" + name_ + ", " +
         std::to_string(smCount_) + " SMs, " +
         std::to_string(memoryBytes_ >> 30) +
         " GiB; matmul: " + (options_.strataGemm ? "strata" : "cublas") + ")";
}

Status CudaBackend::activate() const {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  return Status::success();
}

Status CudaBackend::allocateHost(size_t bytes, void **host) {
  *host = nullptr;
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  STRATA_CUDA_TRY(cudaHostAlloc(host, bytes, cudaHostAllocPortable));
  std::memset(*host, 0, bytes);
  return Status::success();
}

void CudaBackend::freeHost(void *host) { cudaFreeHost(host); }

Status CudaBackend::prepare(const Plan &plan,
                            const std::vector<Instruction> &program,
                            void *hostBase) {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  plan_ = &plan;
  program_ = &program;
  hostBase_ = static_cast<char *>(hostBase);
  int64_t arenaBytes = 1;
  for (const RankPlan &rank : plan.ranks)
    if (&plan.programOf(rank.rank) == &program)
      arenaBytes = std::max(arenaBytes, rank.arenaBytes);
  void *arena = nullptr;
  cudaError_t error = cudaMalloc(&arena, static_cast<size_t>(arenaBytes));
  if (error != cudaSuccess)
    return Status::failure(plan.path +
                           ": cannot allocate the device arena of " +
                           std::to_string(arenaBytes) + " bytes on " +
                           describe() + ": " + cudaGetErrorString(error));
  deviceBase_ = static_cast<char *>(arena);
  STRATA_CUDA_TRY(cudaMemsetAsync(deviceBase_, 0, arenaBytes, compute_));
  tensors_.clear();
  for (const Buffer &buffer : plan.buffers)
    tensors_.push_back(Tensor{deviceBase_ + buffer.offset, buffer.desc});

  // Every instruction needs a CUDA kernel; the largest scratch any needs is
  // allocated once.
  kernels_.clear();
  size_t scratch = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    CudaKernelFn fn = lookupCudaKernel(inst.op);
    if (!fn)
      return Status::failure(plan.path + ": instruction #" + std::to_string(i) +
                             " (" + inst.name() + "): no CUDA kernel");
    kernels_.push_back(fn);
    std::vector<TensorDesc> in, out;
    for (int64_t id : inst.in)
      in.push_back(plan.buffers[id].desc);
    for (int64_t id : inst.out)
      out.push_back(plan.buffers[id].desc);
    scratch = std::max(scratch, cudaScratchBytes(inst.op, in, out, inst.attrs));
  }
  if (scratch > 0) {
    error = cudaMalloc(&scratch_, scratch);
    if (error != cudaSuccess)
      return Status::failure(
          plan.path + ": cannot allocate " + std::to_string(scratch) +
          " bytes of kernel scratch: " + cudaGetErrorString(error));
    scratchBytes_ = scratch;
  }
  if (Status status = orderPipelineSends(plan, program, sendsAt_); !status.ok())
    return status;
  // Multi-tensor groups of one phase whose op has a group kernel launch as
  // one; any other run of instructions launches one by one.
  groupSize_ = multiTensorRuns(program);
  for (size_t i = 0; i < program.size(); ++i) {
    size_t size = groupSize_[i];
    if (size < 2)
      continue;
    bool grouped = lookupCudaGroupKernel(program[i].op) != nullptr;
    for (size_t j = i + 1; j < i + size; ++j)
      grouped = grouped && program[j].phase == program[i].phase;
    if (!grouped)
      std::fill(groupSize_.begin() + i, groupSize_.begin() + i + size, 1);
  }
  for (size_t i = 0; i < program.size(); ++i) {
    cudaEvent_t start, end;
    STRATA_CUDA_TRY(cudaEventCreate(&start));
    STRATA_CUDA_TRY(cudaEventCreate(&end));
    starts_.push_back(start);
    ends_.push_back(end);
  }
  // Activation swapping: one pinned host slot per swap_out, sized from its
  // input, with the events that order its copies.
  for (const Instruction &inst : program) {
    if (inst.op != OpCode::SwapOut)
      continue;
    CudaSwapSlot &slot = context_.swapSlots[inst.attrs.slot];
    slot.bytes = static_cast<size_t>(plan.buffers[inst.in[0]].bytes);
    error = cudaHostAlloc(&slot.host, std::max<size_t>(slot.bytes, 1),
                          cudaHostAllocPortable);
    if (error != cudaSuccess) {
      slot.host = nullptr;
      return Status::failure(plan.path + ": cannot allocate host swap slot " +
                             std::to_string(inst.attrs.slot) + " of " +
                             std::to_string(slot.bytes) +
                             " pinned bytes: " + cudaGetErrorString(error));
    }
    STRATA_CUDA_TRY(
        cudaEventCreateWithFlags(&slot.ready, cudaEventDisableTiming));
    STRATA_CUDA_TRY(
        cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
  }
  context_.copyStream = copy_;
  context_.stream = compute_;
  context_.cublas = cublas_;
  context_.gemm = options_.strataGemm ? GemmEngine::Strata : GemmEngine::Cublas;
  context_.allowTf32 = options_.allowTf32;
  context_.multiprocessors = smCount_;
  context_.scratch = scratch_;
  context_.scratchBytes = scratchBytes_;
  return waitFor(compute_, "zeroing the device arena");
}

Status orderPipelineSends(const Plan &plan,
                          const std::vector<Instruction> &program,
                          std::vector<std::vector<size_t>> &sendsAt) {
  sendsAt.assign(program.size(), {});
  int64_t stage = 0;
  for (const RankPlan &rank : plan.ranks)
    if (&plan.programOf(rank.rank) == &program) {
      stage = rank.stage;
      break;
    }
  // Per peer stage: the tags it receives from this stage in its order (the
  // replicas of a stage share its program), how many of them were issued,
  // and the sends held back (tag -> instruction).
  std::map<int64_t, std::vector<int64_t>> order;
  std::map<int64_t, size_t> issued;
  std::map<int64_t, std::map<int64_t, size_t>> held;
  auto heldBack = [&](size_t before) -> Status {
    for (const auto &[peer, sends] : held)
      if (!sends.empty()) {
        size_t i = sends.begin()->second;
        return Status::failure(
            plan.path + ": instruction #" + std::to_string(i) +
            " (send to stage " + std::to_string(peer) + ", tag " +
            std::to_string(sends.begin()->first) + "): stage " +
            std::to_string(peer) +
            " receives other tags from this stage first, and on GPUs the "
            "send would have to wait for them past " +
            (before < program.size()
                 ? "instruction #" + std::to_string(before) + " (" +
                       program[before].name() + "), which updates in place"
                 : std::string("the end of the step")) +
            " (NCCL matches transfers in the order they are issued; run "
            "this pipeline with --device=cpu)");
      }
    return Status::success();
  };
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    if (inst.waitsForSends())
      if (Status status = heldBack(i); !status.ok())
        return status;
    if (!inst.info().sends())
      continue;
    int64_t peer = inst.attrs.peer;
    auto [tags, fresh] = order.try_emplace(peer);
    if (fresh)
      if (int64_t receiver = plan.rankOf(peer, 0); receiver >= 0)
        for (const Instruction &other : plan.programOf(receiver))
          if (other.has(kPointToPoint) && !other.info().sends() &&
              other.attrs.peer == stage)
            tags->second.push_back(other.attrs.tag);
    std::map<int64_t, size_t> &waiting = held[peer];
    waiting[inst.attrs.tag] = i;
    for (size_t &next = issued[peer]; next < tags->second.size(); ++next) {
      auto send = waiting.find(tags->second[next]);
      if (send == waiting.end())
        break;
      sendsAt[i].push_back(send->second);
      waiting.erase(send);
    }
  }
  return heldBack(program.size());
}

void CudaBackend::setCommunicators(Communicator *comm,
                                   const std::vector<Communicator *> &groups) {
  context_.comm = comm;
  context_.groups = groups;
}

void CudaBackend::setStageRanks(const std::vector<int> &stageRanks) {
  context_.stageRanks = stageRanks;
}

void CudaBackend::setCompression(CompressionState *compression) {
  context_.compression = compression;
}

void CudaBackend::setEvaluation(bool evaluation) {
  context_.evaluation = evaluation;
}

Status CudaBackend::orderAfterSends() {
  Status result = Status::success();
  for (std::unique_ptr<Request> &request : context_.pendingSends)
    if (Status status = request->wait(); !status.ok() && result.ok())
      result = status;
  context_.pendingSends.clear();
  return result;
}

Status CudaBackend::upload(const std::vector<int64_t> &buffers) {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  // Copies must not overwrite what earlier instructions still read.
  STRATA_CUDA_TRY(cudaEventRecord(computed_, compute_));
  STRATA_CUDA_TRY(cudaStreamWaitEvent(copy_, computed_, 0));
  for (int64_t id : buffers) {
    const Buffer &buffer = plan_->buffers[id];
    if (buffer.bytes > 0)
      STRATA_CUDA_TRY(cudaMemcpyAsync(
          deviceBase_ + buffer.offset, hostBase_ + buffer.offset,
          static_cast<size_t>(buffer.bytes), cudaMemcpyHostToDevice, copy_));
  }
  STRATA_CUDA_TRY(cudaEventRecord(copied_, copy_));
  STRATA_CUDA_TRY(cudaStreamWaitEvent(compute_, copied_, 0));
  return Status::success();
}

Status CudaBackend::download(const std::vector<int64_t> &buffers) {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  STRATA_CUDA_TRY(cudaEventRecord(computed_, compute_));
  STRATA_CUDA_TRY(cudaStreamWaitEvent(copy_, computed_, 0));
  for (int64_t id : buffers) {
    const Buffer &buffer = plan_->buffers[id];
    if (buffer.bytes > 0)
      STRATA_CUDA_TRY(cudaMemcpyAsync(
          hostBase_ + buffer.offset, deviceBase_ + buffer.offset,
          static_cast<size_t>(buffer.bytes), cudaMemcpyDeviceToHost, copy_));
  }
  return waitFor(copy_, "copying buffers to the host");
}

Status CudaBackend::skip(size_t index) {
  const Instruction &inst = (*program_)[index];
  if (!inst.waitsForSends() || context_.pendingSends.empty())
    return Status::success();
  if (Status status = orderAfterSends(); !status.ok())
    return Status::failure("instruction #" + std::to_string(index) + " (" +
                           inst.name() + ", not run): " + status.message());
  return Status::success();
}

Status CudaBackend::enqueue(size_t index) {
  if (!baseRecorded_) {
    STRATA_CUDA_TRY(cudaEventRecord(base_, compute_));
    baseNs_ = nowNs();
    baseRecorded_ = true;
  }
  const Instruction &inst = (*program_)[index];
  // A send may still read a buffer that this update overwrites: the
  // update waits for the sends on the device, like the CPU executor's host
  // wait (finishSends). (skip() keeps this wait where it does not run.)
  if (inst.waitsForSends() && !context_.pendingSends.empty())
    if (Status status = orderAfterSends(); !status.ok())
      return Status::failure("instruction #" + std::to_string(index) + " (" +
                             inst.name() + "): " + status.message());
  STRATA_CUDA_TRY(cudaEventRecord(starts_[index], compute_));
  auto run = [&](size_t i) {
    const Instruction &at = (*program_)[i];
    std::vector<Tensor> inputs, outputs;
    for (int64_t id : at.in)
      inputs.push_back(tensors_[id]);
    for (int64_t id : at.out)
      outputs.push_back(tensors_[id]);
    kernels_[i](context_, inputs, outputs, at.attrs);
  };
  auto runGroup = [&](size_t first, size_t size) {
    std::vector<CudaKernelCall> calls(size);
    for (size_t j = 0; j < size; ++j) {
      const Instruction &at = (*program_)[first + j];
      for (int64_t id : at.in)
        calls[j].inputs.push_back(tensors_[id]);
      for (int64_t id : at.out)
        calls[j].outputs.push_back(tensors_[id]);
      calls[j].attrs = &at.attrs;
    }
    lookupCudaGroupKernel(inst.op)(context_, calls);
  };
  try {
    if (inst.info().sends()) {
      for (size_t i : sendsAt_[index])
        run(i);
    } else if (groupSize_[index] > 1) {
      runGroup(index, groupSize_[index]);
    } else if (groupSize_[index] == 1) {
      run(index);
    } // 0: a later member of a group that its first instruction launched

  } catch (const std::exception &e) {
    return Status::failure("instruction #" + std::to_string(index) + " (" +
                           inst.name() + "): " + e.what());
  }
  STRATA_CUDA_TRY(cudaEventRecord(ends_[index], compute_));
  enqueued_.push_back(index);
  return Status::success();
}

Status CudaBackend::waitFor(cudaStream_t stream, const char *what) {
  auto start = std::chrono::steady_clock::now();
  while (true) {
    cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess)
      return Status::success();
    if (state != cudaErrorNotReady)
      return cudaFailure(
          std::string("cuda:") + std::to_string(ordinal_) + ": " + what, state);
    for (const auto &check : healthChecks_)
      if (Status status = check(); !status.ok()) {
        for (const auto &abort : aborts_)
          abort();
        return status;
      }
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeoutSeconds_ > 0 && waited > timeoutSeconds_) {
      for (const auto &abort : aborts_)
        abort();
      return Status::failure("cuda:" + std::to_string(ordinal_) + ": " + what +
                             " did not " + "finish within " +
                             std::to_string(static_cast<int>(timeoutSeconds_)) +
                             " s (a peer of a collective stopped answering?)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status CudaBackend::finish(std::vector<InstructionTime> &times,
                           int64_t originNs) {
  STRATA_CUDA_TRY(cudaSetDevice(ordinal_));
  // The step's sends complete before it ends (the next step overwrites
  // what they read).
  if (Status status = orderAfterSends(); !status.ok())
    return status;
  if (Status status = waitFor(compute_, "the step"); !status.ok())
    return status;
  if (Status status = waitFor(copy_, "the copies"); !status.ok())
    return status;
  // Every host copy of a swapped activation is complete.
  for (auto &[slot, swap] : context_.swapSlots)
    swap.inFlight = false;
  double baseUs = (baseNs_ - originNs) * 1e-3;
  for (size_t index : enqueued_) {
    float startMs = 0, endMs = 0;
    STRATA_CUDA_TRY(cudaEventElapsedTime(&startMs, base_, starts_[index]));
    STRATA_CUDA_TRY(cudaEventElapsedTime(&endMs, starts_[index], ends_[index]));
    if (index < times.size())
      times[index] = {baseUs + startMs * 1e3, endMs * 1e3};
  }
  enqueued_.clear();
  baseRecorded_ = false;
  return Status::success();
}

} // namespace cuda
} // namespace strata::rt
