//===- StrataDialect.td - Strata dialect definition --------*- tablegen -*-===//
//
// The `strata` dialect holds one training step of a neural network on static
// shapes.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECT_STRATA_STRATADIALECT_TD
#define STRATA_DIALECT_STRATA_STRATADIALECT_TD

include "mlir/IR/OpBase.td"

def Strata_Dialect : Dialect {
  let name = "strata";
  let cppNamespace = "::mlir::strata";
  let summary = "Static-shape tensor ops for neural-network training graphs";
  let description = [{
    The `strata` dialect describes a model's forward graph, its loss and (after
    `--strata-autodiff`) a whole training step on builtin ranked tensors of
    `f32` or `bf16` (integer tensors for token ids and labels).

    A model is one `func.func` whose arguments are either **parameters**
    (carrying a `strata.param` argument attribute: name, owning layer,
    initialisation), **data inputs** (carrying `strata.input`: name and role)
    or **running statistics** (carrying `strata.running_stat`: the running
    mean and variance that `strata.batch_norm` updates in place).
    Every op of the graph carries the discardable attribute
    `strata.layer = N : i64`, the index of the model layer it belongs to. Layers
    are the unit that the pipeline partitioner moves between stages; passes that
    create ops copy the attribute from the op they replace. The function may
    list human-readable layer names in `strata.layer_names`.

    ```mlir
    func.func @mlp(%w0: tensor<784x128xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.0>},
                   %x: tensor<32x784xf32> {strata.input = #strata.input<name = "x", role = data>},
                   %y: tensor<32xi32> {strata.input = #strata.input<name = "y", role = labels>})
        -> tensor<f32> attributes {strata.layer_names = ["fc0"]} {
      %h = strata.matmul %x, %w0 {strata.layer = 0 : i64}
          : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
      %l = strata.softmax_cross_entropy %h, %y {strata.layer = 0 : i64}
          : (tensor<32x128xf32>, tensor<32xi32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    /// Name of the discardable attribute holding an op's layer index.
    static constexpr ::llvm::StringLiteral getLayerAttrName() {
      return ::llvm::StringLiteral("strata.layer");
    }
    /// Name of the argument attribute marking a parameter.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("strata.param");
    }
    /// Name of the argument attribute marking a data input.
    static constexpr ::llvm::StringLiteral getInputAttrName() {
      return ::llvm::StringLiteral("strata.input");
    }
    /// Name of the function attribute listing layer names.
    static constexpr ::llvm::StringLiteral getLayerNamesAttrName() {
      return ::llvm::StringLiteral("strata.layer_names");
    }
    /// Name of the op attribute holding the analytic cost of an op.
    static constexpr ::llvm::StringLiteral getCostAttrName() {
      return ::llvm::StringLiteral("strata.cost");
    }
    /// Name of the function attribute holding per-layer costs.
    static constexpr ::llvm::StringLiteral getLayerCostsAttrName() {
      return ::llvm::StringLiteral("strata.layer_costs");
    }
    /// Name of the module/function attribute naming the cost target.
    static constexpr ::llvm::StringLiteral getTargetAttrName() {
      return ::llvm::StringLiteral("strata.target");
    }

    /// Argument attribute marking optimizer state.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("strata.state");
    }
    /// Argument attribute marking a running statistic (batch norm).
    static constexpr ::llvm::StringLiteral getRunningStatAttrName() {
      return ::llvm::StringLiteral("strata.running_stat");
    }
    /// Op attribute: the part of the training step an op belongs to.
    static constexpr ::llvm::StringLiteral getPhaseAttrName() {
      return ::llvm::StringLiteral("strata.phase");
    }
    /// Unit function attribute marking a whole training step.
    static constexpr ::llvm::StringLiteral getTrainStepAttrName() {
      return ::llvm::StringLiteral("strata.train_step");
    }
    /// Argument attribute: buffer of a function argument.
    static constexpr ::llvm::StringLiteral getBufferAttrName() {
      return ::llvm::StringLiteral("strata.buffer");
    }
    /// Op attribute: buffers of an op's results.
    static constexpr ::llvm::StringLiteral getBuffersAttrName() {
      return ::llvm::StringLiteral("strata.buffers");
    }
    /// Function attribute: number of data-parallel replicas of a step.
    static constexpr ::llvm::StringLiteral getReplicasAttrName() {
      return ::llvm::StringLiteral("strata.replicas");
    }
    /// Function attribute: arena size in bytes.
    static constexpr ::llvm::StringLiteral getArenaBytesAttrName() {
      return ::llvm::StringLiteral("strata.arena_bytes");
    }
    /// Function attribute: the result of `--strata-plan-buffers`
    /// (`#strata.memory_plan`).
    static constexpr ::llvm::StringLiteral getMemoryPlanAttrName() {
      return ::llvm::StringLiteral("strata.memory_plan");
    }
    /// Function attribute: the result of `--strata-remat`
    /// (`#strata.remat_plan`).
    static constexpr ::llvm::StringLiteral getRematPlanAttrName() {
      return ::llvm::StringLiteral("strata.remat_plan");
    }
    /// Function attribute: the pipeline partition of a training step
    /// (`#strata.pipeline_partition`, `--strata-partition-pipeline`).
    static constexpr ::llvm::StringLiteral getPipelineAttrName() {
      return ::llvm::StringLiteral("strata.pipeline");
    }
    /// Op attribute: the CPU GEMM tiling of a matmul.
    static constexpr ::llvm::StringLiteral getGemmTilingAttrName() {
      return ::llvm::StringLiteral("strata.gemm_tiling");
    }
    /// Function attribute: how `--strata-schedule-pipeline` scheduled the
    /// step (`#strata.pipeline_schedule`).
    static constexpr ::llvm::StringLiteral getPipelineScheduleAttrName() {
      return ::llvm::StringLiteral("strata.pipeline_schedule");
    }
    /// Op attribute: the pipeline stage (model chunk) an op belongs to.
    static constexpr ::llvm::StringLiteral getStageAttrName() {
      return ::llvm::StringLiteral("strata.stage");
    }
    /// Op attribute: the micro-batch an op works on.
    static constexpr ::llvm::StringLiteral getMicroBatchAttrName() {
      return ::llvm::StringLiteral("strata.micro_batch");
    }
    /// Op attribute (unit): the op works on a micro-batch of the previous
    /// step. A pipeline that does not drain between steps (pipedream, 2bw)
    /// runs a step's last backward passes at the start of the next one;
    /// the runtime skips such ops in a run's first step and runs them alone
    /// after its last (the drain).
    static constexpr ::llvm::StringLiteral getPreviousStepAttrName() {
      return ::llvm::StringLiteral("strata.previous_step");
    }

  private:
    void registerAttributes();
  public:
  }];
}

class Strata_Op<string mnemonic, list<Trait> traits = []>
    : Op<Strata_Dialect, mnemonic, traits>;

#endif // STRATA_DIALECT_STRATA_STRATADIALECT_TD
