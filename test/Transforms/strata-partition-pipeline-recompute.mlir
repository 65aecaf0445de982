// RUN: strata-model gpt --preset gpt3-175b | strata-opt --strata-autodiff="optimizer=adamw" -o %t.step.mlir
// RUN: not strata-opt %t.step.mlir --strata-partition-pipeline="target=%S/../../bench/targets/h100-sxm-8x-128node.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: strata-opt %t.step.mlir --strata-partition-pipeline="target=%S/../../bench/targets/h100-sxm-8x-128node.json recompute=true" 2>/dev/null | FileCheck %s --check-prefix=RECOMPUTE

// GPT-3 175B over 1024 H100s (80 GiB each) with the default micro-batches:
// keeping every activation of the micro-batches in flight needs 174 GiB per
// device, so no partition fits. Priced with recomputation (a stage keeps
// only its input per micro-batch in flight) one does.
// KEEP: error: training step @gpt cannot be partitioned: no partition fits in 80 GiB per device; the smallest feasible memory per device is 174 GiB
// RECOMPUTE: strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0,
