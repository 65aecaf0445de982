// The asynchronous schedules: a two-layer MLP (one layer per stage) whose
// step is written for one micro-batch of 2 samples.
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=3 schedule=pipedream target=cpu-local drain=step" | FileCheck %s
// RUN: strata-model mlp --layers 3 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=3 micro-batches=1 schedule=pipedream" | FileCheck %s --check-prefix=ROTATE
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=4 schedule=2bw window=2 replicas=2 drain=step" | FileCheck %s --check-prefix=TWOBW
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=2 schedule=pipedream target=cpu-local trace=%t.json" -o /dev/null
// RUN: FileCheck %s --check-prefix=TRACE < %t.json
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=adamw" --strata-schedule-pipeline="stages=2 micro-batches=3 schedule=pipedream drain=step" | FileCheck %s --check-prefix=ADAM
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=adamw" --strata-schedule-pipeline="stages=2 micro-batches=3 schedule=pipedream" | FileCheck %s --check-prefix=CARRY
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-schedule-pipeline="stages=2 micro-batches=4 schedule=2bw window=4" | FileCheck %s --check-prefix=WINDOW
// RUN: strata-model mlp --layers 2 --batch 2 --hidden 4 --inputs 4 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd" --strata-partition-pipeline="target=v100-pcie-4x devices=2 stages=2 micro-batches=2 schedule=pipedream" --strata-schedule-pipeline="micro-batches=2 schedule=pipedream" | FileCheck %s --check-prefix=PARTITIONED

// pipedream on 2 stages, 3 micro-batches, draining every step: stage 0
// keeps one older version of each parameter (a state that starts as a
// copy), the last stage none.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[W0:[a-z0-9]+]]: tensor<4x4xf32> {strata.param = #strata.param<name = "fc0.weight"
// CHECK-SAME: %[[W1:[a-z0-9]+]]: tensor<4x2xf32> {strata.param = #strata.param<name = "fc1.weight"
// CHECK-SAME: %[[K0:[a-z0-9]+]]: tensor<4x4xf32> {strata.state = #strata.state<name = "fc0.weight.stash1", param = "fc0.weight", init = param>}
// CHECK-SAME: %[[KB0:[a-z0-9]+]]: tensor<4xf32> {strata.state = #strata.state<name = "fc0.bias.stash1", param = "fc0.bias", init = param>}
// CHECK-NOT: stash
// CHECK-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "pipedream", devices = 2, virtual = 1, micro_batches = 3, replicas = 1, window = 1, predicted_step_seconds =
// Stage 0's micro-batch 0 reads the version one update older than the
// parameter, micro-batch 1 the parameter (version 0).
// CHECK: strata.matmul %{{.*}}, %[[K0]] {{.*}}strata.micro_batch = 0 : i64, strata.stage = 0
// CHECK: strata.matmul %{{.*}}, %[[W0]] {{.*}}strata.micro_batch = 1 : i64, strata.stage = 0
// The last stage updates after every backward pass, with that micro-batch's
// gradient alone (no sum, no 1/M), and micro-batch 1 reads the update.
// CHECK: %[[G1:.*]] = strata.matmul %{{.*}} transpose_a {{.*}}strata.micro_batch = 0 : i64, strata.phase = #strata<phase backward>, strata.stage = 1
// CHECK-NEXT: %[[W1A:new_param[_0-9]*]], %{{.*}} = strata.sgd_update %[[W1]], %[[G1]], {{.*}}strata.micro_batch = 0 : i64, strata.phase = #strata<phase update>, strata.stage = 1
// CHECK: strata.matmul %{{.*}}, %[[W1A]] {{.*}}strata.micro_batch = 1 : i64, strata.stage = 1
// Stage 0: before the update overwrites version 0, it is copied into the
// state (whose version -1 micro-batch 0 no longer needs); micro-batch 2
// reads the new parameter, micro-batch 1's backward the kept version.
// CHECK: %[[KEEP0:.*]] = strata.copy_into %[[W0]], %[[K0]] {{.*}}strata.micro_batch = 0 : i64, strata.phase = #strata<phase update>, strata.stage = 0
// CHECK-NEXT: %[[W0A:new_param[_0-9]*]], %{{.*}} = strata.sgd_update %[[W0]],
// CHECK: strata.matmul %{{.*}}, %[[W0A]] {{.*}}strata.micro_batch = 2 : i64, strata.stage = 0
// CHECK: %[[KEEP1:.*]] = strata.copy_into %[[W0A]], %[[KEEP0]] {{.*}}strata.micro_batch = 1 : i64
// CHECK: %[[KEEP2:.*]] = strata.copy_into %{{.*}}, %[[KEEP1]] {{.*}}strata.micro_batch = 2 : i64
// The step returns the kept versions after the states, before the loss.
// CHECK: return {{.*}}, %[[KEEP2]], %{{.*}}, %{{.*}} : {{.*}}, tensor<4x4xf32>, tensor<4xf32>, tensor<f32>

// One micro-batch on 3 stages: stage 0 keeps 2 versions and updates once,
// so each state moves one version on (stash2 <- stash1 <- parameter).
// ROTATE-LABEL: func.func @mlp(
// ROTATE-SAME: %[[K2:[a-z0-9]+]]: tensor<4x4xf32> {strata.state = #strata.state<name = "fc0.weight.stash2"
// ROTATE-SAME: %[[K1:[a-z0-9]+]]: tensor<4x4xf32> {strata.state = #strata.state<name = "fc0.weight.stash1"
// ROTATE: strata.matmul %{{.*}}, %[[K2]] {{.*}}strata.stage = 0
// ROTATE: strata.copy_into %[[K1]], %[[K2]] {{.*}}strata.stage = 0
// ROTATE-NEXT: strata.copy_into %arg2, %[[K1]] {{.*}}strata.stage = 0
// ROTATE-NEXT: strata.sgd_update %arg2,

// 2bw (draining every step), windows of 2 of the 4 micro-batches, 2
// replicas: one kept version
// per parameter; a window's gradients are summed, scaled by 1/2 and
// averaged over the replicas, and update once; the first window reads the
// kept version, the second the copy of version 0 made at the first update.
// TWOBW-LABEL: func.func @mlp(
// TWOBW-SAME: %[[K:[a-z0-9]+]]: tensor<4x2xf32> {strata.state = #strata.state<name = "fc1.weight.stash1", param = "fc1.weight", init = param>}
// TWOBW-SAME: window = 2
// TWOBW: strata.matmul %{{.*}}, %[[K]] {{.*}}strata.micro_batch = 0 : i64, strata.stage = 1
// TWOBW: strata.matmul %{{.*}}, %[[K]] {{.*}}strata.micro_batch = 1 : i64, strata.stage = 1
// TWOBW: %[[SUM:.*]] = strata.add %{{.*}}, %{{.*}} : tensor<4x2xf32>
// TWOBW-NEXT: %[[MEAN:.*]] = strata.scale %[[SUM]] by 5.000000e-01
// TWOBW-NEXT: %[[AVG:.*]] = strata.all_reduce %[[MEAN]] mean replicas = 2
// TWOBW-NEXT: %[[V0:.*]] = strata.copy_into %arg4, %[[K]] {{.*}}strata.micro_batch = 1 : i64
// TWOBW-NEXT: strata.sgd_update %arg4, %[[AVG]]
// TWOBW: strata.matmul %{{.*}}, %[[V0]] {{.*}}strata.micro_batch = 2 : i64, strata.stage = 1
// TWOBW: strata.copy_into %new_param{{.*}}, %[[V0]] {{.*}}strata.micro_batch = 3 : i64

// The predicted timeline names each update after the micro-batch whose
// backward pass it follows.
// TRACE: "name": "U0"
// TRACE: "cat": "update"

// The partitioner prices the schedule it is asked for (no bubble for
// pipedream) and the scheduler runs it on its stages.
// PARTITIONED-LABEL: func.func @mlp(
// PARTITIONED-SAME: schedule = "pipedream", objective = "throughput"{{.*}}bubble_fraction = 0.000000e+00
// PARTITIONED-SAME: strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "pipedream", devices = 2, virtual = 1, micro_batches = 2, replicas = 1, window = 1

// Adam counts updates: update u of the step's 3 carries `update u of 3`.
// ADAM-LABEL: func.func @mlp(
// ADAM: strata.adam_update {{.*}} decoupled update 0 of 3 {{.*}}strata.stage = 1
// ADAM: strata.adam_update {{.*}} decoupled update 1 of 3 {{.*}}strata.stage = 1
// ADAM: strata.adam_update {{.*}} decoupled update 2 of 3 {{.*}}strata.stage = 0

// By default the pipeline does not drain between steps (drain=auto: run).
// Stage 0 runs micro-batch 2's backward pass of the previous step
// (`strata.previous_step`) right after its first forward pass: it reads
// what that step's forward pass left in carried states (the input slice,
// the layer's activation), the gradient that stage 1 kept and sends first
// thing in the step, and the weight version -2 (the kept state: the
// step's weights are version -1, one update short); its Adam update is
// update -1 of 3 (the previous step's last). The step's own forward pass of
// micro-batch 2 then fills the carried states (`local`: no send reads them).
// CARRY-LABEL: func.func @mlp(
// CARRY-SAME: %[[W0:arg2]]: tensor<4x4xf32> {strata.param = #strata.param<name = "fc0.weight"
// CARRY-SAME: %[[K0:[a-z0-9]+]]: tensor<4x4xf32> {strata.state = #strata.state<name = "fc0.weight.stash1", param = "fc0.weight", init = param>}
// CARRY-SAME: %[[ACT:[a-z0-9]+]]: tensor<2x4xf32> {strata.state = #strata.state<name = "pipeline.carry0.stage0.micro2", param = "">}
// CARRY-SAME: %[[IN:[a-z0-9]+]]: tensor<2x4xf32> {strata.state = #strata.state<name = "pipeline.carry1.stage0.micro2", param = "">}
// CARRY-SAME: %[[OUT:[a-z0-9]+]]: tensor<2x4xf32> {strata.state = #strata.state<name = "pipeline.carry2.stage1.micro2.to0", param = "">}
// CARRY-NEXT: strata.send %[[OUT]] to 0 tag [[TAG:[0-9]+]] {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase backward>, strata.previous_step, strata.stage = 1
// CARRY: strata.matmul %{{.*}}, %[[W0]] {{.*}}strata.micro_batch = 0 : i64, strata.stage = 0
// CARRY: %[[DY:.*]] = strata.recv from 1 tag [[TAG]] {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase backward>, strata.previous_step, strata.stage = 0
// CARRY-NEXT: %[[DX:.*]] = strata.relu_grad %[[DY]], %[[ACT]] {{.*}}strata.previous_step
// CARRY: %[[DW:.*]] = strata.matmul %[[IN]], %[[DX]] transpose_a {{.*}}strata.previous_step
// CARRY-NEXT: strata.copy_into %[[W0]], %[[K0]] {{.*}}strata.previous_step
// CARRY-NEXT: strata.adam_update %[[W0]], %[[DW]], {{.*}} update -1 of 3 {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase update>, strata.previous_step, strata.stage = 0
// CARRY: strata.copy_into %{{.*}}, %[[ACT]] local {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase backward>, strata.stage = 0
// CARRY-NEXT: strata.copy_into %{{.*}}, %[[IN]] local {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase backward>, strata.stage = 0

// 2bw with one window of 4 micro-batches: stage 0 carries micro-batch 3
// over, so the window's gradient sum of micro-batches 0..2 is carried too,
// and the step's only update of stage 0 is the previous step's, which no
// forward pass of the step waits for: it runs at the step's end.
// WINDOW-LABEL: func.func @mlp(
// WINDOW-SAME: %[[PART:[a-z0-9]+]]: tensor<4x4xf32> {strata.state = #strata.state<name = "pipeline.carry{{[0-9]+}}.stage0.sum", param = "">}
// WINDOW: %[[ALL:.*]] = strata.add %[[PART]], %{{.*}} {{.*}}strata.micro_batch = 3 : i64, strata.phase = #strata<phase backward>, strata.previous_step, strata.stage = 0
// WINDOW-NEXT: %[[AVG:.*]] = strata.scale %[[ALL]] by 2.500000e-01 {{.*}}strata.previous_step
// WINDOW: strata.copy_into %{{.*}}, %[[PART]] local {{.*}}strata.micro_batch = 2 : i64, strata.phase = #strata<phase backward>, strata.stage = 0
// WINDOW: strata.sgd_update %arg2, %[[AVG]], {{.*}}strata.previous_step
