// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-train-pipeline="optimizer=sgd lr=0.1 target=cpu-local replicas=2" 2>/dev/null | FileCheck %s
// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-train-pipeline="optimizer=sgd lr=0.1 target=cpu-local remat-budget=0.9" 2>/dev/null | FileCheck %s --check-prefix=REMAT
// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-train-pipeline="optimizer=sgd lr=0.1 target=cpu-local remat-budget=0.9" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: strata-model mlp --batch 8 --inputs 32 --hidden 16 --layers 2 --classes 4 | strata-opt --strata-train-pipeline 2>/dev/null | FileCheck %s --check-prefix=PLAIN
// RUN: strata-model mlp --batch 8 --inputs 32 --hidden 16 --layers 2 --classes 4 | strata-opt --strata-autodiff --strata-fuse --strata-plan-buffers 2>/dev/null > %t.passes.mlir
// RUN: strata-model mlp --batch 8 --inputs 32 --hidden 16 --layers 2 --classes 4 | strata-opt --strata-train-pipeline 2>/dev/null > %t.pipeline.mlir
// RUN: diff %t.passes.mlir %t.pipeline.mlir
// RUN: strata-model mlp --batch 8 --inputs 32 --hidden 16 --layers 2 --classes 4 | strata-opt --strata-autodiff --strata-plan-buffers 2>/dev/null > %t.unfused.mlir
// RUN: strata-model mlp --batch 8 --inputs 32 --hidden 16 --layers 2 --classes 4 | strata-opt --strata-train-pipeline=fuse=false 2>/dev/null > %t.pipeline-unfused.mlir
// RUN: diff %t.unfused.mlir %t.pipeline-unfused.mlir
// RUN: not strata-opt %s --strata-train-pipeline="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-train-pipeline="optimizer=sgd lr=0.1 compress=auto compress-budget=0.05" 2>/dev/null | FileCheck %s --check-prefix=COMPRESS
// RUN: strata-model gpt --preset gpt-tiny --hidden 32 --heads 2 --seq 8 --positions 8 --batch 2 --layers 1 | strata-opt --strata-train-pipeline="optimizer=sgd lr=0.1 compress=mxfp4 compress-sensitive=bf16" 2>/dev/null | FileCheck %s --check-prefix=SENSITIVE
// RUN: not strata-opt %s --strata-train-pipeline="compress-sensitive=bf16" 2>&1 | FileCheck %s --check-prefix=NEEDS
// RUN: not strata-opt %s --strata-train-pipeline="compress-budget=0.05" 2>&1 | FileCheck %s --check-prefix=NEEDS

// Compression runs before buffer planning (after remat, when it runs), and
// the arena is planned with the packed bytes.
// COMPRESS-LABEL: func.func @mlp
// COMPRESS-SAME: strata.memory_plan = #strata.memory_plan<
// COMPRESS: strata.compress %{{.*}} format <"mxfp8e4m3"> candidates {{.*}} budget 5.000000e-02 {strata.buffers

// The whole flow by one name, in DESIGN.md's order: autodiff (SGD), costs
// on the target, data parallelism over 2 replicas with bucketed gradient
// sync (or remat to 0.9 of the arena), buffer planning.
// CHECK: module attributes {strata.target = "cpu-local"}
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: strata.memory_plan = #strata.memory_plan<
// CHECK-SAME: strata.replicas = 2
// CHECK: strata.all_reduce_start
// CHECK: strata.sgd_update
// REMAT-LABEL: func.func @mlp
// REMAT-SAME: strata.memory_plan = #strata.memory_plan<
// REMAT-SAME: strata.remat_plan = #strata.remat_plan<
// REMAT: phase recompute
// REMARK: remark: remat with
// REMARK: remark: planned {{[0-9]+}} buffers

// With no options it is exactly --strata-autodiff --strata-fuse
// --strata-plan-buffers (fuse=false: without --strata-fuse).
// PLAIN-LABEL: func.func @mlp
// PLAIN-SAME: strata.memory_plan
// PLAIN: strata.fused_matmul bias_relu
// PLAIN: strata.adam_update {{.*}} multi_tensor = 1

// BAD: for the --optimizer option: Cannot find option named 'lamb'!
module {}

// compress-sensitive= reaches the compression's sensitive= (a layer norm's
// input in bf16, the others in mxfp4).
// SENSITIVE-LABEL: func.func @gpt
// SENSITIVE: %[[X:.*]] = strata.position_embedding
// SENSITIVE-NEXT: strata.compress %[[X]] format <"bf16">
// SENSITIVE: strata.compress %{{.*}} format <"mxfp4">

// Compression options without compress= are an error, not silently dropped.
// NEEDS: error: --strata-train-pipeline: compress-budget= and compress-sensitive= need compress=
