// RUN: split-file %s %t
// RUN: strata-opt %t/ops.mlir --strata-tile-gemm="db=%S/Inputs/tuning-db.json fallback=none" --split-input-file --verify-diagnostics
// RUN: strata-opt %t/missing-db.mlir --strata-tile-gemm="db=%t/no-such-db.json" --verify-diagnostics
// RUN: strata-opt %t/corrupt-db.mlir --strata-tile-gemm="db=%t/corrupt.json" --verify-diagnostics
// RUN: strata-opt %t/bad-field-db.mlir --strata-tile-gemm="db=%t/bad-field.json" --verify-diagnostics
// RUN: strata-opt %t/gpu-db.mlir --strata-tile-gemm="db=%t/gpu.json" --verify-diagnostics
// RUN: not strata-opt %t/bad-option.mlir --strata-tile-gemm="fallback=guess" 2>&1 | FileCheck %s --check-prefix=FALLBACK
// RUN: strata-opt %t/no-db.mlir --strata-tile-gemm="fallback=none" --verify-diagnostics

//--- ops.mlir
// With fallback=none, a GEMM missing from the database is an error at the
// matmul.
func.func @missing(%x: tensor<8x100xf32>, %w: tensor<100x64xf32>) -> tensor<8x64xf32> {
  // expected-error@+1 {{has no tuned tiling for its gemm f32 8x64x100 in}}
  %y = strata.matmul %x, %w : (tensor<8x100xf32>, tensor<100x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// The attribute's own rules: mc is a multiple of mr.
func.func @bad_attr(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error@+1 {{gemm tiling mc = 10 must be a multiple of mr = 4}}
  %y = strata.matmul %x, %w {strata.gemm_tiling = #strata.gemm_tiling<mc = 10, nc = 32, kc = 16, mr = 4, nr = 32>} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Only matmuls carry a GEMM tiling.
func.func @not_matmul(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{'strata.gemm_tiling' must be a #strata.gemm_tiling on a matmul}}
  %y = strata.relu %x {strata.gemm_tiling = #strata.gemm_tiling<mc = 8, nc = 32, kc = 16, mr = 8, nr = 32>} : tensor<8xf32>
  return %y : tensor<8xf32>
}

//--- missing-db.mlir
// A database that does not exist.
// expected-error@+1 {{cannot read tuning database}}
module {
  func.func @f(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
    %y = strata.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    return %y : tensor<8x32xf32>
  }
}

//--- corrupt-db.mlir
// A database that is not JSON (a truncated file).
// expected-error@+1 {{corrupt.json: not valid JSON}}
module {
}

//--- bad-field-db.mlir
// A malformed entry is reported with its field.
// expected-error@+1 {{bad-field.json: field 'entries[0].tiling.mr': expected an integer >= 1}}
module {
}

//--- gpu-db.mlir
// A database of GPU tilings cannot tile the CPU GEMM.
// expected-error@+1 {{holds gpu tilings (target 'h100-sxm-8x'); --strata-tile-gemm attaches cpu tilings}}
module {
}

//--- bad-option.mlir
// fallback is an enum option: its parser rejects an unknown value.
// FALLBACK: for the --fallback option: Cannot find option named 'guess'!
module {
}

//--- no-db.mlir
// expected-error@+1 {{fallback=none needs a database (db=FILE)}}
module {
}

//--- corrupt.json
{"format": "strata-gemm-tuning", "version": 1, "entries": [
//--- bad-field.json
{"format": "strata-gemm-tuning", "version": 1, "target": "cpu", "kind": "cpu",
 "machine": "m", "kernel": "strata-cpu-gemm-1", "cost": "measured",
 "entries": [{"dtype": "f32", "batch": 1, "m": 8, "n": 32, "k": 16,
   "transpose_a": false, "transpose_b": false, "seconds": 1e-6,
   "tiling": {"mc": 8, "nc": 32, "kc": 16, "mr": "eight", "nr": 32}}]}
//--- gpu.json
{"format": "strata-gemm-tuning", "version": 1, "target": "h100-sxm-8x",
 "kind": "gpu", "machine": "analytic model of h100-sxm-8x",
 "kernel": "strata-cuda-gemm-model-1", "cost": "model", "entries": []}
