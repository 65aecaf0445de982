// RUN: strata-translate --export-plan %s --verify-diagnostics -o /dev/null

// An infinite attribute (a float literal beyond f64, found by fuzzing) cannot
// be written: JSON has no infinity.
func.func @inf_lr(%arg0: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<8x3xf32> {strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg2: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg3: tensor<8x3xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>) attributes {strata.train_step} {
  %0 = strata.matmul %arg0, %arg1 {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = strata.softmax_cross_entropy %0, %arg2 {strata.layer = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  %2 = strata.fill 1.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %3 = strata.softmax_cross_entropy_grad %0, %arg2, %2 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x3xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x3xf32>
  %4 = strata.matmul %arg0, %3 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  // expected-error @+1 {{'strata.sgd_update' op attribute 'lr' is INF, which a plan cannot hold}}
  %new_param, %new_velocity = strata.sgd_update %arg1, %4, %arg3 lr = 1.0e999 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<8x3xf32>
  return %new_param, %new_velocity, %1 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>
}

