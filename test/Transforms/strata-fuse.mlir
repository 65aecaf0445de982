// RUN: strata-opt %s --split-input-file --strata-fuse | FileCheck %s
// RUN: strata-opt %s --split-input-file --strata-fuse=epilogues=false | FileCheck %s --check-prefix=NOEPI
// RUN: strata-opt %s --split-input-file --strata-fuse=optimizer=false | FileCheck %s --check-prefix=NOOPT
// RUN: strata-opt %s --split-input-file --strata-fuse=max-group-tensors=2 | FileCheck %s --check-prefix=MAX2

// A relu layer: matmul + bias_add + relu become one bias_relu product; the
// relu's gradient gates on the relu's output instead of the sum (which then
// has no reader left), and fuses into the backward product that feeds it.
// CHECK-LABEL: func.func @relu_layer
// CHECK: %[[H:.+]] = strata.fused_matmul bias_relu %arg0, %arg1, %arg2 {strata.layer = 0 : i64} : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: %[[Y:.+]] = strata.matmul %[[H]], %arg3
// CHECK-NEXT: %[[DX:.+]] = strata.fused_matmul relu_grad %arg4, %arg3, %[[H]] transpose_b {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT: return %[[Y]], %[[DX]]
// With epilogues=false nothing changes.
// NOEPI-LABEL: func.func @relu_layer
// NOEPI-NOT: fused_matmul
// NOEPI: strata.relu_grad
func.func @relu_layer(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>,
                      %w2: tensor<32x4xf32>, %dy: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<8x32xf32>) attributes {strata.train_step} {
  %0 = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b {strata.layer = 0 : i64} : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = strata.relu %1 {strata.layer = 0 : i64} : tensor<8x32xf32>
  %3 = strata.matmul %2, %w2 {strata.layer = 1 : i64} : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32>
  %4 = strata.matmul %dy, %w2 transpose_b {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
  %5 = strata.relu_grad %4, %1 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<8x32xf32>
  return %3, %5 : tensor<8x4xf32>, tensor<8x32xf32>
}

// -----

// A gelu layer (batched, as a transformer's MLP): gelu's gradient needs the
// sum, so the fused product also returns it as its pre-activation, and the
// gelu_grad that reads it fuses into its own backward product.
// CHECK-LABEL: func.func @gelu_layer
// CHECK: %[[A:.+]], %[[Z:.+]] = strata.fused_matmul bias_gelu %arg0, %arg1, %arg2 : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>)
// CHECK-NEXT: %[[DA:.+]] = strata.fused_matmul gelu_grad %arg3, %arg4, %[[Z]] :
// CHECK-NEXT: return %[[A]], %[[DA]]
func.func @gelu_layer(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>,
                      %dy: tensor<2x4x8xf32>, %w2: tensor<8x16xf32>)
    -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>) attributes {strata.train_step} {
  %0 = strata.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %1 = strata.bias_add %0, %b : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %2 = strata.gelu %1 : tensor<2x4x16xf32>
  %3 = strata.matmul %dy, %w2 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %4 = strata.gelu_grad %3, %1 : tensor<2x4x16xf32>
  return %2, %4 : tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// A bias alone (logits, a projection): the fused result is the sum, read by
// all of the sum's users. Transposes, bf16, the tiling, the placement and
// the phase are the matmul's; a cost annotation is dropped.
// CHECK-LABEL: func.func @bias_only
// CHECK: %[[S:.+]] = strata.fused_matmul bias %arg0, %arg1, %arg2 transpose_b bf16 {strata.gemm_tiling = #strata.gemm_tiling<mc = 12, nc = 32, kc = 16, mr = 12, nr = 32>, strata.layer = 3 : i64, strata.micro_batch = 1 : i64, strata.stage = 1 : i64}
// CHECK-NOT: strata.cost
// CHECK-NEXT: %[[T:.+]] = strata.add %[[S]], %[[S]]
// CHECK-NEXT: return %[[T]]
func.func @bias_only(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w transpose_b bf16 {strata.gemm_tiling = #strata.gemm_tiling<mc = 12, nc = 32, kc = 16, mr = 12, nr = 32>, strata.layer = 3 : i64, strata.stage = 1 : i64, strata.micro_batch = 1 : i64, strata.cost = #strata.cost<flops = 8192, bytes_read = 2688, bytes_written = 1024, seconds = 1.0e-06>} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b {strata.layer = 3 : i64, strata.stage = 1 : i64, strata.micro_batch = 1 : i64} : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = strata.add %1, %1 : tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// -----

// A sum something else must read (a swapped or compressed activation, say)
// comes out as the pre-activation of a bias_relu product.
// CHECK-LABEL: func.func @relu_sum_kept
// CHECK: %[[H:.+]], %[[Z:.+]] = strata.fused_matmul bias_relu %arg0, %arg1, %arg2 :
// CHECK-NEXT: strata.swap_out %[[Z]] slot = 0
// CHECK-NEXT: strata.swap_out_wait %[[Z]] slot = 0
// CHECK-NEXT: return %[[H]]
func.func @relu_sum_kept(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = strata.relu %1 : tensor<8x32xf32>
  strata.swap_out %1 slot = 0 : tensor<8x32xf32>
  strata.swap_out_wait %1 slot = 0 : tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// -----

// Nothing fuses when the product has another reader, the bias is not along
// the last dimension, the ops run on different pipeline devices, or the
// gradient into relu_grad is a sum rather than a product.
// CHECK-LABEL: func.func @negative_product_read_twice
// CHECK-NOT: fused_matmul
// CHECK: strata.bias_add
func.func @negative_product_read_twice(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>) attributes {strata.train_step} {
  %0 = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %0, %1 : tensor<8x32xf32>, tensor<8x32xf32>
}

// CHECK-LABEL: func.func @negative_bias_axis
// CHECK-NOT: fused_matmul
// CHECK: strata.bias_add {{.*}} axis = 0
func.func @negative_bias_axis(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<8xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b axis = 0 : (tensor<8x32xf32>, tensor<8xf32>) -> tensor<8x32xf32>
  return %1 : tensor<8x32xf32>
}

// CHECK-LABEL: func.func @negative_other_stage
// CHECK-NOT: fused_matmul
// CHECK: strata.relu_grad
func.func @negative_other_stage(%dy: tensor<8x4xf32>, %w: tensor<32x4xf32>, %h: tensor<8x32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %dy, %w transpose_b {strata.stage = 1 : i64} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
  %1 = strata.relu_grad %0, %h {strata.stage = 0 : i64} : tensor<8x32xf32>
  return %1 : tensor<8x32xf32>
}

// A product summed with another gradient: the add becomes the product's
// residual epilogue; the relu gradient of the sum stays.
// CHECK-LABEL: func.func @gradient_sum
// CHECK: %[[S:.*]] = strata.fused_matmul residual %arg0, %arg1, %arg2 transpose_b :
// CHECK-NEXT: strata.relu_grad %[[S]], %arg2
func.func @gradient_sum(%dy: tensor<8x4xf32>, %w: tensor<32x4xf32>, %h: tensor<8x32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %dy, %w transpose_b : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32>
  %1 = strata.add %0, %h : tensor<8x32xf32>
  %2 = strata.relu_grad %1, %h : tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// A transformer's residual connection after a biased projection: bias,
// then the residual, in one epilogue (bias first, then the addend).
// CHECK-LABEL: func.func @bias_residual
// CHECK: %[[R:.*]] = strata.fused_matmul bias_residual %arg1, %arg2, %arg3, %arg0 {strata.layer = 2 : i64} :
// CHECK-NEXT: return %[[R]]
func.func @bias_residual(%x: tensor<2x8x16xf32>, %a: tensor<2x8x64xf32>, %w: tensor<64x16xf32>, %b: tensor<16xf32>)
    -> tensor<2x8x16xf32> attributes {strata.train_step} {
  %0 = strata.matmul %a, %w {strata.layer = 2 : i64} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  %1 = strata.bias_add %0, %b {strata.layer = 2 : i64} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %2 = strata.add %1, %x : tensor<2x8x16xf32>
  return %2 : tensor<2x8x16xf32>
}

// The sum of two products: the later one fuses (it moves the least), the
// earlier one is the addend.
// CHECK-LABEL: func.func @two_products
// CHECK: %[[P:.*]] = strata.matmul %arg0, %arg1
// CHECK-NEXT: strata.fused_matmul residual %arg2, %arg3, %[[P]] :
func.func @two_products(%a: tensor<8x4xf32>, %w: tensor<4x32xf32>, %c: tensor<8x16xf32>, %v: tensor<16x32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %a, %w : (tensor<8x4xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  %1 = strata.matmul %c, %v : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = strata.add %0, %1 : tensor<8x32xf32>
  return %2 : tensor<8x32xf32>
}

// Moving the product to the add would read a weight an update between them
// overwrote: no fusion. Nor for a bias_gelu product (its epilogue is not a
// bias alone).
// CHECK-LABEL: func.func @negative_residual_past_update
// CHECK: strata.matmul
// CHECK: strata.sgd_update
// CHECK: strata.add
func.func @negative_residual_past_update(%a: tensor<8x4xf32>, %w: tensor<4x32xf32>, %h: tensor<8x32xf32>, %g: tensor<4x32xf32>, %m: tensor<4x32xf32>)
    -> (tensor<8x32xf32>, tensor<4x32xf32>) attributes {strata.train_step} {
  %0 = strata.matmul %a, %w : (tensor<8x4xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  %nw, %nm = strata.sgd_update %w, %g, %m lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 : tensor<4x32xf32>
  %1 = strata.add %0, %h : tensor<8x32xf32>
  return %1, %nw : tensor<8x32xf32>, tensor<4x32xf32>
}

// CHECK-LABEL: func.func @negative_residual_after_gelu
// CHECK: strata.fused_matmul bias_gelu
// CHECK: strata.add
func.func @negative_residual_after_gelu(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %h: tensor<8x32xf32>)
    -> tensor<8x32xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = strata.gelu %1 : tensor<8x32xf32>
  %3 = strata.add %2, %h : tensor<8x32xf32>
  return %3 : tensor<8x32xf32>
}

// Attention's head split: the transposes [0, 2, 1, 3] that feed q k^T and
// p v fold into the matmuls' operands (heads_a, heads_b), and the one that
// merges the heads fold into the product's result (heads_c); no transpose
// is left. The types are the stored ones.
// CHECK-LABEL: func.func @attention_heads
// CHECK-NOT: strata.transpose
// CHECK: %[[Q:.*]] = strata.reshape %arg0
// CHECK: %[[K:.*]] = strata.reshape %arg1
// CHECK: %[[V:.*]] = strata.reshape %arg2
// CHECK: %[[S:.*]] = strata.matmul %[[Q]], %[[K]] transpose_b heads_a heads_b : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32>
// CHECK: %[[P:.*]] = strata.softmax %[[S]]
// CHECK: strata.matmul %[[P]], %[[V]] heads_b heads_c : (tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
// CHECK-NOT: strata.transpose
func.func @attention_heads(%x: tensor<2x8x64xf32>, %y: tensor<2x8x64xf32>, %z: tensor<2x8x64xf32>)
    -> tensor<2x8x4x16xf32> attributes {strata.train_step} {
  %q = strata.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %k = strata.reshape %y : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %v = strata.reshape %z : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qt = strata.transpose %q [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %kt = strata.transpose %k [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %vt = strata.transpose %v [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %s = strata.matmul %qt, %kt transpose_b : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %p = strata.softmax %s causal scale = 2.500000e-01 : tensor<2x4x8x8xf32>
  %o = strata.matmul %p, %vt : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %ot = strata.transpose %o [0, 2, 1, 3] : tensor<2x4x8x16xf32> -> tensor<2x8x4x16xf32>
  return %ot : tensor<2x8x4x16xf32>
}

// A transpose something besides a matmul reads stays for that reader; other
// permutations are not the head split, and a function argument (which an
// update may overwrite in place) is not read through the heads layout.
// CHECK-LABEL: func.func @heads_partly
// CHECK: %[[Q:.*]] = strata.reshape %arg0
// CHECK: %[[T:.*]] = strata.transpose %[[Q]] [0, 2, 1, 3]
// CHECK: strata.matmul %[[Q]], %arg1 heads_a :
// CHECK: strata.transpose %[[Q]] [1, 0, 2, 3]
// CHECK: %[[A:.*]] = strata.transpose %arg2 [0, 2, 1, 3]
// CHECK: strata.matmul %[[A]], %arg1 :
// CHECK: return %[[T]]
func.func @heads_partly(%x: tensor<2x8x64xf32>, %w: tensor<2x4x16x3xf32>, %a: tensor<2x8x4x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<2x4x8x3xf32>, tensor<8x2x4x16xf32>, tensor<2x4x8x3xf32>) attributes {strata.train_step} {
  %q = strata.reshape %x : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %qt = strata.transpose %q [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %y = strata.matmul %qt, %w : (tensor<2x4x8x16xf32>, tensor<2x4x16x3xf32>) -> tensor<2x4x8x3xf32>
  %other = strata.transpose %q [1, 0, 2, 3] : tensor<2x8x4x16xf32> -> tensor<8x2x4x16xf32>
  %at = strata.transpose %a [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %z = strata.matmul %at, %w : (tensor<2x4x8x16xf32>, tensor<2x4x16x3xf32>) -> tensor<2x4x8x3xf32>
  return %qt, %y, %other, %z : tensor<2x4x8x16xf32>, tensor<2x4x8x3xf32>, tensor<8x2x4x16xf32>, tensor<2x4x8x3xf32>
}

// CHECK-LABEL: func.func @negative_not_a_step
// CHECK-NOT: fused_matmul
func.func @negative_not_a_step(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>)
    -> tensor<8x32xf32> {
  %0 = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = strata.bias_add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %1 : tensor<8x32xf32>
}

// -----

// Consecutive updates form multi-tensor groups; a bucket's wait between
// updates ends a group (each update still waits only for its own bucket),
// and a lone update gets no group.
// CHECK-LABEL: func.func @updates
// CHECK: strata.adam_update %arg0, {{.*}} multi_tensor = 1 {
// CHECK-NEXT: strata.adam_update %arg1, {{.*}} multi_tensor = 1 {
// CHECK-NEXT: strata.adam_update %arg2, {{.*}} multi_tensor = 1 {
// CHECK-NEXT: strata.all_reduce_wait
// CHECK-NEXT: strata.adam_update %arg3,
// CHECK-NOT: multi_tensor
// CHECK-SAME: tensor<4xf32>, tensor<i32>
// At most two per group.
// MAX2-LABEL: func.func @updates
// MAX2: strata.adam_update %arg0, {{.*}} multi_tensor = 1 {
// MAX2-NEXT: strata.adam_update %arg1, {{.*}} multi_tensor = 1 {
// MAX2-NEXT: strata.adam_update %arg2,
// MAX2-NOT: multi_tensor
// MAX2-SAME: tensor<i32>
// With optimizer=false no update is grouped.
// NOOPT-LABEL: func.func @updates
// NOOPT-NOT: multi_tensor
func.func @updates(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %p2: tensor<4xf32>, %p3: tensor<4xf32>,
                   %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<i32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {strata.train_step} {
  strata.all_reduce_start %g mean replicas = 2 bucket = 0 : tensor<4xf32>
  %a:3 = strata.adam_update %p0, %g, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 decoupled {strata.phase = #strata<phase update>} : tensor<4xf32>, tensor<i32>
  %b:3 = strata.adam_update %p1, %g, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 decoupled {strata.phase = #strata<phase update>} : tensor<4xf32>, tensor<i32>
  %c:3 = strata.adam_update %p2, %g, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 decoupled {strata.phase = #strata<phase update>} : tensor<4xf32>, tensor<i32>
  %r = strata.all_reduce_wait %g bucket = 0 : tensor<4xf32>
  %d:3 = strata.adam_update %p3, %r, %m, %v, %t lr = 1.000000e-03 beta1 = 9.000000e-01 beta2 = 9.990000e-01 epsilon = 1.000000e-08 weight_decay = 0.000000e+00 decoupled {strata.phase = #strata<phase update>} : tensor<4xf32>, tensor<i32>
  return %a#0, %b#0, %c#0, %d#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// In a pipelined step the devices' programs interleave: updates of one
// device group across another device's ops, never across devices.
// CHECK-LABEL: func.func @pipeline_updates
// CHECK: strata.sgd_update %arg0, {{.*}} multi_tensor = 1 {strata.stage = 0
// CHECK-NEXT: strata.sgd_update %arg2, {{.*}} multi_tensor = 2 {strata.stage = 1
// CHECK-NEXT: strata.sgd_update %arg1, {{.*}} multi_tensor = 1 {strata.stage = 0
// CHECK-NEXT: strata.sgd_update %arg3, {{.*}} multi_tensor = 2 {strata.stage = 1
func.func @pipeline_updates(%p0: tensor<4xf32>, %p1: tensor<4xf32>, %q0: tensor<4xf32>, %q1: tensor<4xf32>,
                            %g: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) attributes {strata.train_step} {
  %a:2 = strata.sgd_update %p0, %g, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.stage = 0 : i64} : tensor<4xf32>
  %b:2 = strata.sgd_update %q0, %g, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.stage = 1 : i64} : tensor<4xf32>
  %c:2 = strata.sgd_update %p1, %g, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.stage = 0 : i64} : tensor<4xf32>
  %d:2 = strata.sgd_update %q1, %g, %v lr = 1.000000e-01 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.stage = 1 : i64} : tensor<4xf32>
  return %a#0, %c#0, %b#0, %d#0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
