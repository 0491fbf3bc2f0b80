//===- DeviceModelFileTest.cpp - device models read from JSON files -------===//
//
// The shipped device models (bench/devices) load with their datasheet
// numbers; a file missing a field, with a number without its source, or
// one that is not JSON, and an unknown name, are one-line errors naming
// what is wrong.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/DeviceModelFile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {

/// The error text of an Expected that must have failed.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  EXPECT_FALSE(bool(value));
  return value ? std::string() : llvm::toString(value.takeError());
}

/// The a100 file's JSON with `key` removed, or its value replaced.
std::string a100With(llvm::StringRef key,
                     std::optional<llvm::json::Value> value) {
  std::string path =
      std::string(WEFT_DEVICE_MODEL_DIR) + "/a100-sxm4-80gb.json";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer));
  llvm::json::Value parsed =
      llvm::cantFail(llvm::json::parse((*buffer)->getBuffer()));
  llvm::json::Object &root = *parsed.getAsObject();
  if (value)
    root[key] = std::move(*value);
  else
    root.erase(key);
  std::string text;
  llvm::raw_string_ostream(text) << parsed;
  return text;
}

} // namespace

TEST(DeviceModelFile, ShipsTheFourModels) {
  EXPECT_EQ(knownDeviceModels(),
            (std::vector<std::string>{"a100-sxm4-80gb", "cpu", "h100-sxm5-80gb",
                                      "h200-sxm-141gb"}));
  for (const std::string &name : knownDeviceModels()) {
    llvm::Expected<DeviceModel> device = loadDeviceModel(name);
    ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
    EXPECT_EQ(device->name, name);
    EXPECT_GT(device->memoryBytes, 0) << name;
  }
}

TEST(DeviceModelFile, ReadsTheDatasheetNumbers) {
  // A100 SXM4 80GB: 312 TFLOP/s bf16 dense, 19.5 f32, 2039 GB/s HBM2e;
  // Selene's node: 8 GPUs, 8 x 200 Gb/s HDR InfiniBand, so 25 GB/s per GPU.
  DeviceModel a100 = llvm::cantFail(loadDeviceModel("a100-sxm4-80gb"));
  EXPECT_EQ(a100.flops16PerSecond, 312e12);
  EXPECT_EQ(a100.flopsPerSecond, 19.5e12);
  EXPECT_EQ(a100.memoryBytesPerSecond, 2.039e12);
  EXPECT_EQ(a100.memoryBytes, int64_t(80e9));
  EXPECT_EQ(a100.devicesPerNode, 8);
  EXPECT_EQ(a100.linkBytesPerSecond, 300e9);
  EXPECT_EQ(a100.nodeBytesPerSecond, 25e9);
  // The CPU model is the cost model's default, until --calibrate.
  DeviceModel cpu = llvm::cantFail(loadDeviceModel("cpu")), fallback;
  EXPECT_EQ(cpu.flopsPerSecond, fallback.flopsPerSecond);
  EXPECT_EQ(cpu.memoryBytesPerSecond, fallback.memoryBytesPerSecond);
  EXPECT_EQ(cpu.linkBytesPerSecond, fallback.linkBytesPerSecond);
  EXPECT_EQ(cpu.linkLatencySeconds, fallback.linkLatencySeconds);
}

TEST(DeviceModelFile, PicksThePeakOfTheOpsDtype) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  DeviceModel h100 = llvm::cantFail(loadDeviceModel("h100-sxm5-80gb"));
  EXPECT_EQ(h100.flopsFor(b.getBF16Type()), 989.5e12);
  EXPECT_EQ(h100.flopsFor(b.getF16Type()), 989.5e12);
  EXPECT_EQ(h100.flopsFor(b.getF32Type()), 67e12);
  EXPECT_EQ(h100.flopsFor(b.getF64Type()), 67e12);
  EXPECT_EQ(h100.flopsFor(b.getI64Type()), 67e12);
  EXPECT_EQ(h100.flopsFor(mlir::Type()), 67e12);
}

// The H100 and H200 run their GEMMs at the cited maximum achievable matmul
// rate (stas00/ml-engineering's MAMF table: 794.5 TFLOPS bf16 on the H100
// SXM, 'H200 is the same'), whatever the shape, not at the datasheet peak;
// the A100 at its Table 4 fit.
TEST(DeviceModelFile, GpuGemmsRunAtTheirCitedRates) {
  for (const char *name : {"h100-sxm5-80gb", "h200-sxm-141gb"}) {
    DeviceModel gpu = llvm::cantFail(loadDeviceModel(name));
    EXPECT_DOUBLE_EQ(gpu.gemmFlopsPerSecond(2048, 2048, 13312, 989.5e12),
                     794.5e12)
        << name;
    EXPECT_DOUBLE_EQ(gpu.gemmFlopsPerSecond(8192, 3072, 6144, 989.5e12),
                     794.5e12)
        << name;
  }
  DeviceModel a100 = llvm::cantFail(loadDeviceModel("a100-sxm4-80gb"));
  EXPECT_NEAR(a100.gemmFlopsPerSecond(8192, 3072, 6144, 312e12), 216.7e12,
              0.1e12);
}

TEST(DeviceModelFile, NamesWhatIsWrong) {
  std::string unknown = errorOf(loadDeviceModel("a100"));
  EXPECT_NE(unknown.find("unknown device model 'a100'"), std::string::npos);
  EXPECT_NE(unknown.find("known: a100-sxm4-80gb, cpu, h100-sxm5-80gb, "
                         "h200-sxm-141gb"),
            std::string::npos)
      << unknown;
  EXPECT_NE(errorOf(loadDeviceModel("/no/such/file.json")).find("cannot read"),
            std::string::npos);
  EXPECT_NE(errorOf(parseDeviceModel("{", "x.json")).find("x.json: not JSON"),
            std::string::npos);
  EXPECT_NE(errorOf(parseDeviceModel(a100With("nic_bandwidth", std::nullopt),
                                     "x.json"))
                .find("missing field 'nic_bandwidth'"),
            std::string::npos);
  EXPECT_NE(
      errorOf(parseDeviceModel(a100With("memory_bandwidth",
                                        llvm::json::Object{{"value", 2e12}}),
                               "x.json"))
          .find("field 'memory_bandwidth' needs a \"source\""),
      std::string::npos);
  EXPECT_NE(
      errorOf(parseDeviceModel(a100With("peak_flops_f32",
                                        llvm::json::Object{{"value", 0},
                                                           {"source", "mine"}}),
                               "x.json"))
          .find("field 'peak_flops_f32' needs a \"value\" above 0"),
      std::string::npos);
}

TEST(DeviceModelFile, ReadsAchievedGemmRates) {
  llvm::json::Array points{llvm::json::Array{64, 64, 64, 1e10},
                           llvm::json::Array{1024, 1024, 1024, 1.5e11}};
  DeviceModel device = llvm::cantFail(parseDeviceModel(
      a100With("gemm_efficiency",
               llvm::json::Object{{"source", "a sweep"},
                                  {"points", std::move(points)}}),
      "x.json"));
  ASSERT_EQ(device.gemmRates.size(), 2u);
  // Kept as fractions of the f32 peak (the file names no dtype): a GEMM at
  // a sample runs at its rate when its dtype is f32, and at the same
  // fraction of the 16-bit peak when it is bf16.
  const double f32 = 19.5e12, bf16 = 312e12;
  EXPECT_DOUBLE_EQ(device.gemmFlopsPerSecond(64, 64, 64, f32), 1e10);
  EXPECT_DOUBLE_EQ(device.gemmFlopsPerSecond(1024, 1024, 1024, f32), 1.5e11);
  EXPECT_DOUBLE_EQ(device.gemmFlopsPerSecond(64, 64, 64, bf16),
                   1e10 / f32 * bf16);
  // Between the samples' rates elsewhere, and nearer the nearer sample
  // (log space).
  double near = device.gemmFlopsPerSecond(512, 512, 512, f32);
  EXPECT_GT(near, 0.5 * (1e10 + 1.5e11));
  EXPECT_LT(near, 1.5e11);
  // Beyond the samples: near the nearest one, never past its rate.
  double beyond = device.gemmFlopsPerSecond(8192, 8192, 8192, f32);
  EXPECT_GT(beyond, 0.5 * (1e10 + 1.5e11));
  EXPECT_LT(beyond, 1.5e11);
  // Without samples a GEMM runs at the peak it is given.
  EXPECT_EQ(DeviceModel().gemmFlopsPerSecond(512, 512, 512, 7e9), 7e9);
  EXPECT_NE(
      errorOf(parseDeviceModel(
                  a100With("gemm_efficiency",
                           llvm::json::Object{
                               {"source", "a sweep"},
                               {"points",
                                llvm::json::Array{llvm::json::Array{1, 2}}}}),
                  "x.json"))
          .find("gemm_efficiency point 0 is not [m, n, k, FLOP/s]"),
      std::string::npos);
  EXPECT_NE(
      errorOf(parseDeviceModel(
                  a100With("gemm_efficiency",
                           llvm::json::Object{
                               {"source", "a sweep"},
                               {"dtype", "bf16"},
                               {"points", llvm::json::Array{llvm::json::Array{
                                              64, 64, 64, 400e12}}}}),
                  "x.json"))
          .find("gemm_efficiency point 0 runs above peak_flops_bf16"),
      std::string::npos);
  EXPECT_NE(
      errorOf(parseDeviceModel(
                  a100With("gemm_efficiency",
                           llvm::json::Object{{"source", "a sweep"},
                                              {"dtype", "fp8"},
                                              {"points", llvm::json::Array{}}}),
                  "x.json"))
          .find("gemm_efficiency dtype 'fp8': expected bf16, f16, "
                "tf32, f32 or f64"),
      std::string::npos);
}
