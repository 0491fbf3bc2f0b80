//===- TensorParallelPatterns.cpp - what the split recognises -------------===//

#include "TensorParallelPatterns.h"

#include "llvm/ADT/DenseSet.h"

#include <set>

using namespace mlir;

namespace weft::tp {

std::string nodeOf(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return "'" + name.getName().str() + "' (" +
           op->getName().getStringRef().str() + ")";
  return op->getName().getStringRef().str();
}

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t normalized(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

bool isOwnedParam(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.hasOneUse())
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), kParamAttr);
}

BlockArgument weightParam(Value rhs) {
  Value v = rhs;
  if (auto t = rhs.getDefiningOp<TransposeOp>()) {
    if (!rhs.hasOneUse() || t.getPerm() != ArrayRef<int64_t>{1, 0})
      return {};
    v = t.getInput();
  } else if (!rhs.hasOneUse()) {
    return {};
  }
  if (!isOwnedParam(v) || rankOf(v) != 2)
    return {};
  return cast<BlockArgument>(v);
}

namespace {
/// The end of the single-use chain a linear's output passes before its
/// features are used: bias adds of its own (1-D parameters) and reshapes
/// that keep the features last.
Value throughBiasAndReshapes(Value v) {
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (auto add = dyn_cast<AddOp>(user)) {
      Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
      if (!isOwnedParam(other) || rankOf(other) != 1)
        return v;
      v = add.getResult();
    } else if (auto r = dyn_cast<ReshapeOp>(user);
               r && shapeOf(r.getResult()).back() == shapeOf(v).back()) {
      v = r.getResult();
    } else {
      return v;
    }
  }
  return v;
}
} // namespace

int64_t fusedBlocks(Value y) {
  Value v = throughBiasAndReshapes(y);
  int64_t last = rankOf(v) - 1;
  int64_t k = 0;
  for (Operation *user : v.getUsers()) {
    int64_t parts = 0;
    if (auto split = dyn_cast<SplitOp>(user)) {
      ArrayRef<int64_t> sizes = split.getSizes();
      if (normalized(split.getAxis(), rankOf(v)) == last &&
          llvm::all_equal(sizes))
        parts = sizes.size();
    } else if (auto slice = dyn_cast<SliceOp>(user)) {
      if (int64_t width = slice.blockWidth(last))
        parts = shapeOf(v)[last] / width;
    }
    if (parts < 2 || (k && k != parts))
      return 1;
    k = parts;
  }
  return std::max<int64_t>(k, 1);
}

std::optional<Linear> linearOf(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    if (rankOf(mm.getLhs()) < 2 || !weightParam(mm.getRhs()) ||
        mm.getTransA() || mm.getTransB())
      return std::nullopt;
    return Linear{mm.getLhs(), mm.getRhs(), 0, 1, Value()};
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getTransA() || !weightParam(gemm.getB()))
      return std::nullopt;
    int64_t k = gemm.getTransB() ? 1 : 0;
    return Linear{gemm.getA(), gemm.getB(), k, 1 - k, gemm.getC()};
  }
  return std::nullopt;
}

namespace {
/// Whether `v` is (through reshapes and micro-batch slices) a model input:
/// token ids, not positions computed in the graph.
bool isModelInput(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, SliceOp>(def))
      return false;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), kInputAttr);
}

} // namespace

SoftmaxCrossEntropyOp headLoss(Value scores) {
  Value v = throughBiasAndReshapes(scores);
  if (!v.hasOneUse())
    return {};
  auto loss = dyn_cast<SoftmaxCrossEntropyOp>(*v.getUsers().begin());
  if (!loss || loss.getScores() != v || rankOf(v) != 2 || loss.getWeights() ||
      loss.getReduction() != "mean" || !loss.getLogProb().use_empty())
    return {};
  return loss;
}

Operation *vocabTableStart(BlockArgument arg, int64_t parts) {
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!func || !func.getArgAttr(arg.getArgNumber(), kParamAttr) ||
      rankOf(arg) != 2 || shapeOf(arg)[0] % parts || arg.use_empty())
    return nullptr;
  Operation *first = nullptr;
  for (Operation *user : arg.getUsers()) {
    bool ok = false;
    if (auto gather = dyn_cast<GatherOp>(user))
      ok = gather.getData() == arg && gather.getAxis() == 0 &&
           isModelInput(gather.getIndices());
    else if (auto t = dyn_cast<TransposeOp>(user);
             t && t.getPerm() == ArrayRef<int64_t>{1, 0})
      ok = llvm::all_of(t->getUses(), [](OpOperand &use) {
        auto mm = dyn_cast<MatMulOp>(use.getOwner());
        return mm && use.getOperandNumber() == 1 && !mm.getTransB() &&
               headLoss(mm.getResult());
      });
    if (!ok)
      return nullptr;
    if (!first || user->isBeforeInBlock(first))
      first = user;
  }
  return first;
}

bool isElementwise(Operation *op) {
  return splitOf(op) == ops::Split::Elementwise;
}

bool opensBlock(Operation *column) {
  // Ops in block order: every in-walk operand of an op is settled before
  // the op itself, so a join of two paths from the column (rotary's
  // x cos + rotate_half(x) sin) is not mistaken for a residual connection
  // when one path is walked before the other.
  auto before = [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  };
  std::set<Operation *, decltype(before)> work(before);
  llvm::DenseSet<Value> seen;
  auto foreign = [&](Operation *op) {
    if (!isa<AddOp, SubOp>(op))
      return false;
    for (Value v : op->getOperands())
      if (!seen.contains(v) && !isOwnedParam(v) &&
          !v.getDefiningOp<ConstantOp>())
        return true;
    return false;
  };
  auto enter = [&](Operation *op) {
    for (Value r : op->getResults())
      if (seen.insert(r).second)
        for (Operation *user : r.getUsers())
          work.insert(user);
  };
  enter(column);
  while (!work.empty()) {
    Operation *user = *work.begin();
    work.erase(work.begin());
    if (llvm::any_of(user->getOpOperands(),
                     [&](OpOperand &use) {
                       return use.getOperandNumber() == 0 &&
                              seen.contains(use.get());
                     }) &&
        linearOf(user))
      return true;
    if (foreign(user))
      continue;
    // Through every op whose split class keeps rows apart (its record):
    // elementwise, data movement, normalisation, masks, attention, and
    // attention's score matmul.
    ops::Split split = splitOf(user);
    if (isElementwise(user) || split == ops::Split::Layout ||
        split == ops::Split::Softmax ||
        split == ops::Split::ElementwiseRandom ||
        split == ops::Split::LayerNorm || split == ops::Split::Heads ||
        isa<MatMulOp>(user))
      enter(user);
  }
  return false;
}

} // namespace weft::tp
