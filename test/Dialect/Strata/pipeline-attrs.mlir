// RUN: strata-opt %s --split-input-file | strata-opt --split-input-file | FileCheck %s

// The typed results of pipeline partitioning and scheduling print and parse
// back unchanged.

// A partition as --strata-partition-pipeline writes it, predictions included.
// CHECK-LABEL: func.func @partition
// CHECK-SAME: strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 3, replicas = 3>], devices = 4, micro_batches = 8, schedule = "1f1b", objective = "throughput", first_devices = [0, 1], predicted_stage_seconds = [1.000000e-03, 1.100000e-03], predicted_step_seconds = 1.200000e-02 : f64, bubble_fraction = 5.000000e-02 : f64, speedup_over_data_parallel = 3.500000e-01 : f64, memory_bytes_per_device = [1024, 2048]>
func.func @partition() attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 3, replicas = 3>], devices = 4, micro_batches = 8, schedule = "1f1b", objective = "throughput", first_devices = [0, 1], predicted_stage_seconds = [1.0e-3, 1.1e-3], predicted_step_seconds = 1.2e-2 : f64, bubble_fraction = 5.0e-2 : f64, speedup_over_data_parallel = 0.35 : f64, memory_bytes_per_device = [1024, 2048]>} {
  return
}

// -----

// A hand-written partition needs no predictions.
// CHECK-LABEL: func.func @partition_by_hand
// CHECK-SAME: strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 1, replicas = 2>], devices = 2, micro_batches = 4, schedule = "gpipe", objective = "balance">
func.func @partition_by_hand() attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 1, replicas = 2>], devices = 2, micro_batches = 4, schedule = "gpipe", objective = "balance">} {
  return
}

// -----

// A schedule with and without the predictions.
// CHECK-LABEL: func.func @schedule
// CHECK-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "interleaved", devices = 2, virtual = 2, micro_batches = 4, replicas = 1, predicted_step_seconds = 1.500000e-03 : f64, predicted_bubble = 2.000000e-01 : f64>
func.func @schedule() attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "interleaved", devices = 2, virtual = 2, micro_batches = 4, replicas = 1, predicted_step_seconds = 1.5e-3 : f64, predicted_bubble = 0.2 : f64>} {
  return
}
// An asynchronous schedule records its update window; the optional fields
// parse in any order.
// CHECK-LABEL: func.func @schedule_async
// CHECK-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "2bw", devices = 2, virtual = 1, micro_batches = 4, replicas = 1, window = 2, predicted_step_seconds = 1.500000e-03 : f64>
func.func @schedule_async() attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "2bw", devices = 2, virtual = 1, micro_batches = 4, replicas = 1, predicted_step_seconds = 1.5e-3 : f64, window = 2>} {
  return
}
// A state that starts as a copy of its parameter; the default init (zeros)
// is not printed.
// CHECK-LABEL: func.func @kept_version
// CHECK-SAME: strata.state = #strata.state<name = "w.m", param = "w">
// CHECK-SAME: strata.state = #strata.state<name = "w.stash1", param = "w", init = param>
func.func @kept_version(%w: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %m: tensor<4xf32> {strata.state = #strata.state<name = "w.m", param = "w", init = zeros>}, %s: tensor<4xf32> {strata.state = #strata.state<name = "w.stash1", param = "w", init = param>}) {
  return
}
// CHECK-LABEL: func.func @schedule_unpredicted
// CHECK-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 3, virtual = 1, micro_batches = 2, replicas = 2>
func.func @schedule_unpredicted() attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 3, virtual = 1, micro_batches = 2, replicas = 2>} {
  return
}
