//===- PlanContractTest.cpp - The dialect against the runtime's op table --===//
//
// The compiler writes plans and the runtime reads them; the runtime's op
// table (strata-rt/PlanOps.def) is the contract. These tests walk every
// dialect op and every instruction of plans exported from the generators and
// the distribution passes, and check them against the table: mnemonic,
// operand and result counts, attribute names and kinds. A new op or attribute
// on one side fails here until the other side has it.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/PlanOps.h"
#include "strata/Conversion/Plan.h"
#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Models/Models.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

using namespace mlir;
namespace mstrata = mlir::strata;
namespace rt = ::strata::rt;

namespace {

/// The dialect op's fixed operand count, or -1 when it is variadic.
template <int... N>
int operandCount(OperationName name, std::integer_sequence<int, N...>) {
  if (name.hasTrait<OpTrait::ZeroOperands>())
    return 0;
  if (name.hasTrait<OpTrait::OneOperand>())
    return 1;
  int count = -1;
  ((count = name.hasTrait<OpTrait::NOperands<N>::template Impl>() ? N : count),
   ...);
  return count;
}

template <int... N>
int resultCount(OperationName name, std::integer_sequence<int, N...>) {
  if (name.hasTrait<OpTrait::ZeroResults>())
    return 0;
  if (name.hasTrait<OpTrait::OneResult>())
    return 1;
  int count = -1;
  ((count = name.hasTrait<OpTrait::NResults<N>::template Impl>() ? N : count),
   ...);
  return count;
}

using Counts = std::integer_sequence<int, 2, 3, 4, 5, 6, 7, 8>;

/// The plan attribute names the exporter writes for the dialect op's
/// inherent attributes (a GEMM tiling becomes mc, nc, kc, mr, nr) and the
/// ones it adds (a collective's communicator `group`).
std::set<std::string> exportedAttrNames(OperationName name,
                                        const rt::OpInfo &info) {
  std::set<std::string> names;
  for (StringAttr attr : name.getAttributeNames())
    names.insert(attr.getValue().str());
  // --strata-tile-gemm's discardable #strata.gemm_tiling, which the dialect
  // accepts on matmuls only, becomes mc, nc, kc, mr, nr.
  if (info.op == rt::OpCode::Matmul || info.op == rt::OpCode::FusedMatmul)
    for (const char *field : strata_plan::kGemmTilingNames)
      names.insert(field);
  if (info.has(rt::kCollective) && !info.has(rt::kAsyncWait))
    names.insert("group");
  // The exporter numbers the compress sites; a decompress carries its
  // compress's format, candidates and budget (ExportPlan.cpp).
  if (info.op == rt::OpCode::Compress || info.op == rt::OpCode::Decompress)
    names.insert({"site", "format", "candidates", "budget"});
  return names;
}

std::set<std::string> tableAttrNames(const rt::OpInfo &info) {
  std::set<std::string> names;
  for (const rt::OpAttrSpec &spec : info.attrs)
    names.insert(rt::attrInfo(spec.id).name);
  return names;
}

class PlanContract : public ::testing::Test {
protected:
  PlanContract() {
    DialectRegistry registry;
    registry.insert<mstrata::StrataDialect, func::FuncDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    mstrata::registerStrataPasses();
  }

  /// Runs `pipeline` (passes on the module, without the builtin.module
  /// anchor) on `module` and exports it; returns the plan's JSON.
  llvm::json::Value compile(OwningOpRef<ModuleOp> module,
                            const std::string &pipeline) {
    EXPECT_TRUE(module);
    PassManager pm(&context);
    std::string errors;
    llvm::raw_string_ostream os(errors);
    EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm, os))) << errors;
    EXPECT_TRUE(succeeded(pm.run(*module))) << pipeline;
    std::string text;
    llvm::raw_string_ostream out(text);
    EXPECT_TRUE(succeeded(mstrata::exportPlan(*module, out))) << pipeline;
    llvm::Expected<llvm::json::Value> plan = llvm::json::parse(text);
    EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
    return plan ? std::move(*plan) : llvm::json::Value(nullptr);
  }

  /// Checks every instruction of `plan` against the op table; returns the
  /// mnemonics seen.
  std::set<std::string> checkPlan(const llvm::json::Value &plan) {
    std::set<std::string> seen;
    const llvm::json::Array *ranks = plan.getAsObject()->getArray("ranks");
    EXPECT_NE(ranks, nullptr);
    for (const llvm::json::Value &rank : ranks ? *ranks : llvm::json::Array())
      if (const llvm::json::Array *program =
              rank.getAsObject()->getArray("program"))
        for (const llvm::json::Value &inst : *program)
          checkInstruction(*inst.getAsObject(), seen);
    return seen;
  }

  void checkInstruction(const llvm::json::Object &inst,
                        std::set<std::string> &seen) {
    std::string name = inst.getString("op").value_or("").str();
    rt::OpCode op;
    ASSERT_TRUE(rt::lookupOpCode(name, op)) << name;
    seen.insert(name);
    const rt::OpInfo &info = rt::opInfo(op);
    auto count = [&](const char *key) {
      const llvm::json::Array *list = inst.getArray(key);
      return list ? static_cast<int>(list->size()) : -1;
    };
    if (info.numInputs >= 0)
      EXPECT_EQ(count("in"), info.numInputs) << name;
    if (info.numOutputs >= 0)
      EXPECT_EQ(count("out"), info.numOutputs) << name;
    rt::Attrs raw;
    std::set<std::string> table = tableAttrNames(info);
    if (const llvm::json::Object *attrs = inst.getObject("attrs"))
      for (const auto &[key, value] : *attrs) {
        EXPECT_TRUE(table.count(key.str()))
            << name << " has attribute '" << key.str()
            << "', which the runtime's op table does not list";
        if (const llvm::json::Array *list = value.getAsArray()) {
          std::vector<int64_t> &ints = raw.lists[key.str()];
          for (const llvm::json::Value &v : *list)
            ints.push_back(v.getAsInteger().value_or(INT64_MIN));
        } else if (std::optional<double> number = value.getAsNumber()) {
          raw.numbers[key.str()] = *number;
        } else {
          ADD_FAILURE() << name << "." << key.str() << " is not a number";
        }
      }
    rt::OpAttrs typed;
    EXPECT_EQ(rt::decodeAttrs(op, raw, typed), "") << name;
  }

  MLIRContext context;
};

TEST_F(PlanContract, EveryDialectOpIsAPlanOp) {
  std::set<std::string> dialectOps;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "strata")
      continue;
    std::string mnemonic = name.stripDialect().str();
    dialectOps.insert(mnemonic);
    rt::OpCode op;
    ASSERT_TRUE(rt::lookupOpCode(mnemonic, op))
        << "strata." << mnemonic << " reaches plans but the runtime's op "
        << "table (PlanOps.def) has no '" << mnemonic << "'";
    const rt::OpInfo &info = rt::opInfo(op);
    EXPECT_EQ(operandCount(name, Counts()), info.numInputs) << mnemonic;
    EXPECT_EQ(resultCount(name, Counts()), info.numOutputs) << mnemonic;
    EXPECT_EQ(exportedAttrNames(name, info), tableAttrNames(info)) << mnemonic;
  }
  for (int i = 0; i < rt::kNumOpCodes; ++i)
    EXPECT_TRUE(dialectOps.count(rt::opName(static_cast<rt::OpCode>(i))))
        << "the runtime's op '" << rt::opName(static_cast<rt::OpCode>(i))
        << "' has no dialect op";
}

TEST_F(PlanContract, ExportedPlansMatchTheTable) {
  std::set<std::string> seen;
  auto merge = [&](const std::set<std::string> &ops) {
    seen.insert(ops.begin(), ops.end());
  };
  mstrata::MLPConfig mlp;
  mlp.batch = 8;
  mlp.inputs = 16;
  mlp.hidden = 32;
  mlp.layers = 4;
  mlp.classes = 4;
  merge(checkPlan(compile(mstrata::buildMLP(&context, mlp),
                          "strata-autodiff{optimizer=adamw lr=0.01},"
                          "strata-data-parallel{replicas=2},"
                          "strata-insert-grad-sync{bucket-bytes=1024}")));
  merge(checkPlan(compile(mstrata::buildMLP(&context, mlp),
                          "strata-autodiff{optimizer=sgd "
                          "lr=0.1},strata-schedule-pipeline{stages=2 "
                          "micro-batches=2 schedule=1f1b}")));
  merge(
      checkPlan(compile(mstrata::buildMLP(&context, mlp),
                        "strata-autodiff{optimizer=sgd lr=0.1},"
                        "strata-data-parallel{replicas=2},strata-tile-gemm")));
  mstrata::GPTConfig gpt;
  gpt.layers = 1;
  gpt.hidden = 16;
  gpt.heads = 2;
  gpt.seq = 8;
  gpt.positions = 8;
  gpt.vocab = 32;
  gpt.batch = 2;
  merge(checkPlan(compile(mstrata::buildGPT(&context, gpt),
                          "strata-autodiff{optimizer=adam lr=0.01}")));
  mstrata::CNNConfig cnn;
  cnn.batch = 2;
  cnn.imageSize = 32;
  cnn.classes = 4;
  merge(checkPlan(compile(mstrata::buildCNN(&context, cnn),
                          "strata-autodiff{optimizer=sgd lr=0.1}")));
  // Batch normalisation (in-place running statistics), pipelined.
  cnn.batchNorm = true;
  merge(checkPlan(compile(mstrata::buildCNN(&context, cnn),
                          "strata-autodiff{optimizer=sgd lr=0.1},"
                          "strata-schedule-pipeline{stages=2 "
                          "micro-batches=2 schedule=gpipe}")));
  EXPECT_TRUE(seen.count("batch_norm") && seen.count("batch_norm_grad"));
  // Slices, a concatenation and a scale (ONNX's Split, Concat and Sub).
  const char *slices = R"mlir(
    func.func @slices(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                      %w: tensor<4x8xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                      %t: tensor<2x8xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
      %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
      %a = strata.slice %h axis = 1 offset = 0 size = 3 {strata.layer = 0 : i64} : tensor<2x8xf32> -> tensor<2x3xf32>
      %b = strata.slice %h axis = 1 offset = 3 size = 5 {strata.layer = 0 : i64} : tensor<2x8xf32> -> tensor<2x5xf32>
      %s = strata.scale %b by -1.0 {strata.layer = 0 : i64} : tensor<2x5xf32>
      %c = strata.concat %a, %s axis = 1 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
      %l = strata.mse_loss %c, %t {strata.layer = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<f32>
      return %l : tensor<f32>
    })mlir";
  merge(checkPlan(compile(parseSourceString<ModuleOp>(slices, &context),
                          "strata-autodiff{optimizer=sgd lr=0.1}")));
  EXPECT_TRUE(seen.count("slice") && seen.count("slice_grad") &&
              seen.count("concat") && seen.count("scale"));
  merge(checkPlan(compile(mstrata::buildMLP(&context, mlp),
                          "strata-autodiff{optimizer=sgd lr=0.1},"
                          "strata-compress-activations{format=auto "
                          "budget=0.05}")));
  // Fusion: fused_matmul with every epilogue and multi-tensor updates.
  std::set<std::string> fused;
  auto mergeFused = [&](const std::set<std::string> &ops) {
    merge(ops);
    fused.insert(ops.begin(), ops.end());
  };
  mergeFused(checkPlan(compile(mstrata::buildMLP(&context, mlp),
                               "strata-autodiff{optimizer=adamw lr=0.01},"
                               "strata-tile-gemm,strata-fuse")));
  mergeFused(checkPlan(compile(mstrata::buildGPT(&context, gpt),
                               "strata-autodiff{optimizer=sgd lr=0.01},"
                               "strata-mixed-precision,strata-fuse")));
  EXPECT_TRUE(fused.count("fused_matmul"));
  EXPECT_FALSE(fused.count("relu_grad"));
  EXPECT_FALSE(fused.count("bias_add"));
  EXPECT_FALSE(fused.count("gelu_grad"));
  // The plans cover most of the table; the rest (fill, scale, flatten,
  // reshape, mse_loss...) come from other generators and passes.
  EXPECT_GE(seen.size(), 25u);
}

/// The dialect's epilogue kinds are the plan's codes (the exporter writes
/// the enum's value as it is).
TEST(PlanContractEnums, EpilogueKindsArePlanCodes) {
  using strata_plan::Epilogue;
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::bias), int64_t(Epilogue::Bias));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::bias_relu),
            int64_t(Epilogue::BiasRelu));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::bias_gelu),
            int64_t(Epilogue::BiasGelu));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::relu_grad),
            int64_t(Epilogue::ReluGrad));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::gelu_grad),
            int64_t(Epilogue::GeluGrad));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::residual),
            int64_t(Epilogue::Residual));
  EXPECT_EQ(int64_t(mstrata::EpilogueKind::bias_residual),
            int64_t(Epilogue::BiasResidual));
  for (int64_t code = 1; code <= strata_plan::kMaxEpilogue; ++code)
    EXPECT_EQ(mstrata::stringifyEpilogueKind(
                  static_cast<mstrata::EpilogueKind>(code)),
              strata_plan::epilogueName(code));
}

} // namespace
