// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-autodiff="optimizer=sgd lr=0.1" -o %t.step.mlir
// RUN: strata-opt %t.step.mlir --strata-remat="budget=1.0 solver=sqrt target=cpu-local" 2>/dev/null | FileCheck %s --check-prefix=SQRT
// RUN: strata-opt %t.step.mlir --strata-remat="budget=1.0 solver=sqrt target=cpu-local" 2>&1 >/dev/null | FileCheck %s --check-prefix=SQRT-REMARK
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=milp target=%S/Inputs/fast-host.json" 2>/dev/null | FileCheck %s --check-prefix=SWAP
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=dp target=%S/Inputs/fast-host.json" 2>/dev/null | FileCheck %s --check-prefix=SWAP
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=milp target=%S/Inputs/fast-host.json" 2>&1 >/dev/null | FileCheck %s --check-prefix=SWAP-REMARK
// RUN: strata-opt %t.step.mlir --strata-remat="budget=4M" 2>/dev/null | FileCheck %s --check-prefix=NONE
// RUN: strata-opt %t.step.mlir --strata-remat="budget=4M" 2>&1 >/dev/null | FileCheck %s --check-prefix=NONE-REMARK
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=milp" --strata-plan-buffers 2>/dev/null | FileCheck %s --check-prefix=PLANNED
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=milp target=cpu-local" 2>&1 >/dev/null | FileCheck %s --check-prefix=CPU

// An MLP (x -> fc0 -> relu -> fc1 -> relu -> fc2) saves five activations:
// the two bias_add outputs (relu_grad reads them), the two relu outputs (the
// weight gradients' matmuls read them) and the logits.

// Chen's sqrt(n): sqrt(5) rounds up to 3, so candidates 0 and 3 (%1 and the
// second relu output) are kept; the first relu, the second bias_add and the
// logits are recomputed from them just before their first backward use,
// tagged recompute, with the same ops and operands as the forward pass.
// SQRT-REMARK: remark: remat with sqrt: arena {{[0-9]+}} -> {{[0-9]+}} bytes (budget {{[0-9]+}}); of 5 saved activations kept 2, swapped 0 (0 bytes), recomputed 3
// SQRT-LABEL: func.func @mlp
// SQRT-SAME: strata.remat_plan = #strata.remat_plan<budget = {{[0-9]+}}, peak_before = {{[0-9]+}}, peak_after = {{[0-9]+}}, solver = "sqrt", kept = 2, swapped = 0, recomputed = 3
// SQRT: %[[H0:.*]] = strata.bias_add %{{.*}}, %arg3 {strata.layer = 0 : i64}
// SQRT: %[[R0:.*]] = strata.relu %[[H0]] {strata.layer = 0 : i64}
// SQRT: %[[R1:.*]] = strata.relu %{{.*}} {strata.layer = 1 : i64}
// SQRT: strata.softmax_cross_entropy %{{.*}}, %arg1
// SQRT: strata.fill
// SQRT-NEXT: %[[M2:.*]] = strata.matmul %[[R1]], %arg6 {strata.layer = 2 : i64, strata.phase = #strata<phase recompute>}
// SQRT-NEXT: %[[L:.*]] = strata.bias_add %[[M2]], %arg7 {strata.layer = 2 : i64, strata.phase = #strata<phase recompute>}
// SQRT-NEXT: strata.softmax_cross_entropy_grad %[[L]], %arg1
// SQRT: %[[RR0:.*]] = strata.relu %[[H0]] {strata.layer = 0 : i64, strata.phase = #strata<phase recompute>}
// SQRT-NEXT: %[[M1:.*]] = strata.matmul %[[RR0]], %arg4 {strata.layer = 1 : i64, strata.phase = #strata<phase recompute>}
// SQRT-NEXT: %[[H1:.*]] = strata.bias_add %[[M1]], %arg5 {strata.layer = 1 : i64, strata.phase = #strata<phase recompute>}
// SQRT-NEXT: strata.relu_grad %{{.*}}, %[[H1]] {strata.layer = 1 : i64, strata.phase = #strata<phase backward>}
// SQRT: strata.matmul %[[RR0]], %{{.*}} transpose_a
// SQRT: strata.relu_grad %{{.*}}, %[[H0]]

// At 0.9 of the arena one 256 KiB activation goes to host memory: the copy
// out starts after its producer and is waited for after its last forward
// use; the copy back starts in the backward pass and is waited for right
// before the first backward use, which reads the swapped-in value. On a
// target whose host link is as fast as its memory the copy hides behind
// compute, so nothing is recomputed.
// SWAP-REMARK: remark: remat with {{milp|dp}}: arena {{[0-9]+}} -> {{[0-9]+}} bytes (budget {{[0-9]+}}); of 5 saved activations kept 4, swapped 1 (262144 bytes), recomputed 0
// SWAP-LABEL: func.func @mlp
// SWAP-SAME: strata.remat_plan = #strata.remat_plan<{{.*}}swapped = 1, recomputed = 0, swapped_bytes = 262144
// SWAP: %[[V:.*]] = strata.{{bias_add|relu}}
// SWAP-NEXT: strata.swap_out %[[V]] slot = 0 {strata.layer = {{[0-9]}} : i64} : tensor<256x256xf32>
// SWAP: strata.swap_out_wait %[[V]] slot = 0 {strata.layer = {{[0-9]}} : i64} : tensor<256x256xf32>
// SWAP: strata.fill
// SWAP: %[[IN:.*]] = strata.swap_in slot = 0 {strata.layer = {{[0-9]}} : i64, strata.phase = #strata<phase backward>} : tensor<256x256xf32>
// SWAP: strata.swap_in_wait %[[IN]] slot = 0 {strata.layer = {{[0-9]}} : i64, strata.phase = #strata<phase backward>} : tensor<256x256xf32>
// SWAP-NEXT: {{.*}}%[[IN]]
// SWAP-NOT: %[[V]]{{[, ]}}

// A budget the step already fits changes nothing.
// NONE-REMARK: remark: remat with none
// NONE-LABEL: func.func @mlp
// NONE-SAME: solver = "none", kept = 5, swapped = 0, recomputed = 0
// NONE-NOT: strata.swap_out
// NONE-NOT: phase recompute

// The planned arena respects the budget --strata-remat recorded.
// PLANNED: strata.memory_plan = #strata.memory_plan<arena_bytes = [[ARENA:[0-9]+]]
// PLANNED-SAME: strata.remat_plan = #strata.remat_plan<budget = [[BUDGET:[0-9]+]], peak_before = {{[0-9]+}}, peak_after = [[ARENA]],

// On the CPU target the copy thread shares the cores and the memory bandwidth
// with the compute, so copies are exposed and recomputing the cheap relu wins.
// CPU: remark: remat with milp: {{.*}} kept 4, swapped 0 (0 bytes), recomputed 1; {{.*}} (optimal)
