// RUN: strata-opt %s | strata-opt | FileCheck %s

// The asynchronous all-reduce pair round-trips: a start over a bucket of two
// gradients and the wait of the same bucket returning the reduced values.

// CHECK-LABEL: func.func @bucket
// CHECK: strata.all_reduce_start %arg0, %arg1 mean replicas = 4 bucket = 0 : tensor<16x8xf32>, tensor<8xf32>
// CHECK: %[[R:.+]]:2 = strata.all_reduce_wait %arg0, %arg1 bucket = 0 : tensor<16x8xf32>, tensor<8xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @bucket(%dw: tensor<16x8xf32>, %db: tensor<8xf32>) -> (tensor<16x8xf32>, tensor<8xf32>) {
  strata.all_reduce_start %dw, %db mean replicas = 4 bucket = 0 : tensor<16x8xf32>, tensor<8xf32>
  %w, %b = strata.all_reduce_wait %dw, %db bucket = 0 : tensor<16x8xf32>, tensor<8xf32>
  return %w, %b : tensor<16x8xf32>, tensor<8xf32>
}

// A sum (no `mean`) over one tensor.
// CHECK-LABEL: func.func @sum
// CHECK: strata.all_reduce_start %arg0 replicas = 2 bucket = 3 : tensor<4xf32>
func.func @sum(%g: tensor<4xf32>) -> tensor<4xf32> {
  strata.all_reduce_start %g replicas = 2 bucket = 3 : tensor<4xf32>
  %r = strata.all_reduce_wait %g bucket = 3 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// Lagging gradients: the staleness bound round-trips.
// CHECK-LABEL: func.func @lagging
// CHECK: strata.all_reduce_start %arg0 mean replicas = 4 bucket = 0 staleness = 1 : tensor<4xf32>
func.func @lagging(%g: tensor<4xf32>) -> tensor<4xf32> {
  strata.all_reduce_start %g mean replicas = 4 bucket = 0 staleness = 1 : tensor<4xf32>
  %r = strata.all_reduce_wait %g bucket = 0 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// The start is not dead code: it has effects on the communication resource
// and survives canonicalization and CSE.
// RUN: strata-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEEP
// KEEP-LABEL: func.func @bucket
// KEEP: strata.all_reduce_start
// KEEP: strata.all_reduce_wait
