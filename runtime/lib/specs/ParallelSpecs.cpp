//===- ParallelSpecs.cpp - vocab-parallel embedding and cross-entropy -----===//
//
// The kernels of a rank's share of a vocab-sharded table (WeftParallelOps.td;
// Megatron-LM's VocabParallelEmbedding and vocab_parallel_cross_entropy).
// `start` is the first row (class) the rank holds.
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

namespace weft::rt::specs {

namespace {

void checkStart(const SpecCall &call) {
  if (call.attrs.i("start") < 0)
    call.fail("attribute 'start' is " + std::to_string(call.attrs.i("start")) +
              ", expected >= 0");
}

Types vocabGather(const SpecCall &call) {
  checkStart(call);
  const TensorType &table = call.in[0];
  if (table.rank() < 1 || table.shape[0] < 1)
    call.fail("input 0 (the table) has no rows");
  std::vector<int64_t> shape(call.in[1].shape);
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  return {{table.dtype, shape}};
}

int64_t vocabGatherBytes(const SpecCall &call, const Types &out) {
  return out[0].bytes() + call.in[1].bytes();
}

/// Output: [rows, h...] with `rows` the attribute; the gradient's shape is
/// the indices' then the row's.
Types vocabGatherGrad(const SpecCall &call) {
  checkStart(call);
  const TensorType &grad = call.in[0], &indices = call.in[1];
  int64_t rows = call.attrs.i("rows");
  if (rows < 1)
    call.fail("attribute 'rows' is " + std::to_string(rows) +
              ", expected >= 1");
  if (grad.rank() < indices.rank() ||
      !std::equal(indices.shape.begin(), indices.shape.end(),
                  grad.shape.begin()))
    call.fail("input 0 must start with the indices' shape");
  std::vector<int64_t> shape = {rows};
  shape.insert(shape.end(), grad.shape.begin() + indices.rank(),
               grad.shape.end());
  Types out = {{grad.dtype, shape}};
  if (call.in.size() == 3)
    call.requireType(2, out[0], "the sum to accumulate into");
  return out;
}

/// scores [N, C], (max [N, 1]), labels [N].
void checkScores(const SpecCall &call, size_t labels) {
  const TensorType &scores = call.in[0];
  if (scores.rank() != 2)
    call.fail("input 0 (scores) must be [N, C]");
  call.requireType(labels, {call.in[labels].dtype, {scores.shape[0]}},
                   "labels [N]");
}

Types vocabStats(const SpecCall &call) {
  checkScores(call, 2);
  checkStart(call);
  const TensorType &scores = call.in[0];
  call.requireType(1, {scores.dtype, {scores.shape[0], 1}}, "max [N, 1]");
  return {{scores.dtype, {scores.shape[0], 2}}};
}

Types vocabCrossEntropy(const SpecCall &call) {
  checkScores(call, 3);
  const TensorType &scores = call.in[0];
  call.requireType(1, {scores.dtype, {scores.shape[0], 1}}, "max [N, 1]");
  call.requireType(2, {scores.dtype, {scores.shape[0], 2}}, "stats [N, 2]");
  return {{scores.dtype, {}}, scores};
}

Types vocabCrossEntropyGrad(const SpecCall &call) {
  checkScores(call, 1);
  checkStart(call);
  call.requireType(2, {call.in[0].dtype, {}}, "a scalar loss gradient");
  return {call.in[0]};
}

} // namespace

void addParallelSpecs(std::vector<KernelSpec> &t) {
  t.push_back({.op = Op::VocabParallelGather,
               .source = "weft.vocab_parallel_gather (Megatron "
                         "VocabParallelEmbedding)",
               .infer = vocabGather,
               .flops = fromRecord,
               .bytesRead = vocabGatherBytes});
  t.push_back({.op = Op::VocabParallelGatherGrad,
               .source = "weft.vocab_parallel_gather adjoint",
               .infer = vocabGatherGrad,
               .flops = scatterAddFlops,
               .dtypeNote = "accumulates into input 2 when given"});
  t.push_back({.op = Op::VocabParallelCrossEntropyStats,
               .source = "weft.vocab_parallel_cross_entropy_stats",
               .infer = vocabStats,
               .flops = fromRecord});
  t.push_back({.op = Op::VocabParallelCrossEntropy,
               .source = "weft.vocab_parallel_cross_entropy (Megatron "
                         "vocab_parallel_cross_entropy)",
               .infer = vocabCrossEntropy,
               .flops = fromRecord});
  t.push_back({.op = Op::VocabParallelCrossEntropyGrad,
               .source = "weft.vocab_parallel_cross_entropy adjoint",
               .infer = vocabCrossEntropyGrad,
               .flops = fromRecord});
}

} // namespace weft::rt::specs
