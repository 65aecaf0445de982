// RUN: not strata-opt %s 2>&1 | FileCheck %s --check-prefix=PARSE
// RUN: not strata-opt %s --strata-no-such-pass 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: strata-opt --help | FileCheck %s --check-prefix=HELP

// Malformed IR is reported with its location and a non-zero exit.
// PARSE: strata-opt-errors.mlir:[[@LINE+2]]:{{[0-9]+}}: error: custom op 'strata.matmull' is unknown
func.func @typo(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = strata.matmull %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// FLAG: Unknown command line argument '--strata-no-such-pass'

// Every Strata pass is registered.
// HELP-DAG: --strata-annotate-costs
// HELP-DAG: --test-strata-print-costs
