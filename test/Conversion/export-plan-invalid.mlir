// RUN: strata-translate --export-plan %s --split-input-file --verify-diagnostics -o /dev/null

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


// -----

// A collective over another number of replicas than the step's (found by
// fuzzing): the runtime would refuse the plan, its group having 2 ranks.
func.func @replicas_mismatch(%arg0: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg2: tensor<4x3xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg4: tensor<4x3xf32> {strata.state = #strata.state<name = "fc0.weight.velocity", param = "fc0.weight">}) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>) attributes {strata.layer_names = ["fc0"], strata.replicas = 2 : i64, strata.train_step} {
  %0 = strata.matmul %arg0, %arg2 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %2 = strata.softmax_cross_entropy %0, %arg1 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<2xi32>) -> tensor<f32>
  %3 = strata.fill 1.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %4 = strata.softmax_cross_entropy_grad %0, %arg1, %3 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x3xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x3xf32>
  %6 = strata.matmul %arg0, %4 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  // expected-error @+1 {{'strata.all_reduce' op reduces over 1 replicas, but the step runs on 2 (strata.replicas)}}
  %7 = strata.all_reduce %6 mean replicas = 1 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<4x3xf32>
  %new_param, %new_velocity = strata.sgd_update %arg2, %7, %arg4 lr = 5.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x3xf32>
  %9 = strata.all_reduce %2 mean replicas = 2 {strata.layer = 0 : i64} : tensor<f32>
  return %new_param, %new_velocity, %9 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>
}

// -----

// A step of bf16 tensors whose buffers were planned at 2 bytes an element
// cannot be widened to the runtime's f32 tensors: the error says to run
// --strata-mixed-precision before --strata-plan-buffers.
// expected-error @+1 {{the step has bf16 tensors and buffers planned for them, but the runtime keeps f32 tensors (bf16 only in matmul and convolution arithmetic): run --strata-mixed-precision before --strata-plan-buffers (or use --strata-train-pipeline)}}
func.func @planned_bf16(%arg0: tensor<4x8xbf16> {strata.buffer = #strata.buffer<id = 0, offset = 0, bytes = 64>, strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<8x3xbf16> {strata.buffer = #strata.buffer<id = 1, offset = 64, bytes = 48>, strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg2: tensor<4xi32> {strata.buffer = #strata.buffer<id = 2, offset = 128, bytes = 16>, strata.input = #strata.input<name = "y", role = labels>}, %arg3: tensor<8x3xbf16> {strata.buffer = #strata.buffer<id = 3, offset = 192, bytes = 48>, strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<8x3xbf16>, tensor<8x3xbf16>, tensor<f32>) attributes {strata.arena_bytes = 576 : i64, strata.train_step} {
  %0 = strata.matmul %arg0, %arg1 {strata.buffers = [#strata.buffer<id = 4, offset = 384, bytes = 24>], strata.layer = 0 : i64} : (tensor<4x8xbf16>, tensor<8x3xbf16>) -> tensor<4x3xbf16>
  %1 = strata.softmax_cross_entropy %0, %arg2 {strata.buffers = [#strata.buffer<id = 5, offset = 256, bytes = 4>], strata.layer = 0 : i64} : (tensor<4x3xbf16>, tensor<4xi32>) -> tensor<f32>
  %2 = strata.fill 1.000000e+00 {strata.buffers = [#strata.buffer<id = 6, offset = 448, bytes = 4>], strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %3 = strata.softmax_cross_entropy_grad %0, %arg2, %2 {strata.buffers = [#strata.buffer<id = 7, offset = 512, bytes = 24>], strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x3xbf16>, tensor<4xi32>, tensor<f32>) -> tensor<4x3xbf16>
  %4 = strata.matmul %arg0, %3 transpose_a {strata.buffers = [#strata.buffer<id = 8, offset = 320, bytes = 48>], strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x8xbf16>, tensor<4x3xbf16>) -> tensor<8x3xbf16>
  %new_param, %new_velocity = strata.sgd_update %arg1, %4, %arg3 lr = 5.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.buffers = [#strata.buffer<id = 1, offset = 64, bytes = 48>, #strata.buffer<id = 3, offset = 192, bytes = 48>], strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<8x3xbf16>
  return %new_param, %new_velocity, %1 : tensor<8x3xbf16>, tensor<8x3xbf16>, tensor<f32>
}

// -----

// A step whose last result is not a scalar f32 (found by fuzzing): the
// runtime reports the last result as the loss and would refuse the plan.
func.func @loss_not_scalar(%arg0: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<8x3xf32> {strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg2: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg3: tensor<8x3xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}) -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<4x3xf32>) attributes {strata.train_step} {
  %0 = strata.matmul %arg0, %arg1 {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = strata.softmax_cross_entropy %0, %arg2 {strata.layer = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  %2 = strata.fill 1.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
  %3 = strata.softmax_cross_entropy_grad %0, %arg2, %2 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x3xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x3xf32>
  %4 = strata.matmul %arg0, %3 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %new_param, %new_velocity = strata.sgd_update %arg1, %4, %arg3 lr = 5.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<8x3xf32>
  // expected-error @+1 {{'func.return' op returns 'tensor<4x3xf32>' last, but a plan's loss (the step's last result) must be a scalar f32}}
  return %new_param, %new_velocity, %0 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<4x3xf32>
}
