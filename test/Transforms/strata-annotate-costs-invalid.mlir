// RUN: not strata-opt %s --strata-annotate-costs 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not strata-opt %s --strata-annotate-costs=target=no-such-target 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not strata-opt %s --strata-annotate-costs=target=%S/Inputs/broken-target.json 2>&1 | FileCheck %s --check-prefix=BROKEN

// A missing, unknown or malformed target is reported with a location and the
// pass fails; the module is not printed.

// MISSING: error: --strata-annotate-costs needs a target (target=NAME or target=FILE.json)
// UNKNOWN: error: unknown target 'no-such-target' (searched: {{.*}}; known targets: {{.*}}h100-sxm-8x{{.*}})
// BROKEN: broken-target.json: field 'device.memory_bandwidth_gb_per_s': expected a positive number
// MISSING-NOT: func.func
// UNKNOWN-NOT: func.func
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = strata.relu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
