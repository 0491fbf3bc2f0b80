//===- RepeatedInstancesTest.cpp - a repeat is written as its first -------===//
//
// Plan emission writes a task instance that repeats an earlier one as its
// varying instructions alone (lib/Target/Plan/RepeatedInstances.cpp). The
// oracle is the explicit form (PlanOptions::taskBodies off: every
// instruction built from its op): each rank's view of the task form must
// run the same kernels, with the same attributes, on the same bytes.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Target/Plan/EmitPlan.h"
#include "weft/runtime/PlanView.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using json = nlohmann::json;

namespace {

/// Each micro-batch's forward takes its rows of %x (the slice varies: its
/// rows grow with the micro-batch) and multiplies them by a parameter, its
/// backward multiplies that by a constant (the product is carried from one
/// to the other in the micro-batch's slot). Micro-batch 2's forward reads
/// another parameter, micro-batch 3's backward another constant: they
/// repeat no earlier instance; the others repeat micro-batch 0's. (The
/// ops of one ONNX node, cloned per micro-batch, share its location.)
const char *kFourMicroBatches = R"(
  func.func @main(%x: tensor<8x2xf32> {weft.input = "x"},
                  %w: tensor<2xf32> {weft.param = "w"},
                  %v: tensor<2xf32> {weft.param = "v"})
      -> (tensor<2xf32> {weft.output = "y"}) {
    %c = weft.constant dense<2.0> : tensor<2xf32>
    %d = weft.constant dense<3.0> : tensor<2xf32>
    %x0 = weft.slice %x {ends = array<i64: 2, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>, weft.task = #weft.task<F, micro_batch = 0>} : (tensor<8x2xf32>) -> tensor<2x2xf32> loc("slice")
    %a0 = weft.mul %x0, %w {weft.task = #weft.task<F, micro_batch = 0>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("forward")
    %x1 = weft.slice %x {ends = array<i64: 4, 2>, starts = array<i64: 2, 0>, steps = array<i64: 1, 1>, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<8x2xf32>) -> tensor<2x2xf32> loc("slice")
    %a1 = weft.mul %x1, %w {weft.task = #weft.task<F, micro_batch = 1>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("forward")
    %x2 = weft.slice %x {ends = array<i64: 6, 2>, starts = array<i64: 4, 0>, steps = array<i64: 1, 1>, weft.task = #weft.task<F, micro_batch = 2>} : (tensor<8x2xf32>) -> tensor<2x2xf32> loc("slice")
    %a2 = weft.mul %x2, %v {weft.task = #weft.task<F, micro_batch = 2>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("forward")
    %x3 = weft.slice %x {ends = array<i64: 8, 2>, starts = array<i64: 6, 0>, steps = array<i64: 1, 1>, weft.task = #weft.task<F, micro_batch = 3>} : (tensor<8x2xf32>) -> tensor<2x2xf32> loc("slice")
    %a3 = weft.mul %x3, %w {weft.task = #weft.task<F, micro_batch = 3>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("forward")
    %b0 = weft.mul %a0, %c {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("backward")
    %b1 = weft.mul %a1, %c {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("backward")
    %b2 = weft.mul %a2, %c {weft.task = #weft.task<B, micro_batch = 2>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("backward")
    %b3 = weft.mul %a3, %d {weft.task = #weft.task<B, micro_batch = 3>} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> loc("backward")
    %y = weft.mul %w, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  })";

/// The plan of `ir` in the task form (`tasks`) or explicitly.
json emit(const char *ir, bool tasks) {
  static MLIRContext ctx;
  ctx.loadDialect<weft::WeftDialect, func::FuncDialect, shard::ShardDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &ctx);
  if (!module)
    return nullptr;
  weft::PlanOptions options;
  options.taskBodies = tasks;
  FailureOr<weft::PlanParts> parts =
      weft::emitPlanParts(*module, {"m.onnx", ""}, nullptr, options);
  return succeeded(parts) ? weft::planJson(*parts) : json();
}

/// What rank 0 runs: per instruction its op, kernel, attributes, micro-batch
/// and the arena offsets of its inputs and outputs.
std::vector<std::string> runs(const json &plan) {
  json rank = weft::rt::planView(plan, -1, "plan")["ranks"][0];
  std::map<int64_t, int64_t> offset;
  for (const json &b : rank["buffers"])
    offset[b["id"].get<int64_t>()] = b["offset"].get<int64_t>();
  std::vector<std::string> out;
  for (const json &inst : rank["instructions"]) {
    json line = {inst["op"], inst.value("kernel", ""),
                 inst.value("attrs", json()), inst["micro_batch"]};
    for (const char *key : {"inputs", "outputs"})
      for (const json &id : inst[key])
        line.push_back(offset.at(id.get<int64_t>()));
    out.push_back(line.dump());
  }
  return out;
}

} // namespace

TEST(RepeatedInstances, ARepeatRunsWhatItsOwnInstructionsWould) {
  json tasks = emit(kFourMicroBatches, true);
  json explicitForm = emit(kFourMicroBatches, false);
  ASSERT_FALSE(tasks.is_null());
  ASSERT_FALSE(explicitForm.is_null());
  const json &program = tasks["programs"][0];
  ASSERT_TRUE(program.contains("bodies"));
  EXPECT_FALSE(explicitForm["programs"][0].contains("bodies"));
  EXPECT_EQ(runs(tasks), runs(explicitForm));
  // Forwards 0, 1 and 3 are one body (the slice's rows fitted as 2 per
  // micro-batch), 2 another; backwards 0, 1 and 2 one, 3 another; the
  // last is the program's.
  std::vector<int64_t> bodyOf;
  for (const json &task : program["tasks"])
    bodyOf.push_back(task["body"].get<int64_t>());
  ASSERT_EQ(bodyOf.size(), 9u);
  EXPECT_EQ(bodyOf[1], bodyOf[0]);
  EXPECT_EQ(bodyOf[3], bodyOf[0]);
  EXPECT_NE(bodyOf[2], bodyOf[0]);
  EXPECT_EQ(bodyOf[5], bodyOf[4]);
  EXPECT_EQ(bodyOf[6], bodyOf[4]);
  EXPECT_NE(bodyOf[7], bodyOf[4]);
  EXPECT_EQ(program["bodies"].size(), 5u);
  const json &slice = program["bodies"][bodyOf[0]]["instructions"][0];
  EXPECT_EQ(slice["attrs"]["starts"][0]["per_micro_batch"], 2);
}
