//===- TensorTest.cpp - Tests of the tensor helpers -----------------------===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
//===----------------------------------------------------------------------===//

#include "strata-rt/Tensor.h"

#include <gtest/gtest.h>

namespace strata::rt {
namespace {

TEST(Tensor, DTypeNames) {
  EXPECT_STREQ(dtypeName(DType::F32), "f32");
  EXPECT_STREQ(dtypeName(DType::I32), "i32");
  DType dtype = DType::F32;
  EXPECT_TRUE(parseDType("i32", dtype));
  EXPECT_EQ(dtype, DType::I32);
  EXPECT_TRUE(parseDType("f32", dtype));
  EXPECT_EQ(dtype, DType::F32);
  EXPECT_FALSE(parseDType("f16", dtype));
  EXPECT_FALSE(parseDType("", dtype));
  EXPECT_EQ(dtype, DType::F32);
}

TEST(Tensor, ShapeHelpers) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({5, 0}), 0);
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({7}), "[7]");
  EXPECT_EQ(formatShape({2, 3, 4}), "[2, 3, 4]");
  TensorDesc desc{DType::I32, {3, 5}};
  EXPECT_EQ(desc.numel(), 15);
  EXPECT_EQ(desc.bytes(), 60);
  Tensor t;
  t.desc = desc;
  EXPECT_EQ(t.dim(-1), 5);
  EXPECT_EQ(t.dim(0), 3);
  EXPECT_EQ(t.rank(), 2);
}

TEST(Tensor, Attrs) {
  Attrs attrs;
  attrs.numbers["axis"] = -1;
  attrs.numbers["causal"] = 1;
  attrs.lists["strides"] = {2, 2};
  EXPECT_TRUE(attrs.has("axis"));
  EXPECT_TRUE(attrs.has("strides"));
  EXPECT_FALSE(attrs.has("padding"));
  EXPECT_EQ(attrs.integer("axis"), -1);
  EXPECT_EQ(attrs.number("scale", 0.5), 0.5);
  EXPECT_TRUE(attrs.flag("causal"));
  EXPECT_FALSE(attrs.flag("transpose_a"));
  EXPECT_EQ(attrs.list("strides"), (std::vector<int64_t>{2, 2}));
  // A missing list is a reference to one shared empty vector.
  const std::vector<int64_t> &missing = attrs.list("padding");
  EXPECT_TRUE(missing.empty());
  EXPECT_EQ(&missing, &attrs.list("kernel"));
}

} // namespace
} // namespace strata::rt
