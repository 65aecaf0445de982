// strata-model mlp: 15 parameters in 2 tensors (60 bytes), 1 layers, 3 ops
module {
  func.func @mlp(%arg0: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = step>}, %arg1: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg2: tensor<4x3xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg3: tensor<3xf32> {strata.param = #strata.param<name = "fc0.bias", layer = 0, init = zeros, scale = 0.000000e+00>}) -> tensor<f32> attributes {strata.layer_names = ["fc0"]} {
    %0 = strata.matmul %arg0, %arg2 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %1 = strata.bias_add %0, %arg3 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = strata.softmax_cross_entropy %1, %arg1 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
