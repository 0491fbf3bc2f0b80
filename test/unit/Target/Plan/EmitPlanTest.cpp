//===- EmitPlanTest.cpp - plan emission reads the device mesh -------------===//

#include "weft/Target/Plan/EmitPlan.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/runtime/PlanView.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
/// The plan of `ir`, or the first error's message in `error`. With
/// `verify` false the IR is not verified when parsed, as if a pass had
/// broken it with the pass manager's verifier off.
FailureOr<nlohmann::json> emit(const char *ir, std::string &error,
                               bool verify = true) {
  static MLIRContext ctx;
  ctx.loadDialect<weft::WeftDialect, func::FuncDialect, shard::ShardDialect>();
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (error.empty())
      error = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(
      ir, ParserConfig(&ctx, /*verifyAfterParse=*/verify));
  if (!module)
    return failure();
  return weft::emitPlan(*module, {"m.onnx", ""});
}

/// Each rank's view of `plan` (its program, coordinates filled in).
nlohmann::json views(const nlohmann::json &plan) {
  return weft::rt::planView(plan, -1, "plan")["ranks"];
}

const char *kMain = R"(
  func.func @main(%x: tensor<2xf32> {weft.input = "x"}) -> (tensor<2xf32> {weft.output = "y"}) {
    %y = weft.relu %x : tensor<2xf32>
    return %y : tensor<2xf32>
  })";
} // namespace

TEST(EmitPlan, MeshAndCoordinatesComeFromTheIR) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x1x1)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") +
                   kMain;
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  EXPECT_EQ((*plan)["mesh"]["axes"].dump(),
            R"([{"name":"pipeline","size":1},{"name":"data","size":1},)"
            R"({"name":"tensor","size":1}])");
  EXPECT_EQ(views(*plan)[0]["coords"].dump(),
            R"({"data":0,"pipeline":0,"tensor":0})");
}

TEST(EmitPlan, RefusesAMeshItCannotPlaceTheStagesOn) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 2x1x1)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") +
                   kMain;
  std::string error;
  EXPECT_TRUE(failed(emit(ir.c_str(), error)));
  EXPECT_EQ(error, "plan emission: the device mesh has 2 pipeline stage(s); "
                   "the module has 1 stage function(s)");
}

TEST(EmitPlan, EachDataReplicaReadsItsRowsOfTheGlobalBatch) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x2x2)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") +
                   kMain;
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  ASSERT_EQ(views(*plan).size(), 4u);
  // The plan's input is the global batch: D times the function's rows.
  EXPECT_EQ((*plan)["inputs"][0]["shape"].dump(), "[4]");
  EXPECT_EQ((*plan)["global_batch"], 4);
  for (int rank = 0; rank < 4; ++rank) {
    nlohmann::json section = views(*plan)[rank];
    int64_t replica = rank / 2; // tensor varies fastest
    EXPECT_EQ(section["coords"]["data"], replica);
    EXPECT_EQ(section["inputs"][0]["shard"].dump(),
              R"({"blocks":1,"count":2,"dim":0,"index":)" +
                  std::to_string(replica) + "}");
  }
}

TEST(EmitPlan, EveryTensorRankRunsTheStagesFunction) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x1x2)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") +
                   kMain;
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  // One program, shared: plan size does not grow with the tensor axis.
  EXPECT_EQ((*plan)["programs"].size(), 1u);
  EXPECT_EQ((*plan)["rank_programs"].dump(), "[0,0]");
  nlohmann::json ranks = views(*plan);
  ASSERT_EQ(ranks.size(), 2u);
  for (int rank : {0, 1}) {
    EXPECT_EQ(ranks[rank]["rank"], rank);
    EXPECT_EQ(ranks[rank]["coords"]["tensor"], rank);
    EXPECT_EQ(ranks[rank]["instructions"].dump(),
              (*plan)["programs"][0]["instructions"].dump());
  }
}

TEST(EmitPlan, AModuleWithoutAMeshRunsItsStagesOnAPipeline) {
  std::string error;
  FailureOr<nlohmann::json> plan = emit(kMain, error);
  ASSERT_TRUE(succeeded(plan)) << error;
  EXPECT_EQ((*plan)["mesh"]["axes"][0]["size"], 1);
}

namespace {
const char *kTensorMesh = R"(shard.grid @mesh(shape = 1x1x2)
    {weft.mesh_axes = ["pipeline", "data", "tensor"]})";

/// The (op, tag) of each instruction of the first program.
std::vector<std::pair<std::string, int64_t>> opsOf(const nlohmann::json &plan) {
  std::vector<std::pair<std::string, int64_t>> ops;
  for (const auto &inst : plan["programs"][0]["instructions"])
    ops.push_back({inst["op"], inst.value("tag", int64_t(-1))});
  return ops;
}
} // namespace

TEST(EmitPlan, ACollectiveIsPostedAndWaitedForWhereTheIRSays) {
  std::string ir = std::string(kTensorMesh) + R"(
  func.func @main(%x: tensor<2xf32> {weft.input = "x"})
      -> (tensor<2xf32> {weft.output = "y"}, tensor<2xf32> {weft.output = "z"}) {
    %p = shard.all_reduce %x on @mesh grid_axes = [2] : tensor<2xf32> -> tensor<2xf32>
    %z = weft.relu %x : tensor<2xf32>
    %y = weft.wait_collective %p, %x : tensor<2xf32> -> tensor<2xf32>
    return %y, %z : tensor<2xf32>, tensor<2xf32>
  })";
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  using Op = std::pair<std::string, int64_t>;
  EXPECT_EQ(opsOf(*plan),
            (std::vector<Op>{
                {"all_reduce", 0}, {"compute", -1}, {"wait_collective", 0}}));
  // The wait keeps the posted result and the input live; its output is a
  // view of the result's bytes.
  const auto &rank = (*plan)["programs"][0];
  const auto &wait = rank["instructions"][2];
  EXPECT_EQ(rank["instructions"][0]["outputs"], nlohmann::json({1}));
  EXPECT_EQ(wait["inputs"], nlohmann::json({1, 0}));
  int64_t view = wait["outputs"][0];
  EXPECT_EQ(rank["buffers"][view]["view_of"], 1);
}

TEST(EmitPlan, ACollectiveNothingWaitsForCompletesAtOnce) {
  std::string ir = std::string(kTensorMesh) + R"(
  func.func @main(%x: tensor<2xf32> {weft.input = "x"})
      -> (tensor<2xf32> {weft.output = "y"}) {
    %s = shard.all_reduce %x on @mesh grid_axes = [2] : tensor<2xf32> -> tensor<2xf32>
    %y = weft.relu %s : tensor<2xf32>
    return %y : tensor<2xf32>
  })";
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  using Op = std::pair<std::string, int64_t>;
  EXPECT_EQ(opsOf(*plan),
            (std::vector<Op>{
                {"all_reduce", 0}, {"wait_collective", 0}, {"compute", -1}}));
}

TEST(EmitPlan, AWaitCollectiveNeedsACollective) {
  std::string ir = std::string(kTensorMesh) + R"(
  func.func @main(%x: tensor<2xf32> {weft.input = "x"})
      -> (tensor<2xf32> {weft.output = "y"}) {
    %r = weft.relu %x : tensor<2xf32>
    %y = weft.wait_collective %r, %x : tensor<2xf32> -> tensor<2xf32>
    return %y : tensor<2xf32>
  })";
  std::string error;
  EXPECT_TRUE(failed(emit(ir.c_str(), error)));
  EXPECT_EQ(error, "plan emission: a wait_collective must wait for a "
                   "collective posted before it");
}

/// IR weft-run would refuse is an error of plan emission naming the op and
/// the node, with weft-run's own words: weftc never writes a plan weft-run
/// refuses.
// f64 statistics: the dialect refuses them (layer_norm_grad's types are its
// kernel rule's, test/Dialect/Weft/kernel-contract.mlir), and plan
// emission checks again, with the arena's placements, whatever the pass
// manager verified.
TEST(EmitPlan, RefusesAnInstructionTheRuntimeWouldRefuse) {
  const char *ir = R"(
    func.func @main(%x: tensor<2x4xf32> {weft.input = "x"},
                    %s: tensor<4xf32> {weft.input = "s"},
                    %m: tensor<2x1xf64> {weft.input = "m"},
                    %r: tensor<2x1xf64> {weft.input = "r"},
                    %g: tensor<2x4xf32> {weft.input = "g"})
        -> (tensor<2x4xf32> {weft.output = "dx"}) {
      %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %r, %g {axis = 1 : i64}
          : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x1xf64>, tensor<2x1xf64>,
             tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
      return %dx : tensor<2x4xf32>
    })";
  std::string error;
  EXPECT_TRUE(failed(emit(ir, error)));
  EXPECT_NE(error.find("layer_norm_grad: input 2 (the mean) is [2x1] f64"),
            std::string::npos)
      << error;
  error.clear();
  EXPECT_TRUE(failed(emit(ir, error, /*verify=*/false)));
  EXPECT_NE(error.find("plan emission: weft-run would refuse this "
                       "weft.layer_norm_grad"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("kernel layer_norm_grad: "), std::string::npos) << error;
}
