// RUN: split-file %s %t
// RUN: strata-opt %t/zero.mlir --strata-fuse="max-group-tensors=0" --verify-diagnostics
// RUN: strata-opt %t/huge.mlir --strata-fuse="max-group-tensors=100000" --verify-diagnostics
// RUN: strata-opt %t/ops.mlir --split-input-file --verify-diagnostics

//--- zero.mlir
// A group holds at least one update.
// expected-error@below {{--strata-fuse needs max-group-tensors >= 1, got 0}}
module {}

//--- huge.mlir
// expected-error@below {{--strata-fuse needs max-group-tensors <= 65536 (its documented bound), got 100000}}
module {}

//--- ops.mlir
// The fused op's own rules: one epilogue operand of the right shape, the
// product's result type, a pre-activation only for bias_relu / bias_gelu.
func.func @bias_shape(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue bias needs a 1-D bias of 32 'f32', got 'tensor<16xf32>'}}
  %0 = strata.fused_matmul bias %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @gate_shape(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %h: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue relu_grad needs an input of the result's type 'tensor<8x32xf32>', got 'tensor<32xf32>'}}
  %0 = strata.fused_matmul relu_grad %x, %w, %h : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @no_operand(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue bias takes 1 epilogue operand, got 0}}
  %0 = strata.fused_matmul bias %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @residual_operands(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue bias_residual takes 2 epilogue operands, got 1}}
  %0 = strata.fused_matmul bias_residual %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @residual_shape(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %h: tensor<32x8xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue residual needs an addend of the result's type 'tensor<8x32xf32>', got 'tensor<32x8xf32>'}}
  %0 = strata.fused_matmul residual %x, %w, %h : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @result_type(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x16xf32> {
  // expected-error@+1 {{result must be the product's type 'tensor<8x32xf32>', got 'tensor<8x16xf32>'}}
  %0 = strata.fused_matmul bias %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @contraction(%x: tensor<8x16xf32>, %w: tensor<12x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{contracting dimensions differ: lhs has 16, rhs has 12}}
  %0 = strata.fused_matmul bias %x, %w, %b : (tensor<8x16xf32>, tensor<12x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @pre_without_activation(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{epilogue bias has no pre-activation result}}
  %0, %1 = strata.fused_matmul bias %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>)
  return %0 : tensor<8x32xf32>
}

// -----

func.func @bad_kind(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{expected string or keyword containing one of the following enum values for attribute 'epilogue' [bias, bias_relu, bias_gelu, relu_grad, gelu_grad, residual, bias_residual]}}
  %0 = strata.fused_matmul sigmoid %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @bad_group(%p: tensor<4xf32>, %g: tensor<4xf32>, %v: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{attribute 'multi_tensor' failed to satisfy constraint}}
  %0:2 = strata.sgd_update %p, %g, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 multi_tensor = 0 : tensor<4xf32>
  return %0#0 : tensor<4xf32>
}
