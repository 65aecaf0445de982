// RUN: strata-opt %s --test-strata-print-saved -o /dev/null | FileCheck %s
// RUN: strata-opt %s --strata-autodiff --test-strata-print-saved -o /dev/null | FileCheck %s

// The backward pass of matmul reads both operands (x and w), relu its input
// (the bias_add result), softmax its output, the loss its logits (the same
// softmax output) and labels; bias_add keeps nothing, and the matmul result
// is read by nobody's backward. The answer is the same before and after
// --strata-autodiff.

// CHECK: saved for backward in @f:
// CHECK-NEXT: %1 from strata.bias_add (layer 0): tensor<2x4xf32>
// CHECK-NEXT: %3 from strata.softmax (layer 1): tensor<2x4xf32>
// CHECK-NEXT: %arg0 (argument): tensor<2x3xf32>
// CHECK-NEXT: %arg1 (argument): tensor<3x4xf32>
// CHECK-NEXT: %arg3 (argument): tensor<2xi32>
// CHECK-NEXT: activation bytes: 64
func.func @f(%x: tensor<2x3xf32> {strata.input = #strata.input<name = "x", role = data>},
             %w: tensor<3x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
             %b: tensor<4xf32> {strata.param = #strata.param<name = "b", layer = 0, init = zeros, scale = 0.0>},
             %y: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %hb = strata.bias_add %h, %b {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = strata.relu %hb {strata.layer = 0 : i64} : tensor<2x4xf32>
  %p = strata.softmax %r {strata.layer = 1 : i64} : tensor<2x4xf32>
  %l = strata.softmax_cross_entropy %p, %y {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
