// RUN: strata-opt %s --strata-annotate-costs="target=%S/../Transforms/Inputs/unit.json" --test-strata-print-costs -o /dev/null | FileCheck %s

// The table sums the per-op costs of each layer: layer 0 is 1152 FLOPs and
// 1984 bytes in 2.112 ns, layer 1 is 300 FLOPs and 468 bytes in 0.468 ns.

// CHECK: per-layer cost of @mlp on unit
// CHECK-NEXT: layer  name   ops   GFLOP  MiB moved  time(us)  param MiB  act MiB
// CHECK-NEXT:     0  fc0      3  1.152e-06  0.00189209  0.002112  0.000549316  0.000244141
// CHECK-NEXT:     1  fc1      2  3e-07      0.00044632  0.000468  0.00012207   0
// CHECK-NEXT: total           5  1.452e-06  0.00233841  0.00258   0.000671387  0.000244141
func.func @mlp(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>},
               %w: tensor<8x16xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
               %b: tensor<16xf32> {strata.param = #strata.param<name = "b", layer = 0, init = zeros, scale = 0.0>},
               %w2: tensor<16x2xf32> {strata.param = #strata.param<name = "w2", layer = 1, init = normal, scale = 1.0>},
               %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32>
    attributes {strata.layer_names = ["fc0", "fc1"]} {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hb = strata.bias_add %h, %b {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = strata.relu %hb {strata.layer = 0 : i64} : tensor<4x16xf32>
  %o = strata.matmul %r, %w2 {strata.layer = 1 : i64} : (tensor<4x16xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
  %l = strata.softmax_cross_entropy %o, %y {strata.layer = 1 : i64} : (tensor<4x2xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
