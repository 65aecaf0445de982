// RUN: strata-opt %s --split-input-file --verify-diagnostics

// Rules of the dialect's discardable and argument attributes.

func.func @layer_negative(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.relu' op 'strata.layer' must be non-negative, got -1}}
  %0 = strata.relu %a {strata.layer = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @layer_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.relu' op 'strata.layer' must be an i64 integer}}
  %0 = strata.relu %a {strata.layer = "one"} : tensor<4xf32>
  return
}

// -----

func.func @unknown_attr(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.relu' op unknown strata attribute 'strata.shard'}}
  %0 = strata.relu %a {strata.shard = 1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op 'strata.layer_names' must be an array of strings}}
func.func @layer_names(%a: tensor<4xf32>) attributes {strata.layer_names = [1]} {
  return
}

// -----

// expected-error @+1 {{'func.func' op parameter #0 must be a statically shaped float tensor, got 'tensor<4xi32>'}}
func.func @param_int(%a: tensor<4xi32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{parameter layer must be non-negative, got -2}}
func.func @param_layer(%a: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = -2, init = zeros, scale = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{parameter init scale must be a non-negative number, got -1}}
func.func @param_scale(%a: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = normal, scale = -1.0>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op parameter name 'w' is used twice}}
func.func @param_names(%a: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>},
                       %b: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 1, init = zeros, scale = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0 cannot be both a parameter and an input}}
func.func @both(%a: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>,
                                   strata.input = #strata.input<name = "x", role = data>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'strata.param' must be a #strata.param}}
func.func @param_kind(%a: tensor<4xf32> {strata.param = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op unknown strata argument attribute 'strata.weight'}}
func.func @unknown_arg_attr(%a: tensor<4xf32> {strata.weight}) {
  return
}

// -----

func.func @bad_init(
  // expected-error @+2 {{expected ::mlir::strata::InitKind to be one of: zeros, ones, normal, uniform, xavier_uniform, kaiming_normal}}
  // expected-error @+1 {{failed to parse Strata_ParamAttr parameter 'init'}}
  %a: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = gaussian, scale = 0.0>}) {
  return
}

// -----

func.func @bad_stage(%a: tensor<4xf32>) {
  // expected-error @+1 {{'strata.relu' op 'strata.stage' must be a non-negative integer}}
  %0 = strata.relu %a {strata.stage = -1 : i64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'func.func' op 'strata.pipeline_schedule' must be a #strata.pipeline_schedule on a function}}
func.func @bad_schedule(%a: tensor<4xf32>) attributes {strata.pipeline_schedule = 1 : i64} {
  return
}

// -----

// A schedule runs on at least one device.
// expected-error @+1 {{pipeline schedule devices, virtual, micro_batches and replicas must be positive}}
func.func @schedule_no_devices(%a: tensor<4xf32>) attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 0, virtual = 1, micro_batches = 1, replicas = 1>} {
  return
}

// -----

// An asynchronous schedule's window divides the micro-batches.
// expected-error @+1 {{pipeline schedule window must divide micro_batches (4), got 3}}
func.func @schedule_window(%a: tensor<4xf32>) attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "2bw", devices = 2, virtual = 1, micro_batches = 4, replicas = 1, window = 3>} {
  return
}

// -----

// The optional fields of a schedule are known keys.
// expected-error @+1 {{expected window, predicted_step_seconds or predicted_bubble, got 'bubble'}}
func.func @schedule_key(%a: tensor<4xf32>) attributes {strata.pipeline_schedule = #strata.pipeline_schedule<schedule = "1f1b", devices = 2, virtual = 1, micro_batches = 4, replicas = 1, bubble = 0.5 : f64>} {
  return
}

// -----

// The partition is typed: a dictionary is refused.
// expected-error @+1 {{'func.func' op 'strata.pipeline' must be a #strata.pipeline_partition on a function}}
func.func @partition_dictionary(%a: tensor<4xf32>) attributes {strata.pipeline = {stages = []}} {
  return
}

// -----

// A partition has at least one stage.
// expected-error @+1 {{pipeline partition must have at least one stage}}
func.func @partition_empty(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [], devices = 1, micro_batches = 1, schedule = "1f1b", objective = "throughput">} {
  return
}

// -----

// Stages come in layer order.
// expected-error @+1 {{pipeline partition stage 1 must follow the previous stage}}
func.func @partition_unordered(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 2, last_layer = 3, replicas = 1>, #strata.pipeline_stage<first_layer = 0, last_layer = 1, replicas = 1>], devices = 2, micro_batches = 1, schedule = "1f1b", objective = "throughput">} {
  return
}

// -----

// A stage holds at least one layer.
// expected-error @+2 {{pipeline stage must hold at least one layer, got 3..2}}
// expected-error @+1 {{failed to parse Strata_PipelinePartitionAttr parameter 'stages'}}
func.func @stage_empty(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 3, last_layer = 2, replicas = 1>], devices = 1, micro_batches = 1, schedule = "1f1b", objective = "throughput">} {
  return
}

// -----

// The per-stage predictions have one entry per stage.
// expected-error @+1 {{pipeline partition first_devices must have one entry per stage}}
func.func @partition_devices_per_stage(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>], devices = 1, micro_batches = 1, schedule = "1f1b", objective = "throughput", first_devices = [0, 1]>} {
  return
}

// -----

// State names are unique among parameters and states (found by fuzz/ir: the
// runtime refused the exported plan).
// expected-error @+1 {{'func.func' op state name 'w.m' is used twice (parameter and state names are unique)}}
func.func @dup_state(%w: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %m: tensor<4xf32> {strata.state = #strata.state<name = "w.m", param = "w">}, %m2: tensor<4xf32> {strata.state = #strata.state<name = "w.m", param = "w">}) {
  return
}

// -----

// A state belongs to a parameter of the same function.
// expected-error @+1 {{'func.func' op state 'v.m' belongs to 'v', which is not a parameter}}
func.func @orphan_state(%w: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %m: tensor<4xf32> {strata.state = #strata.state<name = "v.m", param = "v">}) {
  return
}

// -----

// A state copying its parameter names one.
// expected-error @+1 {{'func.func' op state 'w.stash1' starts as a copy of its parameter (init = param) but names none}}
func.func @copy_of_nothing(%w: tensor<4xf32> {strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}, %s: tensor<4xf32> {strata.state = #strata.state<name = "w.stash1", param = "", init = param>}) {
  return
}

// -----

// The step counter is a scalar i32.
// expected-error @+1 {{'func.func' op input #0 is the step counter and must be tensor<i32>, got 'tensor<2x4xf32>'}}
func.func @step_shape(%s: tensor<2x4xf32> {strata.input = #strata.input<name = "step", role = step>}) {
  return
}

// -----

// A partition's devices and micro-batches are not negative.
// expected-error @+1 {{pipeline partition devices and micro_batches must be non-negative}}
func.func @partition_negative_devices(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>], devices = -1, micro_batches = 1, schedule = "1f1b", objective = "throughput">} {
  return
}

// -----

// The predicted time per stage has one entry per stage.
// expected-error @+1 {{pipeline partition predicted_stage_seconds must have one entry per stage}}
func.func @partition_seconds_per_stage(%a: tensor<4xf32>) attributes {strata.pipeline = #strata.pipeline_partition<stages = [#strata.pipeline_stage<first_layer = 0, last_layer = 0, replicas = 1>], devices = 1, micro_batches = 1, schedule = "1f1b", objective = "throughput", predicted_stage_seconds = [1.0, 2.0]>} {
  return
}

// -----

// Running statistics start at zeros or ones.
// expected-error @+2 {{running statistic init must be zeros or ones, got normal}}
func.func @running_stat_init(
  %a: tensor<4xf32> {strata.running_stat = #strata.running_stat<name = "bn.running_mean", layer = 0, init = normal>}) {
  return
}

// -----

// Running statistic names are unique among parameters, states and running
// statistics (they key weights files and checkpoints).
// expected-error @+1 {{'func.func' op running statistic name 'bn.weight' is used twice (parameter, state and running statistic names are unique)}}
func.func @running_stat_name(%w: tensor<4xf32> {strata.param = #strata.param<name = "bn.weight", layer = 0, init = ones, scale = 1.0>},
                             %r: tensor<4xf32> {strata.running_stat = #strata.running_stat<name = "bn.weight", layer = 0, init = zeros>}) {
  return
}

// -----

// A running statistic is neither a parameter nor an input.
// expected-error @+1 {{'func.func' op argument #0 cannot be both a running statistic and a parameter, state or input}}
func.func @running_stat_param(%r: tensor<4xf32> {strata.running_stat = #strata.running_stat<name = "r", layer = 0, init = zeros>,
                                                  strata.param = #strata.param<name = "w", layer = 0, init = zeros, scale = 0.0>}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op running statistic #0 must be a statically shaped float tensor, got 'tensor<4xi32>'}}
func.func @running_stat_int(%r: tensor<4xi32> {strata.running_stat = #strata.running_stat<name = "r", layer = 0, init = zeros>}) {
  return
}
