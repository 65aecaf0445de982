//===- Fuse.cpp - GEMM epilogues and multi-tensor optimizer updates -------===//
//
// Part of the Strata project.
//
// --strata-fuse: matmul + bias_add (+ relu / gelu), matmul + relu_grad /
// gelu_grad and matmul (+ bias_add) + add become strata.fused_matmul
// (rewrite patterns, each checked against the cost model), head-split
// transposes fold into the matmuls that read or write them, and runs of
// consecutive optimizer updates get a common multi_tensor group.
//
//===----------------------------------------------------------------------===//

#include "strata/Dialect/Strata/StrataOps.h"
#include "strata/Transforms/OptionLimits.h"
#include "strata/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::strata {
#define GEN_PASS_DEF_FUSEPASS
#include "strata/Transforms/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Whether `a` and `b` run on the same pipeline device and micro-batch.
bool samePlacement(Operation *a, Operation *b) {
  for (StringRef name : {StrataDialect::getStageAttrName(),
                         StrataDialect::getMicroBatchAttrName(),
                         StrataDialect::getPreviousStepAttrName()})
    if (a->getAttr(name) != b->getAttr(name))
      return false;
  return true;
}

/// Bytes `op` reads and writes, as the cost model counts them.
int64_t getTrafficBytes(Operation *op) {
  auto cost = cast<CostOpInterface>(op);
  return cost.getBytesRead() + cost.getBytesWritten();
}

/// The cost model's verdict: the fused op, reading `operands` and writing
/// `results`, must move fewer bytes than `replaced` (its FLOPs are theirs:
/// the epilogue computes what the replaced element-wise ops computed).
bool fusionPays(ArrayRef<Operation *> replaced, ValueRange operands,
                TypeRange results) {
  int64_t before = 0, after = 0;
  for (Operation *op : replaced)
    before += getTrafficBytes(op);
  for (Value operand : operands)
    after += getTensorBytes(operand.getType());
  for (Type type : results)
    after += getTensorBytes(type);
  return after < before;
}

/// Gives `fused` the discardable attributes (placement, phase, layer,
/// tiling) of the product it replaces, except a cost that no longer applies.
void copyDiscardableAttrs(Operation *product, Operation *fused) {
  for (NamedAttribute attr : product->getDiscardableAttrs())
    if (attr.getName() != StrataDialect::getCostAttrName())
      fused->setAttr(attr.getName(), attr.getValue());
}

/// Creates the fused op in place of `matmul`'s product: the matmul's
/// operands, transposes and bf16, then `epilogueOperand`; the matmul's
/// discardable attributes (placement, phase, layer, tiling) except a cost
/// that no longer applies.
FusedMatmulOp createFused(PatternRewriter &rewriter, Location loc,
                          MatmulOp matmul, EpilogueKind kind,
                          Value epilogueOperand, TypeRange resultTypes) {
  auto fused = FusedMatmulOp::create(
      rewriter, loc, resultTypes, matmul.getLhs(), matmul.getRhs(),
      ValueRange{epilogueOperand}, kind, matmul.getTransposeA(),
      matmul.getTransposeB(), matmul.getBf16());
  copyDiscardableAttrs(matmul, fused);
  return fused;
}

/// Whether `def` may move down to `to`: at most `kMaxMoveDistance` ops
/// later, past no op that updates one of its operands in place.
constexpr int kMaxMoveDistance = 64;
bool canMoveTo(Operation *def, Operation *to) {
  if (def->getBlock() != to->getBlock())
    return false;
  int distance = 0;
  for (Operation *op = def->getNextNode(); op && op != to;
       op = op->getNextNode()) {
    if (++distance > kMaxMoveDistance)
      return false;
    for (unsigned r = 0, e = op->getNumResults(); r < e; ++r) {
      Value updated = getReplacedOperand(op, r);
      if (updated && llvm::is_contained(def->getOperands(), updated))
        return false;
    }
  }
  return true;
}

/// matmul -> bias_add (last dimension) [-> relu | gelu] into one
/// fused_matmul with a bias epilogue.
struct FuseBiasActivation : public OpRewritePattern<BiasAddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BiasAddOp biasAdd,
                                PatternRewriter &rewriter) const override {
    auto matmul = biasAdd.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse() || matmul.hasHeadsLayout() ||
        biasAdd.getNormalizedAxis() != biasAdd.getType().getRank() - 1 ||
        !samePlacement(matmul, biasAdd))
      return rewriter.notifyMatchFailure(biasAdd, "no fusable matmul");
    Value sum = biasAdd.getResult();
    Operation *act = nullptr;
    for (Operation *user : sum.getUsers())
      if (isa<ReluOp, GeluOp>(user) && samePlacement(user, biasAdd) &&
          (!act || user->isBeforeInBlock(act)))
        act = user;
    EpilogueKind kind = !act               ? EpilogueKind::bias
                        : isa<ReluOp>(act) ? EpilogueKind::bias_relu
                                           : EpilogueKind::bias_gelu;
    // A relu's gradient may read the relu's output instead of its input:
    // relu(x) > 0 exactly where x > 0 (NaN and -0 included), so the sum is
    // then needed by nothing else.
    SmallVector<OpOperand *> reluGates;
    if (kind == EpilogueKind::bias_relu)
      for (OpOperand &use : sum.getUses())
        if (isReluGate(use) && act->getBlock() == use.getOwner()->getBlock() &&
            act->isBeforeInBlock(use.getOwner()))
          reluGates.push_back(&use);
    // With an activation, whatever else reads the sum reads the fused op's
    // pre-activation result; without one, the sum is the fused op's result.
    bool keepSum =
        act && llvm::any_of(sum.getUses(), [&](OpOperand &use) {
          return use.getOwner() != act && !llvm::is_contained(reluGates, &use);
        });
    Type type = biasAdd.getType();
    SmallVector<Type> resultTypes{type};
    if (keepSum)
      resultTypes.push_back(type);
    SmallVector<Operation *> replaced{matmul, biasAdd};
    if (act)
      replaced.push_back(act);
    if (!fusionPays(replaced,
                    {matmul.getLhs(), matmul.getRhs(), biasAdd.getBias()},
                    resultTypes))
      return rewriter.notifyMatchFailure(biasAdd, "saves no memory traffic");

    rewriter.setInsertionPoint(biasAdd);
    FusedMatmulOp fused = createFused(rewriter, matmul.getLoc(), matmul, kind,
                                      biasAdd.getBias(), resultTypes);
    for (OpOperand *use : reluGates)
      rewriter.modifyOpInPlace(use->getOwner(),
                               [&] { use->set(act->getResult(0)); });
    if (act) {
      rewriter.replaceOp(act, fused.getResult());
      if (keepSum)
        rewriter.replaceAllUsesWith(sum, fused.getPreActivation());
    } else {
      rewriter.replaceAllUsesWith(sum, fused.getResult());
    }
    rewriter.eraseOp(biasAdd);
    rewriter.eraseOp(matmul);
    return success();
  }

  /// A use of a relu's input as the input a relu gradient gates on.
  static bool isReluGate(OpOperand &use) {
    Operation *owner = use.getOwner();
    if (auto grad = dyn_cast<ReluGradOp>(owner))
      return &use == &grad.getInputMutable();
    if (auto fused = dyn_cast<FusedMatmulOp>(owner))
      return fused.getEpilogue() == EpilogueKind::relu_grad &&
             use.getOperandNumber() == 2;
    return false;
  }
};

/// matmul -> relu_grad / gelu_grad (the product is the incoming gradient)
/// into one fused_matmul with that epilogue.
template <typename GradOp, EpilogueKind Kind>
struct FuseActivationGrad : public OpRewritePattern<GradOp> {
  using OpRewritePattern<GradOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(GradOp grad,
                                PatternRewriter &rewriter) const override {
    auto matmul = grad.getGrad().template getDefiningOp<MatmulOp>();
    if (!matmul || !matmul->hasOneUse() || matmul.hasHeadsLayout() ||
        grad.getInput() == grad.getGrad() || !samePlacement(matmul, grad))
      return rewriter.notifyMatchFailure(grad, "no fusable matmul");
    if (!fusionPays({matmul, grad},
                    {matmul.getLhs(), matmul.getRhs(), grad.getInput()},
                    grad->getResultTypes()))
      return rewriter.notifyMatchFailure(grad, "saves no memory traffic");
    rewriter.setInsertionPoint(grad);
    FusedMatmulOp fused = createFused(rewriter, matmul.getLoc(), matmul, Kind,
                                      grad.getInput(), grad->getResultTypes());
    rewriter.replaceOp(grad, fused.getResult());
    rewriter.eraseOp(matmul);
    return success();
  }
};

/// matmul -> add, or fused_matmul (bias) -> add, into one fused_matmul with
/// a residual / bias_residual epilogue: the residual connections of a
/// transformer and the sums of two gradient contributions. The product
/// moves to the add (canMoveTo).
struct FuseResidual : public OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    // The later of the two products, so that it moves the least.
    Operation *product = nullptr;
    unsigned index = 0;
    for (unsigned i = 0; i < 2; ++i) {
      Operation *def = add->getOperand(i).getDefiningOp();
      if (!def || !isFusable(def, add))
        continue;
      if (!product || product->isBeforeInBlock(def)) {
        product = def;
        index = i;
      }
    }
    if (!product)
      return rewriter.notifyMatchFailure(add, "no fusable product");
    Value other = add->getOperand(1 - index);
    // The product's operands and flags, typed.
    Value lhs, rhs;
    bool ta, tb, bf16;
    SmallVector<Value> epilogueOperands;
    EpilogueKind kind = EpilogueKind::residual;
    if (auto matmul = dyn_cast<MatmulOp>(product)) {
      lhs = matmul.getLhs();
      rhs = matmul.getRhs();
      ta = matmul.getTransposeA();
      tb = matmul.getTransposeB();
      bf16 = matmul.getBf16();
    } else {
      auto biased = cast<FusedMatmulOp>(product);
      lhs = biased.getLhs();
      rhs = biased.getRhs();
      ta = biased.getTransposeA();
      tb = biased.getTransposeB();
      bf16 = biased.getBf16();
      epilogueOperands.push_back(biased.getEpilogueOperands()[0]);
      kind = EpilogueKind::bias_residual;
    }
    epilogueOperands.push_back(other);
    SmallVector<Value> read{lhs, rhs};
    read.append(epilogueOperands);
    if (!fusionPays({product, add}, read, add->getResultTypes()))
      return rewriter.notifyMatchFailure(add, "saves no memory traffic");
    rewriter.setInsertionPoint(add);
    auto fused = FusedMatmulOp::create(rewriter, product->getLoc(),
                                       add->getResultTypes(), lhs, rhs,
                                       epilogueOperands, kind, ta, tb, bf16);
    copyDiscardableAttrs(product, fused);
    rewriter.replaceOp(add, fused.getResult());
    rewriter.eraseOp(product);
    return success();
  }

  /// A matmul, or a fused_matmul with a bias epilogue alone, whose only use
  /// is `add`, on its device, and that may move to it.
  static bool isFusable(Operation *def, AddOp add) {
    auto matmul = dyn_cast<MatmulOp>(def);
    auto fused = dyn_cast<FusedMatmulOp>(def);
    return ((matmul && !matmul.hasHeadsLayout()) ||
            (fused && fused.getEpilogue() == EpilogueKind::bias &&
             !fused.getPreActivation())) &&
           def->hasOneUse() && samePlacement(def, add) && canMoveTo(def, add);
  }
};

/// Whether `permutation` swaps the two dimensions before the last (the head
/// split of attention) and keeps the others.
bool isHeadsPermutation(ArrayRef<int64_t> permutation) {
  int64_t rank = permutation.size();
  if (rank < 3)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t expected = i == rank - 3 ? rank - 2 : i == rank - 2 ? rank - 3 : i;
    if (permutation[i] != expected)
      return false;
  }
  return true;
}

/// A head-split transpose read by matmuls: each reads the transpose's input
/// in the heads layout instead (heads_a / heads_b), and the transpose goes
/// when nothing else reads it.
struct FoldHeadsIntoOperands : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    // A computed activation, which no op overwrites in place (parameters
    // and states are function arguments or an update's results).
    Operation *producer = transpose.getInput().getDefiningOp();
    if (!isHeadsPermutation(transpose.getPermutation()) || !producer ||
        isa<InPlaceOpInterface, StatefulOpInterface>(producer))
      return rewriter.notifyMatchFailure(transpose, "not a head split");
    bool folded = false;
    for (OpOperand &use : llvm::make_early_inc_range(transpose->getUses())) {
      auto matmul = dyn_cast<MatmulOp>(use.getOwner());
      if (!matmul || !samePlacement(matmul, transpose))
        continue;
      bool lhs = use.getOperandNumber() == 0;
      if (lhs ? matmul.getHeadsA() : matmul.getHeadsB())
        continue;
      rewriter.modifyOpInPlace(matmul, [&] {
        use.set(transpose.getInput());
        if (lhs)
          matmul.setHeadsA(true);
        else
          matmul.setHeadsB(true);
      });
      folded = true;
    }
    if (transpose->use_empty())
      rewriter.eraseOp(transpose);
    return success(folded);
  }
};

/// A matmul whose only use is a head-merging transpose (the same swap)
/// writes its result in the heads layout (heads_c) instead.
struct FoldHeadsIntoResult : public OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    auto matmul = transpose.getInput().getDefiningOp<MatmulOp>();
    if (!matmul || matmul.getHeadsC() || !matmul->hasOneUse() ||
        !isHeadsPermutation(transpose.getPermutation()) ||
        !samePlacement(matmul, transpose) || !canMoveTo(matmul, transpose))
      return rewriter.notifyMatchFailure(transpose, "no matmul to fold into");
    rewriter.setInsertionPoint(transpose);
    auto folded = MatmulOp::create(
        rewriter, matmul.getLoc(), transpose.getType(), matmul.getLhs(),
        matmul.getRhs(), matmul.getTransposeA(), matmul.getTransposeB(),
        matmul.getBf16(), matmul.getHeadsA(), matmul.getHeadsB(),
        /*heads_c=*/true);
    copyDiscardableAttrs(matmul, folded);
    rewriter.replaceOp(transpose, folded.getResult());
    rewriter.eraseOp(matmul);
    return success();
  }
};

/// The open multi-tensor group of one pipeline device.
struct OpenGroup {
  SmallVector<Operation *> members;
};

/// Gives runs of consecutive optimizer updates of one kind on one device a
/// common multi_tensor id; returns the number of groups.
int64_t groupUpdates(func::FuncOp func, int64_t maxTensors) {
  int64_t next = 1;
  // Keyed by the device (strata.stage, -1 without one), in creation order.
  llvm::MapVector<int64_t, OpenGroup> open;
  auto setGroup = [](Operation *op, IntegerAttr id) {
    if (auto sgd = dyn_cast<SgdUpdateOp>(op))
      sgd.setMultiTensorAttr(id);
    else
      cast<AdamUpdateOp>(op).setMultiTensorAttr(id);
  };
  auto flush = [&](OpenGroup &group) {
    if (group.members.size() >= 2) {
      auto id =
          IntegerAttr::get(IntegerType::get(func.getContext(), 64), next++);
      for (Operation *op : group.members)
        setGroup(op, id);
    }
    group.members.clear();
  };
  for (Operation &op : func.getBody().front()) {
    auto stage =
        op.getAttrOfType<IntegerAttr>(StrataDialect::getStageAttrName());
    int64_t device = stage ? stage.getInt() : -1;
    if (!isa<SgdUpdateOp, AdamUpdateOp>(op)) {
      if (!stage)
        for (auto &entry : open)
          flush(entry.second);
      else
        flush(open[device]);
      continue;
    }
    setGroup(&op, nullptr);
    OpenGroup &group = open[device];
    // A member may not read what an earlier member of its group writes.
    bool independent = llvm::none_of(op.getOperands(), [&](Value operand) {
      return llvm::is_contained(group.members, operand.getDefiningOp());
    });
    if (!group.members.empty() &&
        (group.members.front()->getName() != op.getName() || !independent ||
         static_cast<int64_t>(group.members.size()) >= maxTensors))
      flush(group);
    group.members.push_back(&op);
  }
  for (auto &entry : open)
    flush(entry.second);
  return next - 1;
}

struct FusePass : public strata::impl::FusePassBase<FusePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptionRange(module.getLoc(), "strata-fuse",
                                "max-group-tensors", maxGroupTensors, 1,
                                65536)))
      return signalPassFailure();
    if (epilogues && failed(fuseEpilogues()))
      return signalPassFailure();
    if (!optimizer)
      return;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(StrataDialect::getTrainStepAttrName()))
        numGroups += groupUpdates(func, maxGroupTensors);
  }

  LogicalResult fuseEpilogues() {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<FuseBiasActivation,
                 FuseActivationGrad<ReluGradOp, EpilogueKind::relu_grad>,
                 FuseActivationGrad<GeluGradOp, EpilogueKind::gelu_grad>,
                 FuseResidual, FoldHeadsIntoOperands, FoldHeadsIntoResult>(
        context);
    FrozenRewritePatternSet frozen(std::move(patterns));
    GreedyRewriteConfig config;
    // Only the fusions: no folding, no constant CSE, no region changes.
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(StrataDialect::getTrainStepAttrName()))
        continue;
      if (failed(applyPatternsGreedily(func, frozen, config)))
        return func.emitOpError("--strata-fuse did not converge");
      func.walk([&](FusedMatmulOp) { ++numEpilogues; });
    }
    return success();
  }
};

} // namespace
