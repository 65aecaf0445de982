// RUN: strata-opt %s --test-strata-print-costs --verify-diagnostics -o /dev/null

// Printing needs the annotations of --strata-annotate-costs.

// expected-error @+1 {{no 'strata.layer_costs'; run --strata-annotate-costs first}}
func.func @not_annotated(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = strata.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
