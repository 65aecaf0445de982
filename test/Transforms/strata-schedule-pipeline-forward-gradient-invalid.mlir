// RUN: strata-opt %s --verify-diagnostics --strata-schedule-pipeline="stages=4 micro-batches=4 schedule=pipedream"
// RUN: strata-opt %s --verify-diagnostics --strata-schedule-pipeline="stages=4 micro-batches=4 schedule=pipedream drain=step"

// An update whose gradient no backward op computes (here a bias gradient
// of the forward activation, not marked strata.phase = backward) is an error,
// not a plan that updates with the wrong micro-batch's gradient (with
// drain=run) or an internal failure (drain=step); found in review.

module {
  func.func @mlp(%arg0: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg2: tensor<8x16xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg3: tensor<16xf32> {strata.param = #strata.param<name = "fc0.bias", layer = 0, init = zeros, scale = 0.000000e+00>}, %arg4: tensor<16x16xf32> {strata.param = #strata.param<name = "fc1.weight", layer = 1, init = xavier_uniform, scale = 1.000000e+00>}, %arg5: tensor<16xf32> {strata.param = #strata.param<name = "fc1.bias", layer = 1, init = zeros, scale = 0.000000e+00>}, %arg6: tensor<16x16xf32> {strata.param = #strata.param<name = "fc2.weight", layer = 2, init = xavier_uniform, scale = 1.000000e+00>}, %arg7: tensor<16xf32> {strata.param = #strata.param<name = "fc2.bias", layer = 2, init = zeros, scale = 0.000000e+00>}, %arg8: tensor<16x4xf32> {strata.param = #strata.param<name = "fc3.weight", layer = 3, init = xavier_uniform, scale = 1.000000e+00>}, %arg9: tensor<4xf32> {strata.param = #strata.param<name = "fc3.bias", layer = 3, init = zeros, scale = 0.000000e+00>}, %arg10: tensor<8x16xf32> {strata.state = #strata.state<name = "fc0.weight.velocity", param = "fc0.weight">}, %arg11: tensor<16xf32> {strata.state = #strata.state<name = "fc0.bias.velocity", param = "fc0.bias">}, %arg12: tensor<16x16xf32> {strata.state = #strata.state<name = "fc1.weight.velocity", param = "fc1.weight">}, %arg13: tensor<16xf32> {strata.state = #strata.state<name = "fc1.bias.velocity", param = "fc1.bias">}, %arg14: tensor<16x16xf32> {strata.state = #strata.state<name = "fc2.weight.velocity", param = "fc2.weight">}, %arg15: tensor<16xf32> {strata.state = #strata.state<name = "fc2.bias.velocity", param = "fc2.bias">}, %arg16: tensor<16x4xf32> {strata.state = #strata.state<name = "fc3.weight.velocity", param = "fc3.weight">}, %arg17: tensor<4xf32> {strata.state = #strata.state<name = "fc3.bias.velocity", param = "fc3.bias">}) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<f32>) attributes {strata.layer_names = ["fc0", "fc1", "fc2", "fc3"], strata.train_step} {
    %0 = strata.matmul %arg0, %arg2 {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = strata.bias_add %0, %arg3 {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %2 = strata.relu %1 {strata.layer = 0 : i64} : tensor<4x16xf32>
    %3 = strata.matmul %2, %arg4 {strata.layer = 1 : i64} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %4 = strata.bias_add %3, %arg5 {strata.layer = 1 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %5 = strata.relu %4 {strata.layer = 1 : i64} : tensor<4x16xf32>
    %6 = strata.matmul %5, %arg6 {strata.layer = 2 : i64} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %7 = strata.bias_add %6, %arg7 {strata.layer = 2 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %8 = strata.relu %7 {strata.layer = 2 : i64} : tensor<4x16xf32>
    %9 = strata.matmul %8, %arg8 {strata.layer = 3 : i64} : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
    %10 = strata.bias_add %9, %arg9 {strata.layer = 3 : i64} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %11 = strata.softmax_cross_entropy %10, %arg1 {strata.layer = 3 : i64} : (tensor<4x4xf32>, tensor<4xi32>) -> tensor<f32>
    %12 = strata.fill 1.000000e+00 {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
    %13 = strata.softmax_cross_entropy_grad %10, %arg1, %12 {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : (tensor<4x4xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x4xf32>
    %14 = strata.bias_add_grad %13 {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : tensor<4x4xf32> -> tensor<4xf32>
    %15 = strata.matmul %13, %arg8 transpose_b {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : (tensor<4x4xf32>, tensor<16x4xf32>) -> tensor<4x16xf32>
    %16 = strata.matmul %8, %13 transpose_a {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : (tensor<4x16xf32>, tensor<4x4xf32>) -> tensor<16x4xf32>
    %17 = strata.relu_grad %15, %7 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<4x16xf32>
    %18 = strata.bias_add_grad %17 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : tensor<4x16xf32> -> tensor<16xf32>
    %19 = strata.matmul %17, %arg6 transpose_b {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %20 = strata.matmul %5, %17 transpose_a {strata.layer = 2 : i64, strata.phase = #strata<phase backward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
    %21 = strata.relu_grad %19, %4 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<4x16xf32>
    %22 = strata.bias_add_grad %21 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<4x16xf32> -> tensor<16xf32>
    %23 = strata.matmul %21, %arg4 transpose_b {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %24 = strata.matmul %2, %21 transpose_a {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
    %25 = strata.relu_grad %23, %1 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<4x16xf32>
    %26 = strata.bias_add_grad %1 {strata.layer = 0 : i64} : tensor<4x16xf32> -> tensor<16xf32>
    %27 = strata.matmul %arg0, %25 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
    %new_param, %new_velocity = strata.sgd_update %arg2, %27, %arg10 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<8x16xf32>
    // expected-error @+1 {{'strata.sgd_update' op reads a gradient that no backward op computes (its producer is not marked strata.phase = backward, as --strata-autodiff marks them)}}
    %new_param_0, %new_velocity_1 = strata.sgd_update %arg3, %26, %arg11 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<16xf32>
    %new_param_2, %new_velocity_3 = strata.sgd_update %arg4, %24, %arg12 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase update>} : tensor<16x16xf32>
    %new_param_4, %new_velocity_5 = strata.sgd_update %arg5, %22, %arg13 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase update>} : tensor<16xf32>
    %new_param_6, %new_velocity_7 = strata.sgd_update %arg6, %20, %arg14 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 2 : i64, strata.phase = #strata<phase update>} : tensor<16x16xf32>
    %new_param_8, %new_velocity_9 = strata.sgd_update %arg7, %18, %arg15 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 2 : i64, strata.phase = #strata<phase update>} : tensor<16xf32>
    %new_param_10, %new_velocity_11 = strata.sgd_update %arg8, %16, %arg16 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 3 : i64, strata.phase = #strata<phase update>} : tensor<16x4xf32>
    %new_param_12, %new_velocity_13 = strata.sgd_update %arg9, %14, %arg17 lr = 5.000000e-02 momentum = 9.000000e-01 weight_decay = 0.000000e+00 {strata.layer = 3 : i64, strata.phase = #strata<phase update>} : tensor<4xf32>
    return %new_param, %new_param_0, %new_param_2, %new_param_4, %new_param_6, %new_param_8, %new_param_10, %new_param_12, %new_velocity, %new_velocity_1, %new_velocity_3, %new_velocity_5, %new_velocity_7, %new_velocity_9, %new_velocity_11, %new_velocity_13, %11 : tensor<8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<4xf32>, tensor<f32>
  }
}
