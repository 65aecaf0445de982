// RUN: strata-opt %s --split-input-file --verify-diagnostics --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 stages=2"
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline 2>&1 | FileCheck %s --check-prefix=NOTARGET
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=unit-no-such" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json objective=fast" 2>&1 | FileCheck %s --check-prefix=OBJECTIVE
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json schedule=async" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json stages=0" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=3" 2>&1 | FileCheck %s --check-prefix=DEVICES
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json micro-batches=-1" 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json profile=%S/Inputs/no-such-profile.json" 2>&1 | FileCheck %s --check-prefix=NOPROFILE
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json profile=%S/Inputs/partition-profile-partial.json" 2>&1 | FileCheck %s --check-prefix=PARTIAL
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 replicas=2 stages=2" 2>&1 | FileCheck %s --check-prefix=REPLICAS
// RUN: not strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 memory-bytes=40000" 2>&1 | FileCheck %s --check-prefix=MEMORY

// Option errors are reported at the module, before any step is touched.
// NOTARGET: error: --strata-partition-pipeline: needs a target (target=NAME or target=FILE.json)
// UNKNOWN: error: {{.*}}unit-no-such
// OBJECTIVE: for the --objective option: Cannot find option named 'fast'!
// SCHEDULE: for the --schedule option: Cannot find option named 'async'!
// STAGES: error: --strata-partition-pipeline: stages must be auto or a positive number, got '0'
// DEVICES: error: --strata-partition-pipeline: devices=3 but target 'unit' has 2
// MICRO: error: --strata-partition-pipeline: micro-batches must be positive, got -1
// NOPROFILE: error: --strata-partition-pipeline: cannot read profile '{{.*}}no-such-profile.json'
// A profile must describe every layer of the step.
// PARTIAL: error: training step @step has layer 1, but profile '{{.*}}partition-profile-partial.json' does not describe it
// Uniform replicas fix the stage count: 2 devices / 2 replicas is 1 stage.
// REPLICAS: error: training step @step cannot be partitioned: 2 stages of 2 replicas do not use 2 devices
// Nothing fits: the diagnostic names the smallest memory that would (16 KiB
// weights and gradients per layer, and layer 0 stashes x and its output,
// 32 KiB per micro-batch in flight: 96 KiB whichever way it is split).
// MEMORY: error: training step @step cannot be partitioned: no partition fits in 39.06 KiB per device; the smallest feasible memory per device is 96 KiB (98304 bytes)

// Two layers on two devices in two stages: fine.
func.func @step(%x: tensor<64x64xf32> {strata.input = #strata.input<name = "x", role = data>},
                %w0: tensor<64x64xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>},
                %w1: tensor<64x64xf32> {strata.param = #strata.param<name = "w1", layer = 1, init = zeros, scale = 0.0>})
    -> tensor<64x64xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = strata.matmul %0, %w1 {strata.layer = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// -----

// More stages than layers.
// expected-error @+1 {{training step @one cannot be partitioned: 2 stages but only 1 layers}}
func.func @one(%x: tensor<64x64xf32> {strata.input = #strata.input<name = "x", role = data>},
               %w0: tensor<64x64xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>})
    -> tensor<64x64xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// -----

// A costed op must belong to a layer.
func.func @nolayer(%x: tensor<64x64xf32> {strata.input = #strata.input<name = "x", role = data>},
                   %w0: tensor<64x64xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>})
    -> tensor<64x64xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  // expected-error @+1 {{'strata.relu' op has a cost but no strata.layer, so no stage can hold it}}
  %1 = strata.relu %0 : tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// -----

// Layers must be in pipeline order: a later layer's value read by an earlier
// layer.
func.func @order(%x: tensor<64x64xf32> {strata.input = #strata.input<name = "x", role = data>},
                 %w0: tensor<64x64xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>})
    -> tensor<64x64xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w0 {strata.layer = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  // expected-error @+1 {{'strata.relu' op in layer 0 reads a value of layer 1, so layers are not in pipeline order}}
  %1 = strata.relu %0 {strata.layer = 0 : i64} : tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}
