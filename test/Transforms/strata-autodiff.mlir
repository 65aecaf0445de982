// RUN: strata-opt %s --split-input-file --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.25" | FileCheck %s

// A linear layer + relu + loss: the backward ops mirror the forward ones in
// reverse, each in the layer of the op it differentiates, and every parameter
// gets one SGD update whose velocity arrives as a new argument.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {strata.input
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x16xf32> {strata.param
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<16xf32> {strata.param
// CHECK-SAME: %[[Y:[a-z0-9]+]]: tensor<4xi32> {strata.input
// CHECK-SAME: %[[VW:[a-z0-9]+]]: tensor<8x16xf32> {strata.state = #strata.state<name = "w.velocity", param = "w">}
// CHECK-SAME: %[[VB:[a-z0-9]+]]: tensor<16xf32> {strata.state = #strata.state<name = "b.velocity", param = "b">}
// CHECK-SAME: -> (tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<f32>)
// CHECK-SAME: strata.train_step
// CHECK: %[[H:.+]] = strata.matmul %[[X]], %[[W]]
// CHECK: %[[HB:.+]] = strata.bias_add %[[H]], %[[B]]
// CHECK: %[[R:.+]] = strata.relu %[[HB]]
// CHECK: %[[L:.+]] = strata.softmax_cross_entropy %[[R]], %[[Y]]
// CHECK: %[[ONE:.+]] = strata.fill 1.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
// CHECK: %[[DR:.+]] = strata.softmax_cross_entropy_grad %[[R]], %[[Y]], %[[ONE]] {strata.layer = 0 : i64, strata.phase = #strata<phase backward>}
// CHECK: %[[DHB:.+]] = strata.relu_grad %[[DR]], %[[HB]]
// CHECK: %[[DB:.+]] = strata.bias_add_grad %[[DHB]] {{.*}}: tensor<4x16xf32> -> tensor<16xf32>
// The gradient of the data input x is not needed, so it is not computed.
// CHECK-NOT: strata.matmul %[[DHB]], %[[W]] transpose_b
// CHECK: %[[DW:.+]] = strata.matmul %[[X]], %[[DHB]] transpose_a {{.*}}-> tensor<8x16xf32>
// CHECK: %[[NW:.+]], %[[NVW:.+]] = strata.sgd_update %[[W]], %[[DW]], %[[VW]] lr = 5.000000e-01 momentum = 2.500000e-01 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>}
// CHECK: %[[NB:.+]], %[[NVB:.+]] = strata.sgd_update %[[B]], %[[DB]], %[[VB]]
// CHECK: return %[[NW]], %[[NB]], %[[NVW]], %[[NVB]], %[[L]]
func.func @mlp(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>},
               %w: tensor<8x16xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
               %b: tensor<16xf32> {strata.param = #strata.param<name = "b", layer = 0, init = zeros, scale = 0.0>},
               %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hb = strata.bias_add %h, %b {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = strata.relu %hb {strata.layer = 0 : i64} : tensor<4x16xf32>
  %l = strata.softmax_cross_entropy %r, %y {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice (a residual connection) sums its two gradients.

// CHECK-LABEL: func.func @residual
// CHECK: %[[G:.+]] = strata.gelu %[[XW:.+]] {strata.layer = 1 : i64}
// CHECK: %[[S:.+]] = strata.add %[[XW]], %[[G]]
// CHECK: %[[DS:.+]] = strata.mse_loss_grad %[[S]]
// CHECK: %[[DG:.+]] = strata.gelu_grad %[[DS]], %[[XW]] {strata.layer = 1 : i64
// CHECK: %[[SUM:.+]] = strata.add %[[DS]], %[[DG]] {strata.layer = 1 : i64, strata.phase = #strata<phase backward>}
// CHECK: strata.matmul %{{.+}}, %[[SUM]] transpose_a {strata.layer = 0 : i64
func.func @residual(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                    %w: tensor<4x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                    %t: tensor<2x4xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %xw = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %g = strata.gelu %xw {strata.layer = 1 : i64} : tensor<2x4xf32>
  %s = strata.add %xw, %g {strata.layer = 1 : i64} : tensor<2x4xf32>
  %l = strata.mse_loss %s, %t {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Batched activations times a rank-2 weight: the weight gradient collapses the
// batch into the rows of one product; a tied (transposed) table gets its own
// transposed rule, and its two uses add up.

// CHECK-LABEL: func.func @broadcast_and_tied
// CHECK-DAG: %[[X2:.+]] = strata.reshape %[[E:.+]] {{.*}}: tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-DAG: %[[D2:.+]] = strata.reshape %{{.+}} {{.*}}: tensor<2x3x5xf32> -> tensor<6x5xf32>
// CHECK: strata.matmul %[[D2]], %[[X2]] transpose_a {{.*}}: (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
// CHECK: %[[DT:.+]] = strata.embedding_grad %{{.+}}, %{{.+}} {{.*}}: (tensor<2x3x4xf32>, tensor<2x3xi32>) -> tensor<5x4xf32>
// CHECK: strata.add %{{.+}}, %[[DT]]
func.func @broadcast_and_tied(%ids: tensor<2x3xi32> {strata.input = #strata.input<name = "ids", role = data>},
                              %table: tensor<5x4xf32> {strata.param = #strata.param<name = "table", layer = 0, init = normal, scale = 1.0>},
                              %y: tensor<2x3xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %e = strata.embedding %table, %ids {strata.layer = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  %logits = strata.matmul %e, %table transpose_b {strata.layer = 1 : i64} : (tensor<2x3x4xf32>, tensor<5x4xf32>) -> tensor<2x3x5xf32>
  %l = strata.softmax_cross_entropy %logits, %y {strata.layer = 1 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A parameter the loss does not use gets a zero gradient (and still an update).

// CHECK-LABEL: func.func @unused_param
// CHECK: %[[Z:.+]] = strata.fill 0.000000e+00 {strata.layer = 3 : i64, strata.phase = #strata<phase backward>} : tensor<7xf32>
// CHECK: strata.sgd_update %{{.+}}, %[[Z]], %{{.+}} {{.*}}{strata.layer = 3 : i64
func.func @unused_param(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                        %t: tensor<2x4xf32> {strata.input = #strata.input<name = "t", role = labels>},
                        %w: tensor<2x4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                        %u: tensor<7xf32> {strata.param = #strata.param<name = "u", layer = 3, init = zeros, scale = 0.0>}) -> tensor<f32> {
  %s = strata.add %x, %w : tensor<2x4xf32>
  %l = strata.mse_loss %s, %t : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Batch normalisation: its gradient reads the input, gamma and the saved
// batch statistics; the running statistics are neither trained nor
// optimizer state (no update, no velocity) and stay arguments of the step,
// which does not return them (batch_norm updates them in place).

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x2x3x3xf32> {strata.input
// CHECK-SAME: %[[G:[a-z0-9]+]]: tensor<2xf32> {strata.param
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {strata.param
// CHECK-SAME: %[[RM:[a-z0-9]+]]: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>}
// CHECK-SAME: %[[RV:[a-z0-9]+]]: tensor<2xf32> {strata.running_stat
// CHECK-NOT: running_mean.velocity
// CHECK-SAME: -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>)
// CHECK: %[[Y:[^,]+]], %[[MEAN:[^,]+]], %[[ISTD:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = strata.batch_norm %[[X]], %[[G]], %[[B]], %[[RM]], %[[RV]]
// CHECK: %{{[^,]+}}, %[[DG:[^,]+]], %[[DB:[^ ]+]] = strata.batch_norm_grad %{{.+}}, %[[X]], %[[G]], %[[MEAN]], %[[ISTD]] {strata.layer = 0 : i64, strata.phase = #strata<phase backward>}
// CHECK: strata.sgd_update %[[G]], %[[DG]]
// CHECK: strata.sgd_update %[[B]], %[[DB]]
// CHECK-NOT: strata.sgd_update %[[RM]]
func.func @batch_norm(%x: tensor<4x2x3x3xf32> {strata.input = #strata.input<name = "x", role = data>},
                      %g: tensor<2xf32> {strata.param = #strata.param<name = "bn.weight", layer = 0, init = ones, scale = 1.0>},
                      %b: tensor<2xf32> {strata.param = #strata.param<name = "bn.bias", layer = 0, init = zeros, scale = 0.0>},
                      %rm: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = zeros>},
                      %rv: tensor<2xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_var", layer = 0, init = ones>},
                      %t: tensor<4x2x3x3xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %y:5 = strata.batch_norm %x, %g, %b, %rm, %rv {strata.layer = 0 : i64} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
  %l = strata.mse_loss %y#0, %t {strata.layer = 0 : i64} : (tensor<4x2x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Slices, a constant multiple and a concatenation: a slice's gradient is
// its range in a zero tensor (summed with the other slice's), a concat's
// the slices of the result's gradient, a scale's the gradient scaled.

// CHECK-LABEL: func.func @slice_concat
// CHECK: %[[H:.+]] = strata.matmul
// CHECK: %[[A:.+]] = strata.slice %[[H]] axis = 1 offset = 0 size = 3
// CHECK: %[[B:.+]] = strata.slice %[[H]] axis = 1 offset = 3 size = 5
// CHECK: %[[S:.+]] = strata.scale %[[B]] by -1.000000e+00
// CHECK: %[[C:.+]] = strata.concat %[[A]], %[[S]] axis = 1
// CHECK: %[[DC:.+]] = strata.mse_loss_grad %[[C]]
// CHECK: %[[DA:.+]] = strata.slice %[[DC]] axis = 1 offset = 0 size = 3 {{.*}}phase backward
// CHECK: %[[DS:.+]] = strata.slice %[[DC]] axis = 1 offset = 3 size = 5 {{.*}}phase backward
// CHECK: %[[DB:.+]] = strata.scale %[[DS]] by -1.000000e+00 {{.*}}phase backward
// CHECK: %[[GB:.+]] = strata.slice_grad %[[DB]] axis = 1 offset = 3 {{.*}} : tensor<2x5xf32> -> tensor<2x8xf32>
// CHECK: %[[GA:.+]] = strata.slice_grad %[[DA]] axis = 1 offset = 0 {{.*}} : tensor<2x3xf32> -> tensor<2x8xf32>
// CHECK: %[[DH:.+]] = strata.add %[[GB]], %[[GA]]
// CHECK: strata.matmul %{{.+}}, %[[DH]] transpose_a
func.func @slice_concat(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>},
                        %w: tensor<4x8xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = 1.0>},
                        %t: tensor<2x8xf32> {strata.input = #strata.input<name = "t", role = labels>}) -> tensor<f32> {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %a = strata.slice %h axis = 1 offset = 0 size = 3 {strata.layer = 0 : i64} : tensor<2x8xf32> -> tensor<2x3xf32>
  %b = strata.slice %h axis = 1 offset = 3 size = 5 {strata.layer = 0 : i64} : tensor<2x8xf32> -> tensor<2x5xf32>
  %s = strata.scale %b by -1.0 {strata.layer = 0 : i64} : tensor<2x5xf32>
  %c = strata.concat %a, %s axis = 1 {strata.layer = 0 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %l = strata.mse_loss %c, %t {strata.layer = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
