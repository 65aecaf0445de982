// RUN: strata-opt %s --split-input-file --strata-annotate-costs="target=%S/Inputs/unit.json" | FileCheck %s

// The unit target runs 1e12 f32 FLOP/s, 2e12 bf16 FLOP/s and moves 1e12 B/s,
// so every figure below is computed by hand from the op's shapes.

// CHECK: module attributes {strata.target = "unit"}
// CHECK-LABEL: func.func @two_layers
// Layer 0: 3 ops; 1024 + 64 + 64 FLOPs; 896 + 576 + 512 bytes; the relu
// result (256 bytes) feeds layer 1; parameters 8x16 + 16 floats = 576 bytes.
// Layer 1: 2 ops; 256 + (5 * 8 + 4) FLOPs; 416 + 52 bytes; parameters 128 bytes.
// CHECK-SAME: strata.layer_costs = [
// CHECK-SAME: #strata.layer_cost<layer = 0, ops = 3, flops = 1152, bytes = 1984, seconds = {{2.112000e-09|2.1119999999999997E-9}}, param_bytes = 576, activation_bytes = 256>
// CHECK-SAME: #strata.layer_cost<layer = 1, ops = 2, flops = 300, bytes = 468, seconds = 4.680000e-10, param_bytes = 128, activation_bytes = 0>]
func.func @two_layers(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>},
                      %w: tensor<8x16xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                      %b: tensor<16xf32> {strata.param = #strata.param<name = "b", layer = 0, init = zeros, scale = 0.0>},
                      %w2: tensor<16x2xf32> {strata.param = #strata.param<name = "w2", layer = 1, init = normal, scale = 1.0>},
                      %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  // 2*4*16*8 FLOPs; reads (32 + 128) * 4 bytes, writes 64 * 4; compute-bound.
  // CHECK: strata.matmul {{.*}}strata.cost = #strata.cost<flops = 1024, bytes_read = 640, bytes_written = 256, seconds = 1.024000e-09>
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  // One FLOP per element; memory-bound: (64 + 16 + 64) * 4 bytes.
  // CHECK: strata.bias_add {{.*}}strata.cost = #strata.cost<flops = 64, bytes_read = 320, bytes_written = 256, seconds = {{5.760000e-10|5.7599999999999998E-10}}>
  %hb = strata.bias_add %h, %b {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: strata.relu {{.*}}strata.cost = #strata.cost<flops = 64, bytes_read = 256, bytes_written = 256, seconds = 5.120000e-10>
  %r = strata.relu %hb {strata.layer = 0 : i64} : tensor<4x16xf32>
  // CHECK: strata.matmul {{.*}}strata.cost = #strata.cost<flops = 256, bytes_read = 384, bytes_written = 32, seconds = 4.160000e-10>
  %o = strata.matmul %r, %w2 {strata.layer = 1 : i64} : (tensor<4x16xf32>, tensor<16x2xf32>) -> tensor<4x2xf32>
  // 5 FLOPs per logit + 1 per label; the loss is one f32.
  // CHECK: strata.softmax_cross_entropy {{.*}}strata.cost = #strata.cost<flops = 44, bytes_read = 48, bytes_written = 4, seconds = 5.200000e-11>
  %l = strata.softmax_cross_entropy %o, %y {strata.layer = 1 : i64} : (tensor<4x2xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// bf16 ops use the bf16 peak; views cost nothing; gathers read only their rows.
// CHECK-LABEL: func.func @dtypes_and_views
// Ops without a layer are grouped under layer -1.
// CHECK-SAME: strata.layer_costs = [#strata.layer_cost<layer = -1, ops = 5, flops = 15104
func.func @dtypes_and_views(%a: tensor<4x8xbf16>, %b: tensor<8x16xbf16>,
                            %t: tensor<10x4xf32>, %i: tensor<2x3xi32>,
                            %x: tensor<1x3x8x8xf32>, %f: tensor<4x3x3x3xf32>) {
  // 1024 FLOPs / 2e12 = 5.12e-10 s beats (32 + 128 + 64) * 2 bytes / 1e12.
  // CHECK: strata.matmul {{.*}}#strata.cost<flops = 1024, bytes_read = 320, bytes_written = 128, seconds = 5.120000e-10>
  %0 = strata.matmul %a, %b : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  // CHECK: strata.reshape {{.*}}#strata.cost<flops = 0, bytes_read = 0, bytes_written = 0, seconds = 0.000000e+00>
  %1 = strata.reshape %0 : tensor<4x16xbf16> -> tensor<64xbf16>
  // Indices (6 * 4 bytes) plus 6 rows of 4 floats.
  // CHECK: strata.embedding {{.*}}#strata.cost<flops = 0, bytes_read = 120, bytes_written = 96, seconds = 2.160000e-10>
  %2 = strata.embedding %t, %i : (tensor<10x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  // 2 * (1*4*8*8 outputs) * (3*3*3) = 13824 FLOPs.
  // CHECK: strata.conv2d {{.*}}#strata.cost<flops = 13824, bytes_read = 1200, bytes_written = 1024, seconds = 1.382400e-08>
  %3 = strata.conv2d %x, %f strides = [1, 1] padding = [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  // 2x2 windows: 4 comparisons per output element.
  // CHECK: strata.max_pool2d {{.*}}#strata.cost<flops = 256, bytes_read = 1024, bytes_written = 256
  %4 = strata.max_pool2d %3 kernel = [2, 2] strides = [2, 2] padding = [0, 0] : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  return
}
