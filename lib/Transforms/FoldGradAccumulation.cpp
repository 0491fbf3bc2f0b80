//===- FoldGradAccumulation.cpp - weft-fold-grad-accumulation -------------===//
//
// With M micro-batches a Linear layer's weight gradient is the sum of M
// wgrad_bias GEMMs: each writes its own [N, K] gradient, which an add then
// reads with the running sum and writes again. A GEMM can add its product
// to C as it stores it (beta = 1), so each micro-batch's wgrad_bias can
// write straight into the running sum (Megatron-LM's
// gradient_accumulation_fusion): no micro-batch's own weight gradient is
// stored, and the adds' traffic and launches are gone. It runs on the
// scheduled step, whose block order is the order the micro-batches'
// backwards run (GPipe's last micro-batch first), and sums in that order:
// the adds' association is micro-batch accumulation's, not the run's.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Transforms/FuncUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace weft {
#define GEN_PASS_DEF_FOLDGRADACCUMULATION
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// `v` seen through the views that read it, each the only reader of its
/// operand (a bias kept [1, N] is seen as the parameter's [N]): the value
/// an add of the sum reads.
Value throughViews(Value v) {
  while (v.hasOneUse() && isView(*v.getUsers().begin()))
    v = v.getUsers().begin()->getResult(0);
  return v;
}

/// One gradient's sum over micro-batches: the adds of a tree whose leaves
/// are results `result` of plain wgrad_bias ops (through views), each
/// leaf and inner sum read once, by the tree.
struct SumTree {
  AddOp root;
  SmallVector<AddOp> adds;
  SmallVector<Operation *> views;
  SmallVector<WgradBiasOp> wgrads;
};

/// Collects the tree below `v` into `tree`; false at a leaf that is not a
/// plain wgrad_bias's result `result`.
bool collect(Value v, unsigned result, SumTree &tree) {
  if (auto add = v.getDefiningOp<AddOp>();
      add && add.getLhs().getType() == add.getType() &&
      add.getRhs().getType() == add.getType() && add.getLhs() != add.getRhs()) {
    if (add != tree.root && !v.hasOneUse())
      return false;
    tree.adds.push_back(add);
    return collect(add.getLhs(), result, tree) &&
           collect(add.getRhs(), result, tree);
  }
  while (Operation *def = v.getDefiningOp()) {
    if (!isView(def))
      break;
    if (!v.hasOneUse())
      return false;
    tree.views.push_back(def);
    v = def->getOperand(0);
  }
  auto wgrad = v.getDefiningOp<WgradBiasOp>();
  if (!wgrad || !wgrad.getAccumulate().empty() || !v.hasOneUse() ||
      cast<OpResult>(v).getResultNumber() != result)
    return false;
  tree.wgrads.push_back(wgrad);
  return true;
}

/// The sum tree that result `result` of `wgrad` is a leaf of: up from it
/// through adds each read once by the next, to the last; nullopt when it
/// has no add or a leaf is not a plain wgrad_bias's.
std::optional<SumTree> treeOf(WgradBiasOp wgrad, unsigned result) {
  Value v = throughViews(wgrad->getResult(result));
  SumTree tree;
  while (v.hasOneUse()) {
    auto add = dyn_cast<AddOp>(*v.getUsers().begin());
    if (!add)
      break;
    tree.root = add;
    v = add.getResult();
  }
  if (!tree.root || !collect(tree.root.getResult(), result, tree))
    return std::nullopt;
  llvm::sort(tree.wgrads, [](WgradBiasOp a, WgradBiasOp b) {
    return a->isBeforeInBlock(b);
  });
  return tree;
}

/// The weight and bias gradients of the wgrad_bias ops summed by trees
/// rooted at `weight` and `bias`: the first to run keeps its outputs,
/// each later one accumulates into the previous one's, in place; the
/// last one's results replace the roots.
void accumulate(SumTree &weight, SumTree &bias) {
  Value sums[2] = {weight.wgrads.front().getWeightGrad(),
                   weight.wgrads.front().getBiasGrad()};
  SmallVector<WgradBiasOp> replaced;
  for (WgradBiasOp wgrad : ArrayRef(weight.wgrads).drop_front()) {
    OpBuilder b(wgrad);
    auto fused =
        WgradBiasOp::create(b, wgrad.getLoc(), wgrad.getGrad(),
                            wgrad.getInput(), sums, wgrad.getTransposed());
    fused->setDiscardableAttrs(wgrad->getDiscardableAttrDictionary());
    sums[0] = fused.getWeightGrad();
    sums[1] = fused.getBiasGrad();
    replaced.push_back(wgrad);
  }
  Operation *last = sums[0].getDefiningOp();
  for (auto [tree, sum] : {std::pair{&weight, sums[0]}, {&bias, sums[1]}}) {
    OpBuilder b(last->getBlock(), std::next(last->getIterator()));
    tree->root.getResult().replaceAllUsesWith(
        viewAs(b, sum, tree->root.getType(), last));
    // Users before operands: the root first, then down the tree.
    for (AddOp add : tree->adds)
      add.erase();
    for (Operation *view : tree->views)
      view->erase();
  }
  for (WgradBiasOp wgrad : replaced)
    wgrad.erase();
}

struct FoldGradAccumulationPass
    : weft::impl::FoldGradAccumulationBase<FoldGradAccumulationPass> {
  void runOnOperation() override {
    SmallVector<WgradBiasOp> wgrads;
    getOperation().walk([&](WgradBiasOp op) { wgrads.push_back(op); });
    llvm::DenseSet<Operation *> done;
    for (WgradBiasOp wgrad : wgrads) {
      if (done.contains(wgrad))
        continue;
      std::optional<SumTree> weight = treeOf(wgrad, 0), bias = treeOf(wgrad, 1);
      if (!weight || !bias || weight->wgrads != bias->wgrads ||
          !sameStage(weight->wgrads))
        continue;
      for (WgradBiasOp op : weight->wgrads)
        done.insert(op);
      accumulate(*weight, *bias);
    }
  }

  static bool sameStage(ArrayRef<WgradBiasOp> wgrads) {
    return llvm::all_of(wgrads, [&](WgradBiasOp op) {
      return stageOf(op) == stageOf(wgrads.front());
    });
  }
};

} // namespace
