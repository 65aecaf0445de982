//===- Profile.h - Per-layer profiles of real steps --------------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// `strata-run --profile FILE` records every instruction's time over the
// steps it runs and writes Strata's per-layer profile (the format that
// `--strata-partition-pipeline profile=FILE` and `strata-partition` read,
// include/strata/Analysis/PipelineProfile.h):
//
//   {"format": "strata-profile", "version": 1,
//    "layers": [{"layer", "name", "forward_seconds", "backward_seconds",
//                "update_seconds", "activation_bytes", "stash_bytes",
//                "parameter_bytes", "optimizer_bytes"}, ...],
//    "edges": [{"from", "to", "bytes"}, ...],
//    "kernels": [{"kernel", "seconds", "count"}, ...]}
//
// Times are the median over the steps (the first step, which warms caches
// and commits arena pages, is left out when there are more) of the sum of
// the layer's instructions of each phase. `activation_bytes` is what a
// layer's forward instructions write that a later layer's forward reads
// (the edges), `stash_bytes` what they write that backward reads, and the
// parameter and optimizer bytes are the layer's parameters and their states.
// `kernels` gives per kernel signature (kernelSignature: op, operand dtypes
// and shapes, matmul transposes) the mean over its instructions of their
// median time, for strata-sim.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_PROFILE_H
#define STRATA_RT_PROFILE_H

#include "strata-rt/Device.h"
#include "strata-rt/Plan.h"
#include "strata-rt/Support.h"

#include <string>
#include <vector>

namespace strata::rt {

/// "matmul(f32[16x512],f32[512x512])->(f32[16x512]) tb": what a kernel's
/// time depends on; micro-batches and replicas of one step share it.
std::string kernelSignature(const Plan &plan, const Instruction &inst);

class ProfileRecorder {
public:
  /// `warmupSteps` leading steps are left out of the profile when later ones
  /// exist (1: the first step; strata-run --emulate-compute leaves out its
  /// unslowed steps).
  explicit ProfileRecorder(int64_t warmupSteps = 1)
      : warmupSteps(warmupSteps) {}
  /// Records one step's instruction times.
  void record(const std::vector<InstructionTime> &times);
  /// Writes the profile of `program` (the instructions whose times were
  /// recorded) to `path`, atomically.
  Status write(const Plan &plan, const std::vector<Instruction> &program,
               const std::string &path) const;

private:
  int64_t warmupSteps = 1;
  /// Per step, per instruction, microseconds.
  std::vector<std::vector<double>> steps;
};

} // namespace strata::rt

#endif // STRATA_RT_PROFILE_H
