// RUN: strata-opt %s --strata-plan-buffers=strategy=best-fit 2>/dev/null | FileCheck %s --check-prefixes=CHECK,BEST
// RUN: strata-opt %s --strata-plan-buffers=strategy=fixed-structure 2>/dev/null | FileCheck %s --check-prefixes=CHECK,FIXED
// RUN: strata-opt %s --strata-plan-buffers=strategy=greedy-size 2>/dev/null | FileCheck %s --check-prefixes=CHECK,GREEDY
// RUN: strata-opt %s --strata-plan-buffers=strategy=exact 2>/dev/null | FileCheck %s --check-prefixes=CHECK,BEST
// RUN: strata-opt %s --strata-plan-buffers 2>/dev/null | FileCheck %s --check-prefixes=CHECK,BEST
// RUN: strata-opt %s --strata-plan-buffers=strategy=best-fit 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: strata-opt %s --strata-plan-buffers=strategy=fixed-structure 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK-FIXED

// Lifetimes (instruction indices): the arguments (x 128 B, w1 and w2 2048 B,
// w3 512 B) and the loss (4 B, rounded to 64) live for the whole step, 4800
// bytes; of the activations %0 [0,4], %1 [1,2], %2 [2,3], %3 [3,5], %4 [4,7],
// %5 [5,6], %7 [7,7], at most 2304 bytes are live at once (at step 2: %0, %1,
// %2). Every strategy reaches the lower bound 7104 (unplanned: 7872); the
// strategies differ in where %5 goes. Buffers never live together share
// bytes: %1 and %4 start at 4096, %3 and %7 at 4352.

// REMARK: remark: planned 12 buffers: arena 7104 bytes (lower bound 7104, ratio 1.0000; 7872 bytes unplanned) with best-fit in {{[0-9.]+}} s
// REMARK-FIXED: remark: planned 12 buffers: arena 7104 bytes (lower bound 7104, ratio 1.0000; 7872 bytes unplanned) with fixed-structure in
// CHECK-LABEL: func.func @tree
// CHECK-SAME: strata.buffer = #strata.buffer<id = 0, offset = 6912, bytes = 128>
// CHECK-SAME: strata.buffer = #strata.buffer<id = 1, offset = 0, bytes = 2048>
// CHECK-SAME: strata.buffer = #strata.buffer<id = 2, offset = 2048, bytes = 2048>
// CHECK-SAME: strata.buffer = #strata.buffer<id = 3, offset = 6144, bytes = 512>
// CHECK-SAME: strata.arena_bytes = 7104 : i64
// BEST-SAME: strata.memory_plan = #strata.memory_plan<arena_bytes = 7104, lower_bound = 7104, unplanned_bytes = 7872, strategy = "best-fit", optimal = true>
// FIXED-SAME: strategy = "fixed-structure", optimal = true>
// GREEDY-SAME: strategy = "greedy-size", optimal = true>
// CHECK: strata.matmul {{.*}}#strata.buffer<id = 4, offset = 6656, bytes = 256>
// CHECK: strata.matmul {{.*}}#strata.buffer<id = 5, offset = 4096, bytes = 1024>
// CHECK: strata.relu {{.*}}#strata.buffer<id = 6, offset = 5120, bytes = 1024>
// CHECK: strata.matmul {{.*}}#strata.buffer<id = 7, offset = 4352, bytes = 128>
// CHECK: strata.relu {{.*}}#strata.buffer<id = 8, offset = 4096, bytes = 256>
// BEST: strata.relu {{.*}}#strata.buffer<id = 9, offset = 6656, bytes = 128>
// FIXED: strata.relu {{.*}}#strata.buffer<id = 9, offset = 4480, bytes = 128>
// GREEDY: strata.relu {{.*}}#strata.buffer<id = 9, offset = 4480, bytes = 128>
// CHECK: strata.mse_loss {{.*}}#strata.buffer<id = 10, offset = 7040, bytes = 4>
// CHECK: strata.relu {{.*}}#strata.buffer<id = 11, offset = 4352, bytes = 256>
func.func @tree(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}, %w1: tensor<8x64xf32> {strata.param = #strata.param<name = "w1", layer = 0, init = zeros, scale = 0.0>}, %w2: tensor<64x8xf32> {strata.param = #strata.param<name = "w2", layer = 0, init = zeros, scale = 0.0>}, %w3: tensor<8x16xf32> {strata.param = #strata.param<name = "w3", layer = 0, init = zeros, scale = 0.0>}) -> tensor<f32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w3 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = strata.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x64xf32>) -> tensor<4x64xf32>
  %2 = strata.relu %1 : tensor<4x64xf32>
  %3 = strata.matmul %2, %w2 : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
  %4 = strata.relu %0 : tensor<4x16xf32>
  %5 = strata.relu %3 : tensor<4x8xf32>
  %6 = strata.mse_loss %5, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  %7 = strata.relu %4 : tensor<4x16xf32>
  return %6 : tensor<f32>
}

// A planned step plans again to the same layout: only offsets move, ids and
// sizes stay.
// RUN: strata-opt %s --strata-plan-buffers --strata-plan-buffers 2>&1 >/dev/null | FileCheck %s --check-prefix=TWICE
// TWICE-COUNT-2: remark: planned 12 buffers: arena 7104 bytes (lower bound 7104
