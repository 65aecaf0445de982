//===- ONNX.h - Import of ONNX models ---------------------------*- C++ -*-===//
//
// `strata-translate --import-onnx model.onnx [--loss softmax-ce|mse]
// [--weights W.safetensors]` turns the forward graph of an ONNX model into a
// Strata training function (docs/onnx-import.md). Built only when
// libonnx-dev is found (STRATA_HAVE_ONNX).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_IMPORT_ONNX_H
#define STRATA_IMPORT_ONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mlir::strata {

/// The loss the importer appends to the model's single output.
enum class OnnxLoss { SoftmaxCrossEntropy, MeanSquaredError };

struct OnnxImportOptions {
  OnnxLoss loss = OnnxLoss::SoftmaxCrossEntropy;
  /// Where the initializers' values go (.safetensors, the input of
  /// `strata-run --init`); empty: not written.
  std::string weightsPath;
  /// Name of the generated function.
  std::string funcName = "model";
};

/// Imports the serialized ModelProto in `bytes` (`fileName` names it in
/// diagnostics). Reports errors through the context's diagnostic handler and
/// returns null; the weights file is written only on success.
OwningOpRef<ModuleOp> importOnnx(MLIRContext *context, StringRef bytes,
                                 StringRef fileName,
                                 const OnnxImportOptions &options);

/// Registers `--import-onnx` (with `--loss` and `--weights`) with
/// mlir-translate.
void registerImportOnnxTranslation();

} // namespace mlir::strata

#endif // STRATA_IMPORT_ONNX_H
