//===- Checkpoint.h - Saving and restoring training state --------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// A checkpoint is a safetensors file holding every parameter, optimizer
// state and running statistic of a plan under its plan name, with metadata
//   {"format": "strata-checkpoint", "plan_format": "strata-plan 1",
//    "model": <plan model>, "step": <last completed step>, "seed": <seed>}.
// Since parameters, states, the step counter and the seed (which keys the
// data stream) are all saved, resuming continues a run bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_CHECKPOINT_H
#define STRATA_RT_CHECKPOINT_H

#include "strata-rt/Executor.h"
#include "strata-rt/Safetensors.h"
#include "strata-rt/Support.h"

#include <cstdint>
#include <string>

namespace strata::rt {

/// Writes a checkpoint of `executor` atomically.
Status saveCheckpoint(const Executor &executor, const std::string &path,
                      int64_t step, uint64_t seed);

enum class CheckpointContents {
  /// Parameters only (`--init`): every parameter and running statistic
  /// (batch norm's, part of the model's weights) must be present; optimizer
  /// state tensors are ignored; metadata is optional.
  Parameters,
  /// Parameters, states, step and seed (`--resume`): all must be present.
  Everything,
};

struct CheckpointInfo {
  /// The last completed step (0 when the file does not say).
  int64_t step = 0;
  uint64_t seed = 0;
  bool hasStepAndSeed = false;
  /// The plan carries micro-batches over between steps but the checkpoint
  /// kept no pipeline in flight (a plan that drains every step saved it):
  /// the pipeline fills again, so the first steps read the newest weights
  /// where an uninterrupted run reads its kept older versions.
  bool refills = false;
};

/// Validates the file against the plan of `executor` (names, dtypes, shapes,
/// metadata) and only then copies the tensors in, so a failed load changes
/// nothing. A malformed file or a mismatch is `Invalid`, an unreadable file a
/// `Failure`.
Status loadCheckpoint(Executor &executor, const std::string &path,
                      CheckpointContents contents, CheckpointInfo &info);

/// As loadCheckpoint, for a file already parsed (parseSafetensors); `path`
/// is only used in messages.
Status restoreCheckpoint(Executor &executor, const SafetensorsFile &file,
                         const std::string &path, CheckpointContents contents,
                         CheckpointInfo &info);

/// Periodic checkpoints (`strata-run --save FILE --save-every K`): the one of
/// step `step` is FILE.step<step>.
std::string periodicCheckpointPath(const std::string &base, int64_t step);

/// Deletes all but the newest `keep` periodic checkpoints of `base` (by
/// step); files that are not BASE.step<digits> are never touched.
Status prunePeriodicCheckpoints(const std::string &base, int64_t keep);

/// `--resume-latest FILE`: the newest of FILE and its periodic checkpoints
/// (by the step each one holds: FILE's metadata, the others' names); a
/// Failure naming FILE when none exists.
Status findLatestCheckpoint(const std::string &base, std::string &path);

} // namespace strata::rt

#endif // STRATA_RT_CHECKPOINT_H
