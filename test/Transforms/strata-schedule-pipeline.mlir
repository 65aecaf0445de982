// A two-layer MLP (one layer per stage) as a two-stage pipeline of two
// micro-batches. The step is written for one micro-batch of 2 samples.
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=1f1b target=cpu-local" | FileCheck %s
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=1f1b" | grep "strata.stage = 1" | FileCheck %s --check-prefix=ONEF
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=gpipe" | grep "strata.stage = 1" | FileCheck %s --check-prefix=GPIPE
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=zb-h1" | grep "strata.stage = 1" | FileCheck %s --check-prefix=ZB
// RUN: strata-model mlp --layers 4 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=4 virtual=2 micro-batches=2 schedule=interleaved replicas=2" | FileCheck %s --check-prefix=INTERLEAVED
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 target=cpu-local trace=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.json

// The data and labels now hold two micro-batches; micro-batch 0 is cut on
// stage 0, its activation sent to stage 1.
// CHECK-LABEL: func.func @mlp(%arg0: tensor<4x4xf32>
// CHECK-SAME: %arg1: tensor<4xi32>
// CHECK-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 2, virtual = 1, micro_batches = 2, replicas = 1, predicted_step_seconds = {{.*}}, predicted_bubble = {{.*}}>
// CHECK: %[[X0:.*]] = strata.micro_batch %arg0 index = 0 count = 2 {{.*}}strata.stage = 0{{.*}} : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK: %[[H0:.*]] = strata.relu
// CHECK: strata.send %[[H0]] to 1 tag 0 {{.*}}strata.micro_batch = 0 : i64, strata.stage = 0
// CHECK: strata.send %{{.*}} to 1 tag 1 {{.*}}strata.micro_batch = 1 : i64, strata.stage = 0
// Stage 1 receives it, computes the loss and the backward of micro-batch 0,
// and sends the input gradient back.
// CHECK: %[[R0:.*]] = strata.recv from 0 tag 0 {{.*}}strata.stage = 1 : i64} : tensor<2x4xf32>
// CHECK: strata.matmul %[[R0]], %arg4
// CHECK: %[[LOSS0:.*]] = strata.softmax_cross_entropy
// CHECK: %[[DW0:.*]] = strata.bias_add_grad
// CHECK: strata.send %{{.*}} to 0 tag 2
// Micro-batch 1: its loss and gradients add to micro-batch 0's, in order.
// CHECK: %[[LOSS1:.*]] = strata.softmax_cross_entropy
// CHECK: %[[LOSSES:.*]] = strata.add %[[LOSS0]], %[[LOSS1]]
// CHECK: %[[DW1:.*]] = strata.bias_add_grad
// CHECK: %[[DW:.*]] = strata.add %[[DW0]], %[[DW1]]
// After the last micro-batch a gradient is averaged at once; the updates
// run once, at the end, on the mean over micro-batches; the mean loss goes
// to stage 0.
// CHECK-NEXT: %[[MEANDW:.*]] = strata.scale %[[DW]] by 5.000000e-01
// CHECK: strata.sgd_update %arg4
// CHECK: strata.sgd_update %arg5, %[[MEANDW]]
// CHECK: %[[MEAN:.*]] = strata.scale %[[LOSSES]] by 5.000000e-01
// CHECK: strata.send %[[MEAN]] to 0 tag 4
// Stage 0's backward receives the gradients of both micro-batches.
// CHECK: strata.recv from 1 tag 2 {{.*}}strata.micro_batch = 0 : i64, strata.phase = #strata<phase backward>, strata.stage = 0
// CHECK: strata.recv from 1 tag 3
// CHECK: strata.sgd_update %arg2
// CHECK: %[[REPORTED:.*]] = strata.recv from 1 tag 4 {{.*}}strata.stage = 0 : i64} : tensor<f32>
// CHECK: return {{.*}}, %[[REPORTED]] :

// 1F1B: the last stage alternates forward and backward.
// ONEF: strata.recv from 0 tag 0
// ONEF: strata.send {{.*}} to 0 tag 2
// ONEF: strata.recv from 0 tag 1
// ONEF: strata.send {{.*}} to 0 tag 3

// GPipe: every forward first.
// GPIPE: strata.recv from 0 tag 0
// GPIPE: strata.recv from 0 tag 1
// GPIPE: strata.send {{.*}} to 0 tag 2
// GPIPE: strata.send {{.*}} to 0 tag 3

// ZB-H1: backward split; the input gradient (B) is sent before the weight
// gradients (W) are computed, and the last stage runs each W right after
// its B.
// ZB: strata.recv from 0 tag 0
// ZB: strata.softmax_cross_entropy_grad
// ZB: strata.send {{.*}} to 0 tag 2
// ZB: strata.bias_add_grad
// ZB: strata.matmul {{.*}} transpose_a
// ZB: strata.recv from 0 tag 1

// Interleaved: four chunks on two devices (chunk c on device c mod 2), each
// replicated twice: the gradients are averaged over the replicas.
// INTERLEAVED: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "interleaved", devices = 2, virtual = 2, micro_batches = 2, replicas = 2>
// INTERLEAVED-SAME: strata.replicas = 2 : i64
// INTERLEAVED: strata.send {{.*}} to 1 tag 0 {{.*}}strata.micro_batch = 0 : i64, strata.stage = 0
// INTERLEAVED: strata.recv from 1 {{.*}}strata.stage = 2
// INTERLEAVED: strata.all_reduce {{.*}} mean replicas = 2

// The predicted timeline: one row per device.
// TRACE: "name": "device 0"
// TRACE: "name": "device 1"
// TRACE: "cat": "forward"
// TRACE: "name": "F0"
