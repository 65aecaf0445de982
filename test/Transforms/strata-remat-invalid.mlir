// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-remat="budget=100"
// RUN: not strata-opt %s --split-input-file --strata-remat="time-limit=-1" 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not strata-opt %s --split-input-file --strata-remat="solver=greedy" 2>&1 | FileCheck %s --check-prefix=SOLVER
// RUN: not strata-opt %s --split-input-file --strata-remat="budget=lots" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not strata-opt %s --split-input-file --strata-remat="budget=-3" 2>&1 | FileCheck %s --check-prefix=BUDGET
// RUN: not strata-opt %s --split-input-file --strata-remat="budget=1e30" 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not strata-opt %s --split-input-file --strata-remat="target=no-such-target" 2>&1 | FileCheck %s --check-prefix=TARGET

// Option errors come before any step is touched; solvers are an enum.
// LIMIT: error: --strata-remat needs 0 <= time-limit <= 3600 (seconds), got -1
// SOLVER: for the --solver option: Cannot find option named 'greedy'!
// BUDGET: error: --strata-remat needs budget=BYTES (K/M/G suffixes) or a fraction in (0, 1], got
// HUGE: error: --strata-remat budget 1e30 is over 2^60 bytes
// TARGET: no-such-target

// A module without a training step has nothing to rematerialise.
// expected-error @+1 {{no training step to rematerialise (run --strata-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// The pass plans activations before buffers exist.
// expected-error @+1 {{training step @step: already has buffers: run --strata-remat before --strata-lower-to-plan}}
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>, strata.buffer = #strata.buffer<id = 0, offset = 0, bytes = 8>}) -> tensor<2xf32> attributes {strata.train_step, strata.arena_bytes = 64 : i64} {
  %0 = strata.relu %x {strata.buffers = [#strata.buffer<id = 1, offset = 0, bytes = 8>]} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// 100 bytes cannot hold even the input, parameter, velocity, gradient and
// loss (5 x 64 aligned bytes): the
// error names what the persistent buffers take and the smallest budget the
// pass can meet.
// expected-error @+1 {{training step @step: cannot fit a memory budget of 100 bytes: parameters, gradients, optimizer states, inputs and the loss alone take 320 bytes; the smallest budget --strata-remat meets is 576 bytes}}
func.func @step(%x: tensor<4x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %w: tensor<4x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<4x4xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) attributes {strata.train_step} {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = strata.relu %h {strata.layer = 0 : i64} : tensor<4x4xf32>
  %loss = strata.mse_loss %r, %x {strata.layer = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  %one = strata.fill 1.0 {strata.phase = #strata<phase backward>} : tensor<f32>
  %g = strata.mse_loss_grad %r, %x, %one {strata.phase = #strata<phase backward>} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %gh = strata.relu_grad %g, %h {strata.phase = #strata<phase backward>} : tensor<4x4xf32>
  %gw = strata.matmul %x, %gh transpose_a {strata.phase = #strata<phase backward>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %new, %vel = strata.sgd_update %w, %gw, %v lr = 0.1 momentum = 0.9 weight_decay = 0.0 {strata.phase = #strata<phase update>} : tensor<4x4xf32>
  return %new, %vel, %loss : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
