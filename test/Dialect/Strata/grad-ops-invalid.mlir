// RUN: strata-opt %s --split-input-file --verify-diagnostics

// Verifier rules of the backward and optimizer ops.

func.func @bias_grad_size(%dy: tensor<4x16xf32>) {
  // expected-error @+1 {{'strata.bias_add_grad' op result must be 1-D of size 16, got 'tensor<15xf32>'}}
  %0 = strata.bias_add_grad %dy : tensor<4x16xf32> -> tensor<15xf32>
  return
}

// -----

func.func @bias_grad_axis(%dy: tensor<4x16xf32>) {
  // expected-error @+1 {{'strata.bias_add_grad' op axis 5 is out of range for rank 2}}
  %0 = strata.bias_add_grad %dy axis = 5 : tensor<4x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @embedding_grad_shape(%dy: tensor<2x3x16xf32>, %ids: tensor<2x4xi32>) {
  // expected-error @+1 {{'strata.embedding_grad' op grad must have the indices' shape followed by 16, got 'tensor<2x3x16xf32>'}}
  %0 = strata.embedding_grad %dy, %ids : (tensor<2x3x16xf32>, tensor<2x4xi32>) -> tensor<50x16xf32>
  return
}

// -----

func.func @embedding_grad_table(%dy: tensor<2x3x16xf32>, %ids: tensor<2x3xi32>) {
  // expected-error @+1 {{'strata.embedding_grad' op result must be a 2-D table [V, H], got 'tensor<50xf32>'}}
  %0 = strata.embedding_grad %dy, %ids : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> tensor<50xf32>
  return
}

// -----

func.func @position_grad(%dy: tensor<2x9x16xf32>) {
  // expected-error @+1 {{'strata.position_embedding_grad' op expects grad [B, S, H] and result [P, H] with P >= S}}
  %0 = strata.position_embedding_grad %dy : tensor<2x9x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @conv_grad_input_size(%dc: tensor<2x4x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'strata.conv2d_grad_input' op spatial size 4 of the gradient does not match the forward output size 8 (dimension 2)}}
  %0 = strata.conv2d_grad_input %dc, %w strides = [1, 1] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @conv_grad_filter_channels(%dc: tensor<2x4x4x4xf32>, %x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{'strata.conv2d_grad_filter' op batch or channel sizes do not match}}
  %0 = strata.conv2d_grad_filter %dc, %x strides = [2, 2] padding = [1, 1] : (tensor<2x4x4x4xf32>, tensor<2x3x8x8xf32>) -> tensor<5x3x3x3xf32>
  return
}

// -----

func.func @pool_grad_size(%dp: tensor<2x3x5x5xf32>, %x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{'strata.max_pool2d_grad' op spatial size 5 of the gradient does not match the forward output size 4 (dimension 2)}}
  %0 = strata.max_pool2d_grad %dp, %x kernel = [2, 2] strides = [2, 2] padding = [0, 0] : (tensor<2x3x5x5xf32>, tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @gap_grad(%dy: tensor<2x4xf32>) {
  // expected-error @+1 {{'strata.global_avg_pool_grad' op expects grad [N, C] and result [N, C, H, W]}}
  %0 = strata.global_avg_pool_grad %dy : tensor<2x4xf32> -> tensor<2x3x8x8xf32>
  return
}

// -----

func.func @ce_grad_labels(%l: tensor<4x16xf32>, %y: tensor<5xi32>, %one: tensor<f32>) {
  // expected-error @+1 {{'strata.softmax_cross_entropy_grad' op labels must have the logits' shape without the class dimension}}
  %0 = strata.softmax_cross_entropy_grad %l, %y, %one : (tensor<4x16xf32>, tensor<5xi32>, tensor<f32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @ln_grad_gamma(%dy: tensor<4x16xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{gamma must be 1-D of the input's last dimension and element type, got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = strata.layer_norm_grad %dy, %dy, %g : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<8xf32>) -> (tensor<4x16xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @sgd_momentum(%p: tensor<16xf32>) {
  // expected-error @+1 {{'strata.sgd_update' op expects lr >= 0, 0 <= momentum < 1 and weight_decay >= 0}}
  %0:2 = strata.sgd_update %p, %p, %p lr = 0.1 momentum = 1.5 weight_decay = 0.0 : tensor<16xf32>
  return
}

// -----

func.func @adam_epsilon(%p: tensor<16xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{'strata.adam_update' op expects lr >= 0, 0 <= beta1, beta2 < 1, epsilon > 0 and weight_decay >= 0}}
  %0:3 = strata.adam_update %p, %p, %p, %p, %t lr = 0.1 beta1 = 0.9 beta2 = 0.999 epsilon = 0.0 weight_decay = 0.0 : tensor<16xf32>, tensor<i32>
  return
}

// -----

func.func @adam_update_index(%p: tensor<16xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{'strata.adam_update' op expects -updates <= update < updates, got update 4 of 4}}
  %0:3 = strata.adam_update %p, %p, %p, %p, %t lr = 0.1 beta1 = 0.9 beta2 = 0.999 epsilon = 1.0e-8 weight_decay = 0.0 update 4 of 4 : tensor<16xf32>, tensor<i32>
  return
}

// -----

func.func @adam_update_alone(%p: tensor<16xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{'strata.adam_update' op expects 'update' and 'updates' together}}
  %0:3 = "strata.adam_update"(%p, %p, %p, %p, %t) <{lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64, update = 1 : i64}> : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @adam_types(%p: tensor<16xf32>, %q: tensor<8xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{'strata.adam_update' op failed to verify that all of {param, grad, m, v, new_param, new_m, new_v} have same type}}
  %0:3 = "strata.adam_update"(%p, %q, %p, %p, %t) <{lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-8 : f64, weight_decay = 0.0 : f64}> : (tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<i32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_grad_stats(%dy: tensor<4x16xf32>, %g: tensor<16xf32>, %m: tensor<8xf32>) {
  // expected-error @+2 {{mean must be 1-D of the input's channels and element type, got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = strata.batch_norm_grad %dy, %dy, %g, %m, %g : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>)
  return
}

// -----

func.func @slice_grad_range(%dy: tensor<4x16xf32>) {
  // expected-error @+1 {{range [20, 20 + 16) does not fit dimension 1 of 'tensor<4x32xf32>'}}
  %0 = strata.slice_grad %dy axis = 1 offset = 20 : tensor<4x16xf32> -> tensor<4x32xf32>
  return
}

// -----

func.func @slice_grad_shape(%dy: tensor<4x16xf32>) {
  // expected-error @+1 {{result 'tensor<5x32xf32>' must equal the gradient 'tensor<4x16xf32>' outside dimension 1}}
  %0 = strata.slice_grad %dy axis = 1 offset = 0 : tensor<4x16xf32> -> tensor<5x32xf32>
  return
}
