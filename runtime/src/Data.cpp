//===- Data.cpp - Training batches for a plan's inputs --------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Data.h"

#include "strata-rt/Init.h"
#include "strata-rt/Safetensors.h"
#include "strata-rt/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

namespace strata::rt {

DataSource::~DataSource() = default;

namespace {

/// At most this many pooled feature groups feed the teacher.
constexpr int64_t kMaxTeacherGroups = 256;
/// Strides of the synthetic arithmetic-progression sequences.
constexpr int64_t kStrides[] = {1, 2, 3, 5};

/// The generator key of `stream` at `step`.
uint64_t stepKey(const char *stream, int64_t step) {
  return fnv1a64(std::string(stream) + "." + std::to_string(step));
}

uint64_t streamKey(const char *stream) { return fnv1a64(stream); }

void forRange(ThreadPool *pool, int64_t n,
              const std::function<void(int64_t, int64_t)> &fn) {
  if (pool && n > 1)
    pool->parallelFor(n, fn);
  else
    fn(0, n);
}

/// How many distinct values the i32 input `buffer` may hold: the size of the
/// dimension that the first instruction indexing with it (directly, or with
/// one of the micro-batches a kBatchSlice op cuts from it) bounds its values
/// by (PlanOps.def's index operands: the vocabulary of an embedding, the
/// classes of a cross-entropy); 0 when none does.
int64_t indexBound(const Plan &plan, int64_t buffer) {
  std::set<int64_t> views{buffer};
  for (const RankPlan &rank : plan.ranks)
    if (rank.programOf == rank.rank)
      for (const Instruction &inst : rank.program)
        if (inst.has(kBatchSlice) && inst.in.at(0) == buffer)
          views.insert(inst.out.at(0));
  for (const RankPlan &rank : plan.ranks) {
    if (rank.programOf != rank.rank)
      continue;
    for (const Instruction &inst : rank.program) {
      if (!inst.has(kIndexOperands))
        continue;
      const IndexOperandSpec &index = inst.info().indexOperand;
      if (index.output || !views.count(inst.in.at(index.ids)))
        continue;
      const Shape &bounded = plan.buffers[inst.in.at(index.tensor)].desc.shape;
      if (bounded.empty())
        return 0;
      int64_t rank = static_cast<int64_t>(bounded.size());
      return bounded[index.dim < 0 ? index.dim + rank : index.dim];
    }
  }
  return 0;
}

/// Classes of the i32 labels `buffer` (the last dim of the logits of the
/// cross-entropy that reads them); 0 when none does.
int64_t classCount(const Plan &plan, int64_t labels) {
  return indexBound(plan, labels);
}

/// Rows of the embedding table that `tokens` index; 0 when none does.
int64_t vocabularySize(const Plan &plan, int64_t tokens) {
  return indexBound(plan, tokens);
}

/// Leading dim and per-sample element count of `buffer`.
Status batchShape(const Plan &plan, const Buffer &buffer, int64_t &batch,
                  int64_t &perSample) {
  if (buffer.desc.shape.empty())
    return Status::invalid(plan.path + ": input \"" + buffer.name +
                           "\" needs a leading batch dimension, got " +
                           formatShape(buffer.desc.shape));
  batch = buffer.desc.shape[0];
  perSample = batch == 0 ? 0 : buffer.desc.numel() / batch;
  return Status::success();
}

/// Sets where in the global batch a feature source starts.
template <typename T>
T *withFirstSample(T *source, const DataOptions &options) {
  source->firstSample = options.firstSample;
  return source;
}

/// Plans without a data input: nothing to fill.
class NoData final : public DataSource {
public:
  NoData() { description = "no data input"; }
  void fill(int64_t, const std::vector<Tensor> &, ThreadPool *) const override {
  }
};

/// f32 features; i32 class labels [B] or f32 regression targets [B, ...].
class FeatureData final : public DataSource {
public:
  FeatureData(uint64_t seed, int64_t data, int64_t labels, int64_t batch,
              int64_t features, int64_t outputs, bool regression)
      : seed(seed), data(data), labels(labels), batch(batch),
        features(features), outputs(outputs), regression(regression) {
    samplesPerStep = batch;
    groups = std::max<int64_t>(1, std::min(features, kMaxTeacherGroups));
    if (labels >= 0) {
      uint64_t key = streamKey("strata.data.teacher");
      teacher.resize(static_cast<size_t>(groups * outputs));
      for (size_t i = 0; i < teacher.size(); ++i)
        teacher[i] = randomNormal(seed, key, i);
    }
    description = "synthetic " +
                  std::string(labels < 0   ? "features"
                              : regression ? "regression"
                                           : "classification") +
                  ": " + std::to_string(features) + " features per sample";
    if (labels >= 0)
      description += ", " + std::to_string(outputs) +
                     (regression ? " targets" : " classes");
  }

  void fill(int64_t step, const std::vector<Tensor> &buffers,
            ThreadPool *pool) const override {
    float *x = buffers[data].f32();
    uint64_t key = stepKey("strata.data.features", step);
    forRange(pool, batch * features, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        x[i] = static_cast<float>(
            randomNormal(seed, key, firstSample * features + i));
    });
    if (labels < 0)
      return;
    const Tensor &y = buffers[labels];
    forRange(pool, batch, [&](int64_t begin, int64_t end) {
      std::vector<double> scores(static_cast<size_t>(outputs));
      for (int64_t b = begin; b < end; ++b) {
        teacherScores(x + b * features, scores);
        if (regression)
          for (int64_t o = 0; o < outputs; ++o)
            y.f32()[b * outputs + o] = static_cast<float>(
                std::tanh(scores[o] / std::sqrt(static_cast<double>(groups))));
        else
          y.i32()[b] = static_cast<int32_t>(
              std::max_element(scores.begin(), scores.end()) - scores.begin());
      }
    });
  }

private:
  /// scores[o] = sum_g z_g T[g, o], z_g the scaled sum of feature group g.
  void teacherScores(const float *x, std::vector<double> &scores) const {
    std::fill(scores.begin(), scores.end(), 0.0);
    for (int64_t g = 0; g < groups; ++g) {
      int64_t begin = g * features / groups, end = (g + 1) * features / groups;
      double z = 0;
      for (int64_t d = begin; d < end; ++d)
        z += x[d];
      z /= std::sqrt(static_cast<double>(std::max<int64_t>(end - begin, 1)));
      for (int64_t o = 0; o < outputs; ++o)
        scores[o] += z * teacher[g * outputs + o];
    }
  }

public:
  /// Global index of the first sample (see DataOptions::firstSample).
  int64_t firstSample = 0;

private:
  uint64_t seed;
  int64_t data, labels, batch, features, outputs;
  bool regression;
  int64_t groups = 1;
  std::vector<double> teacher;
};

/// i32 tokens [B, S]: language modelling (labels [B, S]), sequence
/// classification (labels [B]) or tokens alone.
class TokenData final : public DataSource {
public:
  enum class Task { TokensOnly, LanguageModel, Classification };

  TokenData(uint64_t seed, int64_t data, int64_t labels, int64_t batch,
            int64_t length, int64_t vocab, int64_t classes, Task task,
            std::string text, const std::string &textPath)
      : seed(seed), data(data), labels(labels), batch(batch), length(length),
        vocab(vocab), classes(classes), task(task), text(std::move(text)) {
    samplesPerStep = batch;
    tokensPerStep = batch * length;
    if (task == Task::LanguageModel && !textPath.empty())
      description = "byte-level text from " + textPath + " (" +
                    std::to_string(this->text.size()) + " bytes)";
    else if (task == Task::LanguageModel)
      description = "synthetic language model: arithmetic sequences modulo " +
                    std::to_string(vocab);
    else if (task == Task::Classification)
      description =
          "synthetic sequence classification: " + std::to_string(classes) +
          " classes, vocabulary " + std::to_string(vocab);
    else
      description = "synthetic tokens: vocabulary " + std::to_string(vocab);
  }

  void fill(int64_t step, const std::vector<Tensor> &buffers,
            ThreadPool *pool) const override {
    int32_t *tokens = buffers[data].i32();
    int32_t *next = labels >= 0 ? buffers[labels].i32() : nullptr;
    forRange(pool, batch, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        int32_t *row = tokens + b * length;
        // Random streams are keyed by the sample's index in the global batch.
        int64_t g = firstSample + b;
        if (task != Task::LanguageModel) {
          uniformTokens(step, g, row);
          if (task == Task::Classification)
            next[b] = classify(row);
        } else if (!text.empty()) {
          textSequence(step, g, row, next + b * length);
        } else {
          progression(step, g, row, next + b * length);
        }
      }
    });
  }

private:
  void uniformTokens(int64_t step, int64_t b, int32_t *row) const {
    uint64_t key = stepKey("strata.data.tokens", step);
    for (int64_t s = 0; s < length; ++s)
      row[s] = static_cast<int32_t>(randomBits(seed, key, b * length + s) %
                                    static_cast<uint64_t>(vocab));
  }

  int32_t classify(const int32_t *row) const {
    uint64_t key = streamKey("strata.data.teacher");
    std::vector<double> scores(static_cast<size_t>(classes), 0.0);
    for (int64_t s = 0; s < length; ++s)
      for (int64_t c = 0; c < classes; ++c)
        scores[c] += randomNormal(seed, key, row[s] * classes + c);
    return static_cast<int32_t>(std::max_element(scores.begin(), scores.end()) -
                                scores.begin());
  }

  void progression(int64_t step, int64_t b, int32_t *row, int32_t *next) const {
    uint64_t key = stepKey("strata.data.sequences", step);
    uint64_t v = static_cast<uint64_t>(vocab);
    uint64_t start = randomBits(seed, key, 2 * b) % v;
    uint64_t stride = kStrides[randomBits(seed, key, 2 * b + 1) % 4];
    for (int64_t s = 0; s < length; ++s) {
      row[s] = static_cast<int32_t>((start + s * stride) % v);
      next[s] = static_cast<int32_t>((start + (s + 1) * stride) % v);
    }
  }

  void textSequence(int64_t step, int64_t b, int32_t *row,
                    int32_t *next) const {
    uint64_t key = stepKey("strata.data.offsets", step);
    uint64_t starts = text.size() - static_cast<uint64_t>(length);
    uint64_t offset = randomBits(seed, key, b) % starts;
    const auto *bytes =
        reinterpret_cast<const unsigned char *>(text.data()) + offset;
    for (int64_t s = 0; s < length; ++s) {
      row[s] = bytes[s];
      next[s] = bytes[s + 1];
    }
  }

public:
  /// Global index of the first sample (see DataOptions::firstSample).
  int64_t firstSample = 0;

private:
  uint64_t seed;
  int64_t data, labels, batch, length, vocab, classes;
  Task task;
  std::string text;
};

Status createFeatureData(const Plan &plan, const DataOptions &options,
                         const Buffer &data, const Buffer *labels,
                         std::unique_ptr<DataSource> &source) {
  int64_t batch = 0, features = 0;
  Status status = batchShape(plan, data, batch, features);
  if (!status.ok())
    return status;
  if (!labels) {
    source.reset(withFirstSample(
        new FeatureData(options.seed, data.id, -1, batch, features, 0, false),
        options));
    return Status::success();
  }
  bool regression = labels->desc.dtype == DType::F32;
  int64_t outputs = 0;
  if (regression) {
    if (labels->desc.shape.empty() || labels->desc.shape[0] != batch)
      return Status::invalid(plan.path +
                             ": synthetic regression needs f32 labels [" +
                             std::to_string(batch) + ", ...], got " +
                             formatShape(labels->desc.shape));
    outputs = batch == 0 ? 0 : labels->desc.numel() / batch;
  } else {
    if (labels->desc.shape != Shape{batch})
      return Status::invalid(
          plan.path + ": synthetic classification needs i32 labels [" +
          std::to_string(batch) + "], got " + formatShape(labels->desc.shape));
    outputs = classCount(plan, labels->id);
    if (outputs <= 0)
      return Status::invalid(plan.path + ": cannot tell the number of "
                                         "classes: no softmax_cross_entropy "
                                         "reads the labels");
  }
  source.reset(
      withFirstSample(new FeatureData(options.seed, data.id, labels->id, batch,
                                      features, outputs, regression),
                      options));
  return Status::success();
}

Status createTokenData(const Plan &plan, const DataOptions &options,
                       const Buffer &data, const Buffer *labels,
                       std::unique_ptr<DataSource> &source) {
  int64_t batch = 0, length = 0;
  Status status = batchShape(plan, data, batch, length);
  if (!status.ok())
    return status;
  int64_t vocab = vocabularySize(plan, data.id);
  int64_t classes = labels && labels->desc.dtype == DType::I32
                        ? classCount(plan, labels->id)
                        : 0;
  TokenData::Task task = TokenData::Task::TokensOnly;
  if (labels) {
    if (labels->desc.dtype != DType::I32)
      return Status::invalid(plan.path + ": token data needs i32 labels");
    if (labels->desc.shape == data.desc.shape)
      task = TokenData::Task::LanguageModel;
    else if (labels->desc.shape == Shape{batch})
      task = TokenData::Task::Classification;
    else
      return Status::invalid(plan.path +
                             ": token labels must have the "
                             "tokens' shape " +
                             formatShape(data.desc.shape) + " or [" +
                             std::to_string(batch) + "], got " +
                             formatShape(labels->desc.shape));
    if (classes <= 0)
      return Status::invalid(plan.path + ": cannot tell the number of "
                                         "classes: no softmax_cross_entropy "
                                         "reads the labels");
  }
  // Language-model labels are tokens too, so both bounds apply.
  if (task == TokenData::Task::LanguageModel)
    vocab = vocab > 0 ? std::min(vocab, classes) : classes;
  if (vocab <= 0)
    return Status::invalid(plan.path + ": cannot tell the vocabulary size: "
                                       "no embedding reads the tokens");

  std::string text;
  if (!options.path.empty()) {
    if (task != TokenData::Task::LanguageModel)
      return Status::usage("--data needs a language model (i32 tokens and "
                           "labels of the same shape); " +
                           plan.path + " is not one");
    if (vocab < 256)
      return Status::invalid(options.path +
                             ": byte-level data needs a "
                             "vocabulary of at least 256, " +
                             plan.path + " has " + std::to_string(vocab));
    // Read once, at the start: the run trains on this snapshot, whatever
    // happens to the file afterwards.
    status = readFile(options.path, text, kMaxDataFileBytes);
    if (!status.ok())
      return status;
    if (text.size() < static_cast<size_t>(length) + 1)
      return Status::invalid(options.path + ": " + std::to_string(text.size()) +
                             " bytes is too short for sequences of " +
                             std::to_string(length) + " tokens (needs " +
                             std::to_string(length + 1) + ")");
  }
  auto *tokens = new TokenData(options.seed, data.id, labels ? labels->id : -1,
                               batch, length, vocab, classes, task,
                               std::move(text), options.path);
  tokens->firstSample = options.firstSample;
  source.reset(tokens);
  return Status::success();
}

/// Labelled arrays from a safetensors file (`inputs` [N, ...] and, for a
/// plan with labels, `labels` [N, ...]), shuffled per epoch with the run's
/// seed. A step reads one global batch (replicas x the plan's batch) of the
/// epoch's order and each replica its own slice, so every sample is read once
/// per epoch across replicas; the last N mod (global batch) samples of each
/// epoch's order are dropped.
class ArrayData final : public DataSource {
public:
  ArrayData(uint64_t seed, int64_t data, int64_t labels, int64_t batch,
            int64_t globalBatch, int64_t samples, StoredTensor inputs,
            StoredTensor targets, const std::string &path)
      : seed(seed), data(data), labels(labels), batch(batch),
        globalBatch(globalBatch), inputs(std::move(inputs)),
        targets(std::move(targets)), samples(samples) {
    stepsPerEpoch = samples / globalBatch;
    samplesPerStep = batch;
    int64_t dropped = samples - stepsPerEpoch * globalBatch;
    description = "arrays from " + path + ": " + std::to_string(samples) +
                  " samples, shuffled per epoch (" +
                  std::to_string(stepsPerEpoch) + " steps of " +
                  std::to_string(globalBatch) + "; " + std::to_string(dropped) +
                  " dropped per epoch)";
  }

  void fill(int64_t step, const std::vector<Tensor> &buffers,
            ThreadPool *) const override {
    int64_t epoch = (step - 1) / stepsPerEpoch;
    int64_t first = ((step - 1) % stepsPerEpoch) * globalBatch + firstSample;
    const std::vector<int64_t> &order = orderOf(epoch);
    copyRows(inputs, buffers[data], order, first);
    if (labels >= 0)
      copyRows(targets, buffers[labels], order, first);
  }

  /// The global index of this rank's first sample in a step's batch.
  int64_t firstSample = 0;

private:
  /// A permutation of the samples for `epoch` (Fisher-Yates over the run's
  /// seed); the last one is kept.
  const std::vector<int64_t> &orderOf(int64_t epoch) const {
    if (epoch == cachedEpoch)
      return order;
    order.resize(static_cast<size_t>(samples));
    for (int64_t i = 0; i < samples; ++i)
      order[i] = i;
    uint64_t key = stepKey("strata.data.epoch", epoch);
    for (int64_t i = samples - 1; i > 0; --i)
      std::swap(order[i], order[randomBits(seed, key, i) % (i + 1)]);
    cachedEpoch = epoch;
    return order;
  }

  void copyRows(const StoredTensor &from, const Tensor &to,
                const std::vector<int64_t> &order, int64_t first) const {
    size_t row = static_cast<size_t>(to.desc.bytes() / batch);
    auto *dst = static_cast<uint8_t *>(to.data);
    for (int64_t b = 0; b < batch; ++b)
      std::memcpy(dst + b * row, from.bytes.data() + order[first + b] * row,
                  row);
  }

  uint64_t seed;
  int64_t data, labels, batch, globalBatch;
  StoredTensor inputs, targets;
  /// The samples trained on (the first ones when some are held out).
  int64_t samples = 0, stepsPerEpoch = 1;
  mutable std::vector<int64_t> order;
  mutable int64_t cachedEpoch = -1;
};

Status createArrayData(const Plan &plan, const DataOptions &options,
                       const Buffer &data, const Buffer *labels,
                       std::unique_ptr<DataSource> &source) {
  SafetensorsFile read;
  if (!options.arrays)
    if (Status status = readArrayFile(options.path, read); !status.ok())
      return status;
  const SafetensorsFile &file = options.arrays ? *options.arrays : read;
  if (data.desc.shape.empty())
    return Status::invalid(plan.path + ": input \"" + data.name +
                           "\" needs a leading batch dimension");
  int64_t batch = data.desc.shape[0];
  int64_t globalBatch = batch * plan.replicas;
  const StoredTensor *inputs = file.find("inputs");
  const StoredTensor *targets = labels ? file.find("labels") : nullptr;
  if (Status s = checkArrayRows(options.path, inputs, "inputs", data, 1);
      !s.ok())
    return s;
  int64_t samples = inputs->desc.shape[0];
  if (samples < globalBatch)
    return Status::invalid(options.path + ": " + std::to_string(samples) +
                           " training samples, fewer than one global batch (" +
                           std::to_string(globalBatch) + ")");
  if (labels) {
    if (Status s = checkArrayRows(options.path, targets, "labels", *labels,
                                  globalBatch);
        !s.ok())
      return s;
    if (targets->desc.shape[0] != inputs->desc.shape[0])
      return Status::invalid(options.path + ": \"labels\" has " +
                             std::to_string(targets->desc.shape[0]) +
                             " samples but \"inputs\" " +
                             std::to_string(inputs->desc.shape[0]));
    if (Status s = checkArrayLabels(options.path, plan, *labels, *targets);
        !s.ok())
      return s;
  }
  auto *arrays = new ArrayData(
      options.seed, data.id, labels ? labels->id : -1, batch, globalBatch,
      samples, *inputs, targets ? *targets : StoredTensor(), options.path);
  source.reset(withFirstSample(arrays, options));
  return Status::success();
}

} // namespace

Status checkArrayRows(const std::string &path, const StoredTensor *tensor,
                      const char *name, const Buffer &like, int64_t minRows) {
  if (!tensor)
    return Status::invalid(path + ": no tensor named \"" + name + "\"");
  Shape sample(like.desc.shape.begin() + 1, like.desc.shape.end());
  const Shape &shape = tensor->desc.shape;
  if (tensor->desc.dtype != like.desc.dtype || shape.empty() ||
      Shape(shape.begin() + 1, shape.end()) != sample)
    return Status::invalid(
        path + ": \"" + name + "\" must be " + dtypeName(like.desc.dtype) +
        " [N" + (sample.empty() ? "" : ", ") +
        formatShape(sample).substr(1, formatShape(sample).size() - 2) +
        "] for the plan's input \"" + like.name + "\", got " +
        dtypeName(tensor->desc.dtype) + " " + formatShape(shape));
  if (shape[0] < minRows)
    return Status::invalid(path + ": \"" + name + "\" has " +
                           std::to_string(shape[0]) +
                           " samples, fewer than one global batch (" +
                           std::to_string(minRows) + ")");
  return Status::success();
}

Status checkArrayLabels(const std::string &path, const Plan &plan,
                        const Buffer &labels, const StoredTensor &tensor) {
  int64_t classes = classCount(plan, labels.id);
  if (tensor.desc.dtype != DType::I32 || classes <= 0)
    return Status::success();
  const auto *values = reinterpret_cast<const int32_t *>(tensor.bytes.data());
  for (int64_t i = 0, n = tensor.desc.numel(); i < n; ++i)
    if (values[i] < 0 || values[i] >= classes)
      return Status::invalid(path + ": labels[" + std::to_string(i) + "] is " +
                             std::to_string(values[i]) + ", outside [0, " +
                             std::to_string(classes) + ")");
  return Status::success();
}

Status DataSource::create(const Plan &plan, const DataOptions &options,
                          std::unique_ptr<DataSource> &source) {
  source.reset();
  const Input *dataInput = plan.findInput(InputRole::Data);
  const Input *labelsInput = plan.findInput(InputRole::Labels);
  if (!dataInput) {
    if (labelsInput)
      return Status::invalid(plan.path +
                             ": synthetic labels need a data input");
    if (!options.path.empty())
      return Status::usage("--data needs a plan with a data input");
    source.reset(new NoData());
    return Status::success();
  }
  const Buffer &data = plan.buffers[dataInput->buffer];
  const Buffer *labels =
      labelsInput ? &plan.buffers[labelsInput->buffer] : nullptr;
  if (isArrayFile(options.path))
    return createArrayData(plan, options, data, labels, source);
  if (data.desc.dtype == DType::I32)
    return createTokenData(plan, options, data, labels, source);
  if (!options.path.empty())
    return Status::usage("--data needs a language model (i32 tokens) for a "
                         "text file; " +
                         plan.path +
                         " has f32 data: give labelled arrays as a "
                         ".safetensors file (\"inputs\", \"labels\")");
  return createFeatureData(plan, options, data, labels, source);
}

} // namespace strata::rt
