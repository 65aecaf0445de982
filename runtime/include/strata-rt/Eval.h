//===- Eval.h - Evaluation on held-out labelled arrays -------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `strata-run --eval-data FILE` (or `--eval-fraction F` of the --data file)
// evaluates the model every `--eval-every K` steps and after the last one: the
// forward part of the step (no backward, no update) over every whole batch of
// the evaluation samples, in file order, giving the mean loss and, for a
// classifier, top-1 and top-5 accuracy from the logits the cross-entropy
// reads. CPU runs without pipeline stages (data-parallel replicas each
// evaluate every batch; rank 0 reports), for now.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_EVAL_H
#define STRATA_RT_EVAL_H

#include "strata-rt/Safetensors.h"
#include "strata-rt/Support.h"

#include <cstdint>
#include <memory>
#include <string>

namespace strata::rt {

class Executor;

struct EvalResult {
  double loss = 0;
  /// -1 when the plan is not a classifier.
  double top1 = -1;
  /// -1 unless the classifier has more than 5 classes.
  double top5 = -1;
  int64_t samples = 0;
};

class Evaluator {
public:
  /// Evaluates on `inputs` and `labels` (rows as the plan's data and labels
  /// inputs); Invalid when they do not fit the plan or hold less than one
  /// batch.
  static Status create(const Executor &executor, StoredTensor inputs,
                       StoredTensor labels, const std::string &what,
                       std::unique_ptr<Evaluator> &evaluator);
  /// Runs the forward part over every whole batch (step number `step` is
  /// what the plan's step input sees).
  Status run(Executor &executor, int64_t step, EvalResult &result) const;
  const std::string &describe() const { return description; }

private:
  Evaluator() = default;
  StoredTensor inputs, labels;
  int64_t dataBuffer = -1, labelsBuffer = -1, logitsBuffer = -1;
  int64_t batch = 0, batches = 0;
  std::string description;
};

/// Splits the last `fraction` (0 < fraction < 1) of the rows of `inputs` and
/// `labels` off into `evalInputs` and `evalLabels`.
Status holdOut(StoredTensor &inputs, StoredTensor &labels, double fraction,
               StoredTensor &evalInputs, StoredTensor &evalLabels);

} // namespace strata::rt

#endif // STRATA_RT_EVAL_H
