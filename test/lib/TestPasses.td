//===- TestPasses.td - Strata test passes ------------------*- tablegen -*-===//

#ifndef STRATA_TEST_PASSES_TD
#define STRATA_TEST_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintCostsPass : Pass<"test-strata-print-costs", "::mlir::ModuleOp"> {
  let summary = "Print the per-layer cost table written by --strata-annotate-costs";
  let description = [{
    For every function carrying `strata.layer_costs`, prints one row per layer
    (ops, GFLOP, memory traffic, roofline time, parameter and activation
    bytes) and a total row to stdout. Fails with a diagnostic on a function
    without annotations.
  }];
}

def TestPrintSavedPass : Pass<"test-strata-print-saved", "::mlir::ModuleOp"> {
  let summary = "Print the values each function keeps for its backward pass";
  let description = [{
    Runs the SavedValues analysis on every function and prints, per function,
    each saved activation (its defining op, layer and type) and saved
    argument, then the total of saved activation bytes.
  }];
}

#endif // STRATA_TEST_PASSES_TD
