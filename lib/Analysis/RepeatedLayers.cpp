//===- RepeatedLayers.cpp - a forward region's repeated layers ------------===//

#include "weft/Analysis/RepeatedLayers.h"

#include "weft/Dialect/Weft/IR/ShapeUtils.h"
#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <vector>

using namespace mlir;
using llvm::ArrayRef;
using llvm::SmallVector;

namespace {
/// A model input argument (not a parameter, state or optimizer state).
bool isModelInput(BlockArgument arg) {
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), weft::kInputAttr);
}

/// Each part's kind: its size and its ops' names.
SmallVector<llvm::hash_code> partKinds(ArrayRef<ArrayRef<Operation *>> parts) {
  SmallVector<llvm::hash_code> kinds;
  for (ArrayRef<Operation *> part : parts) {
    llvm::hash_code h = llvm::hash_value(part.size());
    for (Operation *op : part)
      h = llvm::hash_combine(h, op->getName().getAsOpaquePointer());
    kinds.push_back(h);
  }
  return kinds;
}

/// The longest run of r >= 2 back-to-back copies of a unit of k kinds
/// (most k r; ties to the smallest k, then the first). k = 0: none.
struct Run {
  size_t unit = 0, start = 0, repeats = 0;
};
Run longestRun(ArrayRef<llvm::hash_code> kinds) {
  Run best;
  for (size_t k = 1; 2 * k <= kinds.size(); ++k)
    for (size_t start = 0; start + 2 * k <= kinds.size(); ++start) {
      ArrayRef<llvm::hash_code> unit = kinds.slice(start, k);
      size_t repeats = 1;
      while (start + (repeats + 1) * k <= kinds.size() &&
             kinds.slice(start + repeats * k, k) == unit)
        ++repeats;
      if (repeats >= 2 && k * repeats > best.unit * best.repeats)
        best = {k, start, repeats};
    }
  return best;
}

/// repeatedLayers' recursion on `parts` (of kinds `kinds`).
void groupRepeats(ArrayRef<ArrayRef<Operation *>> parts,
                  ArrayRef<llvm::hash_code> kinds,
                  SmallVectorImpl<ArrayRef<Operation *>> &groups) {
  Run run = longestRun(kinds);
  if (!run.unit) {
    groups.append(parts.begin(), parts.end());
    return;
  }
  groupRepeats(parts.take_front(run.start), kinds.take_front(run.start),
               groups);
  // The parts are consecutive slices of one region: k of them are the
  // slice from the first's start to the last's end.
  for (size_t r = 0; r < run.repeats; ++r)
    groups.push_back(
        ArrayRef<Operation *>(parts[run.start + r * run.unit].begin(),
                              parts[run.start + (r + 1) * run.unit - 1].end()));
  size_t rest = run.start + run.unit * run.repeats;
  groupRepeats(parts.drop_front(rest), kinds.drop_front(rest), groups);
}
} // namespace

SmallVector<ArrayRef<Operation *>>
weft::residualSegments(ArrayRef<Operation *> ops) {
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  // A value read like a model input: a model input, an activation from
  // before the region (a received one), or a micro-batch's slice of a
  // model input (weft-accumulate-microbatches'; otherwise a micro-batch's
  // targets, sliced at its start and read by its loss at the end, would
  // cross every cut). Parameters and constants are free.
  auto inputLike = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return isModelInput(cast<BlockArgument>(v));
    if (auto slice = dyn_cast<SliceOp>(def))
      if (auto arg = dyn_cast<BlockArgument>(slice->getOperand(0)))
        return isModelInput(arg);
    return !index.count(def) && !isa<ConstantOp>(def);
  };
  // crossing[i]: values defined at or before i that a forward op after i
  // reads (a reader outside the region reads "after" every cut).
  std::vector<int64_t> delta(ops.size() + 1, 0);
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value r : op->getResults()) {
      if (inputLike(r))
        continue;
      size_t last = i;
      for (Operation *user : r.getUsers()) {
        if (!isForward(user))
          continue;
        auto it = index.find(user);
        last = std::max(last, it == index.end() ? ops.size() : it->second);
      }
      if (last > i) {
        ++delta[i];
        --delta[last];
      }
    }
  // Input-like values cross the cuts between their first and last reader
  // in the region, as the block input x of y = x + f(x) does. (Counting
  // them from the region's start would let the targets a loss reads at the
  // very end cross every cut.)
  llvm::DenseMap<Value, std::pair<size_t, size_t>> inputUses;
  for (auto [i, op] : llvm::enumerate(ops))
    for (Value v : op->getOperands()) {
      if (!inputLike(v))
        continue;
      auto [it, inserted] = inputUses.try_emplace(v, i, i);
      it->second.second = i;
    }
  for (auto &[v, uses] : inputUses) {
    ++delta[uses.first];
    --delta[uses.second];
  }
  SmallVector<ArrayRef<Operation *>> parts;
  size_t begin = 0;
  int64_t crossing = 0;
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    crossing += delta[i];
    if (crossing == 1) {
      parts.push_back(ops.slice(begin, i + 1 - begin));
      begin = i + 1;
    }
  }
  parts.push_back(ops.drop_front(begin));
  return parts;
}

SmallVector<ArrayRef<Operation *>>
weft::repeatedLayers(ArrayRef<ArrayRef<Operation *>> parts) {
  SmallVector<llvm::hash_code> kinds = partKinds(parts);
  SmallVector<ArrayRef<Operation *>> groups;
  groupRepeats(parts, kinds, groups);
  return groups;
}

namespace {
/// `func`'s forward ops and their parts. Constants are free, as
/// residualSegments takes them: one mask every layer reads must not cross
/// every cut.
struct ForwardParts {
  std::vector<Operation *> ops;
  SmallVector<ArrayRef<Operation *>> parts;
  explicit ForwardParts(func::FuncOp func) {
    for (Operation &op : func.getBody().front().without_terminator())
      if (weft::isForward(&op) && !isa<weft::ConstantOp>(op))
        ops.push_back(&op);
    if (!ops.empty())
      parts = weft::residualSegments(ops);
  }
};
} // namespace

int64_t weft::countRepeatedLayers(func::FuncOp func) {
  return countRepeatedLayers(ForwardParts(func).parts);
}

int64_t weft::countRepeatedLayers(ArrayRef<ArrayRef<Operation *>> parts) {
  return int64_t(longestRun(partKinds(parts)).repeats);
}

int64_t weft::layerBoundaryBytes(func::FuncOp func) {
  ForwardParts forward(func);
  Run run = longestRun(partKinds(forward.parts));
  if (!run.unit)
    return 0;
  // The first layer: its parts' ops, a slice of the forward.
  ArrayRef<Operation *> first(forward.parts[run.start].begin(),
                              forward.parts[run.start + run.unit - 1].end());
  llvm::SmallPtrSet<Operation *, 32> inLayer(first.begin(), first.end());
  int64_t bytes = 0;
  for (Operation *op : first)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return isForward(user) && !inLayer.contains(user);
          }))
        bytes += byteSize(result.getType());
  return bytes;
}

int64_t weft::truncateRepeatedLayers(func::FuncOp func, int64_t keep) {
  ForwardParts forward(func);
  Run run = longestRun(partKinds(forward.parts));
  if (!run.unit || keep < 1 || keep >= int64_t(run.repeats))
    return 0;
  // Copy r's ops, a slice of the forward.
  auto layer = [&](size_t r) {
    size_t first = run.start + r * run.unit;
    return ArrayRef<Operation *>(forward.parts[first].begin(),
                                 forward.parts[first + run.unit - 1].end());
  };
  // The one value copy r passes on (to the next copy, or past the run).
  auto output = [&](size_t r) -> Value {
    ArrayRef<Operation *> ops = layer(r);
    llvm::SmallPtrSet<Operation *, 32> inside(ops.begin(), ops.end());
    Value out;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inside.contains(user);
            })) {
          if (out)
            return Value();
          out = result;
        }
    return out;
  };
  Value kept = output(keep - 1), last = output(run.repeats - 1);
  if (!kept || !last || kept.getType() != last.getType())
    return 0;
  // The dropped copies: only they read their values, but for the run's
  // output.
  ArrayRef<Operation *> dropped(layer(keep).begin(),
                                layer(run.repeats - 1).end());
  llvm::SmallPtrSet<Operation *, 32> gone(dropped.begin(), dropped.end());
  for (Operation *op : dropped)
    for (Value result : op->getResults())
      if (result != last &&
          llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !gone.contains(user); }))
        return 0;
  last.replaceAllUsesWith(kept);
  for (Operation *op : llvm::reverse(dropped))
    op->erase();
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty() && func.getArgAttr(arg.getArgNumber(), kParamAttr))
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
  return int64_t(run.repeats);
}
