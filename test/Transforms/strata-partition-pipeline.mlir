// Generated models: a training step gets strata.pipeline with contiguous
// stages covering every layer (the contract --strata-schedule-pipeline reads).
// RUN: strata-model mlp --layers 4 | strata-opt --strata-autodiff --strata-partition-pipeline="target=h100-sxm-8x devices=4 straight" | FileCheck %s --check-prefix=STRAIGHT
// RUN: strata-model mlp --layers 4 | strata-opt --strata-autodiff --strata-partition-pipeline="target=h100-sxm-8x devices=4 stages=2" | FileCheck %s --check-prefix=STAGES
// RUN: strata-model vgg16 --batch 8 --image-size 32 | strata-opt --strata-autodiff --strata-partition-pipeline="target=v100-pcie-4x replicas=2 schedule=gpipe micro-batches=8" | FileCheck %s --check-prefix=VGG
// RUN: strata-model gpt --preset gpt-tiny | strata-opt --strata-autodiff --strata-partition-pipeline="target=h100-sxm-8x-4node" | FileCheck %s --check-prefix=GPT
// RUN: strata-model gpt --preset gpt-tiny | strata-opt --strata-autodiff --strata-partition-pipeline="target=h100-sxm-8x devices=8 objective=balance schedule=interleaved" | FileCheck %s --check-prefix=BALANCE
// RUN: strata-model gpt --preset gpt-tiny | strata-opt --strata-autodiff --strata-partition-pipeline="target=h100-sxm-8x devices=8 objective=communication schedule=zb-h1 stages=2" | FileCheck %s --check-prefix=COMM
// Hand-written steps: cost model, measured profile, a residual, the target
// from strata.target, and the reports.
// RUN: strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 straight" | FileCheck %s --check-prefix=UNIT
// RUN: strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 straight profile=%S/Inputs/partition-profile.json" | FileCheck %s --check-prefix=PROFILE
// RUN: strata-opt %s --split-input-file --strata-annotate-costs=target=h100-sxm-8x --strata-partition-pipeline="devices=2 straight memory-bytes=1000000000 report=%t.txt" -o /dev/null
// RUN: FileCheck %s --input-file=%t.txt --check-prefix=REPORT
// RUN: strata-opt %s --split-input-file --strata-partition-pipeline="target=%S/Inputs/unit.json devices=2 straight report=%t.json" -o /dev/null
// RUN: FileCheck %s --input-file=%t.json --check-prefix=JSON

// One layer per device, in order, one replica each.
// STRAIGHT-LABEL: func.func @mlp
// STRAIGHT-SAME: strata.pipeline = #strata.pipeline_partition<
// STRAIGHT-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 1, replicas = 1>, #strata.pipeline_stage<first_layer = 2, last_layer = 2, replicas = 1>, #strata.pipeline_stage<first_layer = 3, last_layer = 3, replicas = 1>]
// STRAIGHT-SAME: devices = 4
// STRAIGHT-SAME: schedule = "1f1b"
// STRAIGHT-SAME: objective = "throughput"
// STRAIGHT-SAME: first_devices = [0, 1, 2, 3]
// STRAIGHT-SAME: strata.train_step

// Two stages whose replicas use the four devices; the first takes fc0, the
// layer with the largest input.
// STAGES-LABEL: func.func @mlp
// STAGES-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = [[R0:[0-9]+]]>, #strata.pipeline_stage<first_layer = 1, last_layer = 3, replicas = [[R1:[0-9]+]]>]

// Uniform replicas: 4 devices in two stages of 2; gpipe and 8 micro-batches.
// VGG-LABEL: func.func @vgg16
// VGG-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = {{[0-9]+}}, replicas = 2>, #strata.pipeline_stage<first_layer = {{[0-9]+}}, last_layer = 15, replicas = 2>]
// VGG-SAME: micro_batches = 8
// VGG-SAME: schedule = "gpipe"

// All 32 devices of the 4-node target by default; the stages end at the
// head (layer 5).
// GPT-LABEL: func.func @gpt
// GPT-SAME: stages = [#strata.pipeline_stage<first_layer = 0,
// GPT-SAME: last_layer = 5, replicas = {{[0-9]+}}>]
// GPT-SAME: devices = 32
// GPT-SAME: micro_batches = 128

// BALANCE-LABEL: func.func @gpt
// BALANCE-SAME: stages = [#strata.pipeline_stage<first_layer = 0,
// BALANCE-SAME: schedule = "interleaved"
// BALANCE-SAME: objective = "balance"

// COMM-LABEL: func.func @gpt
// COMM-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = [[L:[0-9]+]], replicas = {{[0-9]+}}>, #strata.pipeline_stage<first_layer = {{[0-9]+}}, last_layer = 5, replicas = {{[0-9]+}}>]
// COMM-SAME: schedule = "zb-h1"
// COMM-SAME: objective = "communication"

// Three equal layers on two devices: the cost model splits 2 + 1 or 1 + 2;
// the residual from layer 0 to layer 2 crosses either cut, so the split
// follows compute. The profile makes layer 0 four times heavier: it gets a
// stage alone.
// UNIT-LABEL: func.func @step
// UNIT-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = {{[01]}}, replicas = 1>, #strata.pipeline_stage<first_layer = {{[12]}}, last_layer = 2, replicas = 1>]
// PROFILE-LABEL: func.func @step
// PROFILE-SAME: stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>, #strata.pipeline_stage<first_layer = 1, last_layer = 2, replicas = 1>]

// REPORT: pipeline partition: 3 layers, 2 devices, 2 stages, objective throughput, schedule 1f1b, 8 micro-batches, 0.931 GiB per device
// REPORT-NEXT: stage  layers
// REPORT-NEXT: 0  0..{{[01]}}
// REPORT-NEXT: 1  {{[12]}}..2
// REPORT: uniform partition (equal layer counts, 2 stages):
// REPORT: data parallelism (2 replicas):

// JSON: "data_parallel": {
// JSON: "devices": 2,
// JSON: "partition": {
// JSON: "stages": [
// JSON: "first_layer": 0,
// JSON: "replicas": 1
// JSON: "speedup_over_data_parallel":
// JSON: "uniform": {
func.func @step(%x: tensor<64x64xf32> {strata.input = #strata.input<name = "x", role = data>},
                %w0: tensor<64x64xf32> {strata.param = #strata.param<name = "w0", layer = 0, init = zeros, scale = 0.0>},
                %w1: tensor<64x64xf32> {strata.param = #strata.param<name = "w1", layer = 1, init = zeros, scale = 0.0>},
                %w2: tensor<64x64xf32> {strata.param = #strata.param<name = "w2", layer = 2, init = zeros, scale = 0.0>})
    -> tensor<64x64xf32> attributes {strata.train_step} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = strata.matmul %0, %w1 {strata.layer = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = strata.matmul %1, %w2 {strata.layer = 2 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %3 = strata.add %2, %0 {strata.layer = 2 : i64} : tensor<64x64xf32>
  return %3 : tensor<64x64xf32>
}
