module {
  func.func @mlp(%arg0: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg2: tensor<4x3xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg3: tensor<3xf32> {strata.param = #strata.param<name = "fc0.bias", layer = 0, init = zeros, scale = 0.000000e+00>}, %arg4: tensor<4x3xf32> {strata.state = #strata.state<name = "fc0.weight.velocity", param = "fc0.weight">}, %arg5: tensor<3xf32> {strata.state = #strata.state<name = "fc0.weight.velocity", param = "fc0.bias">}) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<f32>) attributes {strata.layer_names = ["fc0"], strata.train_step} {
    %0 = strata.matmul %arg0, %arg2 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = strata.bias_add %0, %arg3 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = strata.softmax_cross_entropy %1, %arg1 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    %3 = strata.fill 1.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
    %4 = strata.softmax_cross_entropy_grad %1, %arg1, %3 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x3xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x3xf32>
    %5 = strata.bias_add_grad %4 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<2x3xf32> -> tensor<3xf32>
    %6 = strata.matmul %arg0, %4 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %new_param, %new_velocity = strata.sgd_update %arg2, %6, %arg4 lr = 1.000000e-03 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x3xf32>
    %new_param_0, %new_velocity_1 = strata.sgd_update %arg3, %5, %arg5 lr = 1.000000e-03 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<3xf32>
    return %new_param, %new_param_0, %new_velocity, %new_velocity_1, %2 : tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<f32>
  }
}

