// RUN: strata-opt %s --split-input-file --allow-unregistered-dialect --strata-autodiff --verify-diagnostics
// RUN: not strata-opt %s --split-input-file --allow-unregistered-dialect --strata-autodiff=optimizer=lion 2>&1 | FileCheck %s --check-prefix=OPT

// The optimizer is an enum option: its parser rejects an unknown name.
// OPT: for the --optimizer option: Cannot find option named 'lion'!

// expected-error @+1 {{'func.func' op must return exactly one scalar f32 loss to be differentiated}}
func.func @no_loss(%w: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op has no parameters (strata.param) to train}}
func.func @no_params(%x: tensor<2x4xf32>, %t: tensor<2x4xf32>) -> tensor<f32> {
  %l = strata.mse_loss %x, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @opaque(%w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>},
                  %t: tensor<2x4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'test.opaque' op cannot be differentiated: it does not implement AutodiffOpInterface}}
  %o = "test.opaque"(%w) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = strata.mse_loss %o, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
