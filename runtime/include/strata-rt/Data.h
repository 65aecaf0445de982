//===- Data.h - Training batches for a plan's inputs -------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Fills a plan's `data` and `labels` inputs for each step. Every batch is a
// pure function of (seed, step), drawn with the counter-based generator of
// Init.h, so a resumed run sees the same stream as an uninterrupted one.
//
// Synthetic tasks (learnable, from a fixed "teacher" derived from the seed):
//  - f32 data [B, ...] with i32 labels [B]: features ~ N(0, 1); the label is
//    the argmax over classes of z . T, where z pools the flattened features
//    of a sample into at most 256 groups and T ~ N(0, 1) is [groups, C].
//    C is the last dim of the logits of the softmax_cross_entropy reading the
//    labels.
//  - f32 data with f32 labels [B, ...] (regression): targets = tanh(z . T /
//    sqrt(groups)) with T [groups, labels per sample].
//  - i32 tokens [B, S] with i32 labels [B, S] (language model): each sequence
//    is an arithmetic progression modulo V with a random start and a stride
//    from {1, 2, 3, 5}; labels are the next tokens. V is the row count of the
//    embedding table reading the tokens (capped by the label class count).
//  - i32 tokens [B, S] with i32 labels [B]: uniform tokens; the label is the
//    argmax over classes of the sum of per-token teacher rows.
// With a data file (language models only), tokens are the file's bytes
// (V >= 256 is required): sequence b of a step starts at a pseudo-random
// offset and its labels are the bytes shifted by one. The file is read
// whole when the source is created (at most kMaxDataFileBytes; a device
// such as /dev/zero is refused at that size), so a file that is changed,
// truncated or removed during a run does not affect it.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_DATA_H
#define STRATA_RT_DATA_H

#include "strata-rt/Plan.h"
#include "strata-rt/Support.h"
#include "strata-rt/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::rt {

class ThreadPool;
struct SafetensorsFile;
struct StoredTensor;

/// The largest data file a DataSource reads (1 GiB).
constexpr uint64_t kMaxDataFileBytes = uint64_t(1) << 30;

struct DataOptions {
  uint64_t seed = 0;
  /// A byte-level text file for a language model; "" for synthetic data.
  std::string path;
  /// Index of this rank's first sample in the global batch: data-parallel
  /// replica r with a per-replica batch B fills samples [r B, (r + 1) B) of
  /// the global batch, so N replicas see exactly what one rank with batch N B
  /// would see.
  int64_t firstSample = 0;
  /// Labelled arrays already read (train() reads the file once and passes
  /// the training part when some samples are held out for evaluation);
  /// nullptr: read `path`.
  const SafetensorsFile *arrays = nullptr;
};

/// Whether `path` names labelled arrays (.safetensors, or .npz as np.savez
/// writes it) rather than a text file.
bool isArrayFile(const std::string &path);
/// Reads labelled arrays: a safetensors file, or the .npy members of an .npz
/// (each member NAME.npy becomes tensor NAME; f8 and i8 become f32 and i32).
Status readArrayFile(const std::string &path, SafetensorsFile &file);
/// Checks labelled arrays against a plan input (the data source's and the
/// evaluation's check): `tensor` (nullptr: missing) holds at least `minRows`
/// rows of `like`'s dtype and per-sample shape. Errors name `path`.
Status checkArrayRows(const std::string &path, const StoredTensor *tensor,
                      const char *name, const Buffer &like, int64_t minRows);
/// Class labels (i32) lie inside the classes of the cross-entropy that reads
/// the plan's `labels` buffer.
Status checkArrayLabels(const std::string &path, const Plan &plan,
                        const Buffer &labels, const StoredTensor &tensor);

class DataSource {
public:
  /// Works out the task from the plan's inputs. A plan whose inputs fit none
  /// of the tasks above is `Invalid`; a data file given to a plan that is not
  /// a language model is a `Usage` error; an unreadable data file a
  /// `Failure`; one that is too short or a vocabulary below 256 `Invalid`.
  static Status create(const Plan &plan, const DataOptions &options,
                       std::unique_ptr<DataSource> &source);
  virtual ~DataSource();

  /// Fills the data and labels inputs among `buffers` (indexed by buffer id)
  /// for step `step`. `pool`, if given, splits the work; the result does not
  /// depend on it.
  virtual void fill(int64_t step, const std::vector<Tensor> &buffers,
                    ThreadPool *pool) const = 0;

  /// Samples per step (the leading dim of the data input; 0 without one).
  int64_t getSamplesPerStep() const { return samplesPerStep; }
  /// Tokens per step for token inputs, else 0.
  int64_t getTokensPerStep() const { return tokensPerStep; }
  /// One line saying what the data is ("synthetic classification ...").
  const std::string &getDescription() const { return description; }

protected:
  DataSource() = default;
  int64_t samplesPerStep = 0;
  int64_t tokensPerStep = 0;
  std::string description;
};

} // namespace strata::rt

#endif // STRATA_RT_DATA_H
