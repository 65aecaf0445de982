// RUN: strata-opt %s --split-input-file | FileCheck %s
// RUN: strata-opt %s --split-input-file | strata-opt --split-input-file | FileCheck %s
// RUN: strata-opt %s --split-input-file --mlir-print-op-generic | strata-opt --split-input-file | FileCheck %s

// Every strata op parses, verifies and prints back in its custom form.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>
// CHECK-SAME: strata.input = #strata.input<name = "x", role = data>
// CHECK-SAME: strata.input = #strata.input<name = "y", role = labels>
// CHECK-SAME: strata.layer_names = ["fc0"]
func.func @mlp(%w: tensor<784x128xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.0>},
               %b: tensor<128xf32> {strata.param = #strata.param<name = "fc0.bias", layer = 0, init = zeros, scale = 0.0>},
               %x: tensor<32x784xf32> {strata.input = #strata.input<name = "x", role = data>},
               %y: tensor<32xi32> {strata.input = #strata.input<name = "y", role = labels>},
               %t: tensor<32x128xf32> {strata.input = #strata.input<name = "t", role = labels>})
    -> (tensor<f32>, tensor<f32>) attributes {strata.layer_names = ["fc0"]} {
  // CHECK: %[[H:.+]] = strata.matmul %{{.+}}, %{{.+}} {strata.layer = 0 : i64} : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<32x784xf32>, tensor<784x128xf32>) -> tensor<32x128xf32>
  // CHECK: %[[HB:.+]] = strata.bias_add %[[H]], %{{.+}} {strata.layer = 0 : i64} : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  %hb = strata.bias_add %h, %b {strata.layer = 0 : i64} : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<32x128xf32>
  // CHECK: strata.relu %[[HB]] {strata.layer = 0 : i64} : tensor<32x128xf32>
  %r = strata.relu %hb {strata.layer = 0 : i64} : tensor<32x128xf32>
  // CHECK: strata.gelu %{{.+}} : tensor<32x128xf32>
  %g = strata.gelu %r {strata.layer = 0 : i64} : tensor<32x128xf32>
  // CHECK: strata.softmax_cross_entropy %{{.+}}, %{{.+}} {strata.layer = 0 : i64} : (tensor<32x128xf32>, tensor<32xi32>) -> tensor<f32>
  %l = strata.softmax_cross_entropy %g, %y {strata.layer = 0 : i64} : (tensor<32x128xf32>, tensor<32xi32>) -> tensor<f32>
  // CHECK: strata.mse_loss %{{.+}}, %{{.+}} : (tensor<32x128xf32>, tensor<32x128xf32>) -> tensor<f32>
  %m = strata.mse_loss %g, %t {strata.layer = 0 : i64} : (tensor<32x128xf32>, tensor<32x128xf32>) -> tensor<f32>
  return %l, %m : tensor<f32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @attention
func.func @attention(%x: tensor<2x16x64xf32>, %wq: tensor<64x64xf32>,
                     %tokens: tensor<2x16xi32>, %wte: tensor<100x64xf32>,
                     %wpe: tensor<32x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>)
    -> tensor<2x16x100xf32> {
  // CHECK: strata.embedding %{{.+}}, %{{.+}} : (tensor<100x64xf32>, tensor<2x16xi32>) -> tensor<2x16x64xf32>
  %e = strata.embedding %wte, %tokens : (tensor<100x64xf32>, tensor<2x16xi32>) -> tensor<2x16x64xf32>
  // CHECK: strata.position_embedding %{{.+}}, %{{.+}} : (tensor<2x16x64xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
  %p = strata.position_embedding %e, %wpe : (tensor<2x16x64xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: strata.layer_norm %{{.+}}, %{{.+}}, %{{.+}} epsilon = 9.9999999999999995E-7 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %n = strata.layer_norm %p, %g, %b epsilon = 1.0e-6 : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: strata.layer_norm %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x16x64xf32>
  %n2 = strata.layer_norm %n, %g, %b : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: strata.matmul %{{.+}}, %{{.+}} : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  %q = strata.matmul %n2, %wq : (tensor<2x16x64xf32>, tensor<64x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: strata.reshape %{{.+}} : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %qh = strata.reshape %q : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: strata.transpose %{{.+}} [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %qt = strata.transpose %qh [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // CHECK: strata.matmul %{{.+}}, %{{.+}} transpose_b : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %s = strata.matmul %qt, %qt transpose_b : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  // The same product read from the [batch, seq, heads, head_size] view.
  // CHECK: strata.matmul %{{.+}}, %{{.+}} transpose_b heads_a heads_b : (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  %sh = strata.matmul %qh, %qh transpose_b heads_a heads_b : (tensor<2x16x4x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: strata.matmul %{{.+}}, %{{.+}} heads_b heads_c : (tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
  %oh = strata.matmul %s, %qh heads_b heads_c : (tensor<2x4x16x16xf32>, tensor<2x16x4x16xf32>) -> tensor<2x16x4x16xf32>
  // CHECK: strata.softmax %{{.+}} causal scale = 2.500000e-01 : tensor<2x4x16x16xf32>
  %sm = strata.softmax %s causal scale = 0.25 : tensor<2x4x16x16xf32>
  // CHECK: strata.softmax %{{.+}} : tensor<2x4x16x16xf32>
  %sm2 = strata.softmax %sm : tensor<2x4x16x16xf32>
  // CHECK: strata.matmul %{{.+}}, %{{.+}} transpose_a transpose_b : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %a = strata.matmul %sm2, %qt transpose_a transpose_b : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: strata.matmul %{{.+}}, %{{.+}} transpose_b bf16 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %abf = strata.matmul %sm2, %qt transpose_b bf16 : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  // CHECK: strata.add %{{.+}}, %{{.+}} : tensor<2x16x64xf32>
  %r = strata.add %p, %q : tensor<2x16x64xf32>
  %ab = strata.reshape %a : tensor<2x4x16x16xf32> -> tensor<2x16x64xf32>
  %r2 = strata.add %r, %ab : tensor<2x16x64xf32>
  %wteb = strata.reshape %wte : tensor<100x64xf32> -> tensor<100x64xf32>
  %logits = strata.matmul %r2, %wteb transpose_b : (tensor<2x16x64xf32>, tensor<100x64xf32>) -> tensor<2x16x100xf32>
  return %logits : tensor<2x16x100xf32>
}

// -----

// CHECK-LABEL: func.func @cnn
func.func @cnn(%x: tensor<2x3x32x32xbf16>, %w: tensor<8x3x3x3xbf16>, %cb: tensor<8xbf16>,
               %y: tensor<2xi64>, %w2: tensor<8x8x1x1xbf16>) -> tensor<f32> {
  // CHECK: strata.conv2d %{{.+}}, %{{.+}} strides = [1, 1] padding = [1, 1] : (tensor<2x3x32x32xbf16>, tensor<8x3x3x3xbf16>) -> tensor<2x8x32x32xbf16>
  %c = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] : (tensor<2x3x32x32xbf16>, tensor<8x3x3x3xbf16>) -> tensor<2x8x32x32xbf16>
  // CHECK: strata.bias_add %{{.+}}, %{{.+}} axis = 1 : (tensor<2x8x32x32xbf16>, tensor<8xbf16>) -> tensor<2x8x32x32xbf16>
  %cbias = strata.bias_add %c, %cb axis = 1 : (tensor<2x8x32x32xbf16>, tensor<8xbf16>) -> tensor<2x8x32x32xbf16>
  // CHECK: strata.max_pool2d %{{.+}} kernel = [2, 2] strides = [2, 2] padding = [0, 0] : tensor<2x8x32x32xbf16> -> tensor<2x8x16x16xbf16>
  %p = strata.max_pool2d %cbias kernel = [2, 2] strides = [2, 2] padding = [0, 0] : tensor<2x8x32x32xbf16> -> tensor<2x8x16x16xbf16>
  // CHECK: strata.conv2d %{{.+}}, %{{.+}} strides = [2, 2] padding = [0, 0] bf16 : (tensor<2x8x16x16xbf16>, tensor<8x8x1x1xbf16>) -> tensor<2x8x8x8xbf16>
  %c2 = strata.conv2d %p, %w2 strides = [2, 2] padding = [0, 0] bf16 : (tensor<2x8x16x16xbf16>, tensor<8x8x1x1xbf16>) -> tensor<2x8x8x8xbf16>
  // CHECK: strata.global_avg_pool %{{.+}} : tensor<2x8x8x8xbf16> -> tensor<2x8xbf16>
  %g = strata.global_avg_pool %c2 : tensor<2x8x8x8xbf16> -> tensor<2x8xbf16>
  // CHECK: strata.flatten %{{.+}} : tensor<2x8x8x8xbf16> -> tensor<2x512xbf16>
  %f = strata.flatten %c2 : tensor<2x8x8x8xbf16> -> tensor<2x512xbf16>
  // CHECK: strata.softmax_cross_entropy %{{.+}}, %{{.+}} : (tensor<2x8xbf16>, tensor<2xi64>) -> tensor<f32>
  %l = strata.softmax_cross_entropy %g, %y : (tensor<2x8xbf16>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @swaps
// CHECK: strata.swap_out %arg0 slot = 0 : tensor<4xf32>
// CHECK: strata.swap_out_wait %arg0 slot = 0 : tensor<4xf32>
// CHECK: %[[IN:.*]] = strata.swap_in slot = 0 : tensor<4xf32>
// CHECK: strata.swap_in_wait %[[IN]] slot = 0 : tensor<4xf32>
// CHECK: strata.swap_out %arg1 slot = 1 : tensor<4xi32>
func.func @swaps(%x: tensor<4xf32>, %y: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  strata.swap_out %x slot = 0 : tensor<4xf32>
  strata.swap_out_wait %x slot = 0 : tensor<4xf32>
  %in = strata.swap_in slot = 0 : tensor<4xf32>
  strata.swap_in_wait %in slot = 0 : tensor<4xf32>
  %r = strata.relu %in : tensor<4xf32>
  strata.swap_out %y slot = 1 : tensor<4xi32>
  strata.swap_out_wait %y slot = 1 : tensor<4xi32>
  %yin = strata.swap_in slot = 1 : tensor<4xi32>
  strata.swap_in_wait %yin slot = 1 : tensor<4xi32>
  return %r, %yin : tensor<4xf32>, tensor<4xi32>
}

// -----

// A weight version kept in a state: the result replaces the destination.
// CHECK-LABEL: func.func @copy_into
// CHECK: %[[KEPT:.*]] = strata.copy_into %arg0, %arg1 : tensor<4x8xf32>
// CHECK: return %[[KEPT]]
func.func @copy_into(%w: tensor<4x8xf32>, %s: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %kept = strata.copy_into %w, %s : tensor<4x8xf32>
  return %kept : tensor<4x8xf32>
}

// -----

// 100 f32 values in MXFP4 are 4 blocks of 32 (the last padded): 4 * 17
// bytes; in BFP m=4 block 16, 7 blocks of 1 + 10 bytes. The result holds the
// widest candidate's bytes.
// CHECK-LABEL: func.func @compression
// CHECK: %[[C:.*]] = strata.compress %arg0 format <"mxfp4"> : tensor<4x25xf32> -> tensor<68xi8>
// CHECK: strata.decompress %[[C]] : tensor<68xi8> -> tensor<4x25xf32>
// CHECK: strata.compress %arg0 format <"mxfp4"> candidates [#strata.act_format<"mxfp4">, #strata.act_format<"bfp:m=4,block=16">] budget 1.000000e-01 : tensor<4x25xf32> -> tensor<77xi8>
func.func @compression(%x: tensor<4x25xf32>) -> (tensor<4x25xf32>, tensor<77xi8>) {
  %c = strata.compress %x format <"mxfp4"> : tensor<4x25xf32> -> tensor<68xi8>
  %y = strata.decompress %c : tensor<68xi8> -> tensor<4x25xf32>
  %d = strata.compress %x format <"mxfp4"> candidates [#strata.act_format<"mxfp4">, #strata.act_format<"bfp:m=4,block=16">] budget 0.1 : tensor<4x25xf32> -> tensor<77xi8>
  return %y, %d : tensor<4x25xf32>, tensor<77xi8>
}

// -----

// Batch normalisation with running statistics (function arguments marked
// strata.running_stat); rank 4 (NCHW) and rank 2 ([N, C]).
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>
// CHECK: strata.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} epsilon = 1.000000e-03 momentum = 2.000000e-01 : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: strata.batch_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<6x4xf32>
func.func @batch_norm(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                      %rm: tensor<4xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>},
                      %rv: tensor<4xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_var", layer = 0, init = ones>},
                      %v: tensor<6x4xf32>) -> (tensor<2x4x3x3xf32>, tensor<6x4xf32>) {
  %y:5 = strata.batch_norm %x, %g, %b, %rm, %rv epsilon = 1.0e-3 momentum = 0.2 : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %z:5 = strata.batch_norm %v, %g, %b, %y#3, %y#4 : (tensor<6x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<6x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y#0, %z#0 : tensor<2x4x3x3xf32>, tensor<6x4xf32>
}

// -----

// Slices of one dimension and their concatenation.
// CHECK-LABEL: func.func @slice_concat
// CHECK: %[[A:.+]] = strata.slice %arg0 axis = 1 offset = 0 size = 2 : tensor<3x7x4xf32> -> tensor<3x2x4xf32>
// CHECK: %[[B:.+]] = strata.slice %arg0 axis = 1 offset = 2 size = 5 : tensor<3x7x4xf32> -> tensor<3x5x4xf32>
// CHECK: strata.concat %[[B]], %[[A]] axis = 1 : (tensor<3x5x4xf32>, tensor<3x2x4xf32>) -> tensor<3x7x4xf32>
func.func @slice_concat(%x: tensor<3x7x4xf32>) -> tensor<3x7x4xf32> {
  %a = strata.slice %x axis = 1 offset = 0 size = 2 : tensor<3x7x4xf32> -> tensor<3x2x4xf32>
  %b = strata.slice %x axis = 1 offset = 2 size = 5 : tensor<3x7x4xf32> -> tensor<3x5x4xf32>
  %c = strata.concat %b, %a axis = 1 : (tensor<3x5x4xf32>, tensor<3x2x4xf32>) -> tensor<3x7x4xf32>
  return %c : tensor<3x7x4xf32>
}
