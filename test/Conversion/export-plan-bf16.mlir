// RUN: strata-opt %s --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.0" | strata-translate --export-plan | FileCheck %s
// RUN: strata-opt %s --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.0" --strata-mixed-precision=compute=model --strata-plan-buffers | strata-translate --export-plan | FileCheck %s --check-prefix=PLANNED

// A step of bf16 tensors (strata-model --dtype bf16) is exported as mixed
// precision: every buffer is f32 (4 bytes an element; the parameter is the
// f32 master weight), and the matmuls that multiplied bf16 tensors, forward
// and gradient, compute in bf16.
// CHECK: "buffers": [
// CHECK-NEXT: {"bytes":128,"dtype":"f32","id":0,"kind":"input","name":"x","offset":0,"shape":[4,8]},
// CHECK-NEXT: {"bytes":96,"dtype":"f32","id":1,"kind":"param","name":"w","offset":128,"shape":[8,3]},
// CHECK: {"bytes":96,"dtype":"f32","id":3,"kind":"state","name":"w.velocity","offset":320,"shape":[8,3]},
// CHECK-NOT: bf16"
// CHECK: "program": [
// CHECK-NEXT: {"attrs":{"bf16":1},"in":[0,1],"layer":0,"op":"matmul","out":[4],"phase":"forward"},
// CHECK: {"attrs":{"bf16":1,"transpose_a":1},"in":[0,7],"layer":0,"op":"matmul","out":[8],"phase":"backward"},

// Widened by --strata-mixed-precision before the buffers are planned, the
// same step plans f32 buffers.
// PLANNED: {"bytes":96,"dtype":"f32","id":1,"kind":"param","name":"w","offset":{{[0-9]+}},"shape":[8,3]},
// PLANNED: {"attrs":{"bf16":1},"in":[0,1],"layer":0,"op":"matmul"
func.func @one_layer(%x: tensor<4x8xbf16> {strata.input = #strata.input<name = "x", role = data>},
                     %w: tensor<8x3xbf16> {strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.0>},
                     %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %0 = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
  %1 = strata.softmax_cross_entropy %0, %y {strata.layer = 0 : i64} : (tensor<4x3xbf16>, tensor<4xi32>) -> tensor<f32>
  return %1 : tensor<f32>
}
