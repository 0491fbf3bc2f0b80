//===- EmitPlanTest.cpp - plan emission reads the device mesh -------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Target/Plan/EmitPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
/// The plan of `ir`, or the first error's message in `error`.
FailureOr<nlohmann::json> emit(const char *ir, std::string &error) {
  static MLIRContext ctx;
  ctx.loadDialect<weft::WeftDialect, func::FuncDialect, shard::ShardDialect>();
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (error.empty())
      error = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &ctx);
  if (!module)
    return failure();
  return weft::emitPlan(*module, {"m.onnx", ""});
}

const char *kMain = R"(
  func.func @main(%x: tensor<2xf32> {weft.input = "x"}) -> (tensor<2xf32> {weft.output = "y"}) {
    %y = weft.relu %x : tensor<2xf32>
    return %y : tensor<2xf32>
  })";
} // namespace

TEST(EmitPlan, MeshAndCoordinatesComeFromTheIR) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x1x1)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") + kMain;
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  EXPECT_EQ((*plan)["mesh"]["axes"].dump(),
            R"([{"name":"pipeline","size":1},{"name":"data","size":1},)"
            R"({"name":"tensor","size":1}])");
  EXPECT_EQ((*plan)["ranks"][0]["coords"].dump(),
            R"({"data":0,"pipeline":0,"tensor":0})");
}

TEST(EmitPlan, RefusesAMeshItCannotPlaceTheStagesOn) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x2x1)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") + kMain;
  std::string error;
  EXPECT_TRUE(failed(emit(ir.c_str(), error)));
  EXPECT_EQ(error, "plan emission: the device mesh has 1 pipeline stage(s) "
                   "and 2 data-parallel replica(s); the module has 1 stage "
                   "function(s) (data-parallel plans are not emitted yet)");
}

TEST(EmitPlan, EveryTensorRankRunsTheStagesFunction) {
  std::string ir = std::string(R"(shard.grid @mesh(shape = 1x1x2)
      {weft.mesh_axes = ["pipeline", "data", "tensor"]})") + kMain;
  std::string error;
  FailureOr<nlohmann::json> plan = emit(ir.c_str(), error);
  ASSERT_TRUE(succeeded(plan)) << error;
  ASSERT_EQ((*plan)["ranks"].size(), 2u);
  for (int rank : {0, 1}) {
    EXPECT_EQ((*plan)["ranks"][rank]["rank"], rank);
    EXPECT_EQ((*plan)["ranks"][rank]["coords"]["tensor"], rank);
    EXPECT_EQ((*plan)["ranks"][rank]["instructions"].dump(),
              (*plan)["ranks"][0]["instructions"].dump());
  }
}

TEST(EmitPlan, AModuleWithoutAMeshRunsItsStagesOnAPipeline) {
  std::string error;
  FailureOr<nlohmann::json> plan = emit(kMain, error);
  ASSERT_TRUE(succeeded(plan)) << error;
  EXPECT_EQ((*plan)["mesh"]["axes"][0]["size"], 1);
}
