// RUN: strata-opt %s --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 replicas=2" | strata-translate --export-plan | FileCheck %s
// RUN: strata-opt %s --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2" | strata-translate --export-plan | FileCheck %s --check-prefix=STRAIGHT

// A pipelined step becomes one rank per (stage, replica), numbered
// stage * replicas + replica: the first replica of each stage carries the
// stage's program, the other shares it, and each stage's replicas form the
// group its gradient all-reduces use.

// CHECK: "groups": [{"name":"stage0","ranks":[0,1]},{"name":"stage1","ranks":[2,3]}],
// CHECK: "ranks": [
// CHECK: {"attrs":{"count":2,"index":0},"in":[0],"layer":0,"op":"micro_batch"
// CHECK: {"attrs":{"peer":1,"tag":0},"in":[{{[0-9]+}}],"layer":0,"op":"send","out":[],"phase":"forward"}
// CHECK: {"attrs":{"group":0,"mean":1,"replicas":2},"in":[{{[0-9]+}}],"layer":0,"op":"all_reduce"
// CHECK: "rank": 0,
// CHECK-NEXT: "replica": 0,
// CHECK-NEXT: "stage": 0
// CHECK: {"arena_bytes":{{[0-9]+}},"device":"cpu","program_of":0,"rank":1,"replica":1,"stage":0},
// CHECK: {"attrs":{"peer":0,"tag":0},"in":[],"layer":1,"op":"recv","out":[{{[0-9]+}}],"phase":"forward"}
// CHECK: {"attrs":{"group":1,"mean":1,"replicas":2},"in":[{{[0-9]+}}],"layer":1,"op":"all_reduce"
// CHECK: "rank": 2,
// CHECK-NEXT: "replica": 0,
// CHECK-NEXT: "stage": 1
// CHECK: {"arena_bytes":{{[0-9]+}},"device":"cpu","program_of":2,"rank":3,"replica":1,"stage":1}
// CHECK: "replicas": 2

// Without replicas, no all-reduce: one rank per stage.
// STRAIGHT: "groups": [{"name":"stage0","ranks":[0]},{"name":"stage1","ranks":[1]}],
// STRAIGHT-NOT: all_reduce
// STRAIGHT: "replicas": 1

func.func @mlp(%x: tensor<2x4xf32> {strata.input = #strata.input<name = "x", role = data>}, %y: tensor<2xi32> {strata.input = #strata.input<name = "y", role = labels>}, %w0: tensor<4x4xf32> {strata.param = #strata.param<name = "fc0.weight", layer = 0, init = xavier_uniform, scale = 1.0>}, %w1: tensor<4x2xf32> {strata.param = #strata.param<name = "fc1.weight", layer = 1, init = xavier_uniform, scale = 1.0>}) -> tensor<f32> attributes {strata.layer_names = ["fc0", "fc1"]} {
  %0 = strata.matmul %x, %w0 {strata.layer = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = strata.relu %0 {strata.layer = 0 : i64} : tensor<2x4xf32>
  %2 = strata.matmul %1, %w1 {strata.layer = 1 : i64} : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
  %3 = strata.softmax_cross_entropy %2, %y {strata.layer = 1 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  return %3 : tensor<f32>
}
