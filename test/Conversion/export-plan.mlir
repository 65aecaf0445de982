// RUN: strata-opt %s --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.0" | strata-translate --export-plan | FileCheck %s
// RUN: strata-opt %s --strata-autodiff --strata-lower-to-plan | strata-translate --export-plan | FileCheck %s --check-prefix=ADAM
// RUN: not strata-translate --export-plan %s 2>&1 | FileCheck %s --check-prefix=NOSTEP

// The plan of a one-layer model: every buffer with its kind, the parameter
// with its gradient buffer and initialisation, the velocity state, the inputs,
// and the instructions in program order with their attributes.

// CHECK: "buffers": [
// CHECK-NEXT: {"bytes":128,"dtype":"f32","id":0,"kind":"input","name":"x","offset":0,"shape":[4,8]},
// CHECK-NEXT: {"bytes":96,"dtype":"f32","id":1,"kind":"param","name":"w","offset":128,"shape":[8,3]},
// CHECK-NEXT: {"bytes":16,"dtype":"i32","id":2,"kind":"input","name":"y","offset":256,"shape":[4]},
// CHECK-NEXT: {"bytes":96,"dtype":"f32","id":3,"kind":"state","name":"w.velocity","offset":320,"shape":[8,3]},
// CHECK-NEXT: {"bytes":48,"dtype":"f32","id":4,"kind":"activation","name":"matmul.4","offset":448,"shape":[4,3]},
// CHECK-NEXT: {"bytes":4,"dtype":"f32","id":5,"kind":"activation","name":"softmax_cross_entropy.5","offset":512,"shape":[]},
// CHECK-NEXT: {"bytes":4,"dtype":"f32","id":6,"kind":"activation","name":"fill.6","offset":576,"shape":[]},
// CHECK-NEXT: {"bytes":48,"dtype":"f32","id":7,"kind":"activation","name":"softmax_cross_entropy_grad.7","offset":640,"shape":[4,3]},
// CHECK-NEXT: {"bytes":96,"dtype":"f32","id":8,"kind":"grad","name":"matmul.8","offset":704,"shape":[8,3]}
// CHECK-NEXT: ],
// CHECK: "format": "strata-plan",
// CHECK: "groups": [{"name":"replicas","ranks":[0]}],
// CHECK: "inputs": [{"buffer":0,"name":"x","role":"data"},{"buffer":2,"name":"y","role":"labels"}],
// CHECK: "loss": 5,
// CHECK: "model": "one_layer",
// CHECK: "optimizer": {"kind":"sgd","lr":0.5,"momentum":0,"weight_decay":0},
// CHECK: "parameters": [{"buffer":1,"fan_in":8,"fan_out":3,"grad":8,"init":"xavier_uniform","layer":0,"name":"w","scale":1}],
// CHECK: "arena_bytes": 832,
// CHECK-NEXT: "device": "cpu",
// CHECK: "program": [
// CHECK-NEXT: {"attrs":{},"in":[0,1],"layer":0,"op":"matmul","out":[4],"phase":"forward"},
// CHECK-NEXT: {"attrs":{},"in":[4,2],"layer":0,"op":"softmax_cross_entropy","out":[5],"phase":"forward"},
// CHECK-NEXT: {"attrs":{"value":1},"in":[],"layer":0,"op":"fill","out":[6],"phase":"backward"},
// CHECK-NEXT: {"attrs":{},"in":[4,2,6],"layer":0,"op":"softmax_cross_entropy_grad","out":[7],"phase":"backward"},
// CHECK-NEXT: {"attrs":{"transpose_a":1},"in":[0,7],"layer":0,"op":"matmul","out":[8],"phase":"backward"},
// CHECK-NEXT: {"attrs":{"lr":0.5,"momentum":0,"weight_decay":0},"in":[1,8,3],"layer":0,"op":"sgd_update","out":[1,3],"phase":"update"}
// CHECK-NEXT: ],
// CHECK: "states": [{"buffer":3,"init":"zeros","name":"w.velocity","param":"w"}],
// CHECK: "version": 2

// ADAM: "inputs": [{"buffer":0,"name":"x","role":"data"},{"buffer":2,"name":"y","role":"labels"},{"buffer":3,"name":"step","role":"step"}],
// ADAM: "attrs": {"beta1":{{.*}},"decoupled":1,"epsilon":1e-08,"lr":0.001,"weight_decay":0},
// ADAM-NEXT: "in": [1,{{[0-9]+}},4,5,3],
// ADAM-NEXT: "layer": 0,
// ADAM-NEXT: "op": "adam_update",
// ADAM-NEXT: "out": [1,4,5],

// NOSTEP: error: expected exactly one training step (strata.train_step), found 0; run --strata-autodiff first

func.func @one_layer(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>},
                     %w: tensor<8x3xf32> {strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.0>},
                     %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = strata.softmax_cross_entropy %h, %y {strata.layer = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
