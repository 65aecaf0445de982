// RUN: strata-opt %s --split-input-file --verify-diagnostics

// Each case breaks one verifier rule of one op.

func.func @matmul_rank(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+2 {{operands must have rank >= 2, got 1 and 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_contracting(%a: tensor<4x8xf32>, %b: tensor<7x16xf32>) {
  // expected-error @+2 {{contracting dimensions differ: lhs has 8, rhs has 7}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<4x8xf32>, tensor<7x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

// The heads layout swaps two batch-side dimensions: a rank-2 operand has
// none.
func.func @matmul_heads_rank(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+2 {{lhs in the heads layout needs rank >= 3, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b heads_a : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

// heads_b reads [2, 8, 4, 16] as [2, 4, 8, 16]: its batch is [2, 4].
func.func @matmul_heads_batch(%a: tensor<2x8x4x16xf32>, %b: tensor<2x8x4x16xf32>) {
  // expected-error @+2 {{batch dimensions differ: [2, 8] and [2, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b transpose_b heads_b : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x4xf32>
  return
}

// -----

func.func @matmul_transposed_contracting(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+2 {{contracting dimensions differ: lhs has 8, rhs has 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b transpose_b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error @+2 {{batch dimensions differ: [2] and [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  return
}

// -----

func.func @matmul_rhs_rank(%a: tensor<2x3x4x8xf32>, %b: tensor<3x8x16xf32>) {
  // expected-error @+2 {{rhs must have rank 2 or the rank of lhs (4), got 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<2x3x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x3x4x16xf32>
  return
}

// -----

func.func @matmul_element_types(%a: tensor<4x8xf32>, %b: tensor<8x16xbf16>) {
  // expected-error @+2 {{lhs and rhs must have the same element type, got 'f32' and 'bf16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xbf16>) -> tensor<4x16xf32>
  return
}

// -----

func.func @matmul_wrong_result(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+2 {{'strata.matmul' op inferred type(s) 'tensor<4x16xf32>' are incompatible with return type(s) of operation 'tensor<4x15xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x15xf32>
  return
}

// -----

func.func @matmul_dynamic(%a: tensor<?x8xf32>, %b: tensor<8x16xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f32 or bf16}}
  %0 = strata.matmul %a, %b : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @matmul_f16(%a: tensor<4x8xf16>, %b: tensor<8x16xf16>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f32 or bf16}}
  %0 = strata.matmul %a, %b : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  return
}

// -----

func.func @bias_size(%x: tensor<4x8xf32>, %b: tensor<7xf32>) {
  // expected-error @+2 {{bias must be 1-D of size 8 (dimension 1 of the input), got 'tensor<7xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.bias_add %x, %b : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @bias_axis(%x: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.bias_add %x, %b axis = 2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @add_types(%a: tensor<4x8xf32>, %b: tensor<4x9xf32>) {
  // expected-error @+1 {{'strata.add' op requires the same type for all operands and results}}
  %0 = "strata.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x9xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @relu_int(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f32 or bf16}}
  %0 = strata.relu %a : tensor<4xi32>
  return
}

// -----

func.func @softmax_scale(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'strata.softmax' op scale must be positive, got -1}}
  %0 = strata.softmax %a scale = -1.0 : tensor<4x4xf32>
  return
}

// -----

func.func @softmax_causal_square(%a: tensor<4x5xf32>) {
  // expected-error @+1 {{'strata.softmax' op causal softmax needs square trailing dimensions [S, S], got 'tensor<4x5xf32>'}}
  %0 = strata.softmax %a causal : tensor<4x5xf32>
  return
}

// -----

func.func @layer_norm_gamma(%x: tensor<2x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{gamma must be 1-D of size 8, got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{epsilon must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.layer_norm %x, %g, %b epsilon = 0.0 : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @embedding_table(%t: tensor<10xf32>, %i: tensor<2x3xi32>) {
  // expected-error @+2 {{table must be 2-D [V, H], got 'tensor<10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.embedding %t, %i : (tensor<10xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @embedding_float_indices(%t: tensor<10x4xf32>, %i: tensor<2x3xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of i32 or i64}}
  %0 = strata.embedding %t, %i : (tensor<10x4xf32>, tensor<2x3xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @position_embedding_short(%x: tensor<2x16x8xf32>, %t: tensor<8x8xf32>) {
  // expected-error @+2 {{table must be [P, 8] with P >= 16, got 'tensor<8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.position_embedding %x, %t : (tensor<2x16x8xf32>, tensor<8x8xf32>) -> tensor<2x16x8xf32>
  return
}

// -----

func.func @position_embedding_rank(%x: tensor<16x8xf32>, %t: tensor<16x8xf32>) {
  // expected-error @+2 {{input must be 3-D [B, S, H], got 'tensor<16x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.position_embedding %x, %t : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'strata.reshape' op element count differs: 32 vs 30}}
  %0 = strata.reshape %x : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'strata.reshape' op cannot change the element type ('f32' to 'bf16')}}
  %0 = strata.reshape %x : tensor<4x8xf32> -> tensor<32xbf16>
  return
}

// -----

func.func @transpose_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation [0, 0, 1] is not a permutation of [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.transpose %x [0, 0, 1] : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  return
}

// -----

func.func @transpose_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{permutation [1, 0] is not a permutation of [0, 3)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.transpose %x [1, 0] : tensor<2x3x4xf32> -> tensor<3x2xf32>
  return
}

// -----

func.func @flatten_rank(%x: tensor<8xf32>) {
  // expected-error @+2 {{input must have rank >= 2, got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.flatten %x : tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{input has 3 channels but the filter expects 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{input and filter must be 4-D (NCHW, OIHW)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x8x8xf32>
  return
}

// -----

func.func @conv_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{strides must be positive, got [0, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.conv2d %x, %w strides = [0, 1] padding = [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_padding(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{padding must be non-negative, got [-1, 1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.conv2d %x, %w strides = [1, 1] padding = [-1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_window(%x: tensor<1x3x2x2xf32>, %w: tensor<4x3x5x5xf32>) {
  // expected-error @+2 {{window [5, 5] does not fit the padded input 'tensor<1x3x2x2xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.conv2d %x, %w strides = [1, 1] padding = [1, 1] : (tensor<1x3x2x2xf32>, tensor<4x3x5x5xf32>) -> tensor<1x4x1x1xf32>
  return
}

// -----

func.func @conv_pair(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'strata.conv2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements}}
  %0 = strata.conv2d %x, %w strides = [1, 1, 1] padding = [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @pool_padding(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{padding [2, 2] must be smaller than the kernel [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [2, 2] : tensor<1x3x8x8xf32> -> tensor<1x3x6x6xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{window sizes must be positive, got [0, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.max_pool2d %x kernel = [0, 2] strides = [2, 2] padding = [0, 0] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<3x8x8xf32>) {
  // expected-error @+2 {{input must be 4-D (NCHW), got 'tensor<3x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0] : tensor<3x8x8xf32> -> tensor<3x4x4xf32>
  return
}

// -----

func.func @gap_rank(%x: tensor<3x8x8xf32>) {
  // expected-error @+2 {{input must be 4-D (NCHW), got 'tensor<3x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.global_avg_pool %x : tensor<3x8x8xf32> -> tensor<3x8xf32>
  return
}

// -----

func.func @ce_labels(%l: tensor<4x10xf32>, %y: tensor<5xi32>) {
  // expected-error @+2 {{labels must have shape [4] (the logits without the class dimension), got [5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<5xi32>) -> tensor<f32>
  return
}

// -----

func.func @ce_rank(%l: tensor<10xf32>, %y: tensor<i32>) {
  // expected-error @+2 {{logits must have rank >= 2, got 'tensor<10xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.softmax_cross_entropy %l, %y : (tensor<10xf32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

func.func @ce_result(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of 32-bit float values}}
  %0 = strata.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

func.func @mse_types(%a: tensor<4x10xf32>, %b: tensor<4x9xf32>) {
  // expected-error @+2 {{input and target must have the same type, got 'tensor<4x10xf32>' and 'tensor<4x9xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.mse_loss %a, %b : (tensor<4x10xf32>, tensor<4x9xf32>) -> tensor<f32>
  return
}

// -----

// A zero-sized dimension is rejected: passes divide by dimensions.
func.func @zero_dim(%a: tensor<4x0xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f32 or bf16 (dimensions >= 1, at most 2^48 bytes)}}
  %0 = strata.relu %a : tensor<4x0xf32>
  return
}

// -----

// 2^24 x 2^23 f32 elements are 2^49 bytes, over the 2^48-byte limit.
func.func @too_many_bytes(%a: tensor<16777216x8388608xf32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f32 or bf16 (dimensions >= 1, at most 2^48 bytes)}}
  %0 = strata.relu %a : tensor<16777216x8388608xf32>
  return
}

// -----

// 2^24 x 2^22 f32 elements are exactly 2^48 bytes: the largest tensor.
func.func @largest_tensor(%a: tensor<16777216x4194304xf32>) {
  %0 = strata.relu %a : tensor<16777216x4194304xf32>
  return
}

// -----

// An index tensor with a zero-sized dimension.
func.func @zero_dim_labels(%l: tensor<4x10xf32>, %y: tensor<0xi32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of i32 or i64 (dimensions >= 1, at most 2^48 bytes)}}
  %0 = strata.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<0xi32>) -> tensor<f32>
  return
}

// -----

// A swap out must be waited for in its block.
func.func @swap_out_unwaited(%x: tensor<4xf32>) {
  // expected-error @+1 {{'strata.swap_out' op of slot 0 has no strata.swap_out_wait of the same slot and tensor after it in its block}}
  strata.swap_out %x slot = 0 : tensor<4xf32>
  return
}

// -----

func.func @swap_out_wait_without_start(%x: tensor<4xf32>) {
  // expected-error @+1 {{'strata.swap_out_wait' op of slot 1 waits for no strata.swap_out of the same slot and tensor before it in its block}}
  strata.swap_out_wait %x slot = 1 : tensor<4xf32>
  return
}

// -----

// The copy back's bytes are valid only after its wait.
func.func @swap_in_read_early() -> tensor<4xf32> {
  %in = strata.swap_in slot = 0 : tensor<4xf32>
  // expected-error @+1 {{'strata.relu' op reads the result of the strata.swap_in of slot 0 before its strata.swap_in_wait}}
  %r = strata.relu %in : tensor<4xf32>
  strata.swap_in_wait %in slot = 0 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @swap_in_wait_wrong_slot() -> tensor<4xf32> {
  %in = strata.swap_in slot = 0 : tensor<4xf32>
  strata.swap_in_wait %in slot = 0 : tensor<4xf32>
  // expected-error @+1 {{'strata.swap_in_wait' op of slot 2 must wait for the result of a strata.swap_in of the same slot}}
  strata.swap_in_wait %in slot = 2 : tensor<4xf32>
  return %in : tensor<4xf32>
}

// -----

func.func @swap_in_unwaited() -> tensor<4xf32> {
  // expected-error @+1 {{'strata.swap_in' op of slot 0 has no strata.swap_in_wait of the same slot in its block}}
  %in = strata.swap_in slot = 0 : tensor<4xf32>
  return %in : tensor<4xf32>
}

// -----

func.func @compress_bytes(%x: tensor<4x25xf32>) {
  // expected-error @+1 {{'strata.compress' op result must hold the 68 packed bytes of the widest candidate format, got 64}}
  %c = strata.compress %x format <"mxfp4"> : tensor<4x25xf32> -> tensor<64xi8>
  return
}

// -----

func.func @compress_not_candidate(%x: tensor<4x25xf32>) {
  // expected-error @+1 {{'strata.compress' op format #strata.act_format<"mxfp8e4m3"> must be one of its candidates}}
  %c = strata.compress %x format <"mxfp8e4m3"> candidates [#strata.act_format<"mxfp4">] : tensor<4x25xf32> -> tensor<68xi8>
  return
}

// -----

func.func @compress_budget(%x: tensor<4x25xf32>) {
  // expected-error @+1 {{'strata.compress' op budget must be a positive number, got -1}}
  %c = strata.compress %x format <"mxfp4"> budget -1.0 : tensor<4x25xf32> -> tensor<68xi8>
  return
}

// -----

func.func @compress_format_name(%x: tensor<4x25xf32>) {
  // expected-error @+1 {{invalid activation format 'mxfp3': unknown format 'mxfp3'}}
  %c = strata.compress %x format <"mxfp3"> : tensor<4x25xf32> -> tensor<68xi8>
  return
}

// -----

func.func @compress_format_spelling(%x: tensor<4x25xf32>) {
  // expected-error @+1 {{activation format 'bfp:m=4' must be spelled canonically: 'bfp:m=4,block=32'}}
  %c = strata.compress %x format <"bfp:m=4"> : tensor<4x25xf32> -> tensor<84xi8>
  return
}

// -----

func.func @decompress_source(%b: tensor<68xi8>) {
  // expected-error @+1 {{'strata.decompress' op input must be the result of a strata.compress}}
  %y = strata.decompress %b : tensor<68xi8> -> tensor<4x25xf32>
  return
}

// -----

func.func @decompress_type(%x: tensor<4x25xf32>) {
  %c = strata.compress %x format <"mxfp4"> : tensor<4x25xf32> -> tensor<68xi8>
  // expected-error @+1 {{'strata.decompress' op result type 'tensor<100xf32>' must be the compressed tensor's type 'tensor<4x25xf32>'}}
  %y = strata.decompress %c : tensor<68xi8> -> tensor<100xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x8x3x3xf32>, %g: tensor<8xf32>, %v: tensor<4xf32>) {
  // expected-error @+2 {{running_mean must be 1-D of the 8 channels, got 'tensor<4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:5 = strata.batch_norm %x, %g, %g, %v, %g : (tensor<2x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<2x8x3x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// Training-mode statistics need more than one value per channel.
func.func @batch_norm_one_value(%x: tensor<1x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{batch normalisation needs more than one value per channel, got 'tensor<1x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:5 = strata.batch_norm %x, %g, %g, %g, %g : (tensor<1x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<1x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{input must have rank >= 2 ([N, C, ...]), got 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:5 = strata.batch_norm %x, %g, %g, %g, %g : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{momentum must lie in [0, 1], got 1.5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:5 = strata.batch_norm %x, %g, %g, %g, %g momentum = 1.5 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @batch_norm_epsilon(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{epsilon must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:5 = strata.batch_norm %x, %g, %g, %g, %g epsilon = 0.0 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

func.func @slice_range(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{range [6, 6 + 4) does not fit dimension 1 of 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.slice %x axis = 1 offset = 6 size = 4 : tensor<2x8xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_axis(%x: tensor<2x8xf32>) {
  // expected-error @+2 {{axis 2 is out of range for 'tensor<2x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.slice %x axis = 2 offset = 0 size = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{input #1 'tensor<3x3xf32>' differs from input #0 'tensor<2x3xf32>' in dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.concat %a, %b axis = 1 : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = strata.concat axis = 0 : () -> tensor<2xf32>
  return
}
