// RUN: not strata-opt %s --strata-partition-pipeline="target=h100-sxm-8x" 2>&1 | FileCheck %s

// A module without a training step is an error at the module.
// CHECK: error: --strata-partition-pipeline: no training step to partition (run --strata-autodiff first)
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
