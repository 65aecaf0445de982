//===- Executor.cpp - Runs a plan's program on the CPU --------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Executor.h"

#include "strata-rt/Init.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include <sys/mman.h>

namespace strata::rt {

static int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Executor::Arena::~Arena() {
  if (base)
    ::munmap(base, size);
}

Executor::Executor(Plan planIn, const ExecutorOptions &options)
    : plan(std::move(planIn)), pool(new ThreadPool(options.threads)),
      context{*pool, options.gemm, options.comm}, originNs(nowNs()) {}

Executor::~Executor() = default;

Status Executor::create(Plan plan, const ExecutorOptions &options,
                        std::unique_ptr<Executor> &executor) {
  executor.reset();
  // An anonymous mapping is page aligned (so 64-byte aligned) and reads as
  // zeros, so every run starts from the same bytes; its pages are committed
  // only when a kernel touches them.
  int64_t arenaBytes = plan.ranks.at(0).arenaBytes;
  size_t size = static_cast<size_t>(std::max<int64_t>(arenaBytes, 1));
  void *memory = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED)
    return Status::failure(plan.path + ": cannot allocate the arena of " +
                           std::to_string(arenaBytes) +
                           " bytes: " + std::strerror(errno));
  auto arena = std::make_unique<Arena>();
  arena->base = memory;
  arena->size = size;

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
  result->lastStepTimes.resize(result->plan.ranks[0].program.size());
  executor = std::move(result);
  return Status::success();
}

void Executor::initialize(uint64_t seed) {
  for (const Parameter &param : plan.parameters)
    initializeTensor(tensors[param.buffer], param.init, seed, param.name,
                     pool.get());
  for (const State &state : plan.states)
    initializeTensor(tensors[state.buffer], state.init, seed, state.name,
                     pool.get());
}

namespace {
/// An i32 operand whose values index a dimension of another operand.
struct IndexOperand {
  /// in[ids] holds the indices.
  int ids;
  /// They must lie in [0, dim) of in[tensor] (or out[tensor] when `output`).
  int tensor;
  bool output;
  int64_t dim;
};
} // namespace

/// The index operands the kernels rely on being in range.
static const IndexOperand *indexOperand(const std::string &op) {
  static const IndexOperand embedding{1, 0, false, 0};
  static const IndexOperand embeddingGrad{1, 0, true, 0};
  static const IndexOperand labels{1, 0, false, -1};
  if (op == "embedding")
    return &embedding;
  if (op == "embedding_grad")
    return &embeddingGrad;
  if (op == "softmax_cross_entropy" || op == "softmax_cross_entropy_grad")
    return &labels;
  return nullptr;
}

Status Executor::checkIndexOperands(size_t index) const {
  const Instruction &inst = plan.ranks[0].program[index];
  const IndexOperand *operand = indexOperand(inst.op);
  if (!operand)
    return Status::success();
  const Tensor &ids = tensors[inst.in[operand->ids]];
  const Tensor &bounded = tensors[operand->output ? inst.out[operand->tensor]
                                                  : inst.in[operand->tensor]];
  if (ids.desc.dtype != DType::I32 || bounded.rank() == 0)
    return Status::success();
  int64_t limit = bounded.dim(operand->dim);
  const int32_t *values = ids.i32();
  for (int64_t i = 0, e = ids.numel(); i < e; ++i) {
    if (values[i] >= 0 && values[i] < limit)
      continue;
    return Status::failure(
        "instruction #" + std::to_string(index) + " (" + inst.op + "): in[" +
        std::to_string(operand->ids) + "] (buffer \"" +
        plan.buffers[inst.in[operand->ids]].name + "\") element " +
        std::to_string(i) + " is " + std::to_string(values[i]) +
        ", outside [0, " + std::to_string(limit) + ")");
  }
  return Status::success();
}

Status Executor::runStep(int64_t step, float &loss) {
  return runStep(step, loss, StepPart::All);
}

Status Executor::runStep(int64_t step, float &loss, StepPart part) {
  auto included = [part](const std::string &phase) {
    if (part == StepPart::All)
      return true;
    if (phase == "update")
      return false;
    return part == StepPart::ForwardBackward || phase != "backward";
  };
  if (const Input *stepInput = plan.findInput(InputRole::Step))
    tensors[stepInput->buffer].i32()[0] = static_cast<int32_t>(step);
  const std::vector<Instruction> &program = plan.ranks[0].program;
  std::vector<Tensor> inputs, outputs;
  for (size_t i = 0; i < program.size(); ++i) {
    const Instruction &inst = program[i];
    if (!included(inst.phase))
      continue;
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
    int64_t start = nowNs();
    try {
      inst.kernel->run(context, inputs, outputs, inst.attrs);
    } catch (const std::exception &e) {
      return Status::failure("step " + std::to_string(step) +
                             ": instruction #" + std::to_string(i) + " (" +
                             inst.op + "): " + e.what());
    } catch (...) {
      return Status::failure("step " + std::to_string(step) +
                             ": instruction #" + std::to_string(i) + " (" +
                             inst.op + "): the kernel failed");
    }
    int64_t end = nowNs();
    lastStepTimes[i] = {(start - originNs) * 1e-3, (end - start) * 1e-3};
  }
  loss = tensors[plan.loss].f32()[0];
  return Status::success();
}

} // namespace strata::rt
