// RUN: strata-opt %s --strata-data-parallel=replicas=4 --split-input-file --verify-diagnostics | FileCheck %s

// Each gradient is averaged over the replicas right before its update, and
// the returned loss is the mean over replicas.

// CHECK-LABEL: func.func @step
// CHECK-SAME: strata.replicas = 4 : i64
// CHECK: %[[G:.+]] = strata.mse_loss_grad
// CHECK: %[[AVG:.+]] = strata.all_reduce %[[G]] mean replicas = 4 {strata.layer = 2 : i64, strata.phase = #strata<phase backward>}
// CHECK: strata.sgd_update %{{.+}}, %[[AVG]], %{{.+}}
// CHECK: %[[LOSS:.+]] = strata.all_reduce %{{.+}} mean replicas = 4 {strata.layer = 2 : i64} : tensor<f32>
// CHECK: return %{{.+}}, %{{.+}}, %[[LOSS]]
func.func @step(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                %w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 2, init = normal, scale = 1.0>},
                %t: tensor<2x4xf32> {strata.input = #strata.input<name = "t", role = labels>},
                %v: tensor<2x4xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">})
    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) attributes {strata.train_step} {
  %s = strata.add %x, %w {strata.layer = 2 : i64} : tensor<2x4xf32>
  %l = strata.mse_loss %s, %t {strata.layer = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  %one = strata.fill 1.0 {strata.layer = 2 : i64} : tensor<f32>
  %ds = strata.mse_loss_grad %s, %t, %one {strata.layer = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %p, %nv = strata.sgd_update %w, %ds, %v lr = 0.1 momentum = 0.0 weight_decay = 0.0 {strata.layer = 2 : i64} : tensor<2x4xf32>
  return %p, %nv, %l : tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>
}

// -----

// expected-error @+1 {{no training step to replicate (run --strata-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
