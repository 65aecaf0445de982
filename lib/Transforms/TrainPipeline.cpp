//===- TrainPipeline.cpp - The whole flow as one pass pipeline ------------===//
//
// --strata-train-pipeline: a model (forward graph + loss) to a planned
// training step, in the order of DESIGN.md, with one option set: autodiff,
// mixed precision (mixed-precision=bf16, or a model of bf16 tensors), cost
// annotation (with a target), data parallelism and bucketed gradient sync
// (replicas > 1), checkpoint / swap / recompute (remat-budget), activation
// compression (compress=), fusion (fuse=, on by default) and buffer planning.
// Embedders (the C API, the Python module) run it by name.
//
//===----------------------------------------------------------------------===//

#include "strata/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::strata;

namespace {
struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  PassOptions::Option<OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("Optimizer"),
      llvm::cl::init(OptimizerKind::adamw),
      llvm::cl::values(clEnumValN(OptimizerKind::sgd, "sgd", "SGD"),
                       clEnumValN(OptimizerKind::adam, "adam", "Adam"),
                       clEnumValN(OptimizerKind::adamw, "adamw", "AdamW"))};
  PassOptions::Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                                 llvm::cl::init(1.0e-3)};
  PassOptions::Option<double> momentum{
      *this, "momentum", llvm::cl::desc("SGD momentum"), llvm::cl::init(0.9)};
  PassOptions::Option<double> weightDecay{*this, "weight-decay",
                                          llvm::cl::desc("Weight decay"),
                                          llvm::cl::init(0.0)};
  PassOptions::Option<ComputePrecision> mixedPrecision{
      *this, "mixed-precision",
      llvm::cl::desc("Matmul and convolution arithmetic "
                     "(--strata-mixed-precision): f32 (bf16 only where the "
                     "model's tensors are bf16), or bf16 with f32 "
                     "accumulation"),
      llvm::cl::init(ComputePrecision::F32),
      llvm::cl::values(clEnumValN(ComputePrecision::F32, "f32", ""),
                       clEnumValN(ComputePrecision::BF16, "bf16", ""))};
  PassOptions::Option<std::string> target{
      *this, "target",
      llvm::cl::desc("Target (name or JSON file): annotates costs and sizes "
                     "gradient buckets and the remat model; empty: none")};
  PassOptions::Option<int64_t> replicas{
      *this, "replicas",
      llvm::cl::desc("Data-parallel replicas (> 1: data parallelism and "
                     "bucketed gradient sync)"),
      llvm::cl::init(1)};
  PassOptions::Option<std::string> rematBudget{
      *this, "remat-budget",
      llvm::cl::desc("--strata-remat budget (bytes or fraction); empty: no "
                     "remat")};
  PassOptions::Option<RematSolver> rematSolver{
      *this, "remat-solver", llvm::cl::desc("--strata-remat solver"),
      llvm::cl::init(RematSolver::Auto),
      llvm::cl::values(clEnumValN(RematSolver::Auto, "auto", ""),
                       clEnumValN(RematSolver::Milp, "milp", ""),
                       clEnumValN(RematSolver::Dp, "dp", ""),
                       clEnumValN(RematSolver::Sqrt, "sqrt", ""),
                       clEnumValN(RematSolver::Layer, "layer", ""))};
  PassOptions::Option<std::string> compress{
      *this, "compress",
      llvm::cl::desc("--strata-compress-activations format (a name or auto); "
                     "empty: no compression"),
      llvm::cl::init("")};
  PassOptions::Option<double> compressBudget{
      *this, "compress-budget",
      llvm::cl::desc("--strata-compress-activations budget (relative error "
                     "per tensor; required with compress=auto)"),
      llvm::cl::init(0.0)};
  PassOptions::Option<std::string> compressSensitive{
      *this, "compress-sensitive",
      llvm::cl::desc("--strata-compress-activations sensitive= (the format, "
                     "or none, of the saved values that amplify their "
                     "error; empty: as the others)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("--strata-fuse: GEMM epilogues and multi-tensor "
                     "optimizer updates (bit-identical results)"),
      llvm::cl::init(true)};
  PassOptions::Option<PackStrategy> planStrategy{
      *this, "plan-strategy", llvm::cl::desc("--strata-plan-buffers strategy"),
      llvm::cl::init(PackStrategy::Auto),
      llvm::cl::values(
          clEnumValN(PackStrategy::Auto, "auto", ""),
          clEnumValN(PackStrategy::FixedStructure, "fixed-structure", ""),
          clEnumValN(PackStrategy::GreedySize, "greedy-size", ""),
          clEnumValN(PackStrategy::BestFit, "best-fit", ""),
          clEnumValN(PackStrategy::Exact, "exact", ""))};
};

void buildTrainPipeline(OpPassManager &pm,
                        const TrainPipelineOptions &options) {
  // A bf16 model becomes f32 tensors with bf16 products (a no-op otherwise).
  MixedPrecisionPassOptions widen;
  widen.compute = ComputePrecision::Model;
  pm.addPass(createMixedPrecisionPass(widen));
  AutodiffPassOptions autodiff;
  autodiff.optimizer = options.optimizer;
  autodiff.lr = options.lr;
  autodiff.momentum = options.momentum;
  autodiff.weightDecay = options.weightDecay;
  pm.addPass(createAutodiffPass(autodiff));
  if (options.mixedPrecision == ComputePrecision::BF16) {
    MixedPrecisionPassOptions mixed;
    mixed.compute = ComputePrecision::BF16;
    pm.addPass(createMixedPrecisionPass(mixed));
  }
  if (!options.target.empty()) {
    AnnotateCostsPassOptions costs;
    costs.targetName = options.target;
    pm.addPass(createAnnotateCostsPass(costs));
  }
  if (options.replicas > 1) {
    DataParallelPassOptions dataParallel;
    dataParallel.replicas = options.replicas;
    pm.addPass(createDataParallelPass(dataParallel));
    InsertGradSyncPassOptions gradSync;
    gradSync.targetName = options.target;
    if (options.target.empty())
      gradSync.bucketBytes = 1 << 20;
    pm.addPass(createInsertGradSyncPass(gradSync));
  }
  if (!options.rematBudget.empty()) {
    RematPassOptions remat;
    remat.budget = options.rematBudget;
    remat.solver = options.rematSolver;
    remat.targetName = options.target;
    pm.addPass(createRematPass(remat));
  }
  if (!options.compress.empty()) {
    CompressActivationsPassOptions compress;
    compress.format = options.compress;
    compress.budget = options.compressBudget;
    compress.sensitive = options.compressSensitive;
    pm.addPass(createCompressActivationsPass(compress));
  }
  if (options.fuse)
    pm.addPass(createFusePass());
  PlanBuffersPassOptions plan;
  plan.strategy = options.planStrategy;
  pm.addPass(createPlanBuffersPass(plan));
}
} // namespace

void mlir::strata::registerStrataPipelines() {
  // PassPipelineRegistration's, plus the checks between options.
  registerPassPipeline(
      "strata-train-pipeline",
      "A model to a planned training step: autodiff, mixed precision "
      "(mixed-precision=), costs (target=), data "
      "parallelism and gradient sync (replicas=), remat (remat-budget=), "
      "activation compression (compress=), fusion (fuse=), buffer planning",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TrainPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (options.compress.empty() && (options.compressBudget != 0.0 ||
                                         !options.compressSensitive.empty()))
          return errorHandler("--strata-train-pipeline: compress-budget= and "
                              "compress-sensitive= need compress=");
        buildTrainPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(TrainPipelineOptions());
      });
}
