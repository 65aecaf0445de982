//===- MLP.cpp - Multi-layer perceptron generator -------------------------===//

#include "ModelBuilder.h"
#include "strata/Models/Models.h"

using namespace mlir;
using namespace mlir::strata;

static llvm::Error positive(StringRef option, int64_t value) {
  if (value > 0)
    return llvm::Error::success();
  return llvm::createStringError("--%s must be positive, got %lld",
                                 option.str().c_str(),
                                 static_cast<long long>(value));
}

llvm::Error mlir::strata::validateMLP(const MLPConfig &c) {
  for (auto [name, value] : {std::pair<StringRef, int64_t>("batch", c.batch),
                             {"inputs", c.inputs},
                             {"hidden", c.hidden},
                             {"layers", c.layers},
                             {"classes", c.classes}})
    if (llvm::Error err = positive(name, value))
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
