// RUN: strata-opt %s --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.0" | strata-translate --export-plan | FileCheck %s
// RUN: strata-translate --export-plan --forward-only %s | FileCheck %s --check-prefix=FORWARD

// Batch normalisation: the running statistics are state buffers of kind
// "running" (their init, no parameter, their layer), batch_norm names their
// buffers as its outputs 3 and 4 (in place), and no optimizer updates them.

// CHECK: {"bytes":8,"dtype":"f32","id":3,"kind":"state","name":"bn.running_mean","offset":{{[0-9]+}},"shape":[2]},
// CHECK-NEXT: {"bytes":8,"dtype":"f32","id":4,"kind":"state","name":"bn.running_var","offset":{{[0-9]+}},"shape":[2]},
// CHECK: "attrs": {"epsilon":1.0000000000000001e-05,"momentum":0.10000000000000001},
// CHECK-NEXT: "in": [0,1,2,3,4],
// CHECK-NEXT: "layer": 0,
// CHECK-NEXT: "op": "batch_norm",
// CHECK-NEXT: "out": [{{[0-9]+}},{{[0-9]+}},{{[0-9]+}},3,4],
// CHECK: "op":"batch_norm_grad"
// CHECK-NOT: "in":[3,
// CHECK: "states": [
// CHECK-NEXT: {"buffer":3,"init":"zeros","kind":"running","layer":0,"name":"bn.running_mean"},
// CHECK-NEXT: {"buffer":4,"init":"ones","kind":"running","layer":0,"name":"bn.running_var"},
// CHECK-NEXT: {"buffer":{{[0-9]+}},"init":"zeros","name":"bn.weight.velocity","param":"bn.weight"},

// The inference plan of the forward function carries them too.
// FORWARD: "op": "batch_norm",
// FORWARD-NEXT: "out": [{{[0-9]+}},{{[0-9]+}},{{[0-9]+}},3,4],
// FORWARD: "states": [
// FORWARD-NEXT: {"buffer":3,"init":"zeros","kind":"running","layer":0,"name":"bn.running_mean"},
// FORWARD-NEXT: {"buffer":4,"init":"ones","kind":"running","layer":0,"name":"bn.running_var"}

func.func @bn(%x: tensor<4x2x3x3xf32> {strata.input = #strata.input<name = "x", role = data>},
              %g: tensor<2xf32> {strata.param = #strata.param<name = "bn.weight", layer = 0, init = ones, scale = 1.0>},
              %b: tensor<2xf32> {strata.param = #strata.param<name = "bn.bias", layer = 0, init = zeros, scale = 0.0>},
              %rm: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>},
              %rv: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_var", layer = 0, init = ones>},
              %t: tensor<4x2x3x3xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %y:5 = strata.batch_norm %x, %g, %b, %rm, %rv {strata.layer = 0 : i64} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %l = strata.mse_loss %y#0, %t {strata.layer = 0 : i64} : (tensor<4x2x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
