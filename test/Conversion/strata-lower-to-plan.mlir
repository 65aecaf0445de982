// RUN: strata-opt %s --split-input-file --strata-lower-to-plan --verify-diagnostics | FileCheck %s

// Arguments first, then op results in program order; 64-byte aligned ranges;
// the results of an in-place update reuse the parameter's and state's buffers.

// CHECK-LABEL: func.func @step
// CHECK-SAME: {strata.buffer = #strata.buffer<id = 0, offset = 0, bytes = 32>
// CHECK-SAME: {strata.buffer = #strata.buffer<id = 1, offset = 64, bytes = 32>
// CHECK-SAME: {strata.buffer = #strata.buffer<id = 2, offset = 128, bytes = 32>
// CHECK-SAME: {strata.buffer = #strata.buffer<id = 3, offset = 192, bytes = 32>
// CHECK-SAME: strata.arena_bytes = 512 : i64
// CHECK: strata.add {{.*}}strata.buffers = [#strata.buffer<id = 4, offset = 256, bytes = 32>]
// CHECK: strata.mse_loss {{.*}}strata.buffers = [#strata.buffer<id = 5, offset = 320, bytes = 4>]
// CHECK: strata.fill {{.*}}strata.buffers = [#strata.buffer<id = 6, offset = 384, bytes = 4>]
// CHECK: strata.mse_loss_grad {{.*}}strata.buffers = [#strata.buffer<id = 7, offset = 448, bytes = 32>]
// CHECK: strata.sgd_update {{.*}}strata.buffers = [#strata.buffer<id = 1, offset = 64, bytes = 32>, #strata.buffer<id = 3, offset = 192, bytes = 32>]
func.func @step(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                %w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                %t: tensor<2x4xf32> {strata.input = #strata.input<name = "t", role = labels>},
                %v: tensor<2x4xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">})
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) attributes {strata.train_step} {
  %s = strata.add %x, %w : tensor<2x4xf32>
  %l = strata.mse_loss %s, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %one = strata.fill 1.0 : tensor<f32>
  %ds = strata.mse_loss_grad %s, %t, %one : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %p, %nv = strata.sgd_update %w, %ds, %v lr = 0.1 momentum = 0.0 weight_decay = 0.0 : tensor<2x4xf32>
  return %p, %nv, %l : tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>
}

// -----

// expected-error @+1 {{no training step to lower (run --strata-autodiff first)}}
module {
  func.func @forward_only(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// A kept weight version: copy_into's result takes the state's buffer.
// CHECK-LABEL: func.func @kept_version
// CHECK: strata.copy_into %arg0, %arg2 {strata.buffers = [#strata.buffer<id = 2,
func.func @kept_version(%w: tensor<8xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<8xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}, %s: tensor<8xf32> {strata.state = #strata.state<name = "w.stash1", param = "w", init = param>}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {strata.train_step} {
  %kept = strata.copy_into %w, %s : tensor<8xf32>
  %nw, %nv = strata.sgd_update %w, %w, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 : tensor<8xf32>
  %y = strata.add %kept, %nw : tensor<8xf32>
  return %nw, %nv, %kept : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// An in-place update ends the value it overwrites: reading it afterwards
// would read the new contents.
func.func @read_after_update(%w: tensor<8xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<8xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<8xf32>, tensor<8xf32>) attributes {strata.train_step} {
  // expected-note @+1 {{overwritten here}}
  %nw, %nv = strata.sgd_update %w, %w, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 : tensor<8xf32>
  // expected-error @+1 {{'strata.add' op reads a value that an earlier op overwrote in place}}
  %y = strata.add %w, %nw : tensor<8xf32>
  return %nw, %nv : tensor<8xf32>, tensor<8xf32>
}

// -----

// A reshape's result lies in its source's bytes (an id of its own, the
// source's offset, no arena bytes), also along a chain of reshapes. Not where
// sharing could change what an op reads: the reshape of an argument, and
// the reshape whose result the optimizer update reads as its gradient (the
// runtime keeps gradients live for the whole step), get bytes of their own.
// CHECK-LABEL: func.func @views
// CHECK-SAME: strata.arena_bytes = 640 : i64
// CHECK: strata.add {{.*}}strata.buffers = [#strata.buffer<id = 4, offset = 256, bytes = 32>]
// CHECK: strata.reshape {{.*}}strata.buffers = [#strata.buffer<id = 5, offset = 256, bytes = 32>]
// CHECK: strata.reshape {{.*}}strata.buffers = [#strata.buffer<id = 6, offset = 256, bytes = 32>]
// CHECK: strata.reshape %arg0 {{.*}}strata.buffers = [#strata.buffer<id = 7, offset = 320, bytes = 32>]
// CHECK: strata.mse_loss_grad {{.*}}strata.buffers = [#strata.buffer<id = 10, offset = 512, bytes = 32>]
// CHECK: strata.reshape {{.*}}strata.buffers = [#strata.buffer<id = 11, offset = 576, bytes = 32>]
func.func @views(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                 %w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                 %t: tensor<8xf32> {strata.input = #strata.input<name = "t", role = labels>},
                 %v: tensor<2x4xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">})
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) attributes {strata.train_step} {
  %s = strata.add %x, %w : tensor<2x4xf32>
  %r = strata.reshape %s : tensor<2x4xf32> -> tensor<8xf32>
  %r2 = strata.reshape %r : tensor<8xf32> -> tensor<4x2xf32>
  %xr = strata.reshape %x : tensor<2x4xf32> -> tensor<8xf32>
  %l = strata.mse_loss %r, %t : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  %one = strata.fill 1.0 : tensor<f32>
  %dr = strata.mse_loss_grad %r, %t, %one : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %ds = strata.reshape %dr : tensor<8xf32> -> tensor<2x4xf32>
  %p, %nv = strata.sgd_update %w, %ds, %v lr = 0.1 momentum = 0.0 weight_decay = 0.0 : tensor<2x4xf32>
  return %p, %nv, %l : tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>
}
