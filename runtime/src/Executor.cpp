//===- Executor.cpp - Runs a plan's program on the CPU --------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Executor.h"

#include "strata-rt/CopyEngine.h"
#include "strata-rt/Init.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <thread>

#include <sys/mman.h>

namespace strata::rt {

Executor::Arena::~Arena() {
  if (base && pinnedBy)
    pinnedBy->freeHost(base);
  else if (base)
    ::munmap(base, size);
}

DeviceBackend::~DeviceBackend() = default;

Executor::Executor(Plan planIn, const ExecutorOptions &options)
    : plan(std::move(planIn)), device(options.device), backend(options.backend),
      pool(new ThreadPool(options.threads)),
      context{*pool, options.gemm, options.comm, options.groups},
      originNs(steadyNowNs()), computeScale(options.computeScale) {
  program = &plan.ranks[plan.ranks[options.rank].programOf].program;
  rank = options.rank;
  if (computeScale > 1)
    unslowed.resize(2 * program->size());
  groupRuns = multiTensorRuns(*program);
  for (size_t i = 0; i < program->size(); ++i)
    if ((*program)[i].info().attr(AttrId::Lr))
      planLearningRates.push_back({i, (*program)[i].attrs.lr});
  for (size_t i = 0; i < program->size(); ++i)
    if ((*program)[i].attrs.bf16)
      planBf16.push_back(i);
  // Any rank's: every rank of the plan agrees whether its pipeline is in
  // flight (the last stage carries nothing over itself).
  for (const RankPlan &rank : plan.ranks)
    for (const Instruction &inst : rank.program)
      carryOver |= inst.previousStep;
  if (plan.stages > 1) {
    int64_t replica = plan.ranks[options.rank].replica;
    for (int64_t stage = 0; stage < plan.stages; ++stage)
      context.stageRanks.push_back(
          static_cast<int>(plan.rankOf(stage, replica)));
  }
}

Status Executor::finishSends() {
  Status result = Status::success();
  for (std::unique_ptr<Request> &request : context.pendingSends)
    if (Status status = request->wait(); !status.ok() && result.ok())
      result = status;
  context.pendingSends.clear();
  return result;
}

Executor::~Executor() {
  // The copy thread finishes (and stops touching the arena and the swap
  // pool) before either goes away.
  copies.reset();
}

Status Executor::create(Plan plan, const ExecutorOptions &options,
                        std::unique_ptr<Executor> &executor) {
  executor.reset();
  if (options.rank < 0 || options.rank >= plan.worldSize())
    return Status::usage(plan.path + ": rank " + std::to_string(options.rank) +
                         " is not a rank of the plan (it has " +
                         std::to_string(plan.worldSize()) + ")");
  if (options.device == DeviceKind::Cuda && !options.backend)
    return Status::failure(plan.path + ": a CUDA executor needs a device");
  int64_t arenaBytes = plan.ranks[options.rank].arenaBytes;
  size_t size = static_cast<size_t>(std::max<int64_t>(arenaBytes, 1));
  auto arena = std::make_unique<Arena>();
  arena->size = size;
  if (options.device == DeviceKind::Cuda) {
    // Pinned, so that uploads and downloads are asynchronous DMA.
    Status status = options.backend->allocateHost(size, &arena->base);
    if (!status.ok())
      return Status::failure(
          plan.path + ": cannot allocate the host arena: " + status.message());
    arena->pinnedBy = options.backend.get();
  } else {
    // An anonymous mapping is page aligned (so 64-byte aligned) and reads as
    // zeros, so every run starts from the same bytes; its pages are
    // committed only when a kernel touches them.
    void *memory = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
      return Status::failure(plan.path + ": cannot allocate the arena of " +
                             std::to_string(arenaBytes) +
                             " bytes: " + std::strerror(errno));
    // Huge pages where the kernel offers them (transparent huge pages in
    // "madvise" mode, Debian's default): a step streams hundreds of MiB of
    // activations, far past what 4 KiB pages' TLB entries reach. Advice
    // only: a kernel without it keeps 4 KiB pages.
    if (std::getenv("STRATA_NO_HUGEPAGE") == nullptr)
      ::madvise(memory, size, MADV_HUGEPAGE);
    arena->base = memory;
  }
  void *memory = arena->base;

  std::unique_ptr<Executor> result;
  std::string path = plan.path;
  try {
    result.reset(new Executor(std::move(plan), options));
  } catch (const std::exception &e) {
    return Status::failure(path + ": cannot start the executor: " + e.what());
  }
  result->arena = std::move(arena);
  char *base = static_cast<char *>(memory);
  for (const Buffer &buffer : result->plan.buffers)
    result->tensors.push_back(Tensor{base + buffer.offset, buffer.desc});
  result->lastStepTimes.resize(result->program->size());
  // Activation swapping on the CPU: a host slot per swap_out and the copy
  // thread (a CUDA backend keeps pinned slots of its own).
  std::map<int64_t, int64_t> slots =
      swapSlotBytes(result->plan, *result->program);
  if (!slots.empty() && result->device == DeviceKind::Cpu) {
    result->swapPool = std::make_unique<SwapPool>();
    if (Status status = result->swapPool->allocate(slots); !status.ok())
      return Status::failure(result->plan.path + ": " + status.message());
    try {
      result->copies = std::make_unique<CopyEngine>();
    } catch (const std::exception &e) {
      return Status::failure(result->plan.path +
                             ": cannot start the copy thread: " + e.what());
    }
    result->context.copies = result->copies.get();
    result->context.swapPool = result->swapPool.get();
  }
  for (const Instruction &inst : *result->program)
    if (inst.op == OpCode::Compress && !result->compression) {
      result->compression =
          std::make_unique<CompressionState>(*result->program, result->tensors);
      result->context.compression = result->compression.get();
    }
  if (result->device == DeviceKind::Cuda) {
    const Plan &p = result->plan;
    for (const Input &input : p.inputs)
      result->inputBuffers.push_back(input.buffer);
    for (const Parameter &param : p.parameters)
      result->stateBuffers.push_back(param.buffer);
    for (const State &state : p.states)
      result->stateBuffers.push_back(state.buffer);
    Status status = result->backend->prepare(p, *result->program, memory);
    if (!status.ok())
      return status;
    result->backend->setCommunicators(options.comm, options.groups);
    result->backend->setStageRanks(result->context.stageRanks);
    result->backend->setCompression(result->compression.get());
  }
  executor = std::move(result);
  return Status::success();
}

std::string Executor::describeDevice() const {
  if (backend)
    return backend->describe();
  return "cpu (" + std::to_string(pool->size()) + " threads)";
}

Status Executor::syncToHost() const {
  // Host copies changed since the last upload are the newer ones.
  if (!backend || hostStale)
    return Status::success();
  std::vector<int64_t> buffers = stateBuffers;
  for (const Parameter &param : plan.parameters)
    if (param.grad >= 0)
      buffers.push_back(param.grad);
  return backend->download(buffers);
}

void Executor::setEvaluation(bool evaluation) {
  context.evaluation = evaluation;
  if (backend)
    backend->setEvaluation(evaluation);
}

void Executor::initialize(uint64_t seed) {
  for (const Parameter &param : plan.parameters)
    initializeTensor(tensors[param.buffer], param.init, seed, param.name,
                     pool.get());
  // Kept weight versions are copies of their parameter, not initialised.
  for (const State &state : plan.states)
    if (!state.copiesParam)
      initializeTensor(tensors[state.buffer], state.init, seed, state.name,
                       pool.get());
  copyParameterStates();
}

void Executor::copyParameterStates() {
  for (const State &state : plan.states) {
    if (!state.copiesParam)
      continue;
    const Parameter &param = plan.parameters[state.paramIndex];
    std::memcpy(tensors[state.buffer].data, tensors[param.buffer].data,
                static_cast<size_t>(tensors[state.buffer].desc.bytes()));
  }
  hostStale = true;
}

Status Executor::checkIndexOperands(size_t index) const {
  const Instruction &inst = (*program)[index];
  if (!inst.has(kIndexOperands))
    return Status::success();
  const IndexOperandSpec *operand = &inst.info().indexOperand;
  const Tensor &ids = tensors[inst.in[operand->ids]];
  // A device executor can check only what it uploads from the host: the
  // ids in inputs.
  if (device == DeviceKind::Cuda &&
      plan.buffers[inst.in[operand->ids]].kind != BufferKind::Input)
    return Status::success();
  const Tensor &bounded = tensors[operand->output ? inst.out[operand->tensor]
                                                  : inst.in[operand->tensor]];
  if (ids.desc.dtype != DType::I32 || bounded.rank() == 0)
    return Status::success();
  int64_t limit = bounded.dim(operand->dim); // negative: from the end
  const int32_t *values = ids.i32();
  for (int64_t i = 0, e = ids.numel(); i < e; ++i) {
    if (values[i] >= 0 && values[i] < limit)
      continue;
    return Status::failure(
        "instruction #" + std::to_string(index) + " (" + inst.name() +
        "): in[" + std::to_string(operand->ids) + "] (buffer \"" +
        plan.buffers[inst.in[operand->ids]].name + "\") element " +
        std::to_string(i) + " is " + std::to_string(values[i]) +
        ", outside [0, " + std::to_string(limit) + ")");
  }
  return Status::success();
}

void Executor::setLearningRates(
    const std::function<double(double)> &rate,
    const std::function<double(double)> &previousRate) {
  for (auto [index, planned] : planLearningRates) {
    Instruction &inst = (*program)[index];
    inst.attrs.lr = inst.previousStep && previousRate ? previousRate(planned)
                                                      : rate(planned);
  }
}

void Executor::setBf16Products(bool on) {
  for (size_t index : planBf16)
    (*program)[index].attrs.bf16 = on;
}

Status Executor::runStep(int64_t step, float &loss) {
  return runStep(step, loss, StepPart::All);
}

void Executor::runGroup(size_t first, size_t size) {
  std::vector<KernelCall> calls(size);
  std::vector<double> weights(size);
  double total = 0;
  for (size_t j = 0; j < size; ++j) {
    const Instruction &inst = (*program)[first + j];
    for (int64_t id : inst.in)
      calls[j].inputs.push_back(tensors[id]);
    for (int64_t id : inst.out)
      calls[j].outputs.push_back(tensors[id]);
    calls[j].attrs = &inst.attrs;
    weights[j] = static_cast<double>(tensors[inst.out[0]].numel());
    total += weights[j];
  }
  const Instruction &inst = (*program)[first];
  int64_t start = steadyNowNs();
  inst.kernel->runGroup(context, calls);
  int64_t end = padKernel(first, /*group=*/true, start, steadyNowNs());
  // The trace shows the members one after the other, each with its share.
  double at = (start - originNs) * 1e-3, span = (end - start) * 1e-3;
  for (size_t j = 0; j < size; ++j) {
    double share = total > 0 ? span * weights[j] / total : span / size;
    lastStepTimes[first + j] = {at, share};
    at += share;
  }
}

int64_t Executor::padKernel(size_t index, bool group, int64_t startNs,
                            int64_t endNs) {
  const Instruction &inst = (*program)[index];
  bool communication = inst.has(kCollective) || inst.has(kPointToPoint) ||
                       inst.has(kAsyncWait) || inst.has(kCopyStart) ||
                       inst.has(kCopyWait);
  if (computeScale <= 1 || communication)
    return endNs;
  // Padding relative to the kernel's time in the same run would slow it by
  // more than computeScale: a padded kernel runs slower than an unpadded one
  // (on the 2-core Intel machine of bench/sim.md's session 8 runs the
  // memory-bound kernels by 24-43%, matmul by 8.5%), so the scale applies to
  // the time measured before padding started.
  Unslowed &kernel = unslowed[group ? program->size() + index : index];
  if (kernel.runs < kEmulateUnslowedRuns) {
    if (kernel.runs++ > 0)
      kernel.samplesNs.push_back(static_cast<double>(endNs - startNs));
    if (kernel.runs == kEmulateUnslowedRuns)
      kernel.medianNs = median(std::move(kernel.samplesNs));
    return endNs;
  }
  int64_t deadline =
      startNs + static_cast<int64_t>(computeScale * kernel.medianNs);
  // Spin, yielding the core: the program thread waits as it would for a
  // slower device, and the core serves the rank's other threads meanwhile
  // (the MPI progress thread moving overlapped all-reduces: a plain spin
  // kept it off the core, 18-20 against 16 ms for the overlapped
  // data-parallel step at compute 2x). A sleep wakes up late on a loaded
  // machine (milliseconds when other processes take the core meanwhile)
  // and measured slower still (18 ms).
  int64_t now = steadyNowNs();
  while (now < deadline) {
    std::this_thread::yield();
    now = steadyNowNs();
  }
  return now;
}

Status Executor::runStep(int64_t step, float &loss, StepPart part) {
  Status status = runStepPart(step, loss, part);
  if (!status.ok() || !carryOver)
    return status;
  if (part == StepPart::All || part == StepPart::Update)
    inFlight = true;
  else if (part == StepPart::Drain)
    inFlight = false;
  return status;
}

Status Executor::drain(int64_t step) {
  if (!inFlight)
    return Status::success();
  if (Status status = keepInFlight(); !status.ok())
    return status;
  float unused = 0;
  return runStep(step, unused, StepPart::Drain);
}

Status Executor::keepInFlight() {
  if (Status status = syncToHost(); !status.ok())
    return status;
  flight.clear();
  // What the drain can change: the parameters and states this rank's
  // program updates in place (its stage's; not the carried values).
  for (int64_t buffer : updatedInPlace(*program)) {
    if (plan.isCarry(buffer))
      continue;
    const Tensor &t = tensors[buffer];
    const char *bytes = static_cast<const char *>(t.data);
    flight[buffer].assign(bytes, bytes + t.desc.bytes());
  }
  return Status::success();
}

std::vector<int64_t> Executor::ownCarries() const {
  std::vector<int64_t> own;
  for (int64_t buffer : updatedInPlace(*program))
    if (plan.isCarry(buffer))
      own.push_back(buffer);
  return own;
}

void Executor::resumeInFlight() {
  for (const auto &[buffer, bytes] : flight)
    std::memcpy(tensors[buffer].data, bytes.data(), bytes.size());
  flight.clear();
  inFlight = carryOver;
  markHostModified();
}

/// Whether `part` of a step runs `inst` (`inFlight`: the previous step's
/// micro-batches wait for their backward passes).
static bool runsIn(const Instruction &inst, Executor::StepPart part,
                   bool inFlight) {
  using StepPart = Executor::StepPart;
  // Without a previous step in flight its micro-batches do not exist.
  if (part == StepPart::Drain)
    return inst.previousStep && inFlight;
  if (inst.previousStep && !inFlight)
    return false;
  Phase phase = inst.phase;
  bool wait = inst.has(kAsyncWait);
  switch (part) {
  case StepPart::All:
    return true;
  case StepPart::Gradients:
    return phase != Phase::Update && !wait;
  case StepPart::Apply:
    return phase == Phase::Update || wait;
  case StepPart::Forward:
    return phase != Phase::Update && !isBackwardPhase(phase);
  case StepPart::ForwardBackward:
    return phase != Phase::Update;
  case StepPart::Update:
    return phase == Phase::Update;
  case StepPart::Drain:
    break;
  }
  return true;
}

Status Executor::runStepPart(int64_t step, float &loss, StepPart part) {
  if (const Input *stepInput = plan.findInput(InputRole::Step))
    tensors[stepInput->buffer].i32()[0] = static_cast<int32_t>(step);
  const std::vector<Instruction> &program = *this->program;
  std::vector<bool> selected(program.size());
  for (size_t i = 0; i < program.size(); ++i)
    selected[i] = runsIn(program[i], part, inFlight);
  // The injected straggler sleeps before the first backward instruction.
  size_t delayAt = program.size();
  double delayMs = backwardDelayMs;
  for (size_t i = 0; i < program.size() && delayMs > 0; ++i)
    if (selected[i] && isBackwardPhase(program[i].phase)) {
      delayAt = i;
      backwardDelayMs = 0;
      break;
    }
  auto delay = [delayAt, delayMs](size_t i) {
    if (i == delayAt)
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(delayMs));
  };
  if (compression)
    compression->seed = seed * 0x100000001B3ull + static_cast<uint64_t>(step);
  if (backend) {
    Status status = runOnDevice(step, loss, selected, delay);
    if (compression)
      compression->endStep();
    return status;
  }
  // A failed step may have left transfers in flight: finish them first.
  for (auto &[bucket, transfer] : context.buckets) {
    if (transfer.request)
      (void)transfer.request->wait();
    transfer.request.reset();
    transfer.inFlight = false;
  }
  context.spans.clear();
  (void)finishSends();
  if (copies) {
    (void)copies->finishAll();
    (void)copies->takeSpans();
  }
  lastStepCopies.clear();
  std::vector<Tensor> inputs, outputs;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    if (!selected[i]) {
      // Not run, but the sends in flight complete here as they would (the
      // buffers they read are free for reuse after it: Liveness.h).
      if (inst.waitsForSends() && !context.pendingSends.empty())
        if (Status sent = finishSends(); !sent.ok())
          return Status::failure("step " + std::to_string(step) + ": " +
                                 sent.message());
      continue;
    }
    Status status = checkIndexOperands(i);
    if (!status.ok())
      return Status::failure("step " + std::to_string(step) + ": " +
                             status.message());
    inputs.clear();
    outputs.clear();
    for (int64_t id : inst.in)
      inputs.push_back(tensors[id]);
    for (int64_t id : inst.out)
      outputs.push_back(tensors[id]);
    delay(i);
    // A send may still read a buffer that an update is about to overwrite.
    if (inst.waitsForSends() && !context.pendingSends.empty())
      if (Status sent = finishSends(); !sent.ok())
        return Status::failure("step " + std::to_string(step) +
                               ": instruction #" + std::to_string(i) + " (" +
                               inst.name() + "): " + sent.message());
    // A multi-tensor group runs as one kernel when all of it is selected
    // (its members are consecutive, so their inputs are all ready now).
    size_t size = groupRuns[i];
    if (size > 1 && inst.kernel->runGroup &&
        std::all_of(selected.begin() + i, selected.begin() + i + size,
                    [](bool s) { return s; })) {
      try {
        runGroup(i, size);
      } catch (const std::exception &e) {
        return Status::failure("step " + std::to_string(step) +
                               ": instruction #" + std::to_string(i) + " (" +
                               inst.name() + ", a multi-tensor group of " +
                               std::to_string(size) + "): " + e.what());
      }
      i += size - 1;
      continue;
    }
    int64_t start = steadyNowNs();
    try {
      inst.kernel->run(context, inputs, outputs, inst.attrs);
    } catch (const std::exception &e) {
      return Status::failure("step " + std::to_string(step) +
                             ": instruction #" + std::to_string(i) + " (" +
                             inst.name() + "): " + e.what());
    } catch (...) {
      return Status::failure("step " + std::to_string(step) +
                             ": instruction #" + std::to_string(i) + " (" +
                             inst.name() + "): the kernel failed");
    }
    int64_t end = padKernel(i, /*group=*/false, start, steadyNowNs());
    lastStepTimes[i] = {(start - originNs) * 1e-3, (end - start) * 1e-3};
    // Note when bucket transfers in flight complete (for traces).
    for (auto &[bucket, transfer] : context.buckets)
      if (transfer.inFlight && transfer.doneNs == 0 &&
          (!transfer.request || transfer.request->test())) {
        int64_t done = transfer.request ? transfer.request->completedNs() : 0;
        transfer.doneNs = done > 0 ? done : steadyNowNs();
      }
  }
  if (Status sent = finishSends(); !sent.ok())
    return Status::failure("step " + std::to_string(step) + ": " +
                           sent.message());
  if (copies) {
    // Every copy of the step is complete before it ends.
    Status copied = copies->finishAll();
    lastStepCopies = copies->takeSpans();
    if (!copied.ok())
      return Status::failure("step " + std::to_string(step) + ": " +
                             copied.message());
  }
  if (compression)
    compression->endStep();
  loss = tensors[plan.loss].f32()[0];
  return Status::success();
}

std::vector<Executor::CopyTime> Executor::getLastStepCopies() const {
  std::vector<CopyTime> times;
  for (const CopySpan &span : lastStepCopies)
    times.push_back({span.name, span.slot, span.bytes,
                     (span.startNs - originNs) * 1e-3,
                     (span.endNs - span.startNs) * 1e-3});
  return times;
}

std::vector<Executor::TransferTime> Executor::getLastStepTransfers() const {
  std::vector<TransferTime> times;
  for (const TransferSpan &span : context.spans)
    times.push_back({span.bucket, span.bytes, (span.startNs - originNs) * 1e-3,
                     (span.doneNs - span.startNs) * 1e-3});
  return times;
}

Status Executor::runOnDevice(int64_t step, float &loss,
                             const std::vector<bool> &included,
                             const std::function<void(size_t)> &delay) {
  auto fail = [step](const Status &status) {
    return Status::failure("step " + std::to_string(step) + ": " +
                           status.message());
  };
  for (size_t i = 0; i < included.size(); ++i)
    if (included[i])
      if (Status status = checkIndexOperands(i); !status.ok())
        return fail(status);
  if (hostStale) {
    if (Status status = backend->upload(stateBuffers); !status.ok())
      return fail(status);
    hostStale = false;
  }
  if (Status status = backend->upload(inputBuffers); !status.ok())
    return fail(status);
  for (size_t i = 0; i < included.size(); ++i) {
    if (!included[i]) {
      if (Status status = backend->skip(i); !status.ok())
        return fail(status);
      continue;
    }
    delay(i);
    if (Status status = backend->enqueue(i); !status.ok())
      return fail(status);
  }
  if (Status status = backend->download({plan.loss}); !status.ok())
    return fail(status);
  if (Status status = backend->finish(lastStepTimes, originNs); !status.ok())
    return fail(status);
  loss = tensors[plan.loss].f32()[0];
  return Status::success();
}

std::vector<Tensor> rankGradients(const Executor &executor) {
  std::set<int64_t> updated;
  for (const Instruction &inst : executor.getProgram())
    if (inst.has(kInPlace))
      updated.insert(inst.out.begin(), inst.out.end());
  std::vector<Tensor> grads;
  for (const Parameter &param : executor.getPlan().parameters)
    if (param.grad >= 0 && updated.count(param.buffer))
      grads.push_back(executor.getTensor(param.grad));
  return grads;
}

} // namespace strata::rt
