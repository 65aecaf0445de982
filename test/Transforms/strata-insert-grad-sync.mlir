// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync=bucket-bytes=64 | FileCheck %s
// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync=bucket-bytes=1073741824 | FileCheck %s --check-prefix=ONE
// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync=target=cpu-local | FileCheck %s --check-prefix=ONE
// RUN: strata-opt %s --split-input-file --strata-insert-grad-sync="replicas=2 bucket-bytes=64" | FileCheck %s --check-prefix=ALONE
// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync="bucket-bytes=64 accumulate=host chunk-bytes=4096" | FileCheck %s --check-prefix=HOST
// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync="bucket-bytes=64 staleness=2" | FileCheck %s --check-prefix=STALE
// RUN: strata-opt %s --split-input-file --strata-data-parallel=replicas=2 --strata-insert-grad-sync="bucket-bytes=64 staleness=0" | FileCheck %s

// Buckets of at least 64 bytes in the order the backward pass produces the
// gradients (the last layer's first): each start right after the bucket's
// last gradient, each wait right before the first update that reads it, and
// the synchronous per-gradient all-reduces are gone.
// Host accumulation: every start carries `host` and the chunk size.
// HOST-LABEL: func.func @mlp
// HOST: strata.all_reduce_start %{{.+}} mean host replicas = 2 bucket = 0 {chunk_bytes = 4096 : i64
// HOST-NOT: strata.all_reduce_start {{.*}}replicas = 2 bucket = 0 {
// HOST: strata.all_reduce_start %{{.+}} mean host replicas = 2 bucket = 1 {chunk_bytes = 4096 : i64

// Lagging gradients: every start carries the staleness bound; the buckets,
// waits and the loss's all-reduce are those of the synchronous plan
// (staleness=0 gives exactly the CHECK output, without the attribute).
// STALE-LABEL: func.func @mlp
// STALE: strata.all_reduce_start %{{.+}}, %{{.+}} mean replicas = 2 bucket = 0 staleness = 2 {
// STALE: strata.all_reduce_start %{{.+}}, %{{.+}} mean replicas = 2 bucket = 1 staleness = 2 {
// STALE: strata.all_reduce %{{.+}} mean replicas = 2 {strata.layer = 1 : i64} : tensor<f32>

// CHECK-LABEL: func.func @mlp
// CHECK: %[[DB1:.+]] = strata.bias_add_grad
// CHECK: %[[DW1:.+]] = strata.matmul %{{.+}}, %{{.+}} transpose_a
// CHECK-NEXT: strata.all_reduce_start %[[DB1]], %[[DW1]] mean replicas = 2 bucket = 0 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>}
// CHECK-NOT: staleness
// CHECK: %[[DB0:.+]] = strata.bias_add_grad
// CHECK-NEXT: %[[DW0:.+]] = strata.matmul %arg0, %{{.+}} transpose_a
// CHECK-NEXT: strata.all_reduce_start %[[DB0]], %[[DW0]] mean replicas = 2 bucket = 1
// CHECK-NEXT: %[[R1:.+]]:2 = strata.all_reduce_wait %[[DB0]], %[[DW0]] bucket = 1
// CHECK-NEXT: strata.sgd_update %arg2, %[[R1]]#1
// CHECK-NEXT: strata.sgd_update %arg3, %[[R1]]#0
// CHECK-NEXT: %[[R0:.+]]:2 = strata.all_reduce_wait %[[DB1]], %[[DW1]] bucket = 0
// CHECK-NEXT: strata.sgd_update %arg4, %[[R0]]#1
// CHECK-NEXT: strata.sgd_update %arg5, %[[R0]]#0
// CHECK-NOT: strata.all_reduce %{{.+}} : tensor<{{.+}}x
// CHECK: strata.all_reduce %{{.+}} mean replicas = 2 {strata.layer = 1 : i64} : tensor<f32>

// One bucket holds every gradient when the buckets are large, and the cost
// model of cpu-local (10 GB/s, 1 us) picks one bucket for these 360 bytes:
// it starts after the last gradient and is waited for before the first update.
// ONE-LABEL: func.func @mlp
// ONE: %[[DW0:.+]] = strata.matmul %arg0, %{{.+}} transpose_a
// ONE-NEXT: strata.all_reduce_start %{{.+}}, %{{.+}}, %{{.+}}, %[[DW0]] mean replicas = 2 bucket = 0
// ONE-NEXT: %[[R:.+]]:4 = strata.all_reduce_wait
// ONE-NEXT: strata.sgd_update %arg2, %[[R]]#3
// ONE-NOT: all_reduce_start

// On a step that is not data-parallel yet, replicas=N also averages the loss
// and marks the step.
// ALONE-LABEL: func.func @mlp
// ALONE-SAME: strata.replicas = 2 : i64
// ALONE-COUNT-2: strata.all_reduce_start
// ALONE: %[[LOSS:.+]] = strata.all_reduce %{{.+}} mean replicas = 2 {strata.layer = 1 : i64} : tensor<f32>
// ALONE: return {{.+}}, %[[LOSS]] :
module {
  func.func @mlp(%arg0: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %arg1: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}, %arg2: tensor<4x8xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.000000e+00>}, %arg3: tensor<8xf32> {strata.param = #strata.param<name = "fc0.bias", layer = 0, init = zeros, scale = 0.000000e+00>}, %arg4: tensor<8x2xf32> {strata.param = #strata.param<name = "fc1.weight", layer = 1, init = xavier_uniform, scale = 1.000000e+00>}, %arg5: tensor<2xf32> {strata.param = #strata.param<name = "fc1.bias", layer = 1, init = zeros, scale = 0.000000e+00>}, %arg6: tensor<4x8xf32> {strata.state = #strata.state<name = "fc0.weight.velocity", param = "fc0.weight">}, %arg7: tensor<8xf32> {strata.state = #strata.state<name = "fc0.bias.velocity", param = "fc0.bias">}, %arg8: tensor<8x2xf32> {strata.state = #strata.state<name = "fc1.weight.velocity", param = "fc1.weight">}, %arg9: tensor<2xf32> {strata.state = #strata.state<name = "fc1.bias.velocity", param = "fc1.bias">}) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>, tensor<2xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>, tensor<2xf32>, tensor<f32>) attributes {strata.layer_names = ["fc0", "fc1"], strata.train_step} {
    %0 = strata.matmul %arg0, %arg2 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %1 = strata.bias_add %0, %arg3 {strata.layer = 0 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %2 = strata.relu %1 {strata.layer = 0 : i64} : tensor<2x8xf32>
    %3 = strata.matmul %2, %arg4 {strata.layer = 1 : i64} : (tensor<2x8xf32>, tensor<8x2xf32>) -> tensor<2x2xf32>
    %4 = strata.bias_add %3, %arg5 {strata.layer = 1 : i64} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    %5 = strata.softmax_cross_entropy %4, %arg1 {strata.layer = 1 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
    %6 = strata.fill 1.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<f32>
    %7 = strata.softmax_cross_entropy_grad %4, %arg1, %6 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<2x2xf32>, tensor<2xi32>, tensor<f32>) -> tensor<2x2xf32>
    %8 = strata.bias_add_grad %7 {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : tensor<2x2xf32> -> tensor<2xf32>
    %9 = strata.matmul %7, %arg4 transpose_b {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<2x2xf32>, tensor<8x2xf32>) -> tensor<2x8xf32>
    %10 = strata.matmul %2, %7 transpose_a {strata.layer = 1 : i64, strata.phase = #strata<phase backward>} : (tensor<2x8xf32>, tensor<2x2xf32>) -> tensor<8x2xf32>
    %11 = strata.relu_grad %9, %1 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<2x8xf32>
    %12 = strata.bias_add_grad %11 {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : tensor<2x8xf32> -> tensor<8xf32>
    %13 = strata.matmul %arg0, %11 transpose_a {strata.layer = 0 : i64, strata.phase = #strata<phase backward>} : (tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    %new_param, %new_velocity = strata.sgd_update %arg2, %13, %arg6 lr = 1.000000e-03 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<4x8xf32>
    %new_param_0, %new_velocity_1 = strata.sgd_update %arg3, %12, %arg7 lr = 1.000000e-03 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 0 : i64, strata.phase = #strata<phase update>} : tensor<8xf32>
    %new_param_2, %new_velocity_3 = strata.sgd_update %arg4, %10, %arg8 lr = 1.000000e-03 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase update>} : tensor<8x2xf32>
    %new_param_4, %new_velocity_5 = strata.sgd_update %arg5, %8, %arg9 lr = 1.000000e-03 momentum = 0.000000e+00 weight_decay = 0.000000e+00 {strata.layer = 1 : i64, strata.phase = #strata<phase update>} : tensor<2xf32>
    return %new_param, %new_param_0, %new_param_2, %new_param_4, %new_velocity, %new_velocity_1, %new_velocity_3, %new_velocity_5, %5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>, tensor<2xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x2xf32>, tensor<2xf32>, tensor<f32>
  }
}


// -----

// A step without parameters has nothing to synchronise.
// CHECK-LABEL: func.func @negative_no_params
// CHECK-NOT: all_reduce_start
// ONE-LABEL: func.func @negative_no_params
// ALONE-LABEL: func.func @negative_no_params
func.func @negative_no_params(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<2xf32> attributes {strata.train_step} {
  return %x : tensor<2xf32>
}
