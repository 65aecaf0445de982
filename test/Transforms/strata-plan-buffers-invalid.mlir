// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-plan-buffers
// RUN: not strata-opt %s --split-input-file --strata-plan-buffers=time-limit=-1 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not strata-opt %s --split-input-file --strata-plan-buffers=strategy=first-fit 2>&1 | FileCheck %s --check-prefix=STRATEGY

// Option errors come before any step is touched; strategies are an enum.
// LIMIT: error: --strata-plan-buffers needs 0 <= time-limit <= 3600 (seconds), got -1
// STRATEGY: for the --strategy option: Cannot find option named 'first-fit'!

// A module without a training step has nothing to plan.
// expected-error @+1 {{no training step to plan (run --strata-autodiff first)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

// -----

// Buffers already assigned must be consistent before they are moved: here
// the result's buffer is smaller than its type.
// expected-error @+1 {{'func.func' op argument #0 has buffer #strata.buffer<id = 0, offset = 0, bytes = 4> whose bytes do not match 'tensor<2xf32>'}}
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>, strata.buffer = #strata.buffer<id = 0, offset = 0, bytes = 4>}) -> tensor<2xf32> attributes {strata.train_step, strata.arena_bytes = 128 : i64} {
  %0 = strata.relu %x {strata.buffers = [#strata.buffer<id = 1, offset = 64, bytes = 8>]} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A pipelined step's ops each need the stage that says which device runs
// them.
func.func @step(%x: tensor<2xf32> {strata.input = #strata.input<name = "x", role = data>}) -> tensor<2xf32> attributes {strata.train_step, strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 2, virtual = 1, micro_batches = 1, replicas = 1>} {
  // expected-error @+1 {{'strata.relu' op has no strata.stage in a pipelined step}}
  %0 = strata.relu %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
