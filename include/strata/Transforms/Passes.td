//===- Passes.td - Strata passes ---------------------------*- tablegen -*-===//

#ifndef STRATA_TRANSFORMS_PASSES_TD
#define STRATA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateCostsPass : Pass<"strata-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "Attach per-op and per-layer analytic costs for a target";
  let description = [{
    Loads a hardware description (`target=NAME` resolved in the target search
    path, or `target=PATH.json`) and asks every op implementing
    `CostOpInterface` for its FLOPs, bytes and roofline time on one device of
    that target. Each such op gets `strata.cost = #strata.cost<...>`; each
    function gets `strata.layer_costs`, one `#strata.layer_cost` per layer
    (sums over the layer's ops, the bytes of the parameters the layer owns and
    the bytes of activations it hands to later layers); the module gets
    `strata.target = "NAME"`.

    The target search path is `$STRATA_TARGET_PATH` (colon-separated), then
    the source tree's `targets/`, then the installed `share/strata/targets`.

    Example:

    ```
    strata-model gpt --preset gpt2-small |
      strata-opt --strata-annotate-costs="target=h100-sxm-8x"
    ```
  }];
  let options = [
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description: a name from the search path or a JSON file">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def AutodiffPass : Pass<"strata-autodiff", "::mlir::ModuleOp"> {
  let summary = "Turn a forward graph + loss into one training step";
  let description = [{
    Rewrites every function that returns one scalar `f32` loss and has
    parameters (`strata.param`) into a training step

      (parameters, data inputs, optimizer state, step) ->
          (new parameters, new optimizer state, loss)

    Reverse-mode differentiation walks the forward ops backwards and asks each
    op's `AutodiffOpInterface` for its operand gradients; gradients of values
    used more than once are summed with `strata.add`. Each parameter's
    gradient feeds an optimizer update (`strata.sgd_update` or
    `strata.adam_update`); optimizer state arrives as new arguments marked
    `strata.state` and the 1-based step counter as an `i32` input with
    `role = step`. Created ops carry the layer of the op they differentiate
    (or of the parameter they update) and `strata.phase = backward|update`;
    the function gets `strata.train_step`.

    An op on the path to the loss that does not implement the interface is an
    error at that op's location.
  }];
  let options = [
    Option<"optimizer", "optimizer", "::mlir::strata::OptimizerKind",
           /*default=*/"::mlir::strata::OptimizerKind::adamw",
           "Optimizer: sgd, adam or adamw",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::OptimizerKind::sgd, "sgd",
                        "SGD with momentum"),
             clEnumValN(::mlir::strata::OptimizerKind::adam, "adam",
                        "Adam (L2 weight decay)"),
             clEnumValN(::mlir::strata::OptimizerKind::adamw, "adamw",
                        "Adam with decoupled weight decay"))}]>,
    Option<"lr", "lr", "double", /*default=*/"1.0e-3", "Learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "SGD momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam beta2">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1.0e-8",
           "Adam epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "Weight decay (L2 for sgd and adam, decoupled for adamw)">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def DataParallelPass : Pass<"strata-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Replicate a training step over N ranks, averaging gradients";
  let description = [{
    Makes each `strata.train_step` function the step of one of `replicas`
    data-parallel ranks: every rank runs the whole step on its shard of the
    global batch (the batch in the IR is the per-replica batch, so the global
    batch is `replicas` times it), each parameter gradient is averaged over the
    replicas with `strata.all_reduce ... mean` right before its optimizer
    update (synchronous, at the end of the backward pass), and the returned
    loss is the mean over replicas. Since each replica's loss is a mean over
    its shard, the averaged gradient is the gradient of the global-batch loss.
    The function gets `strata.replicas = N`; the plan runs on N ranks.
  }];
  let options = [
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "Number of data-parallel replicas (ranks)">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def InsertGradSyncPass : Pass<"strata-insert-grad-sync", "::mlir::ModuleOp"> {
  let summary = "Bucket gradient all-reduces and overlap them with backward";
  let description = [{
    Replaces the synchronous gradient averaging of a data-parallel training
    step (`strata.all_reduce ... mean` before each update, as
    `--strata-data-parallel` inserts it) by bucketed asynchronous all-reduces
    that overlap the rest of the backward pass. Run it after
    `--strata-data-parallel`, or on a step that is not data-parallel yet with
    `replicas=N` (it then also averages the loss and marks the function, as
    `--strata-data-parallel` does).

    Gradients are taken in the order the backward pass produces them (the
    program order of the ops defining them) and cut into buckets of at least
    `bucket-bytes` bytes (the last bucket takes what is left). A bucket's
    `strata.all_reduce_start` goes right after the op producing its last
    gradient; its `strata.all_reduce_wait` right before the first optimizer
    update that reads one of its gradients, so each update waits only for its
    own bucket. Buckets are numbered from 0 in the order they start.

    Without `bucket-bytes` the size comes from the cost model of `target`
    (`target=NAME` or `target=FILE.json`, as `--strata-annotate-costs`; by
    default the module's `strata.target`): each candidate size (powers of two
    from 4 KiB up to all gradients in one bucket) is replayed on a timeline
    where gradient `g` is ready when the backward ops up to its producer
    have run (their `CostOpInterface` times) and the buckets' ring
    all-reduces (latency `2 (p - 1) a` plus `2 (p - 1) / p` bytes over the
    bandwidth of the link joining the replicas) run one after another on the
    link; the size whose last all-reduce ends first wins, the larger size on
    ties (fewer messages). Small buckets start early but pay the latency per
    bucket; large buckets pay it once but leave more transfer after the
    backward pass ends.

    With `accumulate=host` (seed 001's multi-GPU-using-CPUs method) the
    buckets are accumulated in host memory instead: each
    `all_reduce_start` carries `host` and `chunk_bytes`, and the runtime
    sends the bucket chunk by chunk to rank 0's host, which sums every
    replica's chunk and sends each finished chunk back to every replica.

    With `staleness=s` (s > 0; seed 000's lagging gradients) every
    `all_reduce_start` carries `staleness = s`, and the runtime lets a
    replica that misses a step's deadline contribute the gradient set it
    computed in an earlier iteration (at most s iterations old) instead of
    holding the others up; the step's aggregate is the mean of the sets it
    holds, and every set is applied exactly once (docs/plan-format.md,
    "Lagging gradients"). The loss must then be the step's only other
    collective. `staleness=0` (the default) leaves the IR exactly as without
    the option: synchronous training. Host accumulation cannot lag.

    Example:

    ```
    strata-opt step.mlir --strata-data-parallel=replicas=4 \
      --strata-insert-grad-sync="target=h100-sxm-8x"
    strata-opt step.mlir --strata-data-parallel=replicas=4 \
      --strata-insert-grad-sync="bucket-bytes=1048576"
    strata-opt step.mlir --strata-data-parallel=replicas=4 \
      --strata-insert-grad-sync="bucket-bytes=1048576 staleness=1"
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "Bucket size in bytes (0: choose it with the cost model)">,
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description for the cost model: a name from the search "
           "path or a JSON file (default: the module's strata.target)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"0",
           "Replicas of a step that is not data-parallel yet (0: use the "
           "step's strata.replicas)">,
    Option<"accumulate", "accumulate", "::mlir::strata::GradAccumulation",
           /*default=*/"::mlir::strata::GradAccumulation::Device",
           "Where buckets are summed: device (an all-reduce among the "
           "replicas) or host (chunks accumulated in rank 0's host memory "
           "and sent back)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::GradAccumulation::Device, "device",
                        "an all-reduce among the replicas"),
             clEnumValN(::mlir::strata::GradAccumulation::Host, "host",
                        "chunks accumulated in rank 0's host memory"))}]>,
    Option<"chunkBytes", "chunk-bytes", "int64_t", /*default=*/"1048576",
           "accumulate=host: bytes per chunk sent to the host">,
    Option<"staleness", "staleness", "int64_t", /*default=*/"0",
           "Lagging gradients: how many iterations old a replica's gradient "
           "set may be when it is applied (0: synchronous)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "Gradient buckets">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def LowerToPlanPass : Pass<"strata-lower-to-plan", "::mlir::ModuleOp"> {
  let summary = "Assign every value of a training step a buffer in the arena";
  let description = [{
    Gives every argument and op result of each `strata.train_step` function a
    `#strata.buffer<id, offset, bytes>` (arguments: `strata.buffer`; ops:
    `strata.buffers`), in program order, 64-byte aligned, without reuse; the
    results of in-place updates (`strata.sgd_update`, `strata.adam_update`)
    take the buffers of the parameter and state they update. The function gets
    `strata.arena_bytes`. `strata-translate --export-plan` writes the plan
    file from these annotations (running this lowering itself when they are
    missing); a buffer planner may later change offsets only.
  }];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def RematPass : Pass<"strata-remat", "::mlir::ModuleOp"> {
  let summary = "Keep, swap or recompute saved activations to fit a memory budget";
  let description = [{
    Seed 001's "data swapping": every activation a `strata.train_step` saves
    for its backward pass (`SavedValues`) is kept in device memory, swapped
    to host memory and back (`strata.swap_out` / `strata.swap_out_wait` after
    its last forward use, `strata.swap_in` / `strata.swap_in_wait` before its
    first backward use, each a start/wait pair on the copy resource so the
    copy overlaps compute), or dropped and recomputed: the forward ops from
    the nearest available values (arguments and the other saved activations)
    are cloned just before its first backward use with `strata.phase =
    recompute`. Recomputation runs the same kernels on the same inputs, so the
    step's results are bit-identical.

    The choice fits the planned arena (`--strata-plan-buffers`' best-fit
    packing of the step's real lifetimes) into `budget` at the least added
    time under the model of `strata/Analysis/Remat.h`: op times from the cost
    model of the target, copies over its host link (PCIe for a GPU, memory
    bandwidth for the CPU target), copies that the compute between start and
    wait cannot hide counted as exposed. The model predicts the peak as the
    unconstrained arena minus the dropped bytes; the pass then plans the
    rewritten step's arena, and while it is over the budget tightens the
    limit by the excess and solves again.

    `budget`: bytes (suffixes K, M, G for KiB, MiB, GiB), or a fraction in
    (0, 1] of the unconstrained planned arena; default the target's device
    memory. `solver`: `milp` (exact under the model, COIN-OR CBC, warm-started
    from dp, stopped at `time-limit` seconds in all, over every round, with
    its gap reported; rounds after the limit use dp), `dp`
    (the better of "hidden swaps first, then a covering knapsack of
    recomputes" and a knapsack over every candidate priced alone), `sqrt`
    (Chen's sqrt(n) checkpoints) and `layer` (keep the last saved activation
    of each layer), both baselines that ignore the cost; `auto`: the MILP up
    to 400 candidates, else dp. A budget that no choice meets (parameters,
    gradients and optimizer states alone exceed it) is an error naming the
    smallest budget the pass could meet.

    Runs after `--strata-autodiff` and before `--strata-lower-to-plan`; the
    step gets `strata.remat_plan = #strata.remat_plan<...>`, which
    `--strata-plan-buffers` checks its arena against, and a remark with the
    peak before and after, the added compute, the swapped bytes and the
    copy time hidden and exposed. After `--strata-schedule-pipeline` every
    device's program is rewritten where it stands (swap ops take the
    producer's stage; slots are numbered per device); copies are then priced
    as exposed and placed by program order (waited after the last forward
    use, copied back just before the first backward use), since the
    micro-batches' forward and backward passes interleave. On a CPU target
    copies are exposed too: the copy thread shares the cores.

    ```
    strata-opt step.mlir --strata-remat="budget=0.5 solver=milp target=cpu-local"
    ```
  }];
  let options = [
    Option<"budget", "budget", "std::string", /*default=*/"\"\"",
           "Memory budget: bytes (K/M/G suffixes) or a fraction in (0, 1] of "
           "the unconstrained arena; default the target's device memory">,
    Option<"solver", "solver", "::mlir::strata::RematSolver",
           /*default=*/"::mlir::strata::RematSolver::Auto",
           "Which solver chooses",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::RematSolver::Auto, "auto",
                        "milp when small enough, else dp"),
             clEnumValN(::mlir::strata::RematSolver::Milp, "milp",
                        "exact under the model (COIN-OR CBC)"),
             clEnumValN(::mlir::strata::RematSolver::Dp, "dp",
                        "hidden swaps, then a knapsack of recomputes"),
             clEnumValN(::mlir::strata::RematSolver::Sqrt, "sqrt",
                        "Chen's sqrt(n) checkpoints (baseline)"),
             clEnumValN(::mlir::strata::RematSolver::Layer, "layer",
                        "keep one activation per layer (baseline)"))}]>,
    Option<"timeLimit", "time-limit", "double", /*default=*/"10.0",
           "Seconds the MILP may search in all (0 to 3600; the "
           "measure-and-tighten rounds share them, then use dp)">,
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description (default: the module's strata.target)">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def CompressActivationsPass
    : Pass<"strata-compress-activations", "::mlir::ModuleOp"> {
  let summary = "Store the activations saved for backward in a narrow format";
  let description = [{
    Seed 002's activation compression: every f32 activation a
    `strata.train_step` saves for its backward pass (`SavedValues`; values
    remat swaps to host memory are left alone) is packed by a
    `strata.compress` right after the forward op that produces it, and each
    backward op that reads it gets its own `strata.decompress` right before
    it. Between the two only the packed bytes are live, so
    `--strata-plan-buffers` sizes the arena with them. Parameters, gradients
    and optimizer states stay f32; integer tensors are not touched, and
    neither are the loss's inputs (the loss gradient exponentiates an error
    in a softmax's logits).

    `format`: one format of docs/compression.md by name (`mxfp8`, `mxfp6`,
    `mxfp4`, `mxint8`, `bfp:m=4,block=32`, `bfp-outlier:m=4,block=32,outliers=1`,
    `bfp-nu:m=3,block=32`, ...), `none` (the pass changes nothing), or `auto`.
    `candidates`: formats separated by `;` that the runtime may switch each
    tensor among while training; every compressed tensor's bytes are those
    of the widest candidate, so a switch never changes the arena. With a
    named format the candidates default to that format alone (no switching);
    with `auto` they default to `mxfp8;mxfp6;bfp:m=4,block=32;mxfp4`.
    `budget`: the relative error ||x - q(x)|| / ||x|| each tensor may have;
    with it (required for `auto`) the runtime measures every candidate on the
    first step's real activations, picks per tensor the narrowest candidate
    within the budget, measures again every `--compress-every` steps while
    training, and moves a tensor to a wider or narrower candidate when its
    measured error says so (the run log says what changed and why).
    `min-elements`: tensors with fewer elements stay f32.
    `sensitive`: the format (or `none`: f32) of the saved values whose
    backward rule amplifies an error in them
    (`AutodiffOpInterface::amplifiesSavedError`: the inputs of layer and
    batch normalisation, which their backward pass renormalises, and the
    probabilities of a softmax); they keep that one format while the others
    follow `format`/`candidates`/`budget`. Unset, they are treated like the
    others.

    Runs after `--strata-autodiff` (and `--strata-remat`), before
    `--strata-plan-buffers`; a step that already has buffers is an error.
    Values `--strata-remat` recomputes are no longer saved, so the two
    compose: the recomputed ones cost no bytes, the rest are packed (a
    recomputed value inherits the error of its packed inputs). The remark
    names the compressible saved values and their f32 bytes beside what
    was packed.
    A packed tensor lives beside its decompressed copies until its last
    backward use, so compressing can raise the peak of a step whose peak is
    in the backward pass; after `--strata-remat` the pass keeps the planned
    arena within the remat budget by leaving tensors uncompressed (those
    feeding a recomputation first, then the earliest) and says how many.

    ```
    strata-opt step.mlir --strata-compress-activations="format=mxfp6"
    strata-opt step.mlir --strata-compress-activations="format=auto budget=0.05"
    strata-opt step.mlir --strata-compress-activations="format=mxfp4 sensitive=mxfp8"
    ```
  }];
  let options = [
    Option<"format", "format", "std::string", /*default=*/"\"none\"",
           "A format name, none or auto">,
    Option<"candidates", "candidates", "std::string", /*default=*/"\"\"",
           "Formats separated by ';' the runtime may switch among">,
    Option<"budget", "budget", "double", /*default=*/"0.0",
           "Relative error budget per tensor for the runtime's choice (0: "
           "none; required for auto)">,
    Option<"minElements", "min-elements", "int64_t", /*default=*/"0",
           "Leave tensors with fewer elements uncompressed">,
    Option<"sensitive", "sensitive", "std::string", /*default=*/"\"\"",
           "Format (or none) of the saved values whose gradient amplifies "
           "their error (default: as the others)">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def PlanBuffersPass : Pass<"strata-plan-buffers", "::mlir::ModuleOp"> {
  let summary = "Reuse arena bytes between buffers that are never live together";
  let description = [{
    Plans static offsets in one arena per device for every `strata.train_step`
    function (seed 001's "memory reduction for fixed structures"): a training
    step has a fixed instruction order and fixed sizes, so every buffer's
    lifetime is known before it runs. Lifetimes come from `BufferLiveness`
    (the runtime's rules, `strata-rt/Liveness.h`): from the first to the last
    instruction of its rank program that reads or writes it, a send's input
    until the next in-place update, an asynchronous all-reduce's buffers until
    its wait, and parameters, gradients, optimizer states, inputs and the loss
    for the whole step. A pipelined step's device programs are laid end to
    end, so buffers of different devices share bytes freely.

    Lowers the step first (`--strata-lower-to-plan`) when it has no buffers.
    Buffer ids and sizes stay; only offsets and `strata.arena_bytes` change.
    Every packing passes one check before it is written (no two buffers live
    at the same time share a byte; offsets stay 64-byte aligned), and the
    plan loader checks the same again.

    Strategies (`strategy=`): `fixed-structure` (the patent's: the largest
    buffer's segment goes to buffers never live at the same time whose sizes
    fit in it; repeat with the rest), `greedy-size` (TFLite's greedy by
    size), `best-fit` (XLA's heap-simulator style, by size and by lifetime,
    the better of the two), `exact` (a MiniMalloc-style search for the
    minimum peak within `time-limit` seconds, keeping the best packing found
    when the limit is hit), and `auto` (the heuristics, then `exact` when
    they miss the lower bound; the smallest wins).

    The function gets `strata.memory_plan = #strata.memory_plan<...>` (arena,
    lower bound, bytes before planning, winning strategy, proven optimal),
    which the exporter writes into the plan, and a remark with the planning
    time.

    ```
    strata-opt step.mlir --strata-plan-buffers="strategy=auto time-limit=2"
    ```
  }];
  let options = [
    Option<"strategy", "strategy", "::mlir::strata::PackStrategy",
           /*default=*/"::mlir::strata::PackStrategy::Auto",
           "Packing strategy",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::PackStrategy::Auto, "auto",
                        "heuristics, then the exact search; the smallest"),
             clEnumValN(::mlir::strata::PackStrategy::FixedStructure,
                        "fixed-structure", "the largest buffer's segment, "
                        "shared by buffers never live together"),
             clEnumValN(::mlir::strata::PackStrategy::GreedySize,
                        "greedy-size", "TFLite's greedy by size"),
             clEnumValN(::mlir::strata::PackStrategy::BestFit, "best-fit",
                        "XLA's best fit, by size and by lifetime"),
             clEnumValN(::mlir::strata::PackStrategy::Exact, "exact",
                        "MiniMalloc-style search for the minimum peak"))}]>,
    Option<"timeLimit", "time-limit", "double", /*default=*/"0.5",
           "Seconds the exact search may take per function">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def PartitionPipelinePass
    : Pass<"strata-partition-pipeline", "::mlir::ModuleOp"> {
  let summary = "Partition a training step's layers into pipeline stages";
  let description = [{
    Chooses pipeline stages (contiguous ranges of `strata.layer` ids) and a
    replication (data-parallel) factor per stage for every `strata.train_step`
    function, with the dynamic program of PipeDream's optimizer
    (`strata/Analysis/PipelinePartition.h`): it minimises the slowest stage,
    where a stage costs its compute divided among its replicas, plus the ring
    all-reduce of its gradients among the replicas (intra-node link when they
    share a node, inter-node link otherwise) and its optimizer update, both
    once per step, against the transfer of activations and gradients over
    the cut after it (every tensor crossing the cut, so residual and
    branching graphs are priced correctly). Memory per device (weights,
    gradients, optimizer state, and the activations stashed for the
    micro-batches the schedule keeps in flight) is a constraint; a stage is
    never empty.

    Per-layer forward, backward and update times come from the ops'
    `CostOpInterface` on `target` (by `strata.phase`), parameter and optimizer
    state bytes from the arguments, stashed bytes from what the forward ops
    save for backward, and cut bytes from the forward values used by later
    layers; `profile=FILE` (a Strata profile, JSON) replaces the times and,
    where present, the sizes with measured ones.

    The step gets `strata.pipeline`, a `#strata.pipeline_partition` whose
    `stages` list one `#strata.pipeline_stage<first_layer, last_layer,
    replicas>` per stage in order (`--strata-schedule-pipeline` reads it; ops
    are not annotated), plus the prediction: `devices`, `micro_batches`,
    `schedule`, `objective`, `first_devices`, `predicted_stage_seconds`,
    `predicted_step_seconds`, `bubble_fraction`,
    `speedup_over_data_parallel` and `memory_bytes_per_device`. `report=FILE` writes the partition, the
    uniform partition and pure data parallelism side by side (JSON when the
    name ends in `.json`, text otherwise).

    Example:

    ```
    strata-model gpt --preset gpt2-small | strata-opt --strata-autodiff \
      --strata-partition-pipeline="target=h100-sxm-8x-4node micro-batches=64"
    ```
  }];
  let options = [
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description: a name from the search path or a JSON file "
           "(default: the module's strata.target)">,
    Option<"devices", "devices", "int64_t", /*default=*/"0",
           "Devices to use (0: every device of the target)">,
    Option<"stages", "stages", "std::string", /*default=*/"\"auto\"",
           "Number of stages, or auto">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"0",
           "Replicas of every stage (0: chosen per stage)">,
    Option<"straight", "straight", "bool", /*default=*/"false",
           "One device per stage, no replication">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Price memory as --strata-remat recomputation would: a stage keeps "
           "only its input per micro-batch in flight, at a second forward "
           "pass">,
    Option<"objective", "objective", "::mlir::strata::PartitionObjective",
           /*default=*/"::mlir::strata::PartitionObjective::Throughput",
           "throughput (slowest stage), balance (compute per device) or "
           "communication (bytes moved per step)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::PartitionObjective::Throughput,
                        "throughput", "the slowest stage"),
             clEnumValN(::mlir::strata::PartitionObjective::Balance,
                        "balance", "compute per device"),
             clEnumValN(::mlir::strata::PartitionObjective::Communication,
                        "communication", "bytes moved per step"))}]>,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"0",
           "Micro-batches per step (0: 4 per device)">,
    Option<"schedule", "schedule", "::mlir::strata::PipelineSchedule",
           /*default=*/"::mlir::strata::PipelineSchedule::OneFOneB",
           "gpipe, 1f1b, interleaved, zb-h1, pipedream or 2bw "
           "(activations in flight, the bubble, weight versions and syncs)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::PipelineSchedule::GPipe, "gpipe",
                        "all forwards, then all backwards"),
             clEnumValN(::mlir::strata::PipelineSchedule::OneFOneB, "1f1b",
                        "PipeDream-Flush"),
             clEnumValN(::mlir::strata::PipelineSchedule::Interleaved,
                        "interleaved", "interleaved 1F1B"),
             clEnumValN(::mlir::strata::PipelineSchedule::ZeroBubbleH1,
                        "zb-h1", "zero bubble"),
             clEnumValN(::mlir::strata::PipelineSchedule::PipeDream,
                        "pipedream", "asynchronous 1F1B, weight stashing"),
             clEnumValN(::mlir::strata::PipelineSchedule::TwoBW, "2bw",
                        "PipeDream-2BW"))}]>,
    Option<"memoryBytes", "memory-bytes", "int64_t", /*default=*/"0",
           "Memory per device in bytes (0: the target's)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "Measured per-layer profile (Strata profile JSON)">,
    Option<"report", "report", "std::string", /*default=*/"\"\"",
           "Write a partition report to this file (.json: JSON)">,
  ];
  let statistics = [
    Statistic<"numStages", "stages", "Pipeline stages chosen">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def TileGemmPass : Pass<"strata-tile-gemm", "::mlir::ModuleOp"> {
  let summary = "Attach a CPU GEMM tiling to every matmul";
  let description = [{
    Gives every `strata.matmul` a `strata.gemm_tiling = #strata.gemm_tiling<mc,
    nc, kc, mr, nr>`: the cache blocks and register tile of the runtime's CPU
    GEMM, which `strata-translate --export-plan` writes into the plan as the
    instruction's `mc`/`nc`/`kc`/`mr`/`nr`.

    The tiling comes from the tuning database `db=FILE` that `strata-tune`
    writes (JSON; entries keyed by dtype and the GEMM the runtime runs for the
    matmul: rows, columns, depth, batch of separate products, transposes). A
    matmul whose GEMM is not in the database gets the analytic tiling with
    `fallback=model` (the runtime's default cache blocks mc = 96, nc = 2048,
    kc = 256 clamped to the problem, and the register tile among 12x32, 8x32,
    4x32, 8x16, 4x16 that wastes the least padded work), or is an error at
    the matmul with `fallback=none`. Without `db`, every matmul gets the
    analytic tiling. A `bf16` matmul (`--strata-mixed-precision`) is keyed
    by dtype `bf16`: its tiling from the database blocks the runtime's bf16
    GEMM (mc, nc, kc on the register tile of the bf16 path the CPU runs;
    `strata-tune` measures bf16 GEMMs with that kernel). Without a database
    entry it gets no tiling (and loses one it had), so the bf16 GEMM runs its
    path's own blocking: the analytic model is the f32 GEMM's. A database
    that cannot be read, is malformed, or holds GPU tilings is an error.

    Example:

    ```
    strata-tune step.mlir --db tuning.json --budget 40
    strata-opt step.mlir --strata-tile-gemm="db=tuning.json fallback=none"
    ```
  }];
  let options = [
    Option<"database", "db", "std::string", /*default=*/"\"\"",
           "Tuning database written by strata-tune (JSON)">,
    Option<"fallback", "fallback", "::mlir::strata::GemmFallback",
           /*default=*/"::mlir::strata::GemmFallback::Model",
           "For GEMMs missing from the database: model or none",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::GemmFallback::Model, "model",
                        "the analytic tiling"),
             clEnumValN(::mlir::strata::GemmFallback::None, "none",
                        "an error at the matmul"))}]>,
  ];
  let statistics = [
    Statistic<"numTuned", "tuned", "Matmuls with a tiling from the database">,
    Statistic<"numModelled", "modelled",
              "Matmuls with the analytic fallback tiling">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def SchedulePipelinePass : Pass<"strata-schedule-pipeline", "::mlir::ModuleOp"> {
  let summary = "Split a partitioned step into micro-batched per-device "
                "pipeline programs";
  let description = [{
    Turns a training step partitioned into pipeline stages (the
    `strata.pipeline` attribute that `--strata-partition-pipeline` writes,
    or `stages=N` equal runs of layers) into one program per device of the
    pipeline, interleaved in the function and told apart by each op's
    `strata.stage`:

    - The step as written computes one micro-batch. Every forward and
      backward op is cloned once per micro-batch (`micro-batches=M`); the
      data and labels inputs grow to M micro-batches (a replica's batch),
      and `strata.micro_batch` hands each clone its rows. A run's global
      batch is replicas x M x the step's batch.
    - A value that one device computes and another reads travels through a
      `strata.send` / `strata.recv` pair (activations forward, their
      gradients backward; a parameter that another stage reads, e.g. a tied
      embedding, once per step).
    - Each parameter's gradient is summed over the micro-batches in
      micro-batch order (so every schedule gives bit-identical results);
      right after the last micro-batch's gradient it is scaled by 1/M and,
      when the stages are replicated, averaged over the stage's replicas
      with an `all_reduce` (which `--strata-insert-grad-sync` then turns
      into per-stage buckets overlapping the rest of the backward pass); the
      update runs once, after the device's last pass. The loss is averaged
      the same way and sent to device 0, which reports it.
    - The order of each device's passes is the schedule's: `gpipe` (all
      forwards, then all backwards), `1f1b` (PipeDream-Flush: warm-up
      forwards, then one forward and one backward; device d holds at most
      devices - d micro-batches), `interleaved` (Megatron-LM's interleaved
      1F1B over `virtual=V` model chunks per device; chunk c runs on device
      c mod devices, so the partition needs devices x V stages), `zb-h1`
      (zero bubble: backward split into the input-gradient part, which the
      previous stage waits for, and the weight-gradient part, which device d
      defers by up to devices - d - 1 passes to fill the cool-down bubble).
    - The asynchronous schedules (PipeDream's, seed 002) run the 1F1B order
      but update the weights inside the step, without waiting for a flush:
      `pipedream` (1F1B with weight stashing) updates each device's weights
      after every micro-batch's backward pass, with that micro-batch's
      gradient (averaged over the stage's replicas): micro-batch m on
      device d reads the weights after m - (devices - d - 1) updates (as
      many as its forward pass finds applied), and its backward pass reads
      the same version. `2bw` (PipeDream-2BW) accumulates the gradients of
      a window of `window=K` micro-batches (default: the whole step; K >=
      devices - 1 and K divides M) and updates after the backward pass that
      closes the window; every micro-batch of window t reads version t - 1,
      so W(t+1) = W(t) - lr grad(W(t - 1)). The versions still in use are
      kept in new states of each parameter (`PARAM.stashK`, K updates
      older, initialised as copies of the parameter and saved in
      checkpoints): devices - d - 1 per parameter for `pipedream`, one for
      `2bw`. Before an update overwrites a version, `strata.copy_into`
      copies it into the state whose version no micro-batch reads any more,
      so buffer planning and strata-sim count the stash. Both `sgd_update`
      and `adam_update` run so; Adam's updates carry `update u of U` so that
      their bias correction counts updates (t = (step - 1) U + u + 1).
    - `drain=run` (the default, `drain=auto`, for `pipedream` and for `2bw`
      whose window is the whole step, where the step has at least as many
      micro-batches as devices; a shorter 2bw window's carried update would
      hold up the next window's forward passes): the
      pipeline does not drain between steps, as PipeDream's. Device d's
      last devices - d - 1 backward passes, and the updates they close, run
      at the start of the next step, one after each of its warm-up forwards
      (`F0 B(M-w) F1 B(M-w+1) ...`), so every device alternates one forward
      and one backward across step boundaries: no bubble but the run's
      first fill and last drain. Those ops carry `strata.previous_step`
      (their `strata.micro_batch` is the previous step's); what they read of
      the previous step's forward pass (activations, received activations,
      input slices, a window's partial gradient sum) is carried over in
      states `pipeline.carryN.stageS.microM` (zeros at first; buffers of
      the arena, saved in checkpoints), which `strata.copy_into` fills after
      the forward pass. The runtime skips the `strata.previous_step` ops in
      a run's first step and runs them alone after its last step, so the
      trained weights are exactly those of `drain=step`, which drains the
      pipeline at the end of every step (the 1F1B bubble each step).
    - Across devices the ops are placed so that every recv follows its send:
      a schedule that would deadlock is reported, never emitted.

    With a target (`target=NAME|FILE`, or the module's `strata.target`), the
    pass also predicts the step by replaying each device's passes with the
    ops' `CostOpInterface` times and the transfers over the target's links,
    records `predicted_step_seconds` and `predicted_bubble` in the
    function's `strata.pipeline_schedule` (a `#strata.pipeline_schedule`),
    and with `trace=FILE` writes the
    predicted timeline as Chrome trace-event JSON (one row per device;
    `scripts/pipeline-svg.py` draws it, or a `strata-run --trace`, as an
    SVG).

    Run it after `--strata-autodiff` (and the partitioner) and before the
    plan is exported; `strata-translate --export-plan` then writes one rank
    per device and replica, each stage's replicas in one group.

    Example:

    ```
    strata-opt step.mlir --strata-schedule-pipeline="stages=4 micro-batches=8 schedule=1f1b"
    strata-opt step.mlir --strata-partition-pipeline="target=v100-pcie-4x" \
      --strata-schedule-pipeline="micro-batches=8 schedule=zb-h1 trace=pred.json"
    strata-opt step.mlir --strata-schedule-pipeline="stages=4 micro-batches=8 schedule=2bw window=4"
    strata-opt step.mlir --strata-schedule-pipeline="stages=4 micro-batches=8 schedule=pipedream drain=step"
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "::mlir::strata::pipeline::ScheduleKind",
           /*default=*/"::mlir::strata::pipeline::ScheduleKind::OneFOneB",
           "gpipe, 1f1b, interleaved, zb-h1, pipedream or 2bw",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::GPipe,
                        "gpipe", "all forwards, then all backwards"),
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::OneFOneB,
                        "1f1b", "PipeDream-Flush"),
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::Interleaved,
                        "interleaved", "Megatron-LM's interleaved 1F1B"),
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::ZeroBubbleH1,
                        "zb-h1", "zero bubble (split backward)"),
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::PipeDream,
                        "pipedream",
                        "asynchronous 1F1B with weight stashing"),
             clEnumValN(::mlir::strata::pipeline::ScheduleKind::TwoBW, "2bw",
                        "PipeDream-2BW (two weight versions)"))}]>,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"4",
           "Micro-batches per step (each replica's batch splits into this "
           "many)">,
    Option<"window", "window", "int64_t", /*default=*/"0",
           "2bw: micro-batches per weight update (0: the whole step)">,
    Option<"drain", "drain", "::mlir::strata::pipeline::Drain",
           /*default=*/"::mlir::strata::pipeline::Drain::Auto",
           "pipedream, 2bw: when the pipeline drains: run, step or auto",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::pipeline::Drain::Auto, "auto",
                        "run for pipedream and whole-step 2bw where the "
                        "step has at least as many micro-batches as "
                        "devices, else step"),
             clEnumValN(::mlir::strata::pipeline::Drain::Step, "step",
                        "at the end of every step"),
             clEnumValN(::mlir::strata::pipeline::Drain::Run, "run",
                        "once, at the end of the run (micro-batches carry "
                        "over between steps)"))}]>,
    Option<"virtualStages", "virtual", "int64_t", /*default=*/"2",
           "interleaved: model chunks per device">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Without a strata.pipeline partition: cut the layers into this "
           "many equal runs">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "With stages=N: data-parallel replicas of every stage">,
    Option<"targetName", "target", "std::string", /*default=*/"\"\"",
           "Target description for the predicted timeline (default: the "
           "module's strata.target; none: no prediction)">,
    Option<"tracePath", "trace", "std::string", /*default=*/"\"\"",
           "Write the predicted timeline here (Chrome trace-event JSON)">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def MixedPrecisionPass : Pass<"strata-mixed-precision", "::mlir::ModuleOp"> {
  let summary = "Compute matmuls and convolutions in bf16 with f32 accumulation";
  let description = [{
    Mixed precision as every modern trainer does it: with `compute=bf16`
    (the default) every `strata.matmul`, `strata.conv2d` and convolution
    gradient of the module gets `bf16` (MixedPrecisionOpInterface), so its
    operands are rounded to bfloat16 (to nearest even) and their products
    summed in f32. Tensors stay f32: parameters are the f32 master weights
    the optimizer updates, and gradients, optimizer state, layer norm,
    softmax, losses and every element-wise op stay f32. The rounding happens
    where the GEMM packs its operands (the runtime's CPU bf16 GEMM, cuBLAS's
    bf16 tensor-core mode on a GPU), so a weight is not copied to bf16 in
    memory. bf16 keeps f32's exponent range, so no loss scaling is needed.
    `compute=f32` removes the marks.

    A model whose tensors are bf16 (`strata-model --dtype bf16`) is first
    widened: every bf16 tensor becomes f32 (the runtime keeps no bf16
    tensors), and with `compute=model` exactly the ops that multiplied bf16
    tensors compute in bf16 (the others keep their marks). With `bf16` or
    `f32` the widening happens too, then every op is marked or unmarked.

    Run it after `--strata-autodiff` (it marks the gradient products too;
    marked before autodiff, a product's gradient products inherit the mark).
    `--strata-tile-gemm` gives `bf16` matmuls tilings of the bf16 GEMM.

    ```
    strata-opt step.mlir --strata-mixed-precision
    strata-opt model.mlir --strata-train-pipeline="mixed-precision=bf16"
    ```
  }];
  let options = [
    Option<"compute", "compute", "::mlir::strata::ComputePrecision",
           /*default=*/"::mlir::strata::ComputePrecision::BF16",
           "Arithmetic of the matmuls and convolutions: bf16, f32 or model",
           [{::llvm::cl::values(
             clEnumValN(::mlir::strata::ComputePrecision::BF16, "bf16",
                        "bf16 operands, f32 accumulation"),
             clEnumValN(::mlir::strata::ComputePrecision::F32, "f32",
                        "f32 throughout"),
             clEnumValN(::mlir::strata::ComputePrecision::Model, "model",
                        "bf16 where the model's tensors were bf16"))}]>,
  ];
  let statistics = [
    Statistic<"numMarked", "bf16-ops", "Matmuls and convolutions computing in bf16">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

def FusePass : Pass<"strata-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuse element-wise ops into GEMM epilogues and group the "
                "optimizer updates into multi-tensor kernels";
  let description = [{
    Rewrites each `strata.train_step` so that fewer kernels pass over memory,
    computing exactly what the unfused step computes (in f32 the results are
    bit-identical: the runtime's fused kernels run the unfused kernels'
    arithmetic, after the full sum over `k`):

    - **Forward epilogues** (`epilogues`): `strata.matmul` then
      `strata.bias_add` along the last dimension, optionally then
      `strata.relu` or `strata.gelu`, becomes one `strata.fused_matmul`
      (`bias`, `bias_relu`, `bias_gelu`). A relu's gradient reads the relu's
      output instead of its input (`x > 0` exactly where `relu(x) > 0`), so
      the sum need not be kept; when something else still reads the sum (the
      input of `strata.gelu_grad`, a compressed or swapped activation), the
      fused op also returns it as `pre_activation`.
    - **Backward epilogues** (`epilogues`): a matmul whose only user is a
      `strata.relu_grad` or `strata.gelu_grad` taking it as the incoming
      gradient (the input gradient of the next layer) becomes one
      `strata.fused_matmul` (`relu_grad`, `gelu_grad`).
    - **Residual epilogues** (`epilogues`): a matmul, or a fused matmul
      with a `bias` epilogue alone, whose only user is a `strata.add` becomes
      one `strata.fused_matmul` (`residual`, `bias_residual`) that adds the
      add's other operand: a transformer's residual connections and the sums
      of two gradient contributions (`dx = dq·Wqᵀ + dk·Wkᵀ`). The product
      moves to the add, at most 64 ops later and past no op that updates
      one of its operands in place; of two products, the later one fuses.
    - **Heads layouts** (`epilogues`): attention's head-split transposes
      (`strata.transpose` by `[..., r-2, r-3, r-1]`) fold into the plain
      matmuls that read them (`heads_a`, `heads_b`: the matmul reads the
      transpose's input, a computed activation, with a row stride of
      `heads · head_size`) or into the one matmul whose only use they are
      (`heads_c`); a transpose nothing else reads goes. The GEMMs are the
      same, so results stay bit-identical.
    - **Multi-tensor optimizer** (`optimizer`): runs of consecutive
      optimizer updates (`strata.sgd_update` / `strata.adam_update` of one
      kind, on one pipeline device, with nothing between them on that
      device, none reading another's result)
      get a common `multi_tensor = N`,
      at most `max-group-tensors` per group; the runtime runs each group as
      one kernel. Updates separated by a gradient bucket's wait or an
      all-reduce stay in separate groups, so each still waits only for its
      own gradients.

    A fusion is made only when the matmul's result has no other user (and
    the element-wise op's, for activations) and the ops run on the same
    pipeline device and micro-batch, and when the cost model agrees: the
    fused op's bytes read and written (`CostOpInterface`) must be fewer than
    those of the ops it replaces, at the same FLOPs. The fused op takes the
    matmul's placement, phase, layer and tiling.

    Run it late: after autodiff, mixed precision, remat, activation
    compression, gradient sync and `--strata-tile-gemm`, before
    `--strata-plan-buffers`. `--strata-train-pipeline` runs it there
    (`fuse=false` turns it off).

    ```
    strata-opt step.mlir --strata-fuse
    strata-opt step.mlir --strata-fuse="epilogues=false max-group-tensors=16"
    ```
  }];
  let options = [
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "Fuse bias, relu, gelu and their gradients into matmul epilogues">,
    Option<"optimizer", "optimizer", "bool", /*default=*/"true",
           "Group consecutive optimizer updates into multi-tensor kernels">,
    Option<"maxGroupTensors", "max-group-tensors", "int64_t",
           /*default=*/"1024",
           "Most updates in one multi-tensor group (1 to 65536)">,
  ];
  let statistics = [
    Statistic<"numEpilogues", "epilogues", "Matmuls given an epilogue">,
    Statistic<"numGroups", "groups", "Multi-tensor update groups">,
  ];
  let dependentDialects = ["::mlir::strata::StrataDialect"];
}

#endif // STRATA_TRANSFORMS_PASSES_TD
