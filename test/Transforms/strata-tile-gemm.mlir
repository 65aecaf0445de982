// RUN: strata-opt %s --strata-tile-gemm="db=%S/Inputs/tuning-db.json" --split-input-file | FileCheck %s
// RUN: strata-opt %s --strata-tile-gemm --split-input-file | FileCheck %s --check-prefix=MODEL
// RUN: strata-model mlp --batch 8 --inputs 16 --hidden 32 --layers 2 --classes 4 | strata-opt --strata-autodiff --strata-tile-gemm="db=%S/Inputs/tuning-db.json" | strata-translate --export-plan | FileCheck %s --check-prefix=PLAN
// RUN: strata-model mlp --batch 8 --inputs 16 --hidden 32 --layers 2 --classes 4 | strata-opt --strata-train-pipeline --strata-tile-gemm="db=%S/Inputs/tuning-db.json" | strata-translate --export-plan | FileCheck %s --check-prefix=FUSED-PLAN

// A linear layer over tokens is one GEMM of batch x rows (2 x 8 = 16 rows);
// its tiling comes from the database.
// CHECK-LABEL: func.func @linear
// CHECK: strata.matmul {{.*}}strata.gemm_tiling = #strata.gemm_tiling<mc = 16, nc = 32, kc = 16, mr = 8, nr = 32>
// MODEL-LABEL: func.func @linear
// MODEL: strata.gemm_tiling = #strata.gemm_tiling<mc = 16, nc = 32, kc = 16, mr = 8, nr = 32>
func.func @linear(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %y = strata.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// Transposes are part of the key: the transposed product has its own entry.
// CHECK-LABEL: func.func @transposed
// CHECK: strata.matmul {{.*}} transpose_b {strata.gemm_tiling = #strata.gemm_tiling<mc = 24, nc = 32, kc = 8, mr = 12, nr = 32>}
func.func @transposed(%x: tensor<32x16xf32>, %w: tensor<16x16xf32>) -> tensor<32x16xf32> {
  %y = strata.matmul %x, %w transpose_b : (tensor<32x16xf32>, tensor<16x16xf32>) -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}

// -----

// A batched product with a transposed left operand runs 4 separate GEMMs.
// CHECK-LABEL: func.func @batched
// CHECK: strata.gemm_tiling = #strata.gemm_tiling<mc = 8, nc = 16, kc = 16, mr = 4, nr = 16>
func.func @batched(%a: tensor<4x16x8xf32>, %b: tensor<4x16x8xf32>) -> tensor<4x8x8xf32> {
  %y = strata.matmul %a, %b transpose_a : (tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  return %y : tensor<4x8x8xf32>
}

// -----

// A GEMM missing from the database gets the analytic tiling: default blocks
// clamped to the problem, register tile 8x32 for 8 rows (12 would pad).
// CHECK-LABEL: func.func @missing
// CHECK: strata.gemm_tiling = #strata.gemm_tiling<mc = 8, nc = 64, kc = 100, mr = 8, nr = 32>
// MODEL-LABEL: func.func @missing
// MODEL: strata.gemm_tiling = #strata.gemm_tiling<mc = 8, nc = 64, kc = 100, mr = 8, nr = 32>
func.func @missing(%x: tensor<8x100xf32>, %w: tensor<100x64xf32>) -> tensor<8x64xf32> {
  %y = strata.matmul %x, %w : (tensor<8x100xf32>, tensor<100x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A bf16 matmul is keyed by its arithmetic: the database's bf16 entry (the
// bf16 GEMM's blocking on its own register tile, 32x32 here) and not the f32
// entry of the same shape. Without a database it gets no tiling and loses
// the one it had: the analytic model is the f32 GEMM's.
// CHECK-LABEL: func.func @bf16_linear
// CHECK: strata.matmul {{.*}} bf16 {strata.gemm_tiling = #strata.gemm_tiling<mc = 32, nc = 32, kc = 32, mr = 32, nr = 32>}
// MODEL-LABEL: func.func @bf16_linear
// MODEL-NOT: gemm_tiling
func.func @bf16_linear(%x: tensor<2x8x16xf32>, %w: tensor<16x32xf32>) -> tensor<2x8x32xf32> {
  %y = strata.matmul %x, %w bf16 {strata.gemm_tiling = #strata.gemm_tiling<mc = 16, nc = 32, kc = 16, mr = 8, nr = 32>} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// A bf16 GEMM missing from the database gets no tiling (the runtime's bf16
// path runs its own blocking).
// CHECK-LABEL: func.func @bf16_missing
// CHECK-NOT: gemm_tiling
func.func @bf16_missing(%x: tensor<8x100xf32>, %w: tensor<100x64xf32>) -> tensor<8x64xf32> {
  %y = strata.matmul %x, %w bf16 : (tensor<8x100xf32>, tensor<100x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// A fused matmul (--strata-fuse before this pass) runs a matmul's GEMM and
// gets its tiling.
// CHECK-LABEL: func.func @fused
// CHECK: strata.fused_matmul bias_relu {{.*}} {strata.gemm_tiling = #strata.gemm_tiling<mc = 16, nc = 32, kc = 16, mr = 8, nr = 32>}
// MODEL-LABEL: func.func @fused
// MODEL: strata.fused_matmul {{.*}}strata.gemm_tiling = #strata.gemm_tiling<mc = 16, nc = 32, kc = 16, mr = 8, nr = 32>
func.func @fused(%x: tensor<16x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<16x32xf32> {
  %y = strata.fused_matmul bias_relu %x, %w, %b : (tensor<16x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}

// -----

// Ops other than matmul are left alone.
// CHECK-LABEL: func.func @negative_no_matmul
// CHECK-NOT: gemm_tiling
func.func @negative_no_matmul(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = strata.relu %x : tensor<8xf32>
  return %y : tensor<8xf32>
}

// The plan carries the tiling as the matmul instruction's attributes; the
// first layer's GEMM (8x32x16) is not in the database and is modelled.
// PLAN: "attrs":{"kc":16,"mc":8,"mr":8,"nc":32,"nr":32},"in":[0,2],"layer":0,"op":"matmul"

// --strata-train-pipeline fuses the layers' GEMMs (fusion is on by default);
// tiling its step afterwards still tiles them: the first layer's fused
// matmul (bias_relu, epilogue 2) carries the modelled tiling.
// FUSED-PLAN: "attrs":{"epilogue":2,"kc":16,"mc":8,"mr":8,"nc":32,"nr":32},"in":[0,2,{{[0-9]+}}],"layer":0,"op":"fused_matmul"
