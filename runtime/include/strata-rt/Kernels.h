//===- Kernels.h - CPU kernels of the plan's instructions --------*- C++
//-*-===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// One kernel per plan instruction (see docs/plan-format.md for the semantics
// of each). `verify` checks dtypes, shapes and attributes of an instruction
// before anything runs; `run` assumes verify passed.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RT_KERNELS_H
#define STRATA_RT_KERNELS_H

#include "strata-rt/Comm.h"
#include "strata-rt/PlanFormat.h"
#include "strata-rt/PlanOps.h"
#include "strata-rt/Tensor.h"

#include <map>
#include <memory>

#include <string>
#include <vector>

namespace strata::rt {

class Communicator;
class CompressionState;
class CopyEngine;
class SwapPool;
class ThreadPool;

/// Blocking of the CPU GEMM (PlanFormat.h: the defaults are part of the
/// plan format).
using GemmTiling = strata_plan::GemmTiling;

/// Returns an empty string when `t` is usable, else why not: all sizes must be
/// positive, mc a multiple of mr, nc a multiple of nr, and mr x nr one of the
/// micro-kernel tiles 4x16, 6x16, 8x16, 4x32, 6x32, 8x32, 12x32, 14x32, 8x8,
/// 4x8, 8x48, 6x48, 4x64.
std::string verifyGemmTiling(const GemmTiling &t);

/// C = alpha * op(A) * op(B) + beta * C for row-major matrices; op(X) is X or
/// its transpose. Deterministic for a given tiling and thread count.
void gemm(ThreadPool &pool, const GemmTiling &tiling, bool transA, bool transB,
          int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c,
          int64_t ldc);

/// The asynchronous all-reduce of one bucket (`all_reduce_start` starts it,
/// `all_reduce_wait` of the same bucket completes it).
struct BucketTransfer {
  /// The bucket's tensors packed one after the other; the collective runs in
  /// place on it. Kept between steps.
  std::vector<float> staging;
  /// The transfer in flight; nullptr when none is (or with one rank).
  std::unique_ptr<Request> request;
  bool inFlight = false;
  /// When it started and when it was first seen complete (steady clock, ns;
  /// 0 while not yet seen).
  int64_t startNs = 0;
  int64_t doneNs = 0;
};

/// One bucket transfer of the last step, for traces.
struct TransferSpan {
  int64_t bucket = 0;
  int64_t bytes = 0;
  int64_t startNs = 0;
  int64_t doneNs = 0;
};

/// What kernels get besides their operands.
struct KernelContext {
  ThreadPool &pool;
  /// Tiling used by matmul instructions that carry none of their own.
  GemmTiling gemm;
  /// The ranks of a multi-rank run (collectives); nullptr for one rank.
  Communicator *comm = nullptr;
  /// Communicators of the plan's groups (collectives' `group` attribute),
  /// nullptr where this rank is not a member; empty: group 0 is `comm`.
  std::vector<Communicator *> groups = {};
  /// Bucket transfers by bucket number (per executor).
  std::map<int64_t, BucketTransfer> buckets = {};
  /// Transfers completed by `all_reduce_wait` in the current step.
  std::vector<TransferSpan> spans = {};
  /// Pipelines: the rank that runs each stage in this rank's replica (send
  /// and recv name stages); empty when the plan is not a pipeline.
  std::vector<int> stageRanks = {};
  /// Sends of this step still in flight; the executor completes them before
  /// an instruction updates a buffer in place and at the end of the step.
  std::vector<std::unique_ptr<Request>> pendingSends = {};
  /// Lagging gradients (a plan with staleness > 0): the collectives are left
  /// to the lagging aggregator (Lagging.h). `all_reduce` only copies its
  /// input (the rank's own loss), `all_reduce_start` only packs its bucket
  /// into the bucket's staging buffer, and `all_reduce_wait` unpacks whatever
  /// the staging buffer holds (the aggregate the trainer put there).
  bool deferCollectives = false;
  /// Activation swapping (swap_out, swap_in and their waits): the
  /// executor's copy thread and the host copies of its slots (not owned);
  /// nullptr when the program does not swap.
  CopyEngine *copies = nullptr;
  SwapPool *swapPool = nullptr;
  /// Compressed activations (compress, decompress): the sites and the
  /// formats they use now (not owned); nullptr when the program has none.
  CompressionState *compression = nullptr;
  /// Evaluation (inference mode, Executor::setEvaluation): batch_norm
  /// normalises with its running statistics and leaves them unchanged.
  bool evaluation = false;
};

/// One instruction of a multi-tensor group (OpKernel::runGroup).
struct KernelCall {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const OpAttrs *attrs = nullptr;
};

/// The CPU kernel of one plan op (its static facts are the op table's,
/// PlanOps.h).
struct OpKernel {
  OpCode op;
  /// Empty when the instruction is valid; otherwise a message such as
  /// "input #1 must have shape [16], got [15]". Reads the attributes as the
  /// plan spells them (once, when the plan is loaded).
  std::string (*verify)(const std::vector<TensorDesc> &inputs,
                        const std::vector<TensorDesc> &outputs,
                        const Attrs &attrs);
  /// Runs an instruction that passed `verify`, whose attributes were
  /// decoded into `attrs`.
  void (*run)(KernelContext &ctx, const std::vector<Tensor> &inputs,
              const std::vector<Tensor> &outputs, const OpAttrs &attrs);
  /// Runs a multi-tensor group (consecutive instructions of this op sharing
  /// a `multi_tensor` id, multiTensorRuns in Plan.h) as one kernel: one
  /// parallel loop over all their elements. The results are those of running
  /// each instruction alone. nullptr: the op has no multi-tensor form.
  void (*runGroup)(KernelContext &ctx,
                   const std::vector<KernelCall> &calls) = nullptr;

  const OpInfo &info() const { return opInfo(op); }
  const char *name() const { return opName(op); }
};

/// The CPU kernel of `op` (every op has one).
const OpKernel &kernelFor(OpCode op);
/// The kernel of plan op `name`, or nullptr.
const OpKernel *lookupKernel(const std::string &name);
/// All kernels, in op code order (which is sorted by name).
std::vector<const OpKernel *> allKernels();

/// Pipelines: the rank that runs stage `peer` (the attribute of `send` and
/// `recv`) in this rank's replica, from `stageRanks` (the contexts'
/// stageRanks); throws std::runtime_error naming `op` when the run has no
/// communicator (`haveComm` false) or no rank holds that stage. Shared by
/// the CPU and CUDA kernels.
int pipelinePeerRank(const std::vector<int> &stageRanks, bool haveComm,
                     const OpAttrs &attrs, const char *op);

/// Collectives: the communicator of the instruction's `group` attribute
/// (default 0) among `groups` (the contexts' groups; when empty, group 0 is
/// `world`), after checking that the rank is a member and that `replicas`
/// equals the group's size; throws std::runtime_error naming `op`
/// otherwise. Returns nullptr for a one-rank run without a communicator.
/// Shared by the CPU and CUDA kernels.
Communicator *resolveCollectiveGroup(Communicator *world,
                                     const std::vector<Communicator *> &groups,
                                     const OpAttrs &attrs, const char *op);

} // namespace strata::rt

#endif // STRATA_RT_KERNELS_H
