//===- Eval.cpp - Evaluation on held-out labelled arrays ------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Eval.h"

#include "strata-rt/Data.h"
#include "strata-rt/Executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace strata::rt {

namespace {

/// The logits of the cross-entropy that reads the labels buffer, or -1.
int64_t findLogits(const std::vector<Instruction> &program, int64_t labels) {
  for (const Instruction &inst : program) {
    if (!inst.has(kIndexOperands) || inst.has(kInPlace))
      continue;
    const IndexOperandSpec &index = inst.info().indexOperand;
    if (!index.output && index.dim == -1 && inst.in.at(index.ids) == labels)
      return inst.in.at(index.tensor);
  }
  return -1;
}

/// Rows [begin, end) of `tensor`.
StoredTensor rows(const StoredTensor &tensor, int64_t begin, int64_t end) {
  StoredTensor out;
  out.name = tensor.name;
  out.desc = tensor.desc;
  out.desc.shape[0] = end - begin;
  size_t row = tensor.bytes.size() / static_cast<size_t>(tensor.desc.shape[0]);
  out.bytes.assign(tensor.bytes.begin() + begin * row,
                   tensor.bytes.begin() + end * row);
  return out;
}

} // namespace

Status holdOut(StoredTensor &inputs, StoredTensor &labels, double fraction,
               StoredTensor &evalInputs, StoredTensor &evalLabels) {
  int64_t n = inputs.desc.shape.empty() ? 0 : inputs.desc.shape[0];
  auto held = static_cast<int64_t>(std::floor(fraction * n));
  if (!(fraction > 0 && fraction < 1) || held < 1 || held >= n)
    return Status::usage("--eval-fraction " + std::to_string(fraction) +
                         " of " + std::to_string(n) +
                         " samples leaves no training or no evaluation "
                         "samples");
  evalInputs = rows(inputs, n - held, n);
  evalLabels = rows(labels, n - held, n);
  inputs = rows(inputs, 0, n - held);
  labels = rows(labels, 0, n - held);
  return Status::success();
}

Status Evaluator::create(const Executor &executor, StoredTensor inputs,
                         StoredTensor labels, const std::string &what,
                         std::unique_ptr<Evaluator> &evaluator) {
  const Plan &plan = executor.getPlan();
  const Input *data = plan.findInput(InputRole::Data);
  const Input *target = plan.findInput(InputRole::Labels);
  if (!data || !target || plan.buffers[data->buffer].desc.shape.empty())
    return Status::usage("evaluation needs a plan with data and labels "
                         "inputs that have a batch dimension");
  const Buffer &x = plan.buffers[data->buffer];
  const Buffer &y = plan.buffers[target->buffer];
  if (Status s = checkArrayRows(what, &inputs, "inputs", x, 1); !s.ok())
    return s;
  if (Status s = checkArrayRows(what, &labels, "labels", y, 1); !s.ok())
    return s;
  if (Status s = checkArrayLabels(what, plan, y, labels); !s.ok())
    return s;
  std::unique_ptr<Evaluator> e(new Evaluator());
  e->batch = x.desc.shape[0];
  e->batches = std::min(inputs.desc.shape[0], labels.desc.shape[0]) / e->batch;
  if (e->batches < 1)
    return Status::invalid(what + ": fewer evaluation samples (" +
                           std::to_string(inputs.desc.shape[0]) +
                           ") than one batch (" + std::to_string(e->batch) +
                           ")");
  e->dataBuffer = x.id;
  e->labelsBuffer = y.id;
  e->logitsBuffer =
      y.desc.dtype == DType::I32 ? findLogits(executor.getProgram(), y.id) : -1;
  e->inputs = std::move(inputs);
  e->labels = std::move(labels);
  e->description = what + ": " + std::to_string(e->batches * e->batch) +
                   " samples in " + std::to_string(e->batches) + " batches";
  evaluator = std::move(e);
  return Status::success();
}

Status Evaluator::run(Executor &executor, int64_t step,
                      EvalResult &result) const {
  result = EvalResult();
  const std::vector<Tensor> &tensors = executor.getTensors();
  const Tensor &x = tensors[dataBuffer], &y = tensors[labelsBuffer];
  size_t xBytes = static_cast<size_t>(x.desc.bytes());
  size_t yBytes = static_cast<size_t>(y.desc.bytes());
  double lossSum = 0;
  int64_t top1 = 0, top5 = 0;
  // Inference mode (batch norm with its running statistics) for these
  // forward passes only.
  struct EvaluationMode {
    Executor &executor;
    bool before;
    explicit EvaluationMode(Executor &e)
        : executor(e), before(e.isEvaluation()) {
      e.setEvaluation(true);
    }
    ~EvaluationMode() { executor.setEvaluation(before); }
  } mode(executor);
  for (int64_t b = 0; b < batches; ++b) {
    std::memcpy(x.data, inputs.bytes.data() + b * xBytes, xBytes);
    std::memcpy(y.data, labels.bytes.data() + b * yBytes, yBytes);
    executor.markHostModified();
    float loss = 0;
    if (Status s = executor.runStep(step, loss, Executor::StepPart::Forward);
        !s.ok())
      return Status::failure("evaluation: " + s.message());
    lossSum += loss;
    if (logitsBuffer < 0)
      continue;
    const Tensor &logits = tensors[logitsBuffer];
    int64_t classes = logits.dim(-1), rowsPerBatch = logits.numel() / classes;
    for (int64_t r = 0; r < rowsPerBatch; ++r) {
      const float *row = logits.f32() + r * classes;
      int32_t label = y.i32()[r];
      int64_t above = 0;
      for (int64_t c = 0; c < classes; ++c)
        above += row[c] > row[label];
      top1 += above == 0;
      top5 += above < 5;
    }
    result.samples += rowsPerBatch;
  }
  result.loss = lossSum / static_cast<double>(batches);
  if (logitsBuffer >= 0 && result.samples > 0) {
    result.top1 = static_cast<double>(top1) / result.samples;
    if (tensors[logitsBuffer].dim(-1) > 5)
      result.top5 = static_cast<double>(top5) / result.samples;
  } else {
    result.samples = batches * batch;
  }
  return Status::success();
}

} // namespace strata::rt
