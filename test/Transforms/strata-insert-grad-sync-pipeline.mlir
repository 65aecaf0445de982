// On a pipelined step, every stage's gradients are bucketed on their own and
// sync among that stage's replicas: a bucket starts right after the last
// micro-batch's gradient of its parameters (the 1/M scale that ends their
// accumulation), not at the end of the step, and carries its stage.
// RUN: strata-model mlp --layers 4 --batch 2 --hidden 8 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 replicas=2" --strata-insert-grad-sync="bucket-bytes=64" | FileCheck %s
// RUN: strata-model mlp --layers 4 --batch 2 --hidden 8 --inputs 4 --classes 2 | not strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 replicas=2" --strata-insert-grad-sync="bucket-bytes=64 staleness=1" 2>&1 | FileCheck %s --check-prefix=LAG

// CHECK-LABEL: func.func @mlp
// Stage 1 (layers 2-3) finishes its backward first.
// CHECK: %[[W3:.*]] = strata.scale {{.*}}strata.layer = 3 : i64, strata.phase = #strata<phase backward>, strata.stage = 1
// CHECK: %[[B3:.*]] = strata.scale {{.*}}strata.stage = 1
// CHECK-NEXT: strata.all_reduce_start %[[W3]], %[[B3]] mean replicas = 2 bucket = {{[0-9]+}} {{.*}}strata.stage = 1
// CHECK: strata.all_reduce_wait {{.*}}strata.stage = 1
// CHECK-NEXT: strata.sgd_update
// Stage 0's buckets only hold stage 0's gradients.
// CHECK: strata.all_reduce_start {{.*}}strata.layer = 1 : i64, strata.phase = #strata<phase backward>, strata.stage = 0
// CHECK: strata.all_reduce_start {{.*}}strata.layer = 0 : i64, strata.phase = #strata<phase backward>, strata.stage = 0
// CHECK: strata.all_reduce_wait {{.*}}strata.stage = 0

// LAG: error: 'func.func' op is a pipeline; lagging gradients (staleness > 0) need a data-parallel step without stages
