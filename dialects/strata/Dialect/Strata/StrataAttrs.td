//===- StrataAttrs.td - Strata attributes and enums --------*- tablegen -*-===//

#ifndef STRATA_DIALECT_STRATA_STRATAATTRS_TD
#define STRATA_DIALECT_STRATA_STRATAATTRS_TD

include "strata/Dialect/Strata/StrataDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Strata_InitKind : I32EnumAttr<"InitKind", "parameter initialisation scheme", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"normal", 2>,
    I32EnumAttrCase<"uniform", 3>,
    I32EnumAttrCase<"xavier_uniform", 4>,
    I32EnumAttrCase<"kaiming_normal", 5>
  ]> {
  let cppNamespace = "::mlir::strata";
  let genSpecializedAttr = 0;
}

def Strata_InputRole : I32EnumAttr<"InputRole", "role of a data input", [
    I32EnumAttrCase<"data", 0>,
    I32EnumAttrCase<"labels", 1>,
    I32EnumAttrCase<"step", 2>
  ]> {
  let cppNamespace = "::mlir::strata";
  let genSpecializedAttr = 0;
}

def Strata_Phase : I32EnumAttr<"Phase", "part of a training step", [
    I32EnumAttrCase<"forward", 0>,
    I32EnumAttrCase<"backward", 1>,
    I32EnumAttrCase<"update", 2>,
    I32EnumAttrCase<"recompute", 3>
  ]> {
  let cppNamespace = "::mlir::strata";
  let genSpecializedAttr = 0;
}

def Strata_StateInit : I32EnumAttr<"StateInit", "initial value of a state", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"param", 1>
  ]> {
  let cppNamespace = "::mlir::strata";
  let genSpecializedAttr = 0;
}

def Strata_OptimizerKind : I32EnumAttr<"OptimizerKind", "optimizer", [
    I32EnumAttrCase<"sgd", 0>,
    I32EnumAttrCase<"adam", 1>,
    I32EnumAttrCase<"adamw", 2>
  ]> {
  let cppNamespace = "::mlir::strata";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Strata_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Strata_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

/// A double-precision attribute parameter (stored as an APFloat so that it
/// hashes) printed and parsed as a float literal.
def Strata_DoubleParameter : AttrParameter<"::llvm::APFloat", "a double"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let printer = [{ ::mlir::strata::detail::printDouble($_printer, $_self) }];
}

/// An enum parameter that may be omitted (and is not printed) when it has
/// its default value.
class Strata_DefaultedEnumParameter<EnumAttrInfo info, string value>
    : EnumParameter<info> {
  let defaultValue = value;
}

def Strata_ParamAttr : Strata_Attr<"Param", "param"> {
  let summary = "marks a function argument as a trainable parameter";
  let description = [{
    Attached to a function argument as `strata.param`. `name` is unique in the
    function and is the tensor's key in checkpoints; `layer` is the model layer
    that owns the parameter; `init` and `scale` describe its initialisation:
    `normal` draws N(0, scale²), `uniform` draws U(-scale, scale),
    `xavier_uniform` and `kaiming_normal` derive their bound from the fan-in and
    fan-out of the shape and multiply it by `scale`; `zeros` and `ones` ignore
    `scale`.

    ```mlir
    %w: tensor<768x768xf32> {strata.param = #strata.param<name = "h0.attn.wq", layer = 1, init = normal, scale = 2.000000e-02>}
    ```
  }];
  let parameters = (ins StringRefParameter<"parameter name">:$name,
                        "int64_t":$layer,
                        EnumParameter<Strata_InitKind>:$init,
                        Strata_DoubleParameter:$scale);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strata_InputAttr : Strata_Attr<"Input", "input"> {
  let summary = "marks a function argument as a data input";
  let description = [{
    Attached to a function argument as `strata.input`: a batch of features
    (`role = data`), of targets (`role = labels`), or the scalar `i32` step
    counter of a training step (`role = step`, 1-based, set by the runtime).
    Inputs are never differentiated or updated.

    ```mlir
    %tokens: tensor<8x128xi32> {strata.input = #strata.input<name = "tokens", role = data>}
    ```
  }];
  let parameters = (ins StringRefParameter<"input name">:$name,
                        EnumParameter<Strata_InputRole>:$role);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_StateAttr : Strata_Attr<"State", "state"> {
  let summary = "marks a function argument as optimizer state";
  let description = [{
    Attached by `--strata-autodiff` to the optimizer-state arguments of a
    training step (`strata.state`): momentum for SGD, first and second moments
    for Adam. `param` names the parameter the state belongs to. `init` is the
    state's value before the first step: `zeros` (the default, omitted when
    printed), or `param`, a copy of the parameter's initial value (the older
    weight versions that `--strata-schedule-pipeline` keeps for the
    asynchronous schedules, named `PARAM.stashK`: the weights K updates
    older than the parameter).

    ```mlir
    %m: tensor<768x768xf32> {strata.state = #strata.state<name = "h0.attn.q.weight.m", param = "h0.attn.q.weight">}
    %s: tensor<768x768xf32> {strata.state = #strata.state<name = "h0.attn.q.weight.stash1", param = "h0.attn.q.weight", init = param>}
    ```
  }];
  let parameters = (ins StringRefParameter<"state name">:$name,
                        StringRefParameter<"parameter name">:$param,
                        Strata_DefaultedEnumParameter<Strata_StateInit,
                          "::mlir::strata::StateInit::zeros">:$init);
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$name, "::llvm::StringRef":$param), [{
      return $_get($_ctxt, name, param, ::mlir::strata::StateInit::zeros);
    }]>
  ];
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_RunningStatAttr : Strata_Attr<"RunningStat", "running_stat"> {
  let summary = "marks a function argument as a running statistic";
  let description = [{
    Attached as `strata.running_stat` to the running mean and variance that a
    `strata.batch_norm` updates in place: persistent buffers of the model
    (PyTorch's module buffers), neither trained nor optimizer state. `name`
    is unique among parameters, states and running statistics and is the
    tensor's key in weights files and checkpoints; `layer` is the model layer
    that owns it; `init` is its value before training (`zeros` for a mean,
    `ones` for a variance). `strata-run --init` loads running statistics with
    the parameters, and checkpoints save them.

    ```mlir
    %rm: tensor<64xf32> {strata.running_stat = #strata.running_stat<name = "bn1.running_mean", layer = 0, init = zeros>}
    ```
  }];
  let parameters = (ins StringRefParameter<"statistic name">:$name,
                        "int64_t":$layer,
                        EnumParameter<Strata_InitKind>:$init);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strata_PhaseAttr : EnumAttr<Strata_Dialect, Strata_Phase, "phase"> {
  let summary = "part of the training step an op belongs to";
  let description = [{
    Discardable `strata.phase` on the ops `--strata-autodiff` creates:
    `backward` for gradient computation, `update` for optimizer updates. Ops
    without it belong to the forward pass. `--strata-remat` tags the forward
    ops it clones into the backward pass (to recompute a dropped activation)
    `recompute`.
  }];
}

def Strata_BufferAttr : Strata_Attr<"Buffer", "buffer"> {
  let summary = "placement of one value in the device arena";
  let description = [{
    Written by `--strata-lower-to-plan`: buffer `id` of the plan and its byte
    range `[offset, offset + bytes)` in the arena. On function arguments as
    `strata.buffer`; on ops as `strata.buffers`, one per result (an in-place
    update's results share the buffers of the values they update).

    ```mlir
    #strata.buffer<id = 3, offset = 4096, bytes = 802816>
    ```
  }];
  let parameters = (ins "int64_t":$id, "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_MemoryPlanAttr : Strata_Attr<"MemoryPlan", "memory_plan"> {
  let summary = "result of buffer planning for one training step";
  let description = [{
    Written by `--strata-plan-buffers` on the training step as
    `strata.memory_plan` (and copied into the plan file by the exporter):
    the planned arena's bytes, the lower bound (the largest total of buffers
    live at one time, each rounded up to the 64-byte alignment), the arena
    bytes before planning (every buffer its own range), the strategy whose
    packing was kept, and whether the arena is proven minimal.

    ```mlir
    #strata.memory_plan<arena_bytes = 5440, lower_bound = 5440, unplanned_bytes = 9216, strategy = "best-fit", optimal = true>
    ```
  }];
  let parameters = (ins "int64_t":$arena_bytes, "int64_t":$lower_bound,
                        "int64_t":$unplanned_bytes,
                        StringRefParameter<"winning strategy">:$strategy,
                        "bool":$optimal);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_RematPlanAttr : Strata_Attr<"RematPlan", "remat_plan"> {
  let summary = "result of checkpoint / swap / recompute planning";
  let description = [{
    Written by `--strata-remat` on the training step as `strata.remat_plan`:
    the memory budget in bytes the step must fit, the planned arena before
    and after, the solver that chose (`milp`, `dp`, `sqrt`, `layer`, or
    `none` when the budget already held), how many saved activations it
    keeps, swaps and recomputes, the bytes swapped to host memory, the added
    compute of the recomputes and the copy time in seconds (total and the
    part the model cannot hide behind compute), and the relative optimality
    gap the MILP proved (0 when optimal, -1 when no bound is known).
    `--strata-plan-buffers` checks its arena against `budget`.

    ```mlir
    #strata.remat_plan<budget = 1048576, peak_before = 2097152, peak_after = 1040384, solver = "milp", kept = 3, swapped = 1, recomputed = 4, swapped_bytes = 65536, recompute_seconds = 1.0e-04, copy_seconds = 2.0e-05, exposed_copy_seconds = 0.0, gap = 0.0>
    ```
  }];
  let parameters = (ins "int64_t":$budget, "int64_t":$peak_before,
                        "int64_t":$peak_after,
                        StringRefParameter<"solver that ran">:$solver,
                        "int64_t":$kept, "int64_t":$swapped,
                        "int64_t":$recomputed, "int64_t":$swapped_bytes,
                        Strata_DoubleParameter:$recompute_seconds,
                        Strata_DoubleParameter:$copy_seconds,
                        Strata_DoubleParameter:$exposed_copy_seconds,
                        Strata_DoubleParameter:$gap);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_ActFormatAttr : Strata_Attr<"ActFormat", "act_format"> {
  let summary = "a compressed activation format";
  let description = [{
    One of the formats of `strata-rt/ActivationFormat.h` (docs/compression.md),
    by its canonical name: `none`, `bf16` (each element's own bfloat16),
    block floating point
    (`bfp:m=4,block=32`, `bfp:m=4,block=32,round=stochastic`), BFP with
    outliers kept in bf16 (`bfp-outlier:m=4,block=32,outliers=1`), BFP with a
    non-uniform mantissa code (`bfp-nu:m=3,block=32`), or OCP MX v1.0
    (`mxfp8e4m3`, `mxfp8e5m2`, `mxfp6e2m3`, `mxfp6e3m2`, `mxfp4`, `mxint8`,
    each with `:scale=spec` for the specification's scale rounding). The
    verifier parses the name and requires the canonical spelling, so equal
    formats are equal attributes.

    ```mlir
    #strata.act_format<"mxfp6e2m3">
    ```
  }];
  let parameters = (ins StringRefParameter<"canonical format name">:$name);
  let assemblyFormat = "`<` $name `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The format the (verified) name spells.
    ::strata_plan::ActFormat getFormat() const;
    /// Its code in a plan (encodeActFormat).
    int64_t getCode() const;
    /// Bytes `numel` f32 values take in it (actPackedBytes).
    int64_t getPackedBytes(int64_t numel) const;
  }];
}

def Strata_CostAttr : Strata_Attr<"Cost", "cost"> {
  let summary = "analytic cost of one execution of an op on a target";
  let description = [{
    Attached as `strata.cost` by `--strata-annotate-costs`. `flops` counts
    floating-point operations (a fused multiply-add counts two); `bytes_read`
    and `bytes_written` count memory traffic assuming every operand is read and
    every result written once; `seconds` is the roofline time
    max(flops / peak, bytes / bandwidth) on the target.

    ```mlir
    {strata.cost = #strata.cost<flops = 1024, bytes_read = 512, bytes_written = 256, seconds = 1.0e-09>}
    ```
  }];
  let parameters = (ins "int64_t":$flops, "int64_t":$bytes_read,
                        "int64_t":$bytes_written,
                        Strata_DoubleParameter:$seconds);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_LayerCostAttr : Strata_Attr<"LayerCost", "layer_cost"> {
  let summary = "analytic cost of one model layer on a target";
  let description = [{
    One entry of the function attribute `strata.layer_costs` written by
    `--strata-annotate-costs`: the sums of the costs of the layer's ops
    (`flops`, `bytes`, `seconds`), the bytes of the parameters the layer owns
    (`param_bytes`) and the bytes of the activations the layer produces that a
    later layer consumes (`activation_bytes`: what crosses a stage boundary
    placed after this layer).

    ```mlir
    #strata.layer_cost<layer = 1, ops = 23, flops = 4096, bytes = 1024, seconds = 1.0e-06, param_bytes = 512, activation_bytes = 256>
    ```
  }];
  let parameters = (ins "int64_t":$layer, "int64_t":$ops, "int64_t":$flops,
                        "int64_t":$bytes, Strata_DoubleParameter:$seconds,
                        "int64_t":$param_bytes, "int64_t":$activation_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Strata_GemmTilingAttr : Strata_Attr<"GemmTiling", "gemm_tiling"> {
  let summary = "blocking of the CPU GEMM that computes a matmul";
  let description = [{
    Attached as `strata.gemm_tiling` to `strata.matmul` ops by
    `--strata-tile-gemm`: the cache blocks (an `mc` x `kc` block of A, a `kc`
    x `nc` block of B) and the `mr` x `nr` register tile of the runtime's CPU
    GEMM. `strata-translate --export-plan` writes the five numbers as the
    matmul instruction's `mc`, `nc`, `kc`, `mr`, `nr` attributes; the plan
    loader checks that the register tile is one the micro-kernel has. `mc` is
    a multiple of `mr` and `nc` of `nr`. On a `bf16` matmul the numbers block
    the bf16 GEMM (a database entry keyed `bf16`): `mc`, `nc`, `kc` on the
    register tile of the bf16 path the CPU runs (32x32 with AMX, 12x32 with
    AVX512-BF16, an f32 tile for the fallback).

    ```mlir
    %y = strata.matmul %x, %w {strata.gemm_tiling = #strata.gemm_tiling<mc = 96, nc = 2048, kc = 256, mr = 12, nr = 32>} : (tensor<128x768xf32>, tensor<768x768xf32>) -> tensor<128x768xf32>
    ```
  }];
  let parameters = (ins "int64_t":$mc, "int64_t":$nc, "int64_t":$kc,
                        "int64_t":$mr, "int64_t":$nr);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strata_PipelineStageAttr : Strata_Attr<"PipelineStage", "pipeline_stage"> {
  let summary = "one stage of a pipeline partition";
  let description = [{
    One entry of `#strata.pipeline_partition`: the contiguous run of model
    layers `[first_layer, last_layer]` the stage holds and the number of
    data-parallel replicas it runs on.

    ```mlir
    #strata.pipeline_stage<first_layer = 0, last_layer = 3, replicas = 2>
    ```
  }];
  let parameters = (ins "int64_t":$first_layer, "int64_t":$last_layer,
                        "int64_t":$replicas);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

/// The stages of a partition, printed and parsed as a bracketed list of
/// `#strata.pipeline_stage`.
def Strata_PipelineStagesParameter
    : ArrayRefParameter<"::mlir::strata::PipelineStageAttr", "stages"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<
                    ::llvm::SmallVector<::mlir::strata::PipelineStageAttr>> {
    ::llvm::SmallVector<::mlir::strata::PipelineStageAttr> stages;
    if ($_parser.parseCommaSeparatedList(
            ::mlir::AsmParser::Delimiter::Square, [&]() -> ::mlir::ParseResult {
              ::mlir::strata::PipelineStageAttr stage;
              if ($_parser.parseAttribute(stage))
                return ::mlir::failure();
              stages.push_back(stage);
              return ::mlir::success();
            }))
      return ::mlir::failure();
    return stages;
  }() }];
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self, $_printer);
    $_printer << ']';
  }];
}

def Strata_PipelinePartitionAttr
    : Strata_Attr<"PipelinePartition", "pipeline_partition"> {
  let summary = "pipeline partition of a training step";
  let description = [{
    Written by `--strata-partition-pipeline` on the training step as
    `strata.pipeline` and read by `--strata-schedule-pipeline`: the stages in
    order (contiguous, non-empty runs of layers, each with its replica
    count), the devices and micro-batches the partition was made for, the
    schedule and objective it was optimised for, and the partitioner's
    predictions: the first device of each stage, each stage's time, the step
    time, the bubble fraction, the speed-up over plain data parallelism and
    the memory per device of each stage. The predictions are optional, so
    that a partition can be written by hand.

    ```mlir
    #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 3, replicas = 3>], devices = 4, micro_batches = 8, schedule = "1f1b", objective = "throughput", first_devices = array<i64: 0, 1>, predicted_stage_seconds = array<f64: 1.0e-3, 1.1e-3>, predicted_step_seconds = 1.2e-2 : f64, bubble_fraction = 5.8e-2 : f64, speedup_over_data_parallel = 0.354 : f64, memory_bytes_per_device = array<i64: 1024, 2048>>
    ```
  }];
  let parameters = (ins Strata_PipelineStagesParameter:$stages,
                        "int64_t":$devices, "int64_t":$micro_batches,
                        StringRefParameter<"schedule optimised for">:$schedule,
                        StringRefParameter<"objective">:$objective,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$first_devices,
                        OptionalParameter<"::mlir::DenseF64ArrayAttr">:$predicted_stage_seconds,
                        OptionalParameter<"::mlir::FloatAttr">:$predicted_step_seconds,
                        OptionalParameter<"::mlir::FloatAttr">:$bubble_fraction,
                        OptionalParameter<"::mlir::FloatAttr">:$speedup_over_data_parallel,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$memory_bytes_per_device);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Strata_PipelineScheduleAttr
    : Strata_Attr<"PipelineSchedule", "pipeline_schedule"> {
  let summary = "how a training step was scheduled as a pipeline";
  let description = [{
    Written by `--strata-schedule-pipeline` on the training step as
    `strata.pipeline_schedule` and read by buffer planning and the plan
    exporter: the schedule, the pipeline devices (ranks of one replica), the
    model chunks per device (`virtual`), the micro-batches and the
    data-parallel replicas of every stage; for the asynchronous schedules
    (`pipedream`, `2bw`) the `window`, the micro-batches whose gradients one
    weight update applies (a step applies micro_batches / window updates;
    omitted, and 0, for the flushed schedules, which update once). When a
    target was known, the predicted step time and bubble fraction.

    ```mlir
    #strata.pipeline_schedule<schedule = "1f1b", devices = 2, virtual = 1, micro_batches = 4, replicas = 1, predicted_step_seconds = 1.5e-3 : f64, predicted_bubble = 0.2 : f64>
    ```
  }];
  let parameters = (ins StringRefParameter<"schedule">:$schedule,
                        "int64_t":$devices, "int64_t":$virtual_stages,
                        "int64_t":$micro_batches, "int64_t":$replicas,
                        DefaultValuedParameter<"int64_t", "0">:$window,
                        OptionalParameter<"::mlir::FloatAttr">:$predicted_step_seconds,
                        OptionalParameter<"::mlir::FloatAttr">:$predicted_bubble);
  // `virtual` is a C++ keyword: the parameter is `virtual_stages`, printed as
  // `virtual`. The optional fields follow as `, key = value` each.
  let assemblyFormat = [{
    `<` `schedule` `=` $schedule `,` `devices` `=` $devices `,` `virtual` `=`
    $virtual_stages `,` `micro_batches` `=` $micro_batches `,` `replicas` `=`
    $replicas `` custom<ScheduleExtras>($window, $predicted_step_seconds,
                                     $predicted_bubble) `>`
  }];
  let genVerifyDecl = 1;
}

#endif // STRATA_DIALECT_STRATA_STRATAATTRS_TD
