// A shallow CNN with batch normalisation for gradient checks: conv 3x3 ->
// batch_norm -> relu -> conv 3x3 -> batch_norm -> global average -> linear,
// 8 images of 3x8x8, 4 classes. Shallow, so that finite differences with a
// step of 1e-3 stay close to the derivative (a deep batch-normalised
// network's loss bends within that step).
func.func @bn_cnn(%x: tensor<8x3x8x8xf32> {strata.input = #strata.input<name = "images", role = data>},
                  %w1: tensor<8x3x3x3xf32> {strata.param = #strata.param<name = "conv1.weight", layer = 0, init = kaiming_normal, scale = 1.0>},
                  %g1: tensor<8xf32> {strata.param = #strata.param<name = "bn1.weight", layer = 0, init = ones, scale = 1.0>},
                  %b1: tensor<8xf32> {strata.param = #strata.param<name = "bn1.bias", layer = 0, init = zeros, scale = 0.0>},
                  %m1: tensor<8xf32> {strata.running_stat = #strata.running_stat<name = "bn1.running_mean", layer = 0, init = zeros>},
                  %v1: tensor<8xf32> {strata.running_stat = #strata.running_stat<name = "bn1.running_var", layer = 0, init = ones>},
                  %w2: tensor<8x8x3x3xf32> {strata.param = #strata.param<name = "conv2.weight", layer = 1, init = kaiming_normal, scale = 1.0>},
                  %g2: tensor<8xf32> {strata.param = #strata.param<name = "bn2.weight", layer = 1, init = normal, scale = 1.0>},
                  %b2: tensor<8xf32> {strata.param = #strata.param<name = "bn2.bias", layer = 1, init = normal, scale = 0.5>},
                  %m2: tensor<8xf32> {strata.running_stat = #strata.running_stat<name = "bn2.running_mean", layer = 1, init = zeros>},
                  %v2: tensor<8xf32> {strata.running_stat = #strata.running_stat<name = "bn2.running_var", layer = 1, init = ones>},
                  %wf: tensor<8x4xf32> {strata.param = #strata.param<name = "fc.weight", layer = 2, init = xavier_uniform, scale = 1.0>},
                  %y: tensor<8xi32> {strata.input = #strata.input<name = "labels", role = labels>}) -> tensor<f32> {
  %c1 = strata.conv2d %x, %w1 strides = [1, 1] padding = [1, 1] {strata.layer = 0 : i64} : (tensor<8x3x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<8x8x8x8xf32>
  %n1:5 = strata.batch_norm %c1, %g1, %b1, %m1, %v1 {strata.layer = 0 : i64} : (tensor<8x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %r1 = strata.relu %n1#0 {strata.layer = 0 : i64} : tensor<8x8x8x8xf32>
  %c2 = strata.conv2d %r1, %w2 strides = [1, 1] padding = [1, 1] {strata.layer = 1 : i64} : (tensor<8x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<8x8x8x8xf32>
  %n2:5 = strata.batch_norm %c2, %g2, %b2, %m2, %v2 {strata.layer = 1 : i64} : (tensor<8x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8x8x8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %p = strata.global_avg_pool %n2#0 {strata.layer = 2 : i64} : tensor<8x8x8x8xf32> -> tensor<8x8xf32>
  %h = strata.matmul %p, %wf {strata.layer = 2 : i64} : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %l = strata.softmax_cross_entropy %h, %y {strata.layer = 2 : i64} : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
