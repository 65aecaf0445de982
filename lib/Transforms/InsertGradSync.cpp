//===- InsertGradSync.cpp - Bucketed, overlapped gradient all-reduce ------===//
//
// Replaces the synchronous per-gradient `all_reduce mean` of a data-parallel
// step by buckets of gradients whose asynchronous all-reduce starts as soon
// as the backward pass produced the bucket's last gradient and is waited for
// right before the first update that needs it (Passes.td has the rule).
// With staleness=s > 0 every start carries `staleness = s` for the runtime's
// lagging-gradient aggregation.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/CostModel.h"
#include "strata/Analysis/Timeline.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/OptionLimits.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/TargetResolution.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include <limits>
#include <map>

namespace mlir::strata {
#define GEN_PASS_DEF_INSERTGRADSYNCPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// A gradient to synchronise: the local value and the updates reading it.
struct Gradient {
  Value local;
  /// Position of the op producing it in the step's block (-1: an argument).
  int64_t producedAt = -1;
  /// Seconds from the start of the step until it is produced (cost model).
  double readyAt = 0;
  int64_t bytes = 0;
  /// (update, operand number) pairs that read the averaged gradient.
  SmallVector<std::pair<Operation *, unsigned>> users;
  /// Position of the first of `users`.
  int64_t firstUseAt = 0;
};

struct Bucket {
  SmallVector<unsigned> gradients;
  int64_t bytes = 0;
};

/// Cuts `grads` (in production order) into buckets of at least `threshold`
/// bytes. A bucket also ends before a gradient produced after the first
/// update that needs the bucket, so every start precedes its wait.
static SmallVector<Bucket> formBuckets(ArrayRef<Gradient> grads,
                                       int64_t threshold) {
  SmallVector<Bucket> buckets;
  Bucket current;
  int64_t firstUse = INT64_MAX;
  for (auto [i, grad] : llvm::enumerate(grads)) {
    if (!current.gradients.empty() && grad.producedAt > firstUse) {
      buckets.push_back(std::move(current));
      current = Bucket();
      firstUse = INT64_MAX;
    }
    current.gradients.push_back(i);
    current.bytes += grad.bytes;
    firstUse = std::min(firstUse, grad.firstUseAt);
    if (current.bytes >= threshold) {
      buckets.push_back(std::move(current));
      current = Bucket();
      firstUse = INT64_MAX;
    }
  }
  if (!current.gradients.empty())
    buckets.push_back(std::move(current));
  return buckets;
}

/// When the last bucket's all-reduce ends if bucket k starts when its last
/// gradient is ready and the link runs one all-reduce at a time: the
/// timeline model (strata/Analysis/Timeline.h) replays every replica
/// computing up to each bucket's readiness, starting its all-reduce and
/// waiting for all of them at the end.
static double simulateBuckets(ArrayRef<Gradient> grads,
                              ArrayRef<Bucket> buckets, int64_t replicas,
                              const TargetDescription &target) {
  std::vector<timeline::Instruction> program;
  double clock = 0;
  for (auto [k, bucket] : llvm::enumerate(buckets)) {
    double ready = 0;
    for (unsigned g : bucket.gradients)
      ready = std::max(ready, grads[g].readyAt);
    if (ready > clock)
      program.push_back(timeline::Instruction::compute("grad", ready - clock));
    clock = std::max(clock, ready);
    program.push_back(timeline::Instruction::collectiveStart(
        0, static_cast<double>(bucket.bytes), static_cast<int64_t>(k)));
  }
  for (size_t k = 0; k < buckets.size(); ++k)
    program.push_back(timeline::Instruction::wait(static_cast<int64_t>(k)));
  timeline::Schedule schedule;
  timeline::System system;
  int64_t perNode = std::max<int64_t>(target.devicesPerNode, 1);
  for (int64_t r = 0; r < std::max<int64_t>(replicas, 1); ++r) {
    schedule.ranks.push_back(program);
    system.nodeOfRank.push_back(r / perNode);
  }
  system.intraNode = {target.intraNode.latency(), target.intraNode.bandwidth()};
  system.interNode = {target.interNode.latency(), target.interNode.bandwidth()};
  timeline::Result result = timeline::simulate(schedule, system);
  // Identical programs of one group cannot deadlock; never choose a bucket
  // size whose replay failed.
  if (!result.ok())
    return std::numeric_limits<double>::infinity();
  return result.ranks.front().end;
}

struct InsertGradSyncPass
    : public strata::impl::InsertGradSyncPassBase<InsertGradSyncPass> {
  using Base::Base;

  void runOnOperation() override;
  LogicalResult runOnStep(func::FuncOp func,
                          const std::optional<TargetDescription> &target);
  /// Returns the step's data-parallel replicas (from `strata.replicas`, or
  /// `replicas=` after making the step data-parallel).
  FailureOr<int64_t> resolveReplicas(func::FuncOp func);
  /// Averages the returned loss over the replicas and marks the step, as
  /// --strata-data-parallel does.
  void makeDataParallel(func::FuncOp func, int64_t replicas);
  /// Inserts one start/wait pair per bucket of `stage`'s gradients (numbered
  /// from `nextBucket` on) and points the updates at the waits' results.
  void insertBuckets(func::FuncOp func, int64_t stage, ArrayRef<Gradient> grads,
                     ArrayRef<Bucket> buckets,
                     const DenseMap<Operation *, int64_t> &position,
                     int64_t replicas, int64_t &nextBucket);
};

} // namespace

void InsertGradSyncPass::makeDataParallel(func::FuncOp func, int64_t replicas) {
  OpBuilder builder(func.getContext());
  Operation *ret = func.getBody().front().getTerminator();
  unsigned last = ret->getNumOperands() - 1;
  Value loss = ret->getOperand(last);
  builder.setInsertionPoint(ret);
  auto mean = AllReduceOp::create(builder, loss.getLoc(), loss,
                                  /*mean=*/true, replicas);
  if (Operation *def = loss.getDefiningOp())
    if (std::optional<int64_t> layer = getLayer(def))
      setLayer(mean, *layer);
  ret->setOperand(last, mean.getResult());
  func->setAttr(StrataDialect::getReplicasAttrName(),
                builder.getI64IntegerAttr(replicas));
}

void InsertGradSyncPass::runOnOperation() {
  ModuleOp module = getOperation();
  if (bucketBytes < 0) {
    emitError(module.getLoc())
        << "--strata-insert-grad-sync needs bucket-bytes >= 0, got "
        << static_cast<int64_t>(bucketBytes);
    return signalPassFailure();
  }
  if (replicas < 0) {
    emitError(module.getLoc())
        << "--strata-insert-grad-sync needs replicas >= 0, got "
        << static_cast<int64_t>(replicas);
    return signalPassFailure();
  }
  if (failed(checkOptionRange(module.getLoc(), getArgument(), "chunk-bytes",
                              chunkBytes, 4, kMaxTensorBytes)) ||
      failed(checkOptionRange(module.getLoc(), getArgument(), "staleness",
                              staleness, 0, kMaxStaleness)) ||
      failed(checkOptionRange(module.getLoc(), getArgument(), "replicas",
                              replicas, 0, kMaxReplicas)) ||
      failed(checkOptionRange(module.getLoc(), getArgument(), "bucket-bytes",
                              bucketBytes, 0, kMaxTensorBytes)))
    return signalPassFailure();
  if (staleness > 0 && accumulate == GradAccumulation::Host) {
    emitError(module.getLoc())
        << "--strata-insert-grad-sync: staleness > 0 cannot be combined with "
           "accumulate=host";
    return signalPassFailure();
  }
  // The cost model is only needed to choose the bucket size.
  std::optional<TargetDescription> target;
  if (bucketBytes == 0) {
    std::string name = getTargetName(targetName, module);
    if (name.empty()) {
      emitError(module.getLoc())
          << "--strata-insert-grad-sync needs bucket-bytes=N or a target for "
             "its cost model (target=NAME or target=FILE.json)";
      return signalPassFailure();
    }
    FailureOr<TargetDescription> loaded =
        loadTarget(name, [&] { return emitError(module.getLoc()); });
    if (failed(loaded))
      return signalPassFailure();
    target = std::move(*loaded);
  }
  if (failed(forEachTrainStep(
          module,
          "no training step to synchronise (run --strata-autodiff first)",
          [&](func::FuncOp func) { return runOnStep(func, target); })))
    signalPassFailure();
}

FailureOr<int64_t> InsertGradSyncPass::resolveReplicas(func::FuncOp func) {
  if (auto attr = func->getAttrOfType<IntegerAttr>(
          StrataDialect::getReplicasAttrName())) {
    if (replicas != 0 && replicas != attr.getInt())
      return func.emitOpError()
             << "has " << attr.getInt()
             << " data-parallel replicas, but --strata-insert-grad-sync was "
                "given replicas="
             << static_cast<int64_t>(replicas);
    return attr.getInt();
  }
  if (replicas == 0)
    return func.emitOpError()
           << "is not data-parallel (run --strata-data-parallel first or pass "
              "replicas=N)";
  makeDataParallel(func, replicas);
  return static_cast<int64_t>(replicas);
}

/// Collects the gradient each update of `body` reads, before any synchronous
/// averaging over `replicas` (whose averages go to `averages`), in the order
/// of their first update.
static llvm::MapVector<Value, Gradient>
collectGradients(Block &body, const DenseMap<Operation *, int64_t> &position,
                 int64_t replicas, llvm::SetVector<Operation *> &averages) {
  llvm::MapVector<Value, Gradient> byValue;
  for (Operation &op : body) {
    auto update = dyn_cast<InPlaceOpInterface>(op);
    if (!update)
      continue;
    OpOperand &gradOperand = update.getGradientMutable();
    Value grad = gradOperand.get();
    if (auto average = grad.getDefiningOp<AllReduceOp>();
        average && average.getMean() &&
        static_cast<int64_t>(average.getReplicas()) == replicas) {
      averages.insert(average);
      grad = average.getInput();
    }
    Gradient &entry = byValue[grad];
    if (entry.users.empty()) {
      entry.local = grad;
      entry.bytes = getTensorBytes(grad.getType());
      entry.firstUseAt = position.lookup(&op);
      if (Operation *def = grad.getDefiningOp())
        entry.producedAt = position.lookup(body.findAncestorOpInBlock(*def));
    }
    entry.users.push_back({&op, gradOperand.getOperandNumber()});
  }
  return byValue;
}

/// The pipeline stage of an op (-1: not pipelined).
static int64_t getStage(Operation *op) {
  auto stage =
      op->getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
  return stage ? stage.getInt() : -1;
}

/// Chooses the bucket size of `stage`'s gradients (in production order) that
/// ends the last all-reduce earliest on `target`, and records in `grads`
/// when each is ready.
static int64_t chooseBucketBytes(func::FuncOp func, int64_t stage,
                                 MutableArrayRef<Gradient> grads,
                                 int64_t replicas,
                                 const TargetDescription &target) {
  Block &body = func.getBody().front();
  // Gradient g is ready once every op up to its producer has run; the
  // synchronous averages being replaced run on the link, not in compute.
  CostModel model(func, target);
  DenseMap<Operation *, double> doneAt;
  double clock = 0;
  for (Operation &op : body) {
    if (auto costed = dyn_cast<CostOpInterface>(&op);
        costed && !isa<AllReduceOp, AllReduceStartOp>(op) &&
        (stage < 0 || getStage(&op) == stage))
      clock += model.getOpCost(&op).seconds;
    doneAt[&op] = clock;
  }
  int64_t total = 0;
  for (Gradient &grad : grads) {
    total += grad.bytes;
    if (Operation *def = grad.local.getDefiningOp())
      grad.readyAt = doneAt[body.findAncestorOpInBlock(*def)];
  }
  int64_t threshold = 0;
  double best = 0;
  for (int64_t size = 4096;; size *= 2) {
    int64_t candidate = std::min(size, total);
    double end =
        simulateBuckets(grads, formBuckets(grads, candidate), replicas, target);
    // Ties go to the larger bucket (fewer messages).
    if (threshold == 0 || end <= best * (1.0 + 1e-9)) {
      best = end;
      threshold = candidate;
    }
    if (candidate >= total)
      break;
  }
  return threshold;
}

void InsertGradSyncPass::insertBuckets(
    func::FuncOp func, int64_t stage, ArrayRef<Gradient> grads,
    ArrayRef<Bucket> buckets, const DenseMap<Operation *, int64_t> &position,
    int64_t p, int64_t &nextBucket) {
  Block &body = func.getBody().front();
  OpBuilder builder(func.getContext());
  auto backward = PhaseAttr::get(func.getContext(), Phase::backward);
  // Starts that follow the same producer go in bucket order.
  DenseMap<Operation *, Operation *> lastStartAfter;
  for (const Bucket &bucket : buckets) {
    SmallVector<Value> locals;
    const Gradient *last = nullptr;
    Operation *firstUser = nullptr;
    for (unsigned g : bucket.gradients) {
      locals.push_back(grads[g].local);
      if (!last || grads[g].producedAt >= last->producedAt)
        last = &grads[g];
      for (auto [user, operand] : grads[g].users)
        if (!firstUser || position.lookup(user) < position.lookup(firstUser))
          firstUser = user;
    }
    Operation *producer =
        last->producedAt < 0
            ? nullptr
            : body.findAncestorOpInBlock(*last->local.getDefiningOp());
    if (!producer)
      builder.setInsertionPointToStart(&body);
    else if (Operation *prev = lastStartAfter.lookup(producer))
      builder.setInsertionPointAfter(prev);
    else
      builder.setInsertionPointAfter(producer);
    Location loc = last->local.getLoc();
    int64_t index = nextBucket++;
    bool host = accumulate == GradAccumulation::Host;
    auto start = AllReduceStartOp::create(
        builder, loc, locals, /*mean=*/true, p, static_cast<int64_t>(index),
        host,
        host ? builder.getI64IntegerAttr(static_cast<int64_t>(chunkBytes))
             : IntegerAttr(),
        staleness > 0
            ? builder.getI64IntegerAttr(static_cast<int64_t>(staleness))
            : IntegerAttr());
    start->setAttr(StrataDialect::getPhaseAttrName(), backward);
    if (stage >= 0)
      start->setAttr(StrataDialect::getStageAttrName(),
                     builder.getI64IntegerAttr(stage));
    if (firstUser->hasAttr(StrataDialect::getPreviousStepAttrName()))
      start->setAttr(StrataDialect::getPreviousStepAttrName(),
                     builder.getUnitAttr());
    if (producer) {
      lastStartAfter[producer] = start;
      if (std::optional<int64_t> layer = getLayer(producer))
        setLayer(start, *layer);
    }
    builder.setInsertionPoint(firstUser);
    auto wait = AllReduceWaitOp::create(builder, loc, locals,
                                        static_cast<int64_t>(index));
    wait->setAttr(StrataDialect::getPhaseAttrName(), backward);
    if (stage >= 0)
      wait->setAttr(StrataDialect::getStageAttrName(),
                    builder.getI64IntegerAttr(stage));
    if (firstUser->hasAttr(StrataDialect::getPreviousStepAttrName()))
      wait->setAttr(StrataDialect::getPreviousStepAttrName(),
                    builder.getUnitAttr());
    if (std::optional<int64_t> layer = getLayer(firstUser))
      setLayer(wait, *layer);
    for (auto [i, g] : llvm::enumerate(bucket.gradients))
      for (auto [user, operand] : grads[g].users)
        user->setOperand(operand, wait.getResult(i));
  }
}

/// A lagging replica contributes its gradients and its loss, nothing else:
/// any other collective would need every replica at the same iteration.
static LogicalResult checkLaggingCollectives(func::FuncOp func) {
  Value loss = func.getBody().front().getTerminator()->getOperands().back();
  WalkResult walk = func.walk([&](AllReduceOp op) {
    if (op.getResult() == loss && op.getResult().hasOneUse())
      return WalkResult::advance();
    op.emitOpError() << "cannot run with staleness > 0: only gradient "
                        "averages and the returned loss may be all-reduced";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult
InsertGradSyncPass::runOnStep(func::FuncOp func,
                              const std::optional<TargetDescription> &target) {
  FailureOr<int64_t> p = resolveReplicas(func);
  if (failed(p))
    return failure();
  bool alreadySynced = false;
  func.walk([&](Operation *op) {
    alreadySynced |= isa<AllReduceStartOp, AllReduceWaitOp>(op);
  });
  if (alreadySynced)
    return func.emitOpError() << "already has bucketed gradient all-reduces";
  // Lagging gradients delay whole steps; an asynchronous pipeline schedule
  // already delays its weights by construction.
  if (auto pipeline = func->getAttrOfType<PipelineScheduleAttr>(
          StrataDialect::getPipelineScheduleAttrName());
      pipeline && pipeline.getWindow() > 0 && staleness > 0)
    return func.emitOpError()
           << "is scheduled with the asynchronous " << pipeline.getSchedule()
           << " pipeline schedule, which updates the weights inside the "
              "step; staleness > 0 (lagging gradients) cannot be combined "
              "with it";

  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = static_cast<int64_t>(i);
  llvm::SetVector<Operation *> averages;
  llvm::MapVector<Value, Gradient> byValue =
      collectGradients(body, position, *p, averages);
  if (byValue.empty())
    return success();

  // A pipelined step syncs each stage's gradients among that stage's
  // replicas: bucket every stage on its own, and the gradients of the
  // previous step's micro-batches (a pipeline that does not drain between
  // steps runs them first) apart from the step's own.
  std::map<std::pair<int64_t, bool>, SmallVector<Gradient>> byStage;
  for (auto &entry : byValue) {
    Operation *user = entry.second.users.front().first;
    byStage[{getStage(user),
             user->hasAttr(StrataDialect::getPreviousStepAttrName())}]
        .push_back(std::move(entry.second));
  }
  if (staleness > 0 &&
      (byStage.size() > 1 || byStage.begin()->first.first >= 0))
    return func.emitOpError()
           << "is a pipeline; lagging gradients (staleness > 0) need a "
              "data-parallel step without stages";
  int64_t nextBucket = 0;
  for (auto &[key, grads] : byStage) {
    int64_t stage = key.first;
    llvm::stable_sort(grads, [](const Gradient &a, const Gradient &b) {
      return a.producedAt < b.producedAt;
    });
    int64_t threshold = bucketBytes;
    if (threshold == 0)
      threshold = chooseBucketBytes(func, stage, grads, *p, *target);
    SmallVector<Bucket> buckets = formBuckets(grads, threshold);
    numBuckets += buckets.size();
    insertBuckets(func, stage, grads, buckets, position, *p, nextBucket);
  }
  for (Operation *average : averages)
    if (average->use_empty())
      average->erase();
  if (staleness == 0)
    return success();
  return checkLaggingCollectives(func);
}
