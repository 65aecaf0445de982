// RUN: strata-opt %s --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=gpipe" | FileCheck %s

// Running statistics in a pipeline: every micro-batch's batch_norm updates
// them in place, in micro-batch order, so micro-batch 1's clone reads the
// statistics micro-batch 0's produced; they live on their stage's device
// (no send) and the step does not return them.

// CHECK-LABEL: func.func @bn
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %{{[^,]+}}, %[[RM0:[^,]+]], %[[RV0:[^ ]+]] = strata.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %arg3, %arg4 {{.*}}strata.micro_batch = 0 : i64, strata.stage = 0 : i64}
// CHECK: strata.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %[[RM0]], %[[RV0]] {{.*}}strata.micro_batch = 1 : i64, strata.stage = 0 : i64}
// CHECK-NOT: strata.send %arg3
// CHECK-NOT: strata.batch_norm {{.*}}strata.micro_batch = 2
// CHECK: return
func.func @bn(%x: tensor<4x2x3x3xf32> {strata.input = #strata.input<name = "x", role = data>},
              %g: tensor<2xf32> {strata.param = #strata.param<name = "bn.weight", layer = 0, init = ones, scale = 1.0>},
              %b: tensor<2xf32> {strata.param = #strata.param<name = "bn.bias", layer = 0, init = zeros, scale = 0.0>},
              %rm: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>},
              %rv: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_var", layer = 0, init = ones>},
              %w: tensor<18x3xf32> {strata.param = #strata.param<name = "fc.weight", layer = 1, init = normal, scale = 1.0>},
              %t: tensor<4xi32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %y:5 = strata.batch_norm %x, %g, %b, %rm, %rv {strata.layer = 0 : i64} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %f = strata.flatten %y#0 {strata.layer = 0 : i64} : tensor<4x2x3x3xf32> -> tensor<4x18xf32>
  %h = strata.matmul %f, %w {strata.layer = 1 : i64} : (tensor<4x18xf32>, tensor<18x3xf32>) -> tensor<4x3xf32>
  %l = strata.softmax_cross_entropy %h, %t {strata.layer = 1 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
