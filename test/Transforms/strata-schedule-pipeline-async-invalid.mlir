// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=pipedream"
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 schedule=pipedream window=2" 2>&1 | FileCheck %s --check-prefix=WINDOW
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 schedule=2bw window=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// The asynchronous schedules (pipedream, 2bw) update the weights inside the
// step; what they cannot run is refused with the reason (the micro-batch
// and window shapes: strata-schedule-pipeline-async-shape-invalid.mlir).
// WINDOW: error: --strata-schedule-pipeline: window= applies to the 2bw schedule only
// NEGATIVE: error: --strata-schedule-pipeline needs window >= 0, got -1

// A parameter read on another device (a tied weight: stage 1 reads w0)
// would need its versions on both devices; the weights stay on their own.
func.func @step(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %w0: tensor<4x4xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>}, %v0: tensor<4x4xf32> {strata.state = #strata.state<name = "w0.velocity", param = "w0">}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) attributes {strata.train_step, strata.layer_names = ["a", "b"]} {
  %h = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %o = strata.matmul %h, %w0 {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = strata.mse_loss %o, %x {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %one = strata.fill 1.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %do = strata.mse_loss_grad %o, %x, %one {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %dh = strata.matmul %do, %w0 transpose_b {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %g0 = strata.matmul %x, %dh transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  // expected-error @+1 {{'strata.sgd_update' op updates parameter 'w0', which another pipeline device reads (e.g. a tied embedding); the pipedream schedule keeps weight versions on the parameter's own device only}}
  %n0, %nv0 = strata.sgd_update %w0, %g0, %v0 lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x4xf32>
  return %n0, %nv0, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
