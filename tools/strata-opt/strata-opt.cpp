//===- strata-opt.cpp - Strata optimizer driver ---------------------------===//
//
// mlir-opt with the Strata dialect and passes. `-o FILE` replaces FILE only
// when every pass succeeded (AtomicOutput.h).
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataDialect.h"
#include "strata/Transforms/Passes.h"

#include "../common/AtomicOutput.h"
#include "TestPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::strata::registerStrataPasses();
  mlir::strata::registerStrataPipelines();
  mlir::strata::test::registerStrataTestPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::strata::StrataDialect, mlir::func::FuncDialect>();
  return strata::tools::runWithAtomicOutput(
      argc, argv, [&](int argc, char **argv) {
        return mlir::asMainReturnCode(mlir::MlirOptMain(
            argc, argv, "Strata optimizer driver\n", registry));
      });
}
