// RUN: split-file %s %t
// RUN: strata-opt %t/divide.mlir --strata-schedule-pipeline="stages=2 micro-batches=3 schedule=2bw window=2" --verify-diagnostics
// RUN: strata-opt %t/short.mlir --strata-schedule-pipeline="stages=3 micro-batches=4 schedule=2bw window=1" --verify-diagnostics
// RUN: strata-opt %t/divide.mlir --strata-schedule-pipeline="stages=3 micro-batches=4 schedule=2bw window=2" -o /dev/null

// The shapes the 2bw schedule cannot run, refused at the step with the
// reason; the last RUN line schedules the same step with a valid window, so
// the errors come from the shapes alone.

//--- divide.mlir
// expected-error @below {{'func.func' op cannot be scheduled: the 2bw schedule needs the micro-batch count (3) to be a multiple of the window (2)}}
func.func @step(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %w0: tensor<4x4xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>}, %v0: tensor<4x4xf32> {strata.state = #strata.state<name = "w0.velocity", param = "w0">}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) attributes {strata.train_step, strata.layer_names = ["a", "b", "c"]} {
  %h = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %h2 = strata.relu %h {strata.layer = 1 : i64} : tensor<2x4xf32>
  %o = strata.relu %h2 {strata.layer = 2 : i64} : tensor<2x4xf32>
  %l = strata.mse_loss %o, %x {strata.layer = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %one = strata.fill 1.000000e+00 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %do = strata.mse_loss_grad %o, %x, %one {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %dh2 = strata.relu_grad %do, %h2 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<2x4xf32>
  %dh = strata.relu_grad %dh2, %h {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<2x4xf32>
  %g0 = strata.matmul %x, %dh transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %n0, %nv0 = strata.sgd_update %w0, %g0, %v0 lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x4xf32>
  return %n0, %nv0, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

//--- short.mlir
// expected-error @below {{'func.func' op cannot be scheduled: the 2bw schedule needs a window of at least devices - 1 (2) micro-batches, got 1}}
func.func @step(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %w0: tensor<4x4xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>}, %v0: tensor<4x4xf32> {strata.state = #strata.state<name = "w0.velocity", param = "w0">}) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>) attributes {strata.train_step, strata.layer_names = ["a", "b", "c"]} {
  %h = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %h2 = strata.relu %h {strata.layer = 1 : i64} : tensor<2x4xf32>
  %o = strata.relu %h2 {strata.layer = 2 : i64} : tensor<2x4xf32>
  %l = strata.mse_loss %o, %x {strata.layer = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %one = strata.fill 1.000000e+00 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %do = strata.mse_loss_grad %o, %x, %one {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %dh2 = strata.relu_grad %do, %h2 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<2x4xf32>
  %dh = strata.relu_grad %dh2, %h {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<2x4xf32>
  %g0 = strata.matmul %x, %dh transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %n0, %nv0 = strata.sgd_update %w0, %g0, %v0 lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x4xf32>
  return %n0, %nv0, %l : tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}
