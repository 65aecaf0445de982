//===- strata-translate.cpp - Strata translations -------------------------===//
//
//   strata-translate --export-plan step.mlir -o step.plan.json
//
// `-o FILE` replaces FILE only when the translation succeeded
// (AtomicOutput.h).
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Plan.h"

#include "../common/AtomicOutput.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::strata::registerExportPlanTranslation();
  return strata::tools::runWithAtomicOutput(
      argc, argv, [](int argc, char **argv) {
        return mlir::failed(mlir::mlirTranslateMain(
                   argc, argv, "Strata translation driver\n"))
                   ? 1
                   : 0;
      });
}
