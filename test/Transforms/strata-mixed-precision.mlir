// RUN: strata-opt %s --strata-mixed-precision --split-input-file | FileCheck %s
// RUN: strata-opt %s --strata-mixed-precision --strata-autodiff --split-input-file | FileCheck %s --check-prefix=GRAD
// RUN: strata-opt %s --strata-mixed-precision --strata-mixed-precision=compute=f32 --split-input-file | FileCheck %s --check-prefix=F32
// RUN: strata-opt %s --strata-mixed-precision=compute=model --split-input-file | FileCheck %s --check-prefix=MODEL
// RUN: strata-opt %s --strata-tile-gemm --strata-mixed-precision --strata-tile-gemm --split-input-file | FileCheck %s --check-prefix=TILE
// RUN: strata-opt %s --strata-train-pipeline="mixed-precision=bf16" --split-input-file | FileCheck %s --check-prefix=PIPE
// RUN: strata-opt %s --strata-train-pipeline --split-input-file | FileCheck %s --check-prefix=PIPE-F32

// Every matmul, transposed or batched, computes in bf16; the tensors keep
// their f32 types and the other ops are untouched.
// CHECK-LABEL: func.func @mlp
// CHECK: strata.matmul %arg0, %arg2 bf16 {{.*}}: (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK: strata.relu {{.*}}: tensor<4x8xf32>
// CHECK: strata.matmul {{.*}} transpose_b bf16 {{.*}}: (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>

// The gradient products inherit the forward product's arithmetic.
// GRAD-LABEL: func.func @mlp
// GRAD-COUNT-5: strata.matmul {{.*}} bf16
// GRAD-NOT: strata.matmul

// compute=f32 removes the marks.
// F32-LABEL: func.func @mlp
// F32-NOT: bf16

// compute=model marks nothing in a model of f32 tensors.
// MODEL-LABEL: func.func @mlp
// MODEL-NOT: bf16

// A bf16 matmul carries no tiling without a tuning database (the bf16 GEMM
// then runs its own path's blocking), even one it had.
// TILE-LABEL: func.func @mlp
// TILE-NOT: gemm_tiling

// The pipeline runs it after autodiff (every product marked, including the
// one --strata-fuse then gives the relu gradient's epilogue) and only when
// asked.
// PIPE-LABEL: func.func @mlp
// PIPE-COUNT-5: strata.{{(fused_matmul relu_grad|matmul)}} {{.*}} bf16
// PIPE-NOT: strata.matmul
// PIPE-F32-LABEL: func.func @mlp
// PIPE-F32-NOT: bf16
func.func @mlp(%x: tensor<4x16xf32> {strata.input = #strata.input<name = "x", role = data>},
               %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>},
               %w0: tensor<16x8xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.0>},
               %w1: tensor<10x8xf32> {strata.param = #strata.param<name = "fc1.weight", layer = 1, init = xavier_uniform, scale = 1.0>})
    -> tensor<f32> attributes {strata.layer_names = ["fc0", "fc1"]} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 0 : i64} : tensor<4x8xf32>
  %2 = strata.matmul %1, %w1 transpose_b {strata.layer = 1 : i64} : (tensor<4x8xf32>, tensor<10x8xf32>) -> tensor<4x10xf32>
  %3 = strata.softmax_cross_entropy %2, %y {strata.layer = 1 : i64} : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// Convolutions compute in bf16 too, and their input and filter gradients
// inherit it; pooling and the loss stay f32.
// CHECK-LABEL: func.func @cnn
// CHECK: strata.conv2d %arg0, %arg2 strides = [1, 1] padding = [1, 1] bf16 {{.*}}: (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
// CHECK: strata.conv2d {{.*}} bf16
// CHECK: strata.global_avg_pool
// CHECK-NOT: bf16
// GRAD-LABEL: func.func @cnn
// GRAD: strata.conv2d {{.*}} bf16
// GRAD-DAG: strata.conv2d_grad_filter {{.*}} bf16
// GRAD-DAG: strata.conv2d_grad_input {{.*}} bf16
// F32-LABEL: func.func @cnn
// F32-NOT: bf16
// PIPE-LABEL: func.func @cnn
// PIPE-DAG: strata.conv2d_grad_filter {{.*}} bf16
// PIPE-DAG: strata.conv2d_grad_input {{.*}} bf16
// PIPE-F32-LABEL: func.func @cnn
// PIPE-F32-NOT: bf16
func.func @cnn(%x: tensor<2x3x8x8xf32> {strata.input = #strata.input<name = "x", role = data>},
               %y: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>},
               %w: tensor<4x3x3x3xf32> {strata.param = #strata.param<name = "conv0.weight", layer = 0, init = kaiming_normal, scale = 1.0>},
               %w1: tensor<4x4x1x1xf32> {strata.param = #strata.param<name = "conv1.weight", layer = 1, init = kaiming_normal, scale = 1.0>})
    -> tensor<f32> attributes {strata.layer_names = ["conv0", "conv1"]} {
  %0 = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] {strata.layer = 0 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = strata.conv2d %0, %w1 strides = [1, 1] padding = [0, 0] {strata.layer = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %2 = strata.global_avg_pool %1 {strata.layer = 1 : i64} : tensor<2x4x8x8xf32> -> tensor<2x4xf32>
  %3 = strata.softmax_cross_entropy %2, %y {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A model of bf16 tensors (strata-model --dtype bf16) is widened: every
// tensor becomes f32 (the f32 master copies the runtime keeps) and the ops
// that multiplied bf16 tensors compute in bf16. compute=model marks only
// those; compute=f32 widens and marks nothing; the pipeline widens before
// autodiff, so the gradient products inherit the marks without
// mixed-precision=bf16.
// CHECK-LABEL: func.func @bf16_model
// CHECK-SAME: (%arg0: tensor<4x16xf32> {{.*}}, %arg2: tensor<16x8xf32> {{.*}}) -> tensor<f32>
// CHECK: strata.matmul %arg0, %arg2 bf16 {{.*}}: (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// CHECK-NOT: xbf16
// MODEL-LABEL: func.func @bf16_model
// MODEL: strata.matmul %arg0, %arg2 bf16 {{.*}}: (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// MODEL: strata.relu {{.*}}: tensor<4x8xf32>
// MODEL-NOT: xbf16
// F32-LABEL: func.func @bf16_model
// F32-NOT: bf16
// PIPE-F32-LABEL: func.func @bf16_model
// PIPE-F32-COUNT-2: strata.matmul {{.*}} bf16 {{.*}}xf32>
// PIPE-F32-NOT: xbf16
func.func @bf16_model(%x: tensor<4x16xbf16> {strata.input = #strata.input<name = "x", role = data>},
                      %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>},
                      %w0: tensor<16x8xbf16> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.0>})
    -> tensor<f32> attributes {strata.layer_names = ["fc0"]} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %1 = strata.relu %0 {strata.layer = 0 : i64} : tensor<4x8xbf16>
  %2 = strata.softmax_cross_entropy %1, %y {strata.layer = 0 : i64} : (tensor<4x8xbf16>, tensor<4xi32>) -> tensor<f32>
  return %2 : tensor<f32>
}
