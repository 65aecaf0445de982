//===- MLP.cpp - Multi-layer perceptron generator -------------------------===//

#include "ModelBuilder.h"
#include "strata/Models/Models.h"

using namespace mlir;
using namespace mlir::strata;

llvm::Error mlir::strata::checkModelSize(StringRef name, int64_t value,
                                         int64_t max) {
  if (value <= 0)
    return llvm::createStringError("--%s must be positive, got %lld",
                                   name.str().c_str(),
                                   static_cast<long long>(value));
  if (value > max)
    return llvm::createStringError(
        "--%s must be at most %lld, got %lld", name.str().c_str(),
        static_cast<long long>(max), static_cast<long long>(value));
  return llvm::Error::success();
}

llvm::Error mlir::strata::validateMLP(const MLPConfig &c) {
  if (llvm::Error err = checkModelSize("layers", c.layers, kMaxModelLayers))
    return err;
  for (auto [name, value] : {std::pair<StringRef, int64_t>("batch", c.batch),
                             {"inputs", c.inputs},
                             {"hidden", c.hidden},
                             {"classes", c.classes}})
    if (llvm::Error err = checkModelSize(name, value, kMaxModelDim))
      return err;
  return llvm::Error::success();
}

OwningOpRef<ModuleOp> mlir::strata::buildMLP(MLIRContext *context,
                                             const MLPConfig &c) {
  ModelBuilder b(context, "mlp", c.bf16);
  Type i32 = IntegerType::get(context, 32);
  Value x = b.input("x", {c.batch, c.inputs}, b.floatType(), InputRole::data);
  Value y = b.input("y", {c.batch}, i32, InputRole::labels);
  Value h = x;
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string name = "fc" + std::to_string(i);
    b.beginLayer(name);
    bool last = i + 1 == c.layers;
    h = linear(b, "", h, last ? c.classes : c.hidden, InitKind::xavier_uniform,
               1.0);
    if (!last)
      h = b.create<ReluOp>("relu", h).getResult();
  }
  Value loss = b.create<SoftmaxCrossEntropyOp>("loss", h, y).getResult();
  return b.finish(loss);
}
