// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-schedule-pipeline="micro-batches=2"

// Partitions (strata.pipeline, as --strata-partition-pipeline writes them)
// that the scheduler refuses.
// The runtime runs pipelines whose stages have equal replica counts.
// expected-error @+1 {{'func.func' op has stages with different replica counts (1 and 2)}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 1, replicas = 2>], devices = 2, micro_batches = 2, schedule = "1f1b", objective = "throughput">} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 1 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Stages are contiguous runs of layers.
// expected-error @+1 {{'func.func' op stage #1 (layers 2..2) does not continue the previous stage; stages must be contiguous, non-empty runs of layers}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 2, last_layer = 2, replicas = 1>], devices = 2, micro_batches = 2, schedule = "1f1b", objective = "throughput">} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 2 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A malformed partition (the attribute's verifier rejects it).
// expected-error @+2 {{pipeline stage must have at least one replica, got 0}}
// expected-error @+1 {{failed to parse Strata_PipelinePartitionAttr parameter 'stages'}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 0>], devices = 2, micro_batches = 2, schedule = "1f1b", objective = "throughput">} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
