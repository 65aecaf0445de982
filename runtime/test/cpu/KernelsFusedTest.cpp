//===- KernelsFusedTest.cpp - Fused kernels against their unfused pairs ---===//
//
// Part of the Strata runtime, which never includes an MLIR header.
//
// Every fused kernel must give, bit for bit, what the kernels it replaces
// give: fused_matmul against matmul followed by bias_add / relu / gelu /
// relu_grad / gelu_grad (shapes with edge tiles, several k slices and column
// blocks, transposes, batches, bf16, 1 and 2 threads, every instruction set
// this CPU has), the multi-tensor optimizer groups against one update per
// tensor, and the vectorised optimizer loops against the scalar loop.
//
//===----------------------------------------------------------------------===//

#include "GemmBf16Internal.h"
#include "GemmInternal.h"
#include "KernelTestUtil.h"
#include "OptimInternal.h"
#include "strata-rt/Plan.h"

#include <cstring>

namespace strata::rt::test {
namespace {

using strata_plan::Epilogue;

/// Expects the same bits in `actual` and `expected`; names the first
/// difference.
void expectSameBits(const std::vector<float> &actual,
                    const std::vector<float> &expected,
                    const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k)
    if (std::memcmp(&actual[k], &expected[k], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << k << " of " << actual.size()
                    << " is " << actual[k] << ", unfused " << expected[k];
      return;
    }
}

/// One product of the tests: operand shapes and attributes.
struct Product {
  Shape a, b;
  bool ta = false, tb = false;
  /// Small blocks (many k slices and column blocks), or the defaults. A
  /// bf16 product takes the cache blocks (each bf16 path keeps its own
  /// register tile).
  bool smallBlocks = false;
};

Attrs productAttrs(const Product &p, bool bf16, double epilogue = 0) {
  Attrs attrs = makeAttrs({{"transpose_a", p.ta}, {"transpose_b", p.tb}});
  if (bf16)
    attrs.numbers["bf16"] = 1;
  if (p.smallBlocks)
    for (auto [name, value] : {std::pair<const char *, double>{"mc", 24},
                               {"nc", 32},
                               {"kc", 48},
                               {"mr", 6},
                               {"nr", 16}})
      attrs.numbers[name] = value;
  if (epilogue != 0)
    attrs.numbers["epilogue"] = epilogue;
  return attrs;
}

Shape productShape(const Product &p) {
  int64_t r = p.a.size();
  Shape c(p.a.begin(), p.a.end() - 2);
  c.push_back(p.ta ? p.a[r - 1] : p.a[r - 2]);
  c.push_back(p.tb ? p.b[p.b.size() - 2] : p.b.back());
  return c;
}

const Product kProducts[] = {
    {{37, 300}, {300, 45}, false, false, true}, // edges, 7 k slices
    {{37, 300}, {300, 45}},                     // the default blocking
    {{300, 29}, {70, 300}, true, true, true},   // both transposed
    {{3, 17, 40}, {40, 33}},                    // a linear layer (one GEMM)
    {{2, 3, 9, 20}, {2, 3, 20, 11}},            // separate products
    {{4, 13, 20}, {4, 21, 20}, false, true},    // batched, transposed B
};

/// The fused kernel against the unfused pair for one epilogue; `withPre`:
/// bias_relu / bias_gelu also write the pre-activation.
void checkEpilogue(Epilogue kind, bool withPre, bool bf16, int threads) {
  std::string name = strata_plan::epilogueName(static_cast<int64_t>(kind));
  for (const Product &p : kProducts) {
    std::string what = name + (withPre ? "+pre" : "") + (bf16 ? " bf16" : "") +
                       ", " + formatShape(p.a) + " x " + formatShape(p.b) +
                       (p.smallBlocks ? " small" : "") + ", threads " +
                       std::to_string(threads);
    Random rng(91 + static_cast<int>(kind));
    HostTensor a = rng.tensor(p.a), b = rng.tensor(p.b, 0.2f);
    Shape c = productShape(p);
    bool hasBias = strata_plan::epilogueHasBias(kind);
    HostTensor operand = hasBias ? rng.tensor({c.back()}) : rng.tensor(c);
    // residual, bias_residual: the addend (the add's other operand).
    HostTensor addend = rng.tensor(c);

    // Unfused: matmul, then the element-wise kernels.
    HostTensor product = f32(c), sum = f32(c), unfused = f32(c);
    runKernel("matmul", {&a, &b}, {&product}, productAttrs(p, bf16), threads);
    switch (kind) {
    case Epilogue::Bias:
      runKernel("bias_add", {&product, &operand}, {&unfused}, {}, threads);
      break;
    case Epilogue::BiasRelu:
    case Epilogue::BiasGelu:
      runKernel("bias_add", {&product, &operand}, {&sum}, {}, threads);
      runKernel(kind == Epilogue::BiasRelu ? "relu" : "gelu", {&sum},
                {&unfused}, {}, threads);
      break;
    case Epilogue::ReluGrad:
      runKernel("relu_grad", {&product, &operand}, {&unfused}, {}, threads);
      break;
    case Epilogue::GeluGrad:
      runKernel("gelu_grad", {&product, &operand}, {&unfused}, {}, threads);
      break;
    case Epilogue::Residual:
      // The add's other operand first, as a residual connection x + f(x).
      runKernel("add", {&operand, &product}, {&unfused}, {}, threads);
      break;
    case Epilogue::BiasResidual:
      runKernel("bias_add", {&product, &operand}, {&sum}, {}, threads);
      runKernel("add", {&sum, &addend}, {&unfused}, {}, threads);
      break;
    }

    HostTensor fused = f32(c), pre = f32(c);
    std::vector<HostTensor *> outputs{&fused};
    if (withPre)
      outputs.push_back(&pre);
    std::vector<HostTensor *> inputs{&a, &b, &operand};
    if (kind == Epilogue::BiasResidual)
      inputs.push_back(&addend);
    runKernel("fused_matmul", inputs, outputs,
              productAttrs(p, bf16, static_cast<double>(kind)), threads);
    expectSameBits(fused.f, unfused.f, what);
    if (withPre)
      expectSameBits(pre.f, sum.f, what + ", pre-activation");
  }
}

TEST(KernelsFused, EpiloguesMatchTheUnfusedKernels) {
  for (bool bf16 : {false, true})
    for (int threads : {1, 2}) {
      checkEpilogue(Epilogue::Bias, false, bf16, threads);
      checkEpilogue(Epilogue::BiasRelu, false, bf16, threads);
      checkEpilogue(Epilogue::BiasRelu, true, bf16, threads);
      checkEpilogue(Epilogue::BiasGelu, false, bf16, threads);
      checkEpilogue(Epilogue::BiasGelu, true, bf16, threads);
      checkEpilogue(Epilogue::ReluGrad, false, bf16, threads);
      checkEpilogue(Epilogue::GeluGrad, false, bf16, threads);
      checkEpilogue(Epilogue::Residual, false, bf16, threads);
      checkEpilogue(Epilogue::BiasResidual, false, bf16, threads);
    }
}

/// The GEMM drivers' epilogue hook on every instruction set this CPU has:
/// C with the epilogue equals C, then the epilogue over the whole matrix.
TEST(KernelsFused, EveryGemmPathAppliesTheEpilogueOnce) {
  Random rng(97);
  const int64_t m = 53, n = 70, k = 530;
  HostTensor a = rng.tensor({m, k}), b = rng.tensor({k, n}, 0.1f);
  HostTensor bias = rng.tensor({n}), aux = rng.tensor({m, n});
  ThreadPool pool(2);
  for (Epilogue kind :
       {Epilogue::BiasGelu, Epilogue::GeluGrad, Epilogue::BiasResidual}) {
    detail::GemmEpilogue epilogue;
    epilogue.kind = kind;
    epilogue.bias = bias.f.data();
    epilogue.aux = aux.f.data();
    epilogue.ldaux = n;
    auto check = [&](const std::string &what, auto &&product) {
      std::vector<float> plain(m * n), fused(m * n);
      product(plain.data(), nullptr);
      epilogue.apply(0, 0, m, n, plain.data(), n);
      product(fused.data(), &epilogue);
      expectSameBits(fused, plain,
                     what + " " +
                         strata_plan::epilogueName(static_cast<int64_t>(kind)));
    };
    for (detail::GemmIsa isa : {detail::GemmIsa::Scalar, detail::GemmIsa::Avx2,
                                detail::GemmIsa::Avx512}) {
      if (!detail::gemmIsaSupported(isa))
        continue;
      GemmTiling tiling{24, 32, 100, 6, 16};
      check(detail::gemmIsaName(isa), [&](float *c,
                                          const detail::GemmEpilogue *e) {
        detail::gemmWithIsa(isa, &pool, tiling, false, false, m, n, k, 1.0f,
                            a.f.data(), k, b.f.data(), n, 0.0f, c, n, e);
      });
    }
    for (detail::Bf16Isa isa :
         {detail::Bf16Isa::Fallback, detail::Bf16Isa::Avx512Bf16,
          detail::Bf16Isa::Amx}) {
      if (!detail::bf16IsaSupported(isa))
        continue;
      check(detail::bf16IsaName(isa),
            [&](float *c, const detail::GemmEpilogue *e) {
              detail::gemmBf16WithIsa(isa, &pool, false, false, m, n, k, 1.0f,
                                      Bf16Operand::f32(a.f.data(), k),
                                      Bf16Operand::f32(b.f.data(), n), 0.0f, c,
                                      n, nullptr, e);
            });
    }
  }
}

/// A matmul reading (heads_a, heads_b) or writing (heads_c) the heads
/// layout gives, bit for bit, the transposes and the plain matmul it
/// replaces: attention's q k^T and p v, and the backward's products.
TEST(KernelsFused, HeadsLayoutMatchesTheTranspose) {
  const std::vector<int64_t> swap{0, 2, 1, 3};
  auto transposed = [&](HostTensor &x, int threads) {
    Shape s = x.desc.shape;
    std::swap(s[1], s[2]);
    HostTensor y = f32(s);
    runKernel("transpose", {&x}, {&y}, makeAttrs({}, {{"permutation", swap}}),
              threads);
    return y;
  };
  struct Case {
    Shape a, b; // the stored shapes ([B, T, H, D] where heads)
    bool ta, tb, ha, hb, hc;
  };
  const Case cases[] = {
      {{2, 33, 3, 16}, {2, 33, 3, 16}, false, true, true, true, false},
      {{2, 3, 33, 33}, {2, 33, 3, 16}, false, false, false, true, true},
      {{2, 3, 33, 33}, {2, 33, 3, 16}, true, false, false, true, false},
      {{2, 33, 3, 16}, {2, 3, 16, 20}, false, false, true, false, true},
  };
  for (const Case &c : cases)
    for (bool bf16 : {false, true})
      for (int threads : {1, 2}) {
        Random rng(17);
        HostTensor a = rng.tensor(c.a), b = rng.tensor(c.b, 0.3f);
        // Unfused: transpose the heads operands, multiply, transpose back.
        HostTensor la = c.ha ? transposed(a, threads) : a,
                   lb = c.hb ? transposed(b, threads) : b;
        Product p{la.desc.shape, lb.desc.shape, c.ta, c.tb};
        Shape cs = productShape(p);
        HostTensor product = f32(cs);
        runKernel("matmul", {&la, &lb}, {&product}, productAttrs(p, bf16),
                  threads);
        HostTensor expected = c.hc ? transposed(product, threads) : product;

        Attrs attrs = productAttrs(p, bf16);
        attrs.numbers["heads_a"] = c.ha;
        attrs.numbers["heads_b"] = c.hb;
        attrs.numbers["heads_c"] = c.hc;
        HostTensor fused = f32(expected.desc.shape);
        runKernel("matmul", {&a, &b}, {&fused}, attrs, threads);
        expectSameBits(fused.f, expected.f,
                       formatShape(c.a) + " x " + formatShape(c.b) +
                           (bf16 ? " bf16" : "") + ", threads " +
                           std::to_string(threads));
      }
  // A rank-2 operand has no heads layout.
  EXPECT_EQ(verifyMessage("matmul", {desc({4, 8}), desc({8, 5})},
                          {desc({4, 5})}, makeAttrs({{"heads_a", 1}})),
            "input #0 must have rank at least 3, got shape [4, 8]");
}

TEST(KernelsFused, VerifyRejectsBadEpilogues) {
  Attrs bias = makeAttrs({{"epilogue", 1}});
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5})}, bias),
            "");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({4})},
                          {desc({4, 5})}, bias),
            "input #2 must have shape [5], got [4]");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5}), desc({4, 5})}, bias),
            "expected 1 output, got 2");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({4, 5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 4}})),
            "");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 4}})),
            "input #2 must have shape [4, 5], got [5]");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 9}})),
            "attribute 'epilogue' must be an integer in [1, 7], got 9");
  // residual: the addend has the result's shape; bias_residual: a bias and
  // an addend.
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({4, 5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 6}})),
            "");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5}), desc({4, 5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 7}})),
            "");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 7}})),
            "expected 4 inputs, got 3");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5}), desc({5, 4})},
                          {desc({4, 5})}, makeAttrs({{"epilogue", 7}})),
            "input #3 must have shape [4, 5], got [5, 4]");
  EXPECT_EQ(verifyMessage("fused_matmul",
                          {desc({4, 8}), desc({8, 5}), desc({5})},
                          {desc({4, 5})}),
            "missing attribute 'epilogue'");
  // The heads layouts are matmul's; a fused matmul's kernel has none.
  EXPECT_EQ(verifyMessage(
                "fused_matmul",
                {desc({2, 9, 3, 8}), desc({2, 3, 8, 5}), desc({2, 3, 9, 5})},
                {desc({2, 3, 9, 5})},
                makeAttrs({{"epilogue", 6}, {"heads_a", 1}})),
            "heads_a, heads_b and heads_c apply to matmul only");
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// Values spread over many binades (and both signs), so that a contracted
/// multiply-add or a different operation order would change some bits.
HostTensor spread(Random &rng, Shape shape, float scale) {
  HostTensor t = rng.tensor(std::move(shape));
  for (float &x : t.f)
    x *= scale * std::ldexp(1.0f, rng.integer(-20, 4));
  return t;
}

TEST(KernelsFused, OptimizerLoopsAreBitIdenticalOnEveryIsa) {
  Random rng(61);
  const int64_t n = 1000 + 13;
  HostTensor p = spread(rng, {n}, 1.0f), g = spread(rng, {n}, 0.1f),
             m = spread(rng, {n}, 0.01f), v = rng.tensor({n}, 1e-4f);
  for (float &x : v.f)
    x = std::fabs(x);
  for (bool decoupled : {false, true}) {
    OpAttrs attrs = decodeAttrsOrThrow(
        OpCode::AdamUpdate, makeAttrs({{"lr", 1e-3},
                                       {"weight_decay", 0.01},
                                       {"decoupled", decoupled ? 1.0 : 0.0}}));
    detail::AdamConstants k = detail::adamConstants(attrs, 7);
    std::vector<float> ref[3], got[3];
    for (auto &r : ref)
      r.assign(n, 0.0f);
    detail::adamLoop(detail::GemmIsa::Scalar, k, p.f.data(), g.f.data(),
                     m.f.data(), v.f.data(), ref[0].data(), ref[1].data(),
                     ref[2].data(), n);
    for (detail::GemmIsa isa :
         {detail::GemmIsa::Avx2, detail::GemmIsa::Avx512}) {
      if (!detail::gemmIsaSupported(isa))
        continue;
      for (auto &r : got)
        r.assign(n, 0.0f);
      // An odd start and length: the tails of both vector widths.
      detail::adamLoop(isa, k, p.f.data(), g.f.data(), m.f.data(), v.f.data(),
                       got[0].data(), got[1].data(), got[2].data(), 3);
      detail::adamLoop(isa, k, p.f.data() + 3, g.f.data() + 3, m.f.data() + 3,
                       v.f.data() + 3, got[0].data() + 3, got[1].data() + 3,
                       got[2].data() + 3, n - 3);
      std::string what = std::string("adam ") + detail::gemmIsaName(isa) +
                         (decoupled ? " decoupled" : "");
      expectSameBits(got[0], ref[0], what + " param");
      expectSameBits(got[1], ref[1], what + " m");
      expectSameBits(got[2], ref[2], what + " v");
    }
  }
  OpAttrs sgd = decodeAttrsOrThrow(
      OpCode::SgdUpdate,
      makeAttrs({{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 1e-3}}));
  detail::SgdConstants k = detail::sgdConstants(sgd);
  std::vector<float> refP(n), refV(n);
  detail::sgdLoop(detail::GemmIsa::Scalar, k, p.f.data(), g.f.data(),
                  m.f.data(), refP.data(), refV.data(), n);
  for (detail::GemmIsa isa : {detail::GemmIsa::Avx2, detail::GemmIsa::Avx512}) {
    if (!detail::gemmIsaSupported(isa))
      continue;
    std::vector<float> gotP(n), gotV(n);
    detail::sgdLoop(isa, k, p.f.data(), g.f.data(), m.f.data(), gotP.data(),
                    gotV.data(), n);
    expectSameBits(gotP, refP,
                   std::string("sgd param ") + detail::gemmIsaName(isa));
    expectSameBits(gotV, refV,
                   std::string("sgd velocity ") + detail::gemmIsaName(isa));
  }
}

/// A multi-tensor group (three tensors, one longer than a chunk) against
/// one update per tensor, in place, over three steps.
void checkGroup(const std::string &op, int threads) {
  const Shape shapes[] = {{40000}, {33, 7}, {1}};
  Random rng(71);
  struct Member {
    HostTensor p, s1, s2;
    HostTensor refP, refS1, refS2;
  };
  std::vector<Member> members;
  for (const Shape &s : shapes) {
    Member mb{rng.tensor(s), rng.tensor(s, 0.1f), f32(s), {}, {}, {}};
    for (float &x : mb.s2.f)
      x = rng.uniform(0.0f, 1e-3f);
    mb.refP = mb.p;
    mb.refS1 = mb.s1;
    mb.refS2 = mb.s2;
    members.push_back(std::move(mb));
  }
  bool adam = op == "adam_update";
  Attrs attrs = adam ? makeAttrs({{"lr", 1e-3},
                                  {"weight_decay", 0.1},
                                  {"decoupled", 1},
                                  {"multi_tensor", 1}})
                     : makeAttrs({{"lr", 0.05},
                                  {"momentum", 0.9},
                                  {"weight_decay", 1e-4},
                                  {"multi_tensor", 1}});
  const OpKernel &kernel =
      kernelFor(adam ? OpCode::AdamUpdate : OpCode::SgdUpdate);
  ASSERT_NE(kernel.runGroup, nullptr);
  OpAttrs typed = decodeAttrsOrThrow(kernel.op, attrs);
  ThreadPool pool(threads);
  KernelContext ctx{pool, GemmTiling()};
  HostTensor step = i32({});
  for (int t = 1; t <= 3; ++t) {
    step.i = {t};
    std::vector<KernelCall> calls;
    std::vector<HostTensor> grads;
    grads.reserve(members.size());
    for (Member &mb : members) {
      grads.push_back(rng.tensor(mb.p.desc.shape));
      HostTensor &g = grads.back();
      if (adam) {
        runKernel(op, {&mb.refP, &g, &mb.refS1, &mb.refS2, &step},
                  {&mb.refP, &mb.refS1, &mb.refS2}, attrs, threads);
        calls.push_back(
            {{mb.p.view(), g.view(), mb.s1.view(), mb.s2.view(), step.view()},
             {mb.p.view(), mb.s1.view(), mb.s2.view()},
             &typed});
      } else {
        runKernel(op, {&mb.refP, &g, &mb.refS1}, {&mb.refP, &mb.refS1}, attrs,
                  threads);
        calls.push_back({{mb.p.view(), g.view(), mb.s1.view()},
                         {mb.p.view(), mb.s1.view()},
                         &typed});
      }
    }
    kernel.runGroup(ctx, calls);
    for (size_t j = 0; j < members.size(); ++j) {
      std::string what = op + " group, tensor " + std::to_string(j) +
                         ", step " + std::to_string(t) + ", threads " +
                         std::to_string(threads);
      expectSameBits(members[j].p.f, members[j].refP.f, what + " param");
      expectSameBits(members[j].s1.f, members[j].refS1.f, what + " state");
      if (adam)
        expectSameBits(members[j].s2.f, members[j].refS2.f, what + " v");
    }
  }
}

TEST(KernelsFused, MultiTensorGroupsMatchOneUpdatePerTensor) {
  for (int threads : {1, 2}) {
    checkGroup("adam_update", threads);
    checkGroup("sgd_update", threads);
  }
}

TEST(KernelsFused, AdamGroupMembersCountTheirOwnUpdates) {
  // An asynchronous schedule's adam_update carries `update u of U`; each
  // member of a group must use its own t = (step - 1) U + u + 1.
  const Shape shapes[] = {{40000}, {33, 7}, {5}};
  const Attrs memberAttrs[] = {
      makeAttrs({{"lr", 1e-3},
                 {"decoupled", 1},
                 {"update", 0},
                 {"updates", 3},
                 {"multi_tensor", 1}}),
      makeAttrs({{"lr", 1e-3},
                 {"decoupled", 1},
                 {"update", 2},
                 {"updates", 3},
                 {"multi_tensor", 1}}),
      makeAttrs({{"lr", 1e-3}, {"decoupled", 1}, {"multi_tensor", 1}})};
  const OpKernel &kernel = kernelFor(OpCode::AdamUpdate);
  ASSERT_NE(kernel.runGroup, nullptr);
  Random rng(73);
  HostTensor step = i32({});
  step.i = {2};
  for (int threads : {1, 2}) {
    std::vector<HostTensor> p, m, v, g, refP, refM, refV;
    std::vector<OpAttrs> typed;
    for (size_t j = 0; j < 3; ++j) {
      p.push_back(rng.tensor(shapes[j]));
      m.push_back(rng.tensor(shapes[j], 0.1f));
      v.push_back(f32(shapes[j]));
      for (float &x : v.back().f)
        x = rng.uniform(0.0f, 1e-3f);
      g.push_back(rng.tensor(shapes[j]));
      typed.push_back(decodeAttrsOrThrow(OpCode::AdamUpdate, memberAttrs[j]));
    }
    refP = p, refM = m, refV = v;
    std::vector<KernelCall> calls;
    for (size_t j = 0; j < 3; ++j) {
      runKernel("adam_update", {&refP[j], &g[j], &refM[j], &refV[j], &step},
                {&refP[j], &refM[j], &refV[j]}, memberAttrs[j], threads);
      calls.push_back(
          {{p[j].view(), g[j].view(), m[j].view(), v[j].view(), step.view()},
           {p[j].view(), m[j].view(), v[j].view()},
           &typed[j]});
    }
    // The comparison can fail: member 1 at t = 6 is not member 1 at t = 2.
    HostTensor plainP = p[1], plainM = m[1], plainV = v[1];
    runKernel("adam_update", {&plainP, &g[1], &plainM, &plainV, &step},
              {&plainP, &plainM, &plainV}, memberAttrs[2], threads);
    EXPECT_NE(plainP.f, refP[1].f);
    ThreadPool pool(threads);
    KernelContext ctx{pool, GemmTiling()};
    kernel.runGroup(ctx, calls);
    for (size_t j = 0; j < 3; ++j) {
      std::string what = "adam group with update u of U, tensor " +
                         std::to_string(j) + ", threads " +
                         std::to_string(threads);
      expectSameBits(p[j].f, refP[j].f, what + " param");
      expectSameBits(m[j].f, refM[j].f, what + " m");
      expectSameBits(v[j].f, refV[j].f, what + " v");
    }
  }
}

TEST(KernelsFused, GroupsEndWhereAMemberReadsAnEarlierMembersResult) {
  // Two updates of one parameter with one multi_tensor id (a grouped update
  // the pipeline scheduler cloned into two adjacent windows) stay two
  // kernels: the second reads the first's new parameter (value 6).
  auto update = [](std::vector<int64_t> in, std::vector<int64_t> out) {
    Instruction inst;
    inst.op = OpCode::AdamUpdate;
    inst.in = std::move(in);
    inst.out = std::move(out);
    inst.attrs.multiTensor = 1;
    return inst;
  };
  std::vector<Instruction> program = {
      update({1, 2, 3, 4, 5}, {6, 7, 8}),
      update({11, 12, 13, 14, 5}, {16, 17, 18}),
      update({6, 22, 7, 8, 5}, {26, 27, 28}),
      update({31, 32, 33, 34, 5}, {36, 37, 38})};
  EXPECT_EQ(multiTensorRuns(program), (std::vector<size_t>{2, 0, 2, 0}));
  program[2].in[0] = 21;
  program[2].in[2] = 23;
  program[2].in[3] = 24;
  EXPECT_EQ(multiTensorRuns(program), (std::vector<size_t>{4, 0, 0, 0}));
}

} // namespace
} // namespace strata::rt::test
