// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-insert-grad-sync="bucket-bytes=1024 staleness=1"

// With staleness > 0 a lagging replica joins only the gradient averages and
// the loss's all-reduce: any other collective is rejected where it is.
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}, %w: tensor<2xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<2xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<2xf32>, tensor<2xf32>, tensor<f32>) attributes {strata.train_step, strata.replicas = 2 : i64} {
  %g = strata.add %x, %w : tensor<2xf32>
  %a = strata.all_reduce %g mean replicas = 2 : tensor<2xf32>
  %nw, %nv = strata.sgd_update %w, %a, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 : tensor<2xf32>
  %s = strata.fill 1.000000e+00 : tensor<f32>
  // expected-error @+1 {{'strata.all_reduce' op cannot run with staleness > 0: only gradient averages and the returned loss may be all-reduced}}
  %stat = strata.all_reduce %s replicas = 2 : tensor<f32>
  %sum = strata.add %stat, %s : tensor<f32>
  %l = strata.all_reduce %sum mean replicas = 2 : tensor<f32>
  return %nw, %nv, %l : tensor<2xf32>, tensor<2xf32>, tensor<f32>
}

// -----

// negative_loss_only: the gradient average becomes a bucket and the loss's
// all-reduce is allowed, so nothing is reported.
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}, %w: tensor<2xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<2xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<2xf32>, tensor<2xf32>, tensor<f32>) attributes {strata.train_step, strata.replicas = 2 : i64} {
  %g = strata.add %x, %w : tensor<2xf32>
  %a = strata.all_reduce %g mean replicas = 2 : tensor<2xf32>
  %nw, %nv = strata.sgd_update %w, %a, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 : tensor<2xf32>
  %s = strata.fill 1.000000e+00 : tensor<f32>
  %l = strata.all_reduce %s mean replicas = 2 : tensor<f32>
  return %nw, %nv, %l : tensor<2xf32>, tensor<2xf32>, tensor<f32>
}

// -----

// An asynchronous pipeline schedule (pipedream, 2bw: a window) already
// delays its weights; lagging gradients cannot be added on top.
// expected-error @+1 {{'func.func' op is scheduled with the asynchronous pipedream pipeline schedule, which updates the weights inside the step; staleness > 0 (lagging gradients) cannot be combined with it}}
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}, %w: tensor<2xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %v: tensor<2xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<2xf32>, tensor<2xf32>, tensor<f32>) attributes {strata.train_step, strata.replicas = 2 : i64, strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "pipedream", devices = 1, virtual = 1, micro_batches = 1, replicas = 2, window = 1>} {
  %g = strata.add %x, %w {strata.stage = 0 : i64} : tensor<2xf32>
  %a = strata.all_reduce %g mean replicas = 2 {strata.stage = 0 : i64} : tensor<2xf32>
  %nw, %nv = strata.sgd_update %w, %a, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.stage = 0 : i64} : tensor<2xf32>
  %s = strata.fill 1.000000e+00 {strata.stage = 0 : i64} : tensor<f32>
  %l = strata.all_reduce %s mean replicas = 2 {strata.stage = 0 : i64} : tensor<f32>
  return %nw, %nv, %l : tensor<2xf32>, tensor<2xf32>, tensor<f32>
}
