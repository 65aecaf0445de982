// RUN: strata-model mlp --batch 64 --inputs 32 --hidden 64 --layers 3 --classes 8 | strata-opt --strata-autodiff="optimizer=sgd lr=0.1" -o %t.step.mlir
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp6" 2>/dev/null | FileCheck %s --check-prefix=FIXED
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp6" 2>&1 >/dev/null | FileCheck %s --check-prefix=FIXED-REMARK
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=auto budget=0.05" 2>/dev/null | FileCheck %s --check-prefix=AUTO
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=bfp:m=4 candidates=mxfp4;bfp:m=4,block=32 min-elements=4096" 2>/dev/null | FileCheck %s --check-prefix=MIN
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp8 min-elements=4097" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=none" | FileCheck %s --check-prefix=NONE
// RUN: strata-opt %t.step.mlir --strata-compress-activations="format=mxfp4" --strata-plan-buffers 2>/dev/null | strata-translate --export-plan | FileCheck %s --check-prefix=PLAN
// RUN: strata-opt %t.step.mlir --strata-remat="budget=0.9 solver=milp target=%S/Inputs/fast-host.json" --strata-compress-activations="format=mxfp8" 2>/dev/null | FileCheck %s --check-prefix=REMAT
// RUN: strata-model mlp --batch 256 --inputs 32 --hidden 256 --layers 3 --classes 8 | strata-opt --strata-autodiff="optimizer=sgd lr=0.1" --strata-remat="budget=0.9 solver=milp" --strata-compress-activations="format=mxfp8" --strata-plan-buffers 2>&1 >/dev/null | FileCheck %s --check-prefix=BUDGET

// The MLP saves five activations: the two bias_add outputs (relu_grad reads
// them), the two relu outputs (the weight gradients' matmuls read them) and
// the logits. The logits are the loss's input, whose gradient exponentiates
// their error, so they stay f32. Each other one is compressed right after
// its producer; each backward op that reads one gets its own decompress
// right before it. A 64x64 tensor in MXFP6 is 128 blocks of 32:
// 128 * (1 + 24) = 3200 bytes.
// FIXED-REMARK: remark: compressed 4 saved activations from 65536 to 12800 bytes (mxfp6e2m3); of 4 compressible saved activations, 65536 bytes as f32
// FIXED-LABEL: func.func @mlp
// FIXED: %[[H0:.*]] = strata.bias_add %{{.*}} {strata.layer = 0 : i64}
// FIXED-NEXT: %[[C0:.*]] = strata.compress %[[H0]] format <"mxfp6e2m3"> {strata.layer = 0 : i64} : tensor<64x64xf32> -> tensor<3200xi8>
// FIXED-NEXT: %[[R0:.*]] = strata.relu %[[H0]] {strata.layer = 0 : i64}
// FIXED-NEXT: %[[C1:.*]] = strata.compress %[[R0]] format <"mxfp6e2m3"> {strata.layer = 0 : i64} : tensor<64x64xf32> -> tensor<3200xi8>
// FIXED: %[[L:.*]] = strata.bias_add %{{.*}} {strata.layer = 2 : i64}
// FIXED-NOT: strata.compress %[[L]]
// FIXED: strata.softmax_cross_entropy_grad %[[L]], %arg1
// FIXED: %[[D1:.*]] = strata.decompress %[[C1]] {strata.layer = 1 : i64, strata.phase = #strata<phase backward>}
// FIXED-NEXT: strata.matmul %[[D1]], %{{.*}} transpose_a
// FIXED: %[[D0:.*]] = strata.decompress %[[C0]] {strata.layer = 0 : i64, strata.phase = #strata<phase backward>}
// FIXED-NEXT: strata.relu_grad %{{.*}}, %[[D0]]
// The forward pass still reads the f32 values; no backward op does.
// FIXED-NOT: strata.relu_grad %{{.*}}, %[[H0]]

// auto: every tensor carries the default candidates, starts in the widest
// (MXFP8: 33 bytes per block of 32) and is sized for it; the budget goes to
// the runtime, which chooses.
// AUTO-LABEL: func.func @mlp
// AUTO: strata.compress %{{.*}} format <"mxfp8e4m3"> candidates [#strata.act_format<"mxfp8e4m3">, #strata.act_format<"mxfp6e2m3">, #strata.act_format<"bfp:m=4,block=32">, #strata.act_format<"mxfp4">] budget 5.000000e-02 {strata.layer = 0 : i64} : tensor<64x64xf32> -> tensor<4224xi8>

// The named format
// starts, its name is canonical (block=32 filled in), the candidates keep
// their order, and the bytes are the widest's: BFP m=4 is 1 + 20 bytes per
// block of 32, MXFP4 1 + 16.
// MIN-LABEL: func.func @mlp
// MIN-COUNT-4: strata.compress %{{.*}} format <"bfp:m=4,block=32"> candidates [#strata.act_format<"mxfp4">, #strata.act_format<"bfp:m=4,block=32">] {{.*}} -> tensor<2688xi8>
// MIN-NOT: strata.compress
// MIN: strata.softmax_cross_entropy_grad %{{.*}}, %arg1

// Tensors under min-elements stay f32: every saved 64x64 tensor is.
// SMALL: remark: compressed 0 saved activations from 0 to 0 bytes
// SMALL-NOT: strata.compress

// format=none leaves the step as it is.
// NONE-NOT: strata.compress
// NONE-NOT: strata.decompress

// The plan carries the format codes (ActivationFormat.h: kind 4 | element
// 5 << 4 | log2(32) << 12 = 20564 for MXFP4) and one site per compress,
// which its decompress shares; the packed buffers are i8.
// PLAN: {"bytes":2176,"dtype":"i8","id":[[C0:[0-9]+]],"kind":"activation"
// PLAN: {"attrs":{"format":20564,"site":0},"in":[{{[0-9]+}}],"layer":0,"op":"compress","out":[[[C0]]],"phase":"forward"}
// PLAN: {"attrs":{"format":20564,"site":3},"in":[{{[0-9]+}}],"layer":2,"op":"decompress"{{.*}}"phase":"backward"}
// PLAN: {"attrs":{"format":20564,"site":0},"in":[[[C0]]],"layer":0,"op":"decompress"

// A tensor remat swaps to host memory moves as it is (the first layer's
// two here); the other two (the logits stay f32) are compressed.
// REMAT-LABEL: func.func @mlp
// REMAT: strata.swap_out %[[V:[^ ]*]] slot = 0
// REMAT: strata.swap_out %[[W:[^ ]*]] slot = 1
// REMAT-NOT: strata.compress %[[V]]
// REMAT-NOT: strata.compress %[[W]]
// REMAT-COUNT-2: strata.compress
// REMAT-NOT: strata.compress

// A packed tensor lives beside its decompressed copies until its last
// backward use, so compressing can raise the peak of a backward-bound step.
// After remat the arena must stay within remat's budget: the pass undoes
// compressions (those feeding a recomputation first) until it does, and
// plan-buffers accepts the step.
// BUDGET: remark: remat with milp: {{.*}} recomputed 1
// BUDGET: remark: compressed 0 saved activations from 0 to 0 bytes (mxfp8e4m3)
// BUDGET: remark: left 3 saved activations uncompressed: compressing them raised the planned arena above the --strata-remat budget of {{[0-9]+}} bytes
// BUDGET: remark: planned {{[0-9]+}} buffers
