// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-schedule-pipeline="micro-batches=2"

// Partitions (strata.pipeline, as --strata-partition-pipeline writes them)
// that the scheduler refuses.
// The runtime runs pipelines whose stages have equal replica counts.
// expected-error @+1 {{'func.func' op has stages with different replica counts (1 and 2)}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = {stages = [{first_layer = 0 : i64, last_layer = 0 : i64, replicas = 1 : i64}, {first_layer = 1 : i64, last_layer = 1 : i64, replicas = 2 : i64}]}} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 1 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Stages are contiguous runs of layers.
// expected-error @+1 {{'func.func' op stage #1 (layers 2..2) does not continue the previous stage; stages must be contiguous, non-empty runs of layers}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = {stages = [{first_layer = 0 : i64, last_layer = 0 : i64, replicas = 1 : i64}, {first_layer = 2 : i64, last_layer = 2 : i64, replicas = 1 : i64}]}} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  %1 = strata.relu %0 {strata.layer = 2 : i64} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A malformed partition (the dialect's verifier rejects it).
// expected-error @+1 {{'func.func' op 'strata.pipeline' stage 0 must be {first_layer, last_layer, replicas} integers}}
func.func @step(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<4x8xf32> attributes {strata.train_step, strata.pipeline = {stages = [{first_layer = 0 : i64}]}} {
  %0 = strata.relu %x {strata.layer = 0 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
