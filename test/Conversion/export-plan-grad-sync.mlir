// RUN: strata-model mlp --batch 2 --inputs 4 --hidden 8 --layers 2 --classes 2 | strata-opt --strata-autodiff="optimizer=sgd momentum=0.0" --strata-data-parallel=replicas=2 --strata-insert-grad-sync=bucket-bytes=64 | strata-translate --export-plan | FileCheck %s

// A bucket's start is an instruction with the bucket's gradients as inputs,
// no outputs, and the group it reduces over (0, every replica); its wait has
// the same inputs and the reduced gradients as outputs.
// CHECK: {"attrs":{"bucket":0,"group":0,"mean":1,"replicas":2},"in":[{{[0-9]+,[0-9]+}}],"layer":1,"op":"all_reduce_start","out":[],"phase":"backward"}
// CHECK: {"attrs":{"bucket":1,"group":0,"mean":1,"replicas":2},"in":[{{[0-9]+,[0-9]+}}],"layer":0,"op":"all_reduce_start","out":[],"phase":"backward"}
// CHECK-NEXT: {"attrs":{"bucket":1},"in":[{{[0-9]+,[0-9]+}}],"layer":0,"op":"all_reduce_wait","out":[{{[0-9]+,[0-9]+}}],"phase":"backward"}
// CHECK: {"attrs":{"bucket":0},"in":[{{[0-9]+,[0-9]+}}],"layer":1,"op":"all_reduce_wait","out":[{{[0-9]+,[0-9]+}}],"phase":"backward"}
