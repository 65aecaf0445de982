//===- TestPrintSaved.cpp - Print the values kept for backward ------------===//

#include "TestPasses.h"
#include "strata/Analysis/SavedValues.h"
#include "strata/Dialect/Strata/StrataOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::strata::test {
#define GEN_PASS_DEF_TESTPRINTSAVEDPASS
#include "TestPasses.h.inc"
} // namespace mlir::strata::test

using namespace mlir;
using namespace mlir::strata;

namespace {
struct TestPrintSavedPass
    : public strata::test::impl::TestPrintSavedPassBase<TestPrintSavedPass> {
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    getOperation().walk([&](FunctionOpInterface func) {
      if (func.isExternal())
        return;
      SavedValues saved(func);
      AsmState state(func);
      os << "saved for backward in @" << func.getName() << ":\n";
      for (Value value : saved.getActivations()) {
        Operation *def = value.getDefiningOp();
        os << "  ";
        value.printAsOperand(os, state);
        os << " from " << def->getName() << " (layer "
           << getLayer(def).value_or(-1) << "): " << value.getType() << "\n";
      }
      for (Value value : saved.getArguments()) {
        os << "  ";
        value.printAsOperand(os, state);
        os << " (argument): " << value.getType() << "\n";
      }
      os << "  activation bytes: " << saved.getActivationBytes() << "\n";
    });
  }
};
} // namespace
