//===- Translation.cpp - strata-translate --import-onnx -------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Import/ONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::strata;

void mlir::strata::registerImportOnnxTranslation() {
  static llvm::cl::opt<std::string> weights(
      "weights",
      llvm::cl::desc("--import-onnx: write the initializers to this "
                     ".safetensors file (the input of strata-run --init)"),
      llvm::cl::init(""));
  static llvm::cl::opt<OnnxLoss> loss(
      "loss", llvm::cl::desc("--import-onnx: the loss on the model's output"),
      llvm::cl::values(
          clEnumValN(OnnxLoss::SoftmaxCrossEntropy, "softmax-ce",
                     "softmax cross-entropy against i32 class labels "
                     "(default)"),
          clEnumValN(OnnxLoss::MeanSquaredError, "mse",
                     "mean squared error against f32 targets")),
      llvm::cl::init(OnnxLoss::SoftmaxCrossEntropy));
  TranslateToMLIRRegistration registration(
      "import-onnx", "import an ONNX model (forward graph) with a loss",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        OnnxImportOptions options;
        options.loss = loss;
        options.weightsPath = weights;
        return importOnnx(context, buffer->getBuffer(),
                          buffer->getBufferIdentifier(), options);
      },
      [](DialectRegistry &registry) {
        registry.insert<StrataDialect, func::FuncDialect>();
      });
}
