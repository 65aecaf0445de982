// RUN: strata-opt %s --strata-mixed-precision | FileCheck %s
// RUN: strata-opt %s --strata-mixed-precision --strata-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: strata-opt %s --strata-mixed-precision --strata-mixed-precision=compute=f32 | FileCheck %s --check-prefix=F32
// RUN: strata-opt %s --strata-tile-gemm --strata-mixed-precision --strata-tile-gemm | FileCheck %s --check-prefix=TILE
// RUN: strata-opt %s --strata-train-pipeline="mixed-precision=bf16" | FileCheck %s --check-prefix=PIPE
// RUN: strata-opt %s --strata-train-pipeline | FileCheck %s --check-prefix=PIPE-F32

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

// A bf16 matmul carries no f32 GEMM tiling, even one it had.
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
