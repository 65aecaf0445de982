// RUN: strata-opt %s --strata-autodiff="optimizer=sgd lr=0.5 momentum=0.0" --strata-data-parallel=replicas=3 | strata-translate --export-plan | FileCheck %s
// RUN: strata-opt %s --strata-autodiff --strata-data-parallel=replicas=2 | strata-translate --export-plan --plan-device=cuda | FileCheck %s --check-prefix=CUDA
// RUN: strata-opt %s --strata-autodiff | not strata-translate --export-plan --plan-device=tpu 2>&1 | FileCheck %s --check-prefix=BAD

// A data-parallel step becomes a version 2 plan with one rank per replica:
// rank 0 carries the program, the others share it (program_of) and read
// their own shard (replica); every all_reduce reduces over group 0, the
// group of every replica.

// CHECK: "groups": [{"name":"replicas","ranks":[0,1,2]}],
// CHECK: "ranks": [
// CHECK: "device": "cpu",
// CHECK: "program": [
// CHECK: {"attrs":{"group":0,"mean":1,"replicas":3},"in":[8],"layer":0,"op":"all_reduce","out":[9],"phase":"backward"},
// CHECK: {"attrs":{"group":0,"mean":1,"replicas":3},"in":[5],"layer":0,"op":"all_reduce","out":[10],"phase":"forward"}
// CHECK: "rank": 0,
// CHECK-NEXT: "replica": 0
// CHECK-NEXT: },
// CHECK-NEXT: {"arena_bytes":[[ARENA:[0-9]+]],"device":"cpu","program_of":0,"rank":1,"replica":1},
// CHECK-NEXT: {"arena_bytes":[[ARENA]],"device":"cpu","program_of":0,"rank":2,"replica":2}
// CHECK-NEXT: ],
// CHECK-NEXT: "replicas": 3,
// CHECK: "version": 2

// CUDA: "groups": [{"name":"replicas","ranks":[0,1]}],
// CUDA: "device": "cuda",
// CUDA-NOT: "device": "cpu"
// CUDA: {"arena_bytes":{{[0-9]+}},"device":"cuda","program_of":0,"rank":1,"replica":1}

// BAD: error: --plan-device must be cpu or cuda, got 'tpu'

func.func @one_layer(%x: tensor<4x8xf32> {strata.input = #strata.input<name = "x", role = data>},
                     %w: tensor<8x3xf32> {strata.param = #strata.param<name = "w", layer = 0, init = xavier_uniform, scale = 1.0>},
                     %y: tensor<4xi32> {strata.input = #strata.input<name = "y", role = labels>}) -> tensor<f32> {
  %h = strata.matmul %x, %w {strata.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %l = strata.softmax_cross_entropy %h, %y {strata.layer = 0 : i64} : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32>
  return %l : tensor<f32>
}
