//===- strata-translate.cpp - Strata translations -------------------------===//
//
//   strata-translate --export-plan step.mlir -o step.plan.json
//
//===----------------------------------------------------------------------===//

#include "strata/Conversion/Plan.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  mlir::strata::registerExportPlanTranslation();
  return mlir::failed(
             mlir::mlirTranslateMain(argc, argv, "Strata translation driver\n"))
             ? 1
             : 0;
}
