//===- strata-translate.cpp - Strata translations -------------------------===//
//
//   strata-translate --export-plan step.mlir -o step.plan.json
//   strata-translate --import-onnx model.onnx --weights w.safetensors -o m.mlir
//
// `-o FILE` replaces FILE only when the translation succeeded
// (AtomicOutput.h).
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Plan.h"

#ifdef STRATA_HAVE_ONNX
#include "strata/Import/ONNX.h"
#endif

#include "../common/AtomicOutput.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::strata::registerExportPlanTranslation();
#ifdef STRATA_HAVE_ONNX
  mlir::strata::registerImportOnnxTranslation();
#endif
  return strata::tools::runWithAtomicOutput(
      argc, argv, [](int argc, char **argv) {
        return mlir::failed(mlir::mlirTranslateMain(
                   argc, argv, "Strata translation driver\n"))
                   ? 1
                   : 0;
      });
}
