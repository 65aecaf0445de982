//===- SchedulePipeline.cpp - Micro-batched pipeline schedules ------------===//
//
// Rewrites a training step partitioned into pipeline stages (the
// `strata.pipeline` attribute of --strata-partition-pipeline, or `stages=N`)
// into one program for every device of the pipeline, interleaved in one
// function: each op is cloned once per micro-batch and tagged with its stage
// (`strata.stage`) and micro-batch; values crossing stages travel through
// `strata.send` / `strata.recv`; gradients accumulate across micro-batches in
// micro-batch order and the optimizer updates run once, at the end (or, for
// the asynchronous schedules, after every window of micro-batches, with the
// older weight versions kept in states). The order of the ops of one device
// is the chosen schedule's (GPipe, 1F1B, interleaved 1F1B, ZB-H1, PipeDream,
// 2BW); across devices the function is one interleaving in which every recv
// follows its send, which proves the schedule free of deadlock. The plan
// exporter gives every device its own program.
//
//===----------------------------------------------------------------------===//

#include "strata/Analysis/CostModel.h"
#include "strata/Analysis/Timeline.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/OptionLimits.h"
#include "strata/Transforms/Passes.h"
#include "strata/Transforms/PipelineSchedule.h"
#include "strata/Transforms/TargetResolution.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

#include <limits>
#include <map>
#include <set>

namespace mlir::strata {
#define GEN_PASS_DEF_SCHEDULEPIPELINEPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;
using namespace mlir::strata::pipeline;

namespace {

/// A stage of the partition: layers [firstLayer, lastLayer].
struct StageRange {
  int64_t firstLayer = 0, lastLayer = 0;
};

/// Identifies one action: (kind, chunk, micro-batch). Updates are kind U:
/// with micro-batch kWholeStep the end of a device's step (its updates, for
/// the flushed schedules, and the loss), else the updates of the window that
/// micro-batch closes (asynchronous schedules). A negative micro-batch m is
/// the previous step's micro-batch m + M, carried over (carryOver).
using ActionKey = std::tuple<int, int64_t, int64_t>;
constexpr int kUpdate = Action::U;
/// The micro-batch of what runs once per step (parameters, the loss, the
/// flushed schedules' updates).
constexpr int64_t kWholeStep = std::numeric_limits<int64_t>::min();

/// One cloned op of the predicted timeline.
struct TimedAction {
  ActionKey key;
  int64_t device = 0;
  double start = 0, end = 0;
  /// A transfer into `device` for action `key` (else the action itself).
  bool transfer = false;
};

class Scheduler {
public:
  Scheduler(func::FuncOp func, const ScheduleShape &shape, int64_t replicas,
            ArrayRef<StageRange> stages)
      : func(func), shape(shape), replicas(replicas), stages(stages),
        builder(func.getContext()) {}

  LogicalResult run();

  /// Predicts the step on `target` (op costs, transfers over the links);
  /// returns the timeline model's error, empty on success.
  std::string predict(const TargetDescription &target,
                      std::vector<TimedAction> &timeline, double &stepSeconds,
                      double &bubble);

private:
  int64_t deviceOf(int64_t chunk) const { return chunk % shape.devices; }
  LogicalResult classify();
  LogicalResult buildActions();
  LogicalResult linearize();
  void emitAction(const ActionKey &key);
  void emitUpdates(int64_t device);
  /// Asynchronous schedules: checks that the step can be scheduled so and
  /// adds the states keeping each parameter's older weight versions.
  LogicalResult prepareVersions();
  /// The value holding weight version `version` of `param` now.
  Value versionOf(Value param, int64_t version);
  /// Emits the updates of `chunk` for the window `micro` closes.
  void emitWindowUpdates(int64_t chunk, int64_t micro);
  /// Before an update overwrites `param`, copies what is still needed into
  /// its states; `last`: the step's last update, after which each state must
  /// hold its version for the next step.
  void keepVersions(Value param, Operation *like, int64_t chunk, int64_t micro,
                    bool last);
  Value resolve(Value value, int64_t micro, int64_t device, int64_t chunk,
                Operation *user);
  void emitSends(Operation *original, Operation *clone, int64_t micro);
  /// carryOver: keeps `copy` (the clone of `result`, micro-batch `micro`)
  /// in a state and sends it to `device` at the start of the next step,
  /// whose carried pass reads it.
  void sendNextStep(Operation *original, Value result, Value copy,
                    int64_t micro, int64_t device);
  void tag(Operation *op, int64_t chunk, int64_t micro);
  Value accumulate(Value acc, Value next, Operation *like, int64_t chunk,
                   int64_t micro, bool backward);
  /// Scales a sum of `count` micro-batches' values by 1/count and averages
  /// it over the replicas (ops tagged with `micro`).
  Value average(Value value, Operation *like, int64_t chunk, bool backward,
                int64_t count, int64_t micro = kWholeStep);
  /// carryOver: whether a carried micro-batch's pass on `chunk` reads
  /// `value` (an op's operand) from a state filled by the previous step's
  /// forward pass: an input, a forward value of the device, or a forward
  /// value of another device that the chunk's forward pass received.
  bool isCarried(Value value, int64_t chunk);
  /// Whether a forward op of `chunk` reads `value`.
  bool readByForward(Value value, int64_t chunk);
  /// The state that carries `value` of micro-batch `micro` (0..M-1) on
  /// `chunk` over to the next step; created on first use (`user`: the op
  /// reading it), filled after the chunk's forward pass of `micro`.
  Value carried(Value value, int64_t micro, int64_t chunk, Operation *user);
  /// Fills the carries of `chunk`'s micro-batch `micro` (after its forward
  /// pass), and, after its last backward pass that stays in the step, the
  /// partial gradient sums of the window the carried passes close.
  void fillCarries(int64_t chunk, int64_t micro, int kind);
  /// The state carrying the partial sum of `grad` (an update's gradient
  /// operand) on `chunk` over to the next step.
  Value carriedSum(Value grad, int64_t chunk);
  /// The micro-batch (0..M-1) that a micro-batch of the step or a carried
  /// one (negative) stands for.
  int64_t stepMicro(int64_t micro) const {
    return micro < 0 ? micro + shape.microBatches : micro;
  }
  /// The action of `kind` on `chunk` for the step's micro-batch `micro`:
  /// negative when carryOver moves it to the next step.
  ActionKey keyOf(int kind, int64_t chunk, int64_t micro) const;
  /// The tag of the transfer of `value` (micro-batch `micro`, either form)
  /// to `device`: allocated by whichever side comes first, since a carried
  /// receive may precede its send in the function (the send is the
  /// previous step's).
  int64_t tagOf(Value value, int64_t micro, int64_t device);

  func::FuncOp func;
  ScheduleShape shape;
  int64_t replicas;
  ArrayRef<StageRange> stages;
  OpBuilder builder;

  /// The ops of the step, in program order, and their chunk.
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> chunkOf;
  /// Action kind of each non-update op (F, B or W).
  DenseMap<Operation *, int> kindOf;
  SmallVector<Operation *> updates;
  /// Ops of each action kind per chunk, in program order.
  std::map<std::pair<int, int64_t>, SmallVector<Operation *>> opsOf;
  /// Devices other than its producer's that use each value.
  DenseMap<Value, SmallVector<int64_t>> remoteUsers;
  /// Gradient value -> its update; the loss value.
  DenseMap<Value, Operation *> updateOfGrad;
  /// The device of each updated parameter and state (its update's).
  DenseMap<Value, int64_t> homeOf;
  Value loss;
  int64_t lossChunk = 0;

  /// Per-device action orders (schedule plus a final U).
  std::vector<std::vector<ActionKey>> orders;
  /// Actions whose outputs another action needs: key -> producers.
  std::map<ActionKey, std::set<ActionKey>> deps;

  // Emission state.
  DenseMap<std::pair<Value, int64_t>, Value> cloned;
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> received;
  DenseMap<std::tuple<Value, int64_t, int64_t>, int64_t> tags;
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> slices;
  /// (gradient, window) -> its sum so far (the window of micro-batch m is
  /// floor(m / updateWindow): negative for the previous step's).
  DenseMap<std::pair<Value, int64_t>, Value> gradAcc;
  int64_t windowOf(int64_t micro) const {
    return floorDiv(micro, updateWindow(shape));
  }
  /// Running statistics (StatefulOpInterface): the newest version of each,
  /// so that micro-batches update them one after another.
  DenseMap<Value, Value> latestState;
  Value lossAcc;
  int64_t nextTag = 0;
  /// The loss every rank reports (device 0's).
  Value finalLoss;
  /// The new ops of each action, for the prediction.
  std::map<ActionKey, SmallVector<Operation *>> emitted;
  ActionKey current;

  /// Asynchronous schedules: where the weight versions of each trained
  /// parameter (the argument) are. Versions count updates from the start
  /// of the step (weightVersion).
  struct Versions {
    /// The parameter's newest value (its buffer) and its version.
    Value param;
    int64_t paramVersion = 0;
    /// The states keeping older versions (their newest values) and the
    /// version each holds.
    SmallVector<Value> slots;
    SmallVector<int64_t> slotVersion;
  };
  llvm::MapVector<Value, Versions> versions;
  /// The newest value of every argument an update replaces.
  DenseMap<Value, Value> latest;
  /// Per device, the last update action of its order (asynchronous
  /// schedules): the one after which the kept versions take their places for
  /// the next step.
  DenseMap<int64_t, ActionKey> lastUpdateOf;

  /// carryOver: the states carrying values over to the next step.
  struct Carry {
    /// The original value (an input or an op result) and the micro-batch.
    Value value;
    int64_t micro = 0, chunk = 0;
    Operation *user = nullptr;
    /// The state (argument) and its newest value.
    BlockArgument state;
    Value newest;
    bool filled = false;
    /// What it carries: values of a forward pass (filled after it), a
    /// window's partial gradient sum (`value`: the gradient operand; filled
    /// after the last backward pass that stays in the step), or a value
    /// sent at the start of the next step (sendNextStep).
    enum class Kind { Forward, Sum, Outgoing } kind = Kind::Forward;
  };
  std::vector<Carry> carries;
  /// A new carried state (`pipeline.carryN.stageCHUNK` + `suffix`, a fresh
  /// N) for `value` of `micro` on `chunk`, read by `user`.
  Carry newCarry(Value value, int64_t micro, int64_t chunk, Operation *user,
                 Carry::Kind kind, Type type, StringRef suffix);
  /// Copies `source` into `carry`'s state (`local`: only this device's
  /// carried passes read it, no send).
  void fillCarry(Carry &carry, Value source, int64_t chunk, int64_t micro,
                 bool local);
  /// The sends at the start of the step of values the previous step kept
  /// (sendNextStep), in order.
  SmallVector<SendOp> nextStepSends;
  Operation *lastNextStepSend = nullptr;
  DenseMap<std::tuple<Value, int64_t, int64_t>, size_t> carryIndex;
  /// (gradient operand, chunk) -> the carry of its partial sum.
  DenseMap<std::pair<Value, int64_t>, size_t> sumCarryIndex;
  /// Names of the step's parameters and states (for unique state names).
  llvm::StringSet<> stateNames;
};

/// Scheduler invariants: the linearization emits producers (and sends)
/// before their users, so these lookups cannot miss.
template <typename Map>
static auto lookupOrDie(const Map &map, const typename Map::key_type &key,
                        const char *what) {
  auto it = map.find(key);
  if (it == map.end())
    llvm::report_fatal_error(
        llvm::Twine("--strata-schedule-pipeline: internal error: ") + what +
        " is used before it was emitted");
  return it->second;
}

} // namespace

void Scheduler::tag(Operation *op, int64_t chunk, int64_t micro) {
  op->setAttr(StrataDialect::getStageAttrName(),
              builder.getI64IntegerAttr(chunk));
  if (micro != kWholeStep)
    op->setAttr(StrataDialect::getMicroBatchAttrName(),
                builder.getI64IntegerAttr(stepMicro(micro)));
  if (micro != kWholeStep && micro < 0)
    op->setAttr(StrataDialect::getPreviousStepAttrName(),
                builder.getUnitAttr());
  emitted[current].push_back(op);
}

LogicalResult Scheduler::classify() {
  int64_t chunks = static_cast<int64_t>(stages.size());
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (isa<AllReduceOp, AllReduceStartOp, AllReduceWaitOp, SendOp, RecvOp>(op))
      return op.emitOpError()
             << "is already a collective; schedule the pipeline before "
                "--strata-data-parallel and --strata-insert-grad-sync";
    std::optional<int64_t> layer = getLayer(&op);
    if (!layer)
      return op.emitOpError()
             << "has no strata.layer, so no pipeline stage can own it";
    int64_t chunk = -1;
    for (int64_t c = 0; c < chunks; ++c)
      if (*layer >= stages[c].firstLayer && *layer <= stages[c].lastLayer)
        chunk = c;
    if (chunk < 0)
      return op.emitOpError()
             << "is in layer " << *layer << ", which no stage covers";
    ops.push_back(&op);
    chunkOf[&op] = chunk;
    if (auto update = dyn_cast<InPlaceOpInterface>(op)) {
      updates.push_back(&op);
      updateOfGrad[update.getGradient()] = &op;
      continue;
    }
    auto phase = op.getAttrOfType<PhaseAttr>(StrataDialect::getPhaseAttrName());
    kindOf[&op] =
        phase && phase.getValue() == Phase::backward ? Action::B : Action::F;
    // The forward pass of a micro-batch runs before its backward pass, so a
    // forward op cannot read what the backward pass computes: such an op has
    // lost (or never had) its `strata.phase = backward`.
    if (kindOf[&op] == Action::F)
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || !kindOf.count(def))
          continue;
        if (kindOf[def] == Action::B)
          return op.emitOpError()
                 << "reads a value of the backward pass but is not marked "
                    "strata.phase = backward; the pipeline schedule "
                    "needs every backward op marked (as --strata-autodiff "
                    "marks them)";
        // Forward activations flow from earlier stages to later ones only.
        if (chunkOf[def] > chunk)
          return op.emitOpError()
                 << "in layer " << *layer << " (stage " << chunk
                 << ") reads a forward value of layer "
                 << getLayer(def).value_or(-1) << " (stage " << chunkOf[def]
                 << "); pipeline stages need the layers in forward order";
      }
    // Gradients flow from later stages to earlier ones only (the backward
    // pass runs the stages last to first).
    if (kindOf[&op] == Action::B)
      for (Value operand : op.getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && kindOf.count(def) && kindOf[def] == Action::B &&
            chunkOf[def] < chunk)
          return op.emitOpError()
                 << "in layer " << *layer << " (stage " << chunk
                 << ") reads a backward value of layer "
                 << getLayer(def).value_or(-1) << " (stage " << chunkOf[def]
                 << "); the backward pass runs the stages last to first";
      }
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  loss = ret.getOperands().back();
  Operation *lossOp = loss.getDefiningOp();
  if (!lossOp || !chunkOf.count(lossOp))
    return func.emitOpError() << "returns a loss that no op of the step "
                                 "computes";
  lossChunk = chunkOf[lossOp];

  // ZB-H1: B keeps what earlier stages wait for (the backward slice of the
  // gradients other chunks read); the rest of a chunk's backward is W.
  if (shape.kind == ScheduleKind::ZeroBubbleH1) {
    SmallVector<Operation *> worklist;
    DenseSet<Operation *> needed;
    for (Operation *op : ops) {
      if (!kindOf.count(op) || kindOf[op] != Action::B)
        continue;
      bool crosses = llvm::any_of(op->getUsers(), [&](Operation *user) {
        return chunkOf.count(user) && chunkOf[user] != chunkOf[op] &&
               !isa<InPlaceOpInterface>(user);
      });
      if (crosses)
        worklist.push_back(op);
    }
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!needed.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (kindOf.count(def) && kindOf[def] == Action::B &&
              chunkOf[def] == chunkOf[op])
            worklist.push_back(def);
    }
    for (Operation *op : ops)
      if (kindOf.count(op) && kindOf[op] == Action::B && !needed.count(op))
        kindOf[op] = Action::W;
  }
  for (Operation *op : ops)
    if (kindOf.count(op))
      opsOf[{kindOf[op], chunkOf[op]}].push_back(op);

  // Which other devices read each value (parameters: their home device is
  // their update's; data inputs are on every rank).
  for (Operation *update : updates)
    for (Value operand : update->getOperands())
      if (isa<BlockArgument>(operand))
        homeOf[operand] = deviceOf(chunkOf[update]);
  for (Operation *op : ops) {
    int64_t device = deviceOf(chunkOf[op]);
    for (Value operand : op->getOperands()) {
      int64_t from;
      if (Operation *def = operand.getDefiningOp())
        from = deviceOf(chunkOf[def]);
      else if (homeOf.count(operand))
        from = homeOf[operand];
      else
        continue; // an input: every rank has it.
      if (from == device || isa<InPlaceOpInterface>(op))
        continue;
      SmallVector<int64_t> &users = remoteUsers[operand];
      if (!llvm::is_contained(users, device))
        users.push_back(device);
    }
  }
  for (Operation *update : updates) {
    Value grad = cast<InPlaceOpInterface>(update).getGradient();
    Operation *def = grad.getDefiningOp();
    if (!def || deviceOf(chunkOf[def]) != deviceOf(chunkOf[update]))
      return update->emitOpError()
             << "reads a gradient computed on another pipeline device; the "
                "scheduler accumulates gradients where their update runs";
    if (!kindOf.count(def) || kindOf[def] == Action::F)
      return update->emitOpError()
             << "reads a gradient that no backward op computes (its producer "
                "is not marked strata.phase = backward, as --strata-autodiff "
                "marks them)";
  }
  return success();
}

LogicalResult Scheduler::buildActions() {
  std::vector<std::vector<Action>> schedule = buildSchedule(shape);
  orders.assign(shape.devices, {});
  for (int64_t d = 0; d < shape.devices; ++d) {
    for (const Action &action : schedule[d]) {
      orders[d].push_back({action.kind, action.chunk, action.microBatch});
      if (action.kind == Action::U)
        lastUpdateOf[d] = orders[d].back();
    }
    orders[d].push_back({kUpdate, d, kWholeStep});
  }
  // An action depends on the actions of other devices producing what it
  // reads (same micro-batch; parameters are sent before anything runs). A
  // carried action reading what an action of the previous step produced
  // depends on nothing of this step.
  for (auto &[kindChunk, list] : opsOf)
    for (int64_t m = 0; m < shape.microBatches; ++m) {
      ActionKey key = keyOf(kindChunk.first, kindChunk.second, m);
      for (Operation *op : list)
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp()) {
            if (deviceOf(chunkOf[def]) == deviceOf(chunkOf[op]))
              continue;
            ActionKey producer = keyOf(kindOf[def], chunkOf[def], m);
            if (std::get<2>(key) >= 0 && std::get<2>(producer) < 0)
              return op->emitOpError()
                     << "reads a value of stage " << chunkOf[def]
                     << " that the pipeline computes only in the next step "
                        "(its pass is carried over); schedule it with "
                        "drain=step";
            if ((std::get<2>(key) < 0) == (std::get<2>(producer) < 0))
              deps[key].insert(producer);
          } else if (homeOf.count(operand) &&
                     homeOf[operand] != deviceOf(chunkOf[op])) {
            deps[key].insert({Action::F, homeOf[operand], 0});
          }
    }
  // Device 0 reports the loss, which the loss's device sends at its end.
  int64_t lossDevice = deviceOf(lossChunk);
  if (lossDevice != 0)
    deps[{kUpdate, 0, kWholeStep}].insert({kUpdate, lossDevice, kWholeStep});
  return success();
}

ActionKey Scheduler::keyOf(int kind, int64_t chunk, int64_t micro) const {
  int64_t carried = carriedMicroBatches(shape, deviceOf(chunk));
  if (kind != Action::F && micro >= shape.microBatches - carried)
    return {kind, chunk, micro - shape.microBatches};
  return {kind, chunk, micro};
}

int64_t Scheduler::tagOf(Value value, int64_t micro, int64_t device) {
  std::tuple<Value, int64_t, int64_t> key{
      value, micro == kWholeStep ? kWholeStep : stepMicro(micro), device};
  auto [it, inserted] = tags.try_emplace(key, nextTag);
  if (inserted)
    ++nextTag;
  return it->second;
}

LogicalResult Scheduler::linearize() {
  std::set<ActionKey> done;
  std::vector<size_t> next(shape.devices, 0);
  size_t total = 0, finished = 0;
  for (auto &order : orders)
    total += order.size();
  builder.setInsertionPoint(func.getBody().front().getTerminator());
  while (finished < total) {
    bool progress = false;
    for (int64_t d = 0; d < shape.devices; ++d) {
      while (next[d] < orders[d].size()) {
        const ActionKey &key = orders[d][next[d]];
        auto it = deps.find(key);
        if (it != deps.end() &&
            !llvm::all_of(it->second,
                          [&](const ActionKey &k) { return done.count(k); }))
          break;
        emitAction(key);
        done.insert(key);
        ++next[d];
        ++finished;
        progress = true;
      }
    }
    if (!progress) {
      InFlightDiagnostic diag = func.emitOpError()
                                << "cannot be scheduled: every device waits "
                                   "for another (";
      for (int64_t d = 0; d < shape.devices; ++d) {
        auto [kind, chunk, micro] = orders[d][next[d]];
        diag << (d ? ", " : "") << "device " << d << " at "
             << (kind == kUpdate     ? "U"
                 : kind == Action::F ? "F"
                 : kind == Action::B ? "B"
                                     : "W")
             << chunk << "." << micro;
      }
      return diag << ")";
    }
  }
  return success();
}

Value Scheduler::resolve(Value value, int64_t micro, int64_t device,
                         int64_t chunk, Operation *user) {
  // A carried micro-batch reads what the previous step's forward pass left.
  if (micro != kWholeStep && micro < 0 && isCarried(value, chunk))
    return carried(value, stepMicro(micro), chunk, user);
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    unsigned i = arg.getArgNumber();
    if (auto input = func.getArgAttrOfType<InputAttr>(
            i, StrataDialect::getInputAttrName())) {
      if (input.getRole() == InputRole::step || shape.microBatches == 1 ||
          micro == kWholeStep)
        return value;
      Value &slice = slices[{value, micro, device}];
      if (!slice) {
        auto op = MicroBatchOp::create(builder, value.getLoc(), value, micro,
                                       shape.microBatches);
        setLayer(op, *getLayer(user));
        tag(op, chunk, micro);
        slice = op.getResult();
      }
      return slice;
    }
    // Asynchronous schedules: the weight version this micro-batch reads.
    if (micro != kWholeStep && versions.count(value))
      return versionOf(value, weightVersion(shape, device, micro));
    auto it = remoteUsers.find(value);
    if (it == remoteUsers.end() || !llvm::is_contained(it->second, device))
      return value;
    micro = kWholeStep; // A parameter travels once per step.
  } else if (deviceOf(chunkOf[value.getDefiningOp()]) == device) {
    return lookupOrDie(cloned, {value, micro}, "a value of the same device");
  }
  Value &recv = received[{value, micro, device}];
  if (!recv) {
    int64_t from = isa<BlockArgument>(value)
                       ? homeOf.lookup(value)
                       : deviceOf(chunkOf[value.getDefiningOp()]);
    // A carried receive's send is the previous step's: later in the
    // function, so the receive may allocate the tag.
    int64_t t = micro != kWholeStep && micro < 0
                    ? tagOf(value, micro, device)
                    : lookupOrDie(tags, {value, micro, device},
                                  "the tag of a transfer");
    auto op = RecvOp::create(builder, value.getLoc(), value.getType(), from, t);
    setLayer(op, *getLayer(user));
    if (Attribute phase = user->getAttr(StrataDialect::getPhaseAttrName()))
      op->setAttr(StrataDialect::getPhaseAttrName(), phase);
    tag(op, chunk, micro);
    recv = op.getResult();
  }
  return recv;
}

/// A new state of `func` (an argument before the loss's result is
/// returned), initially zeros, belonging to no parameter.
static BlockArgument addCarryState(func::FuncOp func, OpBuilder &builder,
                                   Type type, StringRef name, Location loc) {
  auto state = StateAttr::get(func.getContext(), name, "", StateInit::zeros);
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, type,
                                 builder.getDictionaryAttr(builder.getNamedAttr(
                                     StrataDialect::getStateAttrName(), state)),
                                 loc)))
    llvm::report_fatal_error("--strata-schedule-pipeline: cannot add a state");
  return func.getArgument(index);
}

void Scheduler::sendNextStep(Operation *original, Value result, Value copy,
                             int64_t micro, int64_t device) {
  int64_t chunk = chunkOf[original];
  Carry carry = newCarry(
      result, micro, chunk, original, Carry::Kind::Outgoing, copy.getType(),
      (".micro" + Twine(micro) + ".to" + Twine(device)).str());
  // Not local: the next step's send reads it.
  fillCarry(carry, copy, chunk, micro, /*local=*/false);
  carries.push_back(carry);
  // The send, first in the step: the previous step's value.
  OpBuilder::InsertionGuard guard(builder);
  Block &body = func.getBody().front();
  if (lastNextStepSend)
    builder.setInsertionPointAfter(lastNextStepSend);
  else
    builder.setInsertionPointToStart(&body);
  auto send = SendOp::create(builder, original->getLoc(), carry.state, device,
                             tagOf(result, micro, device));
  setLayer(send, *getLayer(original));
  send->setAttr(StrataDialect::getPhaseAttrName(),
                PhaseAttr::get(builder.getContext(), Phase::backward));
  tag(send, chunk, micro - shape.microBatches);
  // tag() files the send under the current action; it belongs to the start
  // of the sender's step instead (predict).
  emitted[current].pop_back();
  nextStepSends.push_back(send);
  lastNextStepSend = send;
}

void Scheduler::emitSends(Operation *original, Operation *clone,
                          int64_t micro) {
  for (auto [result, copy] :
       llvm::zip(original->getResults(), clone->getResults())) {
    auto it = remoteUsers.find(result);
    if (it == remoteUsers.end())
      continue;
    for (int64_t device : it->second) {
      // A value only a pass that runs in the next step reads (carryOver:
      // a gradient, or a forward value no forward op of the device reads)
      // waits in a state and leaves at the start of the next step: no
      // message crosses a step boundary, so the states hold all a
      // checkpoint needs of a pipeline in flight.
      if (shape.carryOver && micro >= 0 &&
          micro >= shape.microBatches - carriedMicroBatches(shape, device) &&
          !readByForward(result, device)) {
        sendNextStep(original, result, copy, micro, device);
        continue;
      }
      int64_t t = tagOf(result, micro, device);
      auto send = SendOp::create(builder, original->getLoc(), copy, device, t);
      setLayer(send, *getLayer(original));
      if (Attribute phase =
              original->getAttr(StrataDialect::getPhaseAttrName()))
        send->setAttr(StrataDialect::getPhaseAttrName(), phase);
      tag(send, chunkOf[original], micro);
    }
  }
}

Value Scheduler::accumulate(Value acc, Value next, Operation *like,
                            int64_t chunk, int64_t micro, bool backward) {
  if (!acc)
    return next;
  auto add = AddOp::create(builder, like->getLoc(), acc, next);
  setLayer(add, *getLayer(like));
  if (backward)
    add->setAttr(StrataDialect::getPhaseAttrName(),
                 PhaseAttr::get(builder.getContext(), Phase::backward));
  tag(add, chunk, micro);
  return add.getResult();
}

void Scheduler::emitAction(const ActionKey &key) {
  current = key;
  auto [kind, chunk, micro] = key;
  int64_t device = deviceOf(chunk);
  if (kind == kUpdate) {
    if (micro != kWholeStep)
      emitWindowUpdates(chunk, micro);
    else
      emitUpdates(chunk);
    return;
  }
  // Parameters another device reads travel at the start of the step.
  if (micro == 0 && kind == Action::F && chunk == device)
    for (BlockArgument arg : func.getArguments()) {
      auto it = remoteUsers.find(arg);
      auto home = homeOf.find(arg);
      if (it == remoteUsers.end() || home == homeOf.end() ||
          home->second != device)
        continue;
      for (int64_t to : it->second) {
        int64_t t = tagOf(arg, kWholeStep, to);
        auto send = SendOp::create(builder, arg.getLoc(), arg, to, t);
        setLayer(send, stages[chunk].firstLayer);
        tag(send, chunk, kWholeStep);
      }
    }
  for (Operation *op : opsOf[{kind, chunk}]) {
    IRMapping mapping;
    for (Value operand : op->getOperands())
      mapping.map(operand, resolve(operand, micro, device, chunk, op));
    // Running statistics are updated in place, once per micro-batch in
    // micro-batch order: each clone reads the previous clone's update.
    auto stateful = dyn_cast<StatefulOpInterface>(op);
    if (stateful)
      for (OpResult result : op->getResults())
        if (Value updated =
                stateful.getUpdatedOperand(result.getResultNumber()))
          if (Value latest = latestState.lookup(updated))
            mapping.map(updated, latest);
    Operation *clone = builder.clone(*op, mapping);
    tag(clone, chunk, micro);
    if (stateful)
      for (OpResult result : op->getResults())
        if (Value updated =
                stateful.getUpdatedOperand(result.getResultNumber()))
          latestState[updated] = clone->getResult(result.getResultNumber());
    for (auto [result, copy] : llvm::zip(op->getResults(), clone->getResults()))
      cloned[{result, micro}] = copy;
    emitSends(op, clone, micro);
    for (Value result : op->getResults()) {
      if (Operation *update = updateOfGrad.lookup(result)) {
        int64_t window = updateWindow(shape);
        std::pair<Value, int64_t> key{result, windowOf(micro)};
        Value acc = gradAcc.lookup(key);
        // The first carried micro-batch continues the sum of its window
        // that the previous step began.
        int64_t carried = carriedMicroBatches(shape, device);
        if (!acc && micro == -carried && carried % window != 0)
          acc = carriedSum(result, chunk);
        gradAcc[key] = accumulate(acc, cloned[{result, micro}], update, chunk,
                                  micro, /*backward=*/true);
        // After the last micro-batch of its window the gradient is final:
        // average it now, so that its all-reduce can overlap the rest of the
        // backward pass.
        if ((micro + 1) % window == 0)
          gradAcc[key] =
              average(gradAcc[key], update, chunk, /*backward=*/true, window,
                      isAsynchronous(shape.kind) ? micro : kWholeStep);
      }
      if (result == loss)
        lossAcc = accumulate(lossAcc, cloned[{result, micro}], op, chunk, micro,
                             /*backward=*/false);
    }
  }
  if (shape.carryOver && micro >= 0)
    fillCarries(chunk, micro, kind);
}

bool Scheduler::isCarried(Value value, int64_t chunk) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto input = func.getArgAttrOfType<InputAttr>(
        arg.getArgNumber(), StrataDialect::getInputAttrName());
    return input && input.getRole() != InputRole::step;
  }
  Operation *def = value.getDefiningOp();
  if (!def || !kindOf.count(def) || kindOf[def] != Action::F)
    return false;
  // Another device's forward value: carried when this chunk's forward pass
  // receives it; else the sender keeps it for the next step (emitSends).
  return readByForward(value, chunk);
}

bool Scheduler::readByForward(Value value, int64_t chunk) {
  return llvm::any_of(opsOf[{Action::F, chunk}], [&](Operation *op) {
    return llvm::is_contained(op->getOperands(), value);
  });
}

Scheduler::Carry Scheduler::newCarry(Value value, int64_t micro, int64_t chunk,
                                     Operation *user, Carry::Kind kind,
                                     Type type, StringRef suffix) {
  std::string name;
  for (int64_t n = carries.size();; ++n) {
    name =
        ("pipeline.carry" + Twine(n) + ".stage" + Twine(chunk) + suffix).str();
    if (stateNames.insert(name).second)
      break;
  }
  Carry carry;
  carry.value = value;
  carry.micro = micro;
  carry.chunk = chunk;
  carry.user = user;
  carry.kind = kind;
  carry.state = addCarryState(func, builder, type, name, value.getLoc());
  carry.newest = carry.state;
  return carry;
}

Value Scheduler::carried(Value value, int64_t micro, int64_t chunk,
                         Operation *user) {
  auto [it, inserted] =
      carryIndex.try_emplace({value, micro, chunk}, carries.size());
  if (!inserted)
    return carries[it->second].newest;
  Type type = value.getType();
  if (isa<BlockArgument>(value) && shape.microBatches > 1) {
    // An input's micro-batch slice.
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> dims(tensor.getShape());
    dims[0] /= shape.microBatches;
    type = tensor.clone(dims);
  }
  carries.push_back(newCarry(value, micro, chunk, user, Carry::Kind::Forward,
                             type, (".micro" + Twine(micro)).str()));
  return carries.back().newest;
}

Value Scheduler::carriedSum(Value grad, int64_t chunk) {
  auto [it, inserted] =
      sumCarryIndex.try_emplace({grad, chunk}, carries.size());
  if (!inserted)
    return carries[it->second].newest;
  carries.push_back(newCarry(grad, -1, chunk, updateOfGrad.lookup(grad),
                             Carry::Kind::Sum, grad.getType(), ".sum"));
  return carries.back().newest;
}

void Scheduler::fillCarry(Carry &carry, Value source, int64_t chunk,
                          int64_t micro, bool local) {
  auto op =
      CopyIntoOp::create(builder, carry.value.getLoc(), source, carry.newest);
  op.setLocal(local);
  setLayer(op, *getLayer(carry.user));
  // Not forward: an evaluation (the forward pass alone) leaves the carried
  // values of the training run alone.
  op->setAttr(StrataDialect::getPhaseAttrName(),
              PhaseAttr::get(builder.getContext(), Phase::backward));
  tag(op, chunk, micro);
  carry.newest = op.getResult();
  carry.filled = true;
}

void Scheduler::fillCarries(int64_t chunk, int64_t micro, int kind) {
  int64_t device = deviceOf(chunk);
  if (kind == Action::F) {
    for (Carry &carry : carries)
      if (carry.chunk == chunk && carry.micro == micro && !carry.filled &&
          carry.kind == Carry::Kind::Forward)
        fillCarry(carry, resolve(carry.value, micro, device, chunk, carry.user),
                  chunk, micro, /*local=*/true);
    return;
  }
  // After the last backward pass that stays in the step: the partial sums
  // of the window the carried passes finish.
  int64_t carriedCount = carriedMicroBatches(shape, device);
  if (kind != Action::B || carriedCount == 0 ||
      micro != shape.microBatches - carriedCount - 1)
    return;
  for (Carry &carry : carries) {
    if (carry.kind != Carry::Kind::Sum || carry.chunk != chunk || carry.filled)
      continue;
    std::pair<Value, int64_t> key{carry.value, windowOf(micro)};
    fillCarry(carry, lookupOrDie(gradAcc, key, "a window's partial gradient"),
              chunk, micro, /*local=*/true);
    gradAcc.erase(key);
  }
}

Value Scheduler::average(Value value, Operation *like, int64_t chunk,
                         bool backward, int64_t count, int64_t micro) {
  auto finish = [&](Operation *op) {
    if (backward)
      op->setAttr(StrataDialect::getPhaseAttrName(),
                  PhaseAttr::get(builder.getContext(), Phase::backward));
    setLayer(op, *getLayer(like));
    tag(op, chunk, micro);
  };
  if (count > 1) {
    auto scale = ScaleOp::create(
        builder, like->getLoc(), value,
        builder.getF64FloatAttr(1.0 / static_cast<double>(count)));
    finish(scale);
    value = scale.getResult();
  }
  if (replicas > 1) {
    auto reduce = AllReduceOp::create(builder, like->getLoc(), value,
                                      /*mean=*/true, replicas);
    finish(reduce);
    value = reduce.getResult();
  }
  return value;
}

void Scheduler::emitUpdates(int64_t device) {
  // The asynchronous schedules updated after every window.
  for (Operation *update : updates) {
    int64_t chunk = chunkOf[update];
    if (deviceOf(chunk) != device || isAsynchronous(shape.kind))
      continue;
    OpOperand &gradOperand =
        cast<InPlaceOpInterface>(update).getGradientMutable();
    Value grad = gradAcc.lookup({gradOperand.get(), 0});
    IRMapping mapping;
    for (OpOperand &operand : update->getOpOperands())
      mapping.map(operand.get(), &operand == &gradOperand
                                     ? grad
                                     : resolve(operand.get(), kWholeStep,
                                               device, chunk, update));
    Operation *clone = builder.clone(*update, mapping);
    tag(clone, chunk, kWholeStep);
    for (auto [result, copy] :
         llvm::zip(update->getResults(), clone->getResults()))
      cloned[{result, kWholeStep}] = copy;
  }
  Operation *lossOp = loss.getDefiningOp();
  int64_t lossDevice = deviceOf(lossChunk);
  if (device == lossDevice) {
    finalLoss = average(lossAcc, lossOp, lossChunk, /*backward=*/false,
                        shape.microBatches);
    if (lossDevice != 0) {
      int64_t t = tagOf(loss, kWholeStep, 0);
      auto send = SendOp::create(builder, loss.getLoc(), finalLoss, 0, t);
      setLayer(send, *getLayer(lossOp));
      tag(send, lossChunk, kWholeStep);
    }
  }
  if (device == 0 && lossDevice != 0) {
    auto recv = RecvOp::create(
        builder, loss.getLoc(), loss.getType(), lossDevice,
        lookupOrDie(tags, {loss, kWholeStep, 0}, "the tag of the loss"));
    setLayer(recv, *getLayer(lossOp));
    tag(recv, 0, kWholeStep);
    finalLoss = recv.getResult();
  }
}

LogicalResult Scheduler::prepareVersions() {
  if (!isAsynchronous(shape.kind))
    return success();
  const char *name = getScheduleName(shape.kind);
  llvm::StringSet<> &names = stateNames;
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto p = func.getArgAttrOfType<ParamAttr>(
            i, StrataDialect::getParamAttrName()))
      names.insert(p.getName());
    if (auto st = func.getArgAttrOfType<StateAttr>(
            i, StrataDialect::getStateAttrName()))
      names.insert(st.getName());
  }
  for (Operation *update : updates) {
    if (!isa<SgdUpdateOp, AdamUpdateOp>(update))
      return update->emitOpError()
             << "cannot run in the " << name
             << " schedule, which updates the weights several times per "
                "step: only sgd_update and adam_update can";
    Value param = cast<InPlaceOpInterface>(update).getParameter();
    auto arg = dyn_cast<BlockArgument>(param);
    ParamAttr attr =
        arg ? func.getArgAttrOfType<ParamAttr>(
                  arg.getArgNumber(), StrataDialect::getParamAttrName())
            : ParamAttr();
    if (!attr)
      return update->emitOpError() << "updates a value that is not a "
                                      "parameter (strata.param) of the step";
    if (versions.count(param))
      return update->emitOpError() << "updates parameter '" << attr.getName()
                                   << "', which another update also updates";
    if (remoteUsers.count(param))
      return update->emitOpError()
             << "updates parameter '" << attr.getName()
             << "', which another pipeline device reads (e.g. a tied "
                "embedding); the "
             << name
             << " schedule keeps weight versions on the parameter's own "
                "device only";
    // State j keeps version j - kept at the start of a step: the weights
    // kept - j updates older than the parameter (`PARAM.stash<kept - j>`).
    Versions &kept = versions[param];
    kept.param = param;
    int64_t device = deviceOf(chunkOf[update]);
    int64_t count = keptVersions(shape, device);
    // With carryOver the step starts before the previous step's last
    // updates: its weights are version -carriedUpdates.
    int64_t start = -carriedUpdates(shape, device);
    kept.paramVersion = start;
    for (int64_t j = 0; j < count; ++j) {
      std::string stash = (attr.getName() + ".stash" + Twine(count - j)).str();
      if (!names.insert(stash).second)
        return update->emitOpError()
               << "needs a state named '" << stash
               << "' for an older weight version, but the step already has "
                  "one";
      auto state = StateAttr::get(func.getContext(), stash, attr.getName(),
                                  StateInit::param);
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(
              index, param.getType(),
              builder.getDictionaryAttr(builder.getNamedAttr(
                  StrataDialect::getStateAttrName(), state)),
              param.getLoc())))
        return func.emitOpError() << "cannot add state '" << stash << "'";
      kept.slots.push_back(func.getArgument(index));
      kept.slotVersion.push_back(start + j - count);
    }
  }
  return success();
}

Value Scheduler::versionOf(Value param, int64_t version) {
  const Versions &kept = versions.find(param)->second;
  if (kept.paramVersion == version)
    return kept.param;
  for (auto [slot, held] : llvm::zip(kept.slots, kept.slotVersion))
    if (held == version)
      return slot;
  llvm::report_fatal_error("--strata-schedule-pipeline: internal error: a "
                           "weight version is read after it was overwritten");
}

void Scheduler::keepVersions(Value param, Operation *like, int64_t chunk,
                             int64_t micro, bool last) {
  Versions &kept = versions.find(param)->second;
  int64_t count = static_cast<int64_t>(kept.slots.size());
  if (count == 0)
    return;
  constexpr int64_t kFree = std::numeric_limits<int64_t>::min();
  auto slotOf = [&](int64_t version) -> int64_t {
    for (int64_t j = 0; j < count; ++j)
      if (kept.slotVersion[j] == version)
        return j;
    return -1;
  };
  auto copy = [&](int64_t to, int64_t from) {
    Value source = from < 0 ? kept.param : kept.slots[from];
    int64_t version = from < 0 ? kept.paramVersion : kept.slotVersion[from];
    auto op =
        CopyIntoOp::create(builder, like->getLoc(), source, kept.slots[to]);
    setLayer(op, *getLayer(like));
    op->setAttr(StrataDialect::getPhaseAttrName(),
                PhaseAttr::get(builder.getContext(), Phase::update));
    tag(op, chunk, micro);
    kept.slots[to] = op.getResult();
    kept.slotVersion[to] = version;
    if (from >= 0)
      kept.slotVersion[from] = kFree;
  };
  // The micro-batches that read the oldest kept version are done (the
  // window closing now was the last): its state takes the parameter's
  // version, which the update is about to overwrite.
  int64_t hole = slotOf(kept.paramVersion - count);
  if (hole < 0)
    llvm::report_fatal_error("--strata-schedule-pipeline: internal error: "
                             "no weight version is free to overwrite");
  if (!last) {
    copy(hole, -1);
    return;
  }
  // After the step's last update (U in all), state j must hold version
  // U + j - count for the next step; the versions it needs are the
  // parameter's and those of the other states. Move them with the free
  // state as the spare (cycles cost one extra copy each).
  auto target = [&, updates = updatesPerStep(shape),
                 start = -carriedUpdates(shape, deviceOf(chunk))](int64_t j) {
    return start + updates + j - count;
  };
  kept.slotVersion[hole] = kFree;
  for (;;) {
    int64_t from = slotOf(target(hole));
    if (from >= 0) {
      copy(hole, from);
      hole = from;
      continue;
    }
    if (target(hole) != kept.paramVersion)
      llvm::report_fatal_error("--strata-schedule-pipeline: internal error: "
                               "a weight version to keep is lost");
    int64_t misplaced = -1;
    for (int64_t j = 0; j < count && misplaced < 0; ++j)
      if (j != hole && kept.slotVersion[j] != target(j))
        misplaced = j;
    if (misplaced < 0) {
      copy(hole, -1);
      return;
    }
    copy(hole, misplaced);
    hole = misplaced;
  }
}

void Scheduler::emitWindowUpdates(int64_t chunk, int64_t micro) {
  int64_t device = deviceOf(chunk);
  bool last = lastUpdateOf.lookup(device) == ActionKey{kUpdate, chunk, micro};
  for (Operation *update : updates) {
    if (chunkOf[update] != chunk)
      continue;
    auto inPlace = cast<InPlaceOpInterface>(update);
    Value param = inPlace.getParameter();
    keepVersions(param, update, chunk, micro, last);
    OpOperand &gradOperand = inPlace.getGradientMutable();
    std::pair<Value, int64_t> key{gradOperand.get(), windowOf(micro)};
    Value grad = lookupOrDie(gradAcc, key, "a window's gradient");
    gradAcc.erase(key);
    IRMapping mapping;
    for (OpOperand &operand : update->getOpOperands()) {
      Value value = operand.get();
      if (&operand == &gradOperand)
        mapping.map(value, grad);
      else if (value == param)
        mapping.map(value, versions.find(param)->second.param);
      else if (Value newest = latest.lookup(value))
        mapping.map(value, newest);
      else
        mapping.map(value, resolve(value, kWholeStep, device, chunk, update));
    }
    Operation *clone = builder.clone(*update, mapping);
    tag(clone, chunk, micro);
    for (auto [i, result] : llvm::enumerate(update->getResults())) {
      Value copy = clone->getResult(i);
      cloned[{result, kWholeStep}] = copy;
      latest[inPlace.getUpdatedOperand(i)] = copy;
    }
    Versions &kept = versions.find(param)->second;
    // Adam's bias correction counts updates: this is update
    // kept.paramVersion of the step's updatesPerStep (negative: one of the
    // previous step's, carried over).
    int64_t updates = updatesPerStep(shape);
    if (auto adam = dyn_cast<AdamUpdateOp>(clone);
        adam && (updates > 1 || kept.paramVersion < 0)) {
      adam.setUpdateAttr(builder.getI64IntegerAttr(kept.paramVersion));
      adam.setUpdatesAttr(builder.getI64IntegerAttr(updates));
    }
    kept.param = latest.lookup(param);
    ++kept.paramVersion;
  }
}

/// Every receive's send runs in the same step as it: both of the previous
/// step's micro-batches or neither (a message that crossed a step boundary
/// would be lost at a checkpoint or the run's end).
static LogicalResult checkStepBoundaries(func::FuncOp func) {
  auto previous = [](Operation *op) {
    return op->hasAttr(StrataDialect::getPreviousStepAttrName());
  };
  // Tags are unique in the step: tag -> whether its send is the previous
  // step's.
  DenseMap<int64_t, bool> sent;
  func.walk([&](SendOp send) { sent[send.getTag()] = previous(send); });
  WalkResult walk = func.walk([&](RecvOp recv) {
    auto it = sent.find(recv.getTag());
    if (it == sent.end() || it->second == previous(recv))
      return WalkResult::advance();
    recv.emitOpError() << "internal error: receives tag " << recv.getTag()
                       << " sent in another step; schedule the pipeline "
                          "with drain=step";
    return WalkResult::interrupt();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult Scheduler::run() {
  if (failed(classify()) || failed(prepareVersions()) ||
      failed(buildActions()) || failed(linearize()))
    return failure();
  if (shape.carryOver && failed(checkStepBoundaries(func)))
    return failure();
  // The step returns the updated parameters and states, the states keeping
  // older weight versions, and device 0's loss.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> results;
  for (Value value : ret.getOperands().drop_back()) {
    auto it = cloned.find({value, kWholeStep});
    if (it == cloned.end())
      return ret.emitOpError()
             << "returns a value that is not an optimizer update's result; "
                "the pipeline scheduler cannot place it";
    results.push_back(it->second);
  }
  unsigned at = func.getNumResults() - 1;
  for (auto &[param, kept] : versions)
    for (Value slot : kept.slots) {
      results.push_back(slot);
      if (failed(func.insertResult(at++, slot.getType(), DictionaryAttr())))
        return func.emitOpError() << "cannot return the kept weight versions";
    }
  // The carried values, for the next step.
  for (const Carry &carry : carries) {
    if (!carry.filled)
      llvm::report_fatal_error("--strata-schedule-pipeline: internal error: "
                               "a carried value is never filled");
    results.push_back(carry.newest);
    if (failed(
            func.insertResult(at++, carry.newest.getType(), DictionaryAttr())))
      return func.emitOpError() << "cannot return the carried values";
  }
  results.push_back(finalLoss);
  ret->setOperands(results);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  return success();
}

std::string Scheduler::predict(const TargetDescription &target,
                               std::vector<TimedAction> &timeline,
                               double &stepSeconds, double &bubble) {
  // The timeline model (strata/Analysis/Timeline.h) replays each device's
  // actions in order: the receives of an action, its ops (their cost-model
  // seconds, collectives included), then its sends, which travel over the
  // link between the two ranks one after another.
  struct Transfer {
    int64_t tag, peer;
    double bytes;
  };
  std::map<ActionKey, double> seconds;
  std::map<ActionKey, std::vector<Transfer>> sendsOf, recvsOf;
  std::map<int64_t, std::pair<ActionKey, int64_t>> receiverOfTag;
  for (auto &[key, list] : emitted)
    for (Operation *op : list) {
      if (auto send = dyn_cast<SendOp>(op)) {
        sendsOf[key].push_back(
            {static_cast<int64_t>(send.getTag()),
             static_cast<int64_t>(send.getPeer()),
             static_cast<double>(getTensorBytes(send.getInput().getType()))});
        continue;
      }
      if (auto recv = dyn_cast<RecvOp>(op)) {
        recvsOf[key].push_back({static_cast<int64_t>(recv.getTag()),
                                static_cast<int64_t>(recv.getPeer()), 0});
        receiverOfTag[recv.getTag()] = {key, deviceOf(std::get<1>(key))};
        continue;
      }
      if (auto cost = dyn_cast<CostOpInterface>(op))
        seconds[key] += cost.estimateSeconds(target);
    }
  const char *names[] = {"F", "B", "W", "U"};
  // Ranks of one replica are device * replicas + r: adjacent devices share a
  // node when the node holds both ranks.
  timeline::System system;
  int64_t perNode = std::max<int64_t>(target.devicesPerNode, 1);
  for (int64_t d = 0; d < shape.devices; ++d)
    system.nodeOfRank.push_back(d * replicas / perNode);
  system.intraNode = {target.intraNode.latency(), target.intraNode.bandwidth()};
  system.interNode = {target.interNode.latency(), target.interNode.bandwidth()};
  // Per device, the action, the tag (-1: none) and the step (instance) of
  // each instruction.
  struct Origin {
    ActionKey key;
    int64_t tag, instance;
  };
  std::vector<std::vector<Origin>> origin;
  // The device orders run `instances` times in a row; the first skips the
  // carried actions, as a run's first step does.
  auto replay = [&](int64_t instances) {
    timeline::Schedule schedule;
    origin.assign(shape.devices, {});
    for (int64_t d = 0; d < shape.devices; ++d) {
      std::vector<timeline::Instruction> list;
      for (int64_t n = 0; n < instances; ++n) {
        // What the previous step kept for the carried passes leaves first.
        for (SendOp send : nextStepSends) {
          auto chunk = send->getAttrOfType<IntegerAttr>(
              StrataDialect::getStageAttrName());
          if (n == 0 || deviceOf(chunk.getInt()) != d)
            continue;
          list.push_back(timeline::Instruction::send(
              send.getPeer(), send.getTag(),
              static_cast<double>(getTensorBytes(send.getInput().getType()))));
          origin[d].push_back(
              {{Action::B, chunk.getInt(), -1}, (int64_t)send.getTag(), n});
        }
        for (const ActionKey &key : orders[d]) {
          int64_t micro = std::get<2>(key);
          if (n == 0 && instances > 1 && micro != kWholeStep && micro < 0)
            continue;
          for (const Transfer &t : recvsOf[key]) {
            list.push_back(timeline::Instruction::recv(t.peer, t.tag));
            origin[d].push_back({key, -1, n});
          }
          list.push_back(timeline::Instruction::compute(names[std::get<0>(key)],
                                                        seconds[key]));
          origin[d].push_back({key, -1, n});
          for (const Transfer &t : sendsOf[key]) {
            list.push_back(timeline::Instruction::send(t.peer, t.tag, t.bytes));
            origin[d].push_back({key, t.tag, n});
          }
        }
      }
      schedule.ranks.push_back(std::move(list));
    }
    return timeline::simulate(schedule, system);
  };
  // With carryOver a step's transfers feed the next step: the steady
  // state's step is the difference between three steps and two.
  int64_t instances = shape.carryOver ? 3 : 1;
  timeline::Result result = replay(instances);
  if (!result.ok())
    return result.error;
  double busy = 0;
  for (const timeline::RankStats &rank : result.ranks)
    busy += rank.busy;
  stepSeconds = result.stepSeconds;
  if (instances > 1) {
    std::vector<std::vector<Origin>> kept = std::move(origin);
    timeline::Result shorter = replay(instances - 1);
    origin = std::move(kept);
    if (!shorter.ok())
      return shorter.error;
    stepSeconds -= shorter.stepSeconds;
    for (const timeline::RankStats &rank : shorter.ranks)
      busy -= rank.busy;
  }
  // The trace shows the last step, from its first event.
  double from = std::numeric_limits<double>::infinity();
  for (const timeline::Event &e : result.events)
    if (origin[e.rank][e.index].instance == instances - 1)
      from = std::min(from, e.start);
  for (const timeline::Event &e : result.events) {
    auto [key, tag, instance] = origin[e.rank][e.index];
    if (instance != instances - 1)
      continue;
    if (tag < 0) {
      timeline.push_back({key, e.rank, e.start - from, e.end - from});
      continue;
    }
    // A transfer is drawn on its receiver's link row, named after the
    // action that waits for it.
    auto [to, device] = receiverOfTag.at(tag);
    timeline.push_back(
        {to, device, e.start - from, e.end - from, /*transfer=*/true});
  }
  bubble = stepSeconds > 0
               ? 1.0 - busy / (stepSeconds * static_cast<double>(shape.devices))
               : 0.0;
  return "";
}

/// Chrome trace-event JSON of a predicted timeline: per device one row of
/// passes (thread 2d) and one of the transfers it receives (thread 2d + 1).
static llvm::json::Value timelineJson(const std::vector<TimedAction> &timeline,
                                      int64_t devices) {
  llvm::json::Array events;
  auto row = [&](int64_t tid, std::string name) {
    events.push_back(
        llvm::json::Object{{"name", "thread_name"},
                           {"ph", "M"},
                           {"pid", 0},
                           {"tid", tid},
                           {"args", llvm::json::Object{{"name", name}}}});
  };
  for (int64_t d = 0; d < devices; ++d) {
    row(2 * d, "device " + std::to_string(d));
    row(2 * d + 1, "device " + std::to_string(d) + " link");
  }
  for (const TimedAction &t : timeline) {
    auto [kind, chunk, micro] = t.key;
    const char *names[] = {"F", "B", "W", "U"};
    const char *cats[] = {"forward", "backward", "weight-grad", "update"};
    std::string name = names[kind];
    if (micro >= 0)
      name += std::to_string(micro);
    else if (micro != kWholeStep)
      name += std::to_string(micro) + " (previous step)";
    if (t.transfer)
      name = "to " + name;
    events.push_back(llvm::json::Object{
        {"name", name},
        {"cat", t.transfer ? "communication" : cats[kind]},
        {"ph", "X"},
        {"pid", 0},
        {"tid", 2 * t.device + (t.transfer ? 1 : 0)},
        {"ts", t.start * 1e6},
        {"dur", (t.end - t.start) * 1e6},
        {"args",
         llvm::json::Object{{"chunk", chunk}, {"micro_batch", micro}}}});
  }
  return llvm::json::Object{{"traceEvents", std::move(events)},
                            {"displayTimeUnit", "ms"}};
}

namespace {
struct SchedulePipelinePass
    : public strata::impl::SchedulePipelinePassBase<SchedulePipelinePass> {
  using Base::Base;

  void runOnOperation() override;
  LogicalResult runOnStep(func::FuncOp func);
  /// The stages to schedule: the partitioner's (`strata.pipeline`) or
  /// `stages=` equal runs of layers; sets `stageReplicas` to the replicas of
  /// every stage.
  FailureOr<SmallVector<StageRange>> getStageList(func::FuncOp func,
                                                  int64_t &stageReplicas);
  /// The schedule's shape for `chunks` model chunks.
  FailureOr<ScheduleShape> getShape(func::FuncOp func, int64_t chunks);
  /// Predicts the scheduled step on the target, when one is known, and
  /// writes the trace when asked to.
  LogicalResult predict(func::FuncOp func, Scheduler &scheduler,
                        const ScheduleShape &shape,
                        FloatAttr &predictedStepSeconds,
                        FloatAttr &predictedBubble);
};
} // namespace

/// Checks that `stageList` holds contiguous, non-empty runs of layers.
static LogicalResult checkContiguous(func::FuncOp func,
                                     ArrayRef<StageRange> stageList) {
  for (auto [i, stage] : llvm::enumerate(stageList))
    if (stage.firstLayer > stage.lastLayer ||
        (i > 0 && stage.firstLayer != stageList[i - 1].lastLayer + 1))
      return func.emitOpError()
             << "stage #" << i << " (layers " << stage.firstLayer << ".."
             << stage.lastLayer
             << ") does not continue the previous stage; stages must be "
                "contiguous, non-empty runs of layers";
  return success();
}

/// The step is written for one micro-batch: its data and labels become
/// `microBatches` micro-batches' worth, which `strata.micro_batch` splits.
static LogicalResult growInputs(func::FuncOp func, int64_t microBatches) {
  SmallVector<Type> argTypes(func.getArgumentTypes());
  for (BlockArgument arg : func.getArguments()) {
    auto input = func.getArgAttrOfType<InputAttr>(
        arg.getArgNumber(), StrataDialect::getInputAttrName());
    if (!input || input.getRole() == InputRole::step)
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getRank() == 0)
      return func.emitOpError() << "input '" << input.getName()
                                << "' has no batch dimension to split";
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= microBatches;
    arg.setType(type.clone(shape));
    argTypes[arg.getArgNumber()] = arg.getType();
  }
  func.setType(
      FunctionType::get(func.getContext(), argTypes, func.getResultTypes()));
  return success();
}

FailureOr<SmallVector<StageRange>>
SchedulePipelinePass::getStageList(func::FuncOp func, int64_t &stageReplicas) {
  SmallVector<StageRange> stageList;
  stageReplicas = replicas;
  if (auto pipeline = func->getAttrOfType<PipelinePartitionAttr>(
          StrataDialect::getPipelineAttrName())) {
    if (stages != 0)
      return func.emitOpError()
             << "already has a partition (strata.pipeline); drop stages=";
    // The attribute's verifier guarantees at least one stage.
    stageReplicas = -1;
    for (PipelineStageAttr stage : pipeline.getStages()) {
      if (stageReplicas >= 0 && stage.getReplicas() != stageReplicas)
        return func.emitOpError()
               << "has stages with different replica counts (" << stageReplicas
               << " and " << stage.getReplicas()
               << "); the scheduler runs pipelines whose stages all have the "
                  "same number of replicas (partition with replicas=N or "
                  "straight)";
      stageReplicas = stage.getReplicas();
      stageList.push_back({stage.getFirstLayer(), stage.getLastLayer()});
    }
  } else {
    if (stages < 1)
      return func.emitOpError()
             << "has no pipeline partition; run --strata-partition-pipeline "
                "first or pass stages=N";
    auto names =
        func->getAttrOfType<ArrayAttr>(StrataDialect::getLayerNamesAttrName());
    int64_t layers = 0;
    func.walk([&](Operation *op) {
      if (std::optional<int64_t> layer = getLayer(op))
        layers = std::max(layers, *layer + 1);
    });
    if (names)
      layers = std::max<int64_t>(layers, names.size());
    int64_t count = stages;
    if (count > layers)
      return func.emitOpError() << "cannot cut " << layers << " layers into "
                                << count << " non-empty stages";
    for (int64_t s = 0; s < stages; ++s)
      stageList.push_back({s * layers / stages, (s + 1) * layers / stages - 1});
  }
  if (stageReplicas < 1)
    return func.emitOpError() << "needs replicas >= 1, got " << stageReplicas;
  if (failed(checkContiguous(func, stageList)))
    return failure();
  return stageList;
}

FailureOr<ScheduleShape> SchedulePipelinePass::getShape(func::FuncOp func,
                                                        int64_t chunks) {
  ScheduleShape shape;
  shape.kind = schedule;
  shape.microBatches = microBatches;
  shape.window = window;
  shape.virtualStages =
      shape.kind == ScheduleKind::Interleaved ? virtualStages : 1;
  if (shape.virtualStages < 1 || chunks % shape.virtualStages != 0)
    return func.emitOpError()
           << "cannot place " << chunks << " stages on devices holding "
           << shape.virtualStages
           << " chunks each (virtual=" << static_cast<int64_t>(virtualStages)
           << ")";
  shape.devices = chunks / shape.virtualStages;
  // auto: run where it pays (bench/pipeline-drain.md): pipedream, and 2bw
  // whose window is the whole step (a shorter window's carried update holds
  // up the next window's forward passes).
  shape.carryOver =
      drain == Drain::Run ||
      (drain == Drain::Auto && shape.microBatches >= shape.devices &&
       (shape.kind == ScheduleKind::PipeDream ||
        (shape.kind == ScheduleKind::TwoBW &&
         updateWindow(shape) == shape.microBatches)));
  if (std::string why = checkShape(shape); !why.empty())
    return func.emitOpError() << "cannot be scheduled: " << why;
  return shape;
}

LogicalResult SchedulePipelinePass::predict(func::FuncOp func,
                                            Scheduler &scheduler,
                                            const ScheduleShape &shape,
                                            FloatAttr &predictedStepSeconds,
                                            FloatAttr &predictedBubble) {
  std::string name =
      getTargetName(targetName, func->getParentOfType<ModuleOp>());
  if (name.empty() && !tracePath.empty())
    return func.emitOpError()
           << "trace= needs a target for the prediction (target=NAME)";
  if (name.empty())
    return success();
  FailureOr<TargetDescription> target =
      loadTarget(name, [&] { return func.emitOpError(); });
  if (failed(target))
    return failure();
  std::vector<TimedAction> timeline;
  double stepSeconds = 0, bubble = 0;
  if (std::string error =
          scheduler.predict(*target, timeline, stepSeconds, bubble);
      !error.empty())
    return func.emitOpError() << "the predicted timeline failed: " << error;
  Builder b(func.getContext());
  predictedStepSeconds = b.getF64FloatAttr(stepSeconds);
  predictedBubble = b.getF64FloatAttr(bubble);
  if (tracePath.empty())
    return success();
  std::string error;
  auto out = mlir::openOutputFile(tracePath, &error);
  if (!out)
    return func.emitOpError() << "cannot write the trace: " << error;
  out->os() << llvm::formatv("{0:2}", timelineJson(timeline, shape.devices))
            << "\n";
  out->keep();
  return success();
}

LogicalResult SchedulePipelinePass::runOnStep(func::FuncOp func) {
  if (func->hasAttr(StrataDialect::getPipelineScheduleAttrName()))
    return func.emitOpError() << "is already scheduled as a pipeline";
  if (func->hasAttr(StrataDialect::getReplicasAttrName()))
    return func.emitOpError()
           << "is already data-parallel; schedule the pipeline first (its "
              "stages get their own replicas)";
  int64_t stageReplicas = 0;
  FailureOr<SmallVector<StageRange>> stageList =
      getStageList(func, stageReplicas);
  if (failed(stageList))
    return failure();
  FailureOr<ScheduleShape> shape =
      getShape(func, static_cast<int64_t>(stageList->size()));
  if (failed(shape))
    return failure();
  // Every op is cloned per micro-batch: bound the result before building it.
  int64_t stepOps =
      static_cast<int64_t>(func.getBody().front().getOperations().size());
  if (stepOps > kMaxScheduledOps / microBatches)
    return func.emitOpError()
           << "would hold about " << stepOps << " x "
           << static_cast<int64_t>(microBatches)
           << " ops once scheduled, more than the " << kMaxScheduledOps
           << " the pass builds; use fewer micro-batches";
  if (microBatches > 1 && failed(growInputs(func, microBatches)))
    return failure();

  Scheduler scheduler(func, *shape, stageReplicas, *stageList);
  if (failed(scheduler.run()))
    return failure();
  FloatAttr predictedStepSeconds, predictedBubble;
  if (failed(predict(func, scheduler, *shape, predictedStepSeconds,
                     predictedBubble)))
    return failure();
  Builder b(func.getContext());
  func->setAttr(StrataDialect::getPipelineScheduleAttrName(),
                PipelineScheduleAttr::get(
                    b.getContext(), getScheduleName(shape->kind),
                    shape->devices, shape->virtualStages, microBatches,
                    stageReplicas,
                    isAsynchronous(shape->kind) ? updateWindow(*shape) : 0,
                    predictedStepSeconds, predictedBubble));
  func->setAttr(StrataDialect::getReplicasAttrName(),
                b.getI64IntegerAttr(stageReplicas));
  return success();
}

void SchedulePipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  Location loc = module.getLoc();
  if (failed(checkOptionRange(loc, getArgument(), "micro-batches", microBatches,
                              1, kMaxMicroBatches)) ||
      failed(checkOptionRange(loc, getArgument(), "virtual", virtualStages, 1,
                              kMaxVirtualStages)) ||
      failed(checkOptionRange(loc, getArgument(), "stages", stages, 0,
                              kMaxStages)) ||
      failed(checkOptionRange(loc, getArgument(), "replicas", replicas, 1,
                              kMaxReplicas)) ||
      failed(checkOptionRange(loc, getArgument(), "window", window, 0,
                              kMaxMicroBatches)))
    return signalPassFailure();
  if (window != 0 && schedule != ScheduleKind::TwoBW) {
    emitError(loc) << "--" << getArgument()
                   << ": window= applies to the 2bw schedule only";
    return signalPassFailure();
  }
  if (failed(forEachTrainStep(
          module, "no training step to schedule (run --strata-autodiff first)",
          [&](func::FuncOp func) { return runOnStep(func); })))
    signalPassFailure();
}
