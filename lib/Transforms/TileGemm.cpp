//===- TileGemm.cpp - Attach a CPU GEMM tiling to every matmul ------------===//
//
// Part of the Strata project.
//
//===----------------------------------------------------------------------===//

#include "strata/Transforms/TileGemm.h"
#include "strata/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

namespace mlir::strata {
#define GEN_PASS_DEF_TILEGEMMPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

/// The key of a product `op` (a matmul, or a fused matmul, whose GEMM is a
/// matmul's). `heads`: a heads layout, which the runtime never runs as one
/// tall GEMM even with a rank-2 rhs.
template <typename ProductOp>
static GemmKey gemmKeyOf(ProductOp op, bool heads) {
  auto [batch, m, n, k] = op.getProblemSize();
  auto rhs = cast<RankedTensorType>(op.getRhs().getType());
  std::string dtype;
  llvm::raw_string_ostream os(dtype);
  if (op.getBf16())
    os << "bf16"; // The arithmetic, not the tensors' type.
  else
    rhs.getElementType().print(os);
  return gemmKeyFor(dtype, batch, m, n, k, op.getTransposeA(),
                    op.getTransposeB(), rhs.getRank() == 2 && !heads);
}

GemmKey mlir::strata::getGemmKey(MatmulOp op) {
  return gemmKeyOf(op, op.hasHeadsLayout());
}
GemmKey mlir::strata::getGemmKey(FusedMatmulOp op) {
  return gemmKeyOf(op, false);
}

static int64_t roundUp(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/// The analytic fallback: the runtime's default cache blocks clamped to the
/// problem, with the register tile that wastes the least padded work
/// (weighted by how close each tile gets to the FMA peak).
static GemmTilingAttr modelTiling(MLIRContext *ctx, const GemmKey &key) {
  struct Tile {
    int64_t mr, nr;
    double efficiency;
  };
  static const Tile tiles[] = {
      {12, 32, 1.0}, {8, 32, 0.9}, {4, 32, 0.7}, {8, 16, 0.7}, {4, 16, 0.5}};
  const Tile *best = &tiles[0];
  double bestCost = 0;
  for (const Tile &t : tiles) {
    double padded =
        (double)roundUp(key.m, t.mr) * roundUp(key.n, t.nr) / (key.m * key.n);
    double cost = padded / t.efficiency;
    if (&t == &tiles[0] || cost < bestCost - 1e-9) {
      best = &t;
      bestCost = cost;
    }
  }
  int64_t mr = best->mr, nr = best->nr;
  // The runtime's default cache blocks, shrunk to the problem.
  const ::strata_plan::GemmTiling defaults;
  int64_t mc = std::min<int64_t>(defaults.mc, roundUp(key.m, mr));
  int64_t nc = std::min<int64_t>(defaults.nc, roundUp(key.n, nr));
  int64_t kc = std::min<int64_t>(defaults.kc, key.k);
  return GemmTilingAttr::get(ctx, mc, nc, kc, mr, nr);
}

namespace {
struct TileGemmPass : public strata::impl::TileGemmPassBase<TileGemmPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::optional<TuningDatabase> db;
    if (!database.empty()) {
      llvm::Expected<TuningDatabase> loaded = loadTuningDatabase(database);
      if (!loaded) {
        emitError(module.getLoc()) << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      if (loaded->kind != "cpu") {
        emitError(module.getLoc())
            << "tuning database '" << database << "' holds " << loaded->kind
            << " tilings (target '" << loaded->target
            << "'); --strata-tile-gemm attaches cpu tilings";
        return signalPassFailure();
      }
      db = std::move(*loaded);
    } else if (fallback == GemmFallback::None) {
      emitError(module.getLoc())
          << "--strata-tile-gemm: fallback=none needs a database (db=FILE)";
      return signalPassFailure();
    }

    // Matmuls, and fused matmuls (their GEMM is a matmul's, whether
    // --strata-fuse ran before or after this pass).
    auto tile = [&](auto op) -> WalkResult {
      GemmKey key = getGemmKey(op);
      GemmTilingAttr tiling;
      if (const TuningEntry *entry = db ? db->find(key) : nullptr) {
        const std::map<std::string, int64_t> &t = entry->tiling;
        tiling = GemmTilingAttr::getChecked([&] { return op.emitOpError(); },
                                            ctx, t.at("mc"), t.at("nc"),
                                            t.at("kc"), t.at("mr"), t.at("nr"));
        if (!tiling)
          return WalkResult::interrupt();
        ++numTuned;
      } else if (fallback == GemmFallback::None) {
        op.emitOpError() << "has no tuned tiling for its gemm " << key.dtype
                         << " " << key.str() << " in '" << database
                         << "' (run strata-tune, or use fallback=model)";
        return WalkResult::interrupt();
      } else if (key.dtype == "bf16") {
        // The analytic model is the f32 GEMM's; without a tuned tiling the
        // bf16 GEMM runs the blocking of whichever path the CPU has.
        op->removeAttr(StrataDialect::getGemmTilingAttrName());
        return WalkResult::advance();
      } else {
        tiling = modelTiling(ctx, key);
        ++numModelled;
      }
      op->setAttr(StrataDialect::getGemmTilingAttrName(), tiling);
      return WalkResult::advance();
    };
    auto walked = module.walk([&](Operation *op) -> WalkResult {
      if (auto matmul = dyn_cast<MatmulOp>(op))
        return tile(matmul);
      if (auto fused = dyn_cast<FusedMatmulOp>(op))
        return tile(fused);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
