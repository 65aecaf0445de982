// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-schedule-pipeline="stages=2 micro-batches=2"
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 schedule=async" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 micro-batches=0" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 micro-batches=3 schedule=interleaved virtual=1" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 trace=%t.json" 2>&1 | FileCheck %s --check-prefix=TRACE
// RUN: not strata-opt %s --split-input-file --strata-schedule-pipeline="stages=2 target=no-such-target" 2>&1 | FileCheck %s --check-prefix=TARGET

// SCHEDULE: for the --schedule option: Cannot find option named 'async'!
// MICRO: error: --strata-schedule-pipeline needs micro-batches >= 1, got 0
// INTERLEAVED: error: 'func.func' op cannot be scheduled: the interleaved schedule needs the micro-batch count (3) to be a multiple of the devices per pipeline (2)
// TRACE: error: 'func.func' op trace= needs a target for the prediction (target=NAME)
// TARGET: error: 'func.func' op {{.*}}no-such-target

// Two layers, two stages: the smallest pipeline.
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}, %w: tensor<8x8xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.layer_names = ["a", "b"]} {
  %0 = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 1 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Without the partitioner's strata.pipeline, stages=N cuts equal runs of
// layers, but never more stages than layers.
// expected-error @+1 {{'func.func' op cannot cut 1 layers into 2 non-empty stages}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step} {
  %1 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A partition and stages=N are exclusive.
// expected-error @+1 {{'func.func' op already has a partition (strata.pipeline); drop stages=}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>], devices = 2, micro_batches = 2, schedule = "1f1b", objective = "throughput">} {
  %1 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// The pipeline adds its own replica all-reduces.
// expected-error @+1 {{'func.func' op is already data-parallel; schedule the pipeline first (its stages get their own replicas)}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.replicas = 2 : i64} {
  %1 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Every op needs a layer, so that a stage owns it.
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.layer_names = ["a", "b"]} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  // expected-error @+1 {{'strata.relu' op has no strata.layer, so no pipeline stage can own it}}
  %1 = strata.relu %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// The micro-batches split the batch dimension of the data.
// expected-error @+1 {{'func.func' op input 'x' has no batch dimension to split}}
func.func @step(%x: tensor<f32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<f32> attributes {strata.train_step, strata.layer_names = ["a", "b"]} {
  %0 = strata.scale %x by 2.0 {strata.layer = 0 : i64} : tensor<f32>
  %1 = strata.scale %0 by 2.0 {strata.layer = 1 : i64} : tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Nothing to schedule.
// expected-error @+1 {{no training step to schedule (run --strata-autodiff first)}}
module {
}
