// RUN: strata-opt %s --strata-autodiff="optimizer=adamw lr=0.01 weight-decay=0.1" | FileCheck %s --check-prefix=ADAMW
// RUN: strata-opt %s --strata-autodiff="optimizer=adam" | FileCheck %s --check-prefix=ADAM

// Adam keeps two moments per parameter and reads the step counter, which
// arrives as an i32 input with role = step.

// ADAMW-LABEL: func.func @f
// ADAMW-SAME: %[[STEP:[a-z0-9]+]]: tensor<i32> {strata.input = #strata.input<name = "step", role = step>}
// ADAMW-SAME: %[[M:[a-z0-9]+]]: tensor<2x4xf32> {strata.state = #strata.state<name = "w.m", param = "w">}
// ADAMW-SAME: %[[V:[a-z0-9]+]]: tensor<2x4xf32> {strata.state = #strata.state<name = "w.v", param = "w">}
// ADAMW: strata.adam_update %{{.+}}, %{{.+}}, %[[M]], %[[V]], %[[STEP]] lr = 1.000000e-02 beta1 = 9.000000e-01 beta2 = 0.99899999999999999 epsilon = 1.000000e-08 weight_decay = 1.000000e-01 decoupled
// ADAM: strata.adam_update
// ADAM-NOT: decoupled
func.func @f(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
             %w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
             %t: tensor<2x4xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %s = strata.add %x, %w : tensor<2x4xf32>
  %l = strata.mse_loss %s, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
