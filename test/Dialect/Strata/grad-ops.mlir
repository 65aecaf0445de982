// RUN: strata-opt %s | strata-opt | FileCheck %s
// RUN: strata-opt %s --mlir-print-op-generic | strata-opt | FileCheck %s

// Every backward, optimizer and utility op round-trips in its custom form.

// CHECK-LABEL: func.func @grads
func.func @grads(%dy: tensor<4x16xf32>, %x: tensor<4x16xf32>, %g: tensor<16xf32>,
                 %ids: tensor<2x3xi32>, %de: tensor<2x3x16xf32>,
                 %img: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dc: tensor<2x4x4x4xf32>,
                 %dp: tensor<2x3x4x4xf32>, %dgap: tensor<2x3xf32>,
                 %logits: tensor<4x16xf32>, %y: tensor<4xi32>, %one: tensor<f32>, %step: tensor<i32>) {
  // CHECK: strata.fill 1.000000e+00 : tensor<f32>
  %f = strata.fill 1.0 : tensor<f32>
  // CHECK: strata.relu_grad %{{.+}}, %{{.+}} : tensor<4x16xf32>
  %0 = strata.relu_grad %dy, %x : tensor<4x16xf32>
  // CHECK: strata.gelu_grad %{{.+}}, %{{.+}} : tensor<4x16xf32>
  %1 = strata.gelu_grad %dy, %x : tensor<4x16xf32>
  // CHECK: strata.softmax_grad %{{.+}}, %{{.+}} scale = 5.000000e-01 : tensor<4x16xf32>
  %2 = strata.softmax_grad %dy, %x scale = 0.5 : tensor<4x16xf32>
  // CHECK: strata.layer_norm_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %3:3 = strata.layer_norm_grad %dy, %x, %g : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: strata.batch_norm_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  %bn:3 = strata.batch_norm_grad %dy, %x, %g, %g, %g : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  // CHECK: strata.slice_grad %{{.+}} axis = 1 offset = 4 : tensor<4x16xf32> -> tensor<4x32xf32>
  %sg = strata.slice_grad %dy axis = 1 offset = 4 : tensor<4x16xf32> -> tensor<4x32xf32>
  // CHECK: strata.bias_add_grad %{{.+}} : tensor<4x16xf32> -> tensor<16xf32>
  %4 = strata.bias_add_grad %dy : tensor<4x16xf32> -> tensor<16xf32>
  // CHECK: strata.bias_add_grad %{{.+}} axis = 1 : tensor<2x4x4x4xf32> -> tensor<4xf32>
  %5 = strata.bias_add_grad %dc axis = 1 : tensor<2x4x4x4xf32> -> tensor<4xf32>
  // CHECK: strata.embedding_grad %{{.+}}, %{{.+}} : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<50x16xf32>
  %6 = strata.embedding_grad %de, %ids : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<50x16xf32>
  // CHECK: strata.position_embedding_grad %{{.+}} : tensor<2x3x16xf32> -> tensor<8x16xf32>
  %7 = strata.position_embedding_grad %de : tensor<2x3x16xf32> -> tensor<8x16xf32>
  // CHECK: strata.conv2d_grad_input %{{.+}}, %{{.+}} strides = [2, 2] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %8 = strata.conv2d_grad_input %dc, %w strides = [2, 2] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: strata.conv2d_grad_filter %{{.+}}, %{{.+}} strides = [2, 2] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  %9 = strata.conv2d_grad_filter %dc, %img strides = [2, 2] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  // The bf16 variants (gradients of a bf16 conv2d).
  // CHECK: strata.conv2d_grad_input %{{.+}}, %{{.+}} strides = [2, 2] padding = [1, 1] bf16 : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dx_bf16 = strata.conv2d_grad_input %dc, %w strides = [2, 2] padding = [1, 1] bf16 : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: strata.conv2d_grad_filter %{{.+}}, %{{.+}} strides = [2, 2] padding = [1, 1] bf16 : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  %dw_bf16 = strata.conv2d_grad_filter %dc, %img strides = [2, 2] padding = [1, 1] bf16 : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<4x3x3x3xf32>
  // CHECK: strata.max_pool2d_grad %{{.+}}, %{{.+}} kernel = [2, 2] strides = [2, 2] padding = [0, 0] : (tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %10 = strata.max_pool2d_grad %dp, %img kernel = [2, 2] strides = [2, 2] padding = [0, 0] : (tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: strata.global_avg_pool_grad %{{.+}} : tensor<2x3xf32> -> tensor<2x3x8x8xf32>
  %11 = strata.global_avg_pool_grad %dgap : tensor<2x3xf32> -> tensor<2x3x8x8xf32>
  // CHECK: strata.softmax_cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x16xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x16xf32>
  %12 = strata.softmax_cross_entropy_grad %logits, %y, %one : (tensor<4x16xf32>, tensor<4xi32>, tensor<f32>) -> tensor<4x16xf32>
  // CHECK: strata.mse_loss_grad %{{.+}}, %{{.+}}, %{{.+}} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %13 = strata.mse_loss_grad %x, %dy, %one : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  // CHECK: strata.sgd_update %{{.+}}, %{{.+}}, %{{.+}} lr = 1.000000e-01 momentum = 9.000000e-01 weight_decay = 0.000000e+00 : tensor<16xf32>
  %p, %v = strata.sgd_update %g, %g, %g lr = 0.1 momentum = 0.9 weight_decay = 0.0 : tensor<16xf32>
  // CHECK: strata.adam_update %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 0.98999999999999999 epsilon = 1.000000e-08 weight_decay = 1.000000e-02 decoupled : tensor<16xf32>, tensor<i32>
  %q:3 = strata.adam_update %g, %g, %g, %g, %step lr = 0.001 beta1 = 0.9 beta2 = 0.99 epsilon = 1.0e-8 weight_decay = 0.01 decoupled : tensor<16xf32>, tensor<i32>
  // Update 2 of 4 in a step (an asynchronous pipeline schedule).
  // CHECK: strata.adam_update {{.*}} weight_decay = 0.000000e+00 update 2 of 4 : tensor<16xf32>, tensor<i32>
  %r:3 = strata.adam_update %g, %g, %g, %g, %step lr = 0.001 beta1 = 0.9 beta2 = 0.99 epsilon = 1.0e-8 weight_decay = 0.0 update 2 of 4 : tensor<16xf32>, tensor<i32>
  // CHECK: strata.adam_update {{.*}} decoupled update 1 of 4 multi_tensor = 3 : tensor<16xf32>, tensor<i32>
  %u:3 = strata.adam_update %g, %g, %g, %g, %step lr = 0.001 beta1 = 0.9 beta2 = 0.99 epsilon = 1.0e-8 weight_decay = 0.0 decoupled update 1 of 4 multi_tensor = 3 : tensor<16xf32>, tensor<i32>
  return
}
