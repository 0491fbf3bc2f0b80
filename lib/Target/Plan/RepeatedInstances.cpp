//===- RepeatedInstances.cpp - task instances written once ----------------===//
//
// A stage runs the same task (a micro-batch's forward, its backward) M
// times, on M micro-batches' buffers: at GPT-3 scale that is most of the
// plan's instructions, and building each one as JSON to find, in
// writeTaskBodies, that it repeats an earlier one was half of the compile.
// Here instances are compared on the IR instead: two instances repeat each
// other when their ops agree in name, location, attributes, operand and
// result types, the buffers they name (by writeTaskBodies' numbering:
// within the micro-batch's frame, or the program's), and the collective
// tags and dropout rng_ids emission gives them. The ops whose integers grow
// with the micro-batch (transfers, whose tags do; the slice of an input, a
// micro-batch's rows) are compared by name and buffers alone and written
// for every instance: writeTaskBodies fits their integers as a + c·m.
//
//===----------------------------------------------------------------------===//

#include "EmitProgram.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/runtime/PlanView.h"

#include <unordered_map>

using namespace mlir;
using json = nlohmann::json;
using namespace weft;

namespace {

/// Ops whose instruction holds integers that may grow with the micro-batch
/// (TaskBodies.cpp fits them): written for every instance.
bool isVarying(Operation *op) {
  if (isa<ISendOp, IRecvOp, WaitSendOp, WaitRecvOp>(op))
    return true;
  return isa<SliceOp>(op) && isa<BlockArgument>(op->getOperand(0));
}

/// Whether `a` and `b` are the same JSON once their integers are zeroed,
/// as writeTaskBodies compares instances: any two integers match, and a
/// coordinate expression's absent `plus` is a zero.
bool sameUpToIntegers(const json &a, const json &b) {
  if (a.is_number_integer() || b.is_number_integer())
    return a.is_number_integer() && b.is_number_integer();
  if (a.type() != b.type())
    return false;
  if (a.is_array()) {
    if (a.size() != b.size())
      return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!sameUpToIntegers(a[i], b[i]))
        return false;
    return true;
  }
  if (!a.is_object())
    return a == b;
  bool expression = a.contains("coord");
  auto keys = [&](const json &o) {
    std::vector<std::string> out;
    for (auto &[key, value] : o.items())
      if (!expression || key != "plus")
        out.push_back(key);
    return out;
  };
  if (keys(a) != keys(b))
    return false;
  for (auto &[key, value] : a.items())
    if (b.contains(key) && !sameUpToIntegers(value, b[key]))
      return false;
  return true;
}

/// Whether two instructions of instances that repeat each other agree up
/// to their integers (where writeTaskBodies looks for them) and their
/// buffers (which the instances' keys compare).
bool sameInstruction(const json &a, const json &b) {
  for (auto &[key, value] : a.items()) {
    if (key == "inputs" || key == "outputs")
      continue;
    if (!b.contains(key))
      return false;
    bool fitted = key == "attrs" || key == "peer" || key == "tag";
    if (fitted ? !sameUpToIntegers(value, b[key]) : value != b[key])
      return false;
  }
  return a.size() == b.size();
}

/// The key's words, appended.
struct KeyWords {
  std::vector<uintptr_t> words;
  void add(const void *p) { words.push_back(reinterpret_cast<uintptr_t>(p)); }
  void add(int64_t v) { words.push_back(static_cast<uintptr_t>(v)); }
  void add(Attribute a) { add(a.getAsOpaquePointer()); }
  void add(Type t) { add(t.getAsOpaquePointer()); }
};

} // namespace

std::string ProgramEmitter::instanceKey(ArrayRef<Operation *> ops,
                                        int64_t firstCollective) {
  KeyWords key;
  auto addBuffers = [&](ValueRange values) {
    for (Value v : values) {
      auto it = bufferId.find(v);
      key.add(it == bufferId.end() ? INT64_MIN : bodyId[it->second]);
      key.add(v.getType());
    }
  };
  for (Operation *op : ops) {
    key.add(op->getName().getAsOpaquePointer());
    key.add(op->getLoc().getAsOpaquePointer());
    addBuffers(op->getOperands());
    addBuffers(op->getResults());
    if (isVarying(op)) {
      key.add(int64_t(1));
      continue;
    }
    // Its attributes as kernelAttributes reads them (none named weft.*),
    // and those of weft.* that emission reads.
    for (StringAttr name : op->getName().getAttributeNames())
      key.add(name), key.add(op->getInherentAttr(name).value_or(Attribute()));
    for (NamedAttribute attr : op->getDiscardableAttrs())
      if (!attr.getName().getValue().starts_with("weft."))
        key.add(attr.getName()), key.add(attr.getValue());
    Operation *drawer = op;
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      drawer = grad.getStats().getDefiningOp();
    if (drawer) {
      key.add(drawer->getAttr(kRngIdAttr));
      key.add(drawer->getAttr(kShardAttr));
      key.add(rngIds.lookup(drawer));
    }
    // Collective tags counted from the instance's first (writeTaskBodies).
    if (auto it = collectiveTag.find(op); it != collectiveTag.end())
      key.add(it->second - firstCollective), key.add(int64_t(isWaitedFor(op)));
    if (auto wait = dyn_cast<WaitCollectiveOp>(op))
      key.add(collectiveTag.lookup(wait.getPosted().getDefiningOp()) -
              firstCollective);
  }
  std::string text = phaseName(scheduledTaskKind(ops.front())).str();
  text.push_back('\0');
  text.append(reinterpret_cast<const char *>(key.words.data()),
              key.words.size() * sizeof(uintptr_t));
  return text;
}

FailureOr<bool> ProgramEmitter::writeRepeat(ArrayRef<Operation *> ops,
                                            size_t of, TaskInstance &instance) {
  const TaskInstance &original = section.instances[of];
  size_t k = 0; // the instruction's index in the instance
  for (Operation *op : ops) {
    size_t written = original.first + k;
    if (isVarying(op)) {
      FailureOr<json> inst = instruction(*op);
      if (failed(inst))
        return failure();
      if (!sameInstruction(*inst, instructions[written])) {
        instance.patches.clear();
        return false;
      }
      if (failed(checkCompute(*op, *inst)))
        return failure();
      instance.patches.push_back({k, std::move(*inst)});
    } else if (failed(checkRepeat(*op, written))) {
      return failure();
    }
    k += 1 + waitsAtOnce(op);
  }
  instance.repeats = of;
  instance.count = original.count;
  return true;
}

LogicalResult ProgramEmitter::writeInstances() {
  // The ops that are instructions: not constants, not views (a view's
  // buffer aliases its operand's bytes).
  SmallVector<Operation *> ops;
  SmallVector<int64_t> microBatchOfOp;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op) || isView(&op))
      continue;
    ops.push_back(&op);
    microBatchOfOp.push_back(microBatchWorkedOn(&op).value_or(0));
    section.microBatches =
        std::max(section.microBatches, microBatchOfOp.back() + 1);
  }
  // Repeats need the task form: no instruction may name a buffer of
  // another micro-batch's frame (writeTaskBodies).
  repeating = repeatInstances && section.microBatches > 1 && !crossFrame;
  for (auto [op, m] : llvm::zip_equal(ops, microBatchOfOp))
    for (ValueRange values :
         {ValueRange(op->getOperands()), ValueRange(op->getResults())})
      for (Value v : values)
        if (auto it = bufferId.find(v); it != bufferId.end()) {
          int64_t home = section.homes[it->second].microBatch;
          repeating &= home < 0 || home == m;
        }

  std::unordered_map<std::string, size_t> firstWithKey;
  int64_t collectivesBefore = 0;
  // With model chunks an instance is one chunk's, and says which.
  bool chunked = func->hasAttr(kChunkStagesAttr);
  auto chunkOf = [&](Operation *op) {
    return chunked ? TaskFields::of(op).chunk : int64_t(-1);
  };
  for (size_t at = 0; at < ops.size();) {
    TaskKind kind = scheduledTaskKind(ops[at]);
    int64_t m = microBatchOfOp[at], chunk = chunkOf(ops[at]);
    size_t end = at + 1;
    while (end < ops.size() && microBatchOfOp[end] == m &&
           scheduledTaskKind(ops[end]) == kind && chunkOf(ops[end]) == chunk)
      ++end;
    ArrayRef<Operation *> run(ops.begin() + at, ops.begin() + end);
    TaskInstance instance{
        phaseName(kind).str(), m, instructions.size(), 0, -1, {}, chunk};
    bool repeated = false;
    if (repeating) {
      auto [it, added] = firstWithKey.try_emplace(
          instanceKey(run, collectivesBefore), section.instances.size());
      if (!added) {
        FailureOr<bool> wrote = writeRepeat(run, it->second, instance);
        if (failed(wrote))
          return failure();
        repeated = *wrote;
      }
    }
    if (!repeated) {
      for (Operation *op : run)
        if (failed(writeInstruction(*op)))
          return failure();
      instance.count = instructions.size() - instance.first;
    }
    for (Operation *op : run)
      collectivesBefore += collectiveTag.count(op);
    section.instances.push_back(std::move(instance));
    at = end;
  }
  return success();
}
