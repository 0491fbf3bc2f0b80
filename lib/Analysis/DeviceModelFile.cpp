//===- DeviceModelFile.cpp - device models read from JSON files -----------===//

#include "weft/Analysis/DeviceModelFile.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace llvm;

#ifndef WEFT_DEVICE_MODEL_DIR
#error "WEFT_DEVICE_MODEL_DIR: the folder of the shipped device models"
#endif

namespace {

/// Where a name's file is: WEFT_DEVICE_MODEL_DIR/NAME.json.
std::string fileOf(StringRef name) {
  SmallString<256> path(WEFT_DEVICE_MODEL_DIR);
  sys::path::append(path, name + ".json");
  return std::string(path);
}

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

} // namespace

std::vector<std::string> weft::knownDeviceModels() {
  std::vector<std::string> names;
  std::error_code ec;
  for (sys::fs::directory_iterator it(WEFT_DEVICE_MODEL_DIR, ec), end;
       it != end && !ec; it.increment(ec))
    if (sys::path::extension(it->path()) == ".json")
      names.push_back(sys::path::stem(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

Expected<weft::DeviceModel> weft::parseDeviceModel(StringRef text,
                                                   StringRef origin) {
  Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return fail("device model " + origin +
                ": not JSON: " + toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return fail("device model " + origin + ": not a JSON object");
  // Each number with its source: {"value": V > 0, "source": "..."}.
  auto field = [&](StringRef key) -> Expected<double> {
    const json::Object *entry = root->getObject(key);
    if (!entry)
      return fail("device model " + origin + ": missing field '" + key +
                  "' ({\"value\": number, \"source\": \"...\"})");
    std::optional<double> value = entry->getNumber("value");
    std::optional<StringRef> source = entry->getString("source");
    if (!value || !(*value > 0))
      return fail("device model " + origin + ": field '" + key +
                  "' needs a \"value\" above 0");
    if (!source || source->trim().empty())
      return fail("device model " + origin + ": field '" + key +
                  "' needs a \"source\" (where the number comes from)");
    return *value;
  };
  DeviceModel device;
  device.name = root->getString("name").value_or(origin).str();
  struct Entry {
    const char *key;
    double *into;
  };
  double bf16, f16, tf32, capacity, perNode, nics, nicBandwidth;
  Entry entries[] = {
      {"peak_flops_bf16", &bf16},
      {"peak_flops_f16", &f16},
      {"peak_flops_tf32", &tf32},
      {"peak_flops_f32", &device.flopsPerSecond},
      {"peak_flops_f64", &device.flops64PerSecond},
      {"memory_bandwidth", &device.memoryBytesPerSecond},
      {"memory_capacity", &capacity},
      {"devices_per_node", &perNode},
      {"intra_node_bandwidth", &device.linkBytesPerSecond},
      {"intra_node_latency", &device.linkLatencySeconds},
      {"nics_per_node", &nics},
      {"nic_bandwidth", &nicBandwidth},
      {"inter_node_latency", &device.nodeLatencySeconds},
  };
  for (Entry &entry : entries) {
    Expected<double> value = field(entry.key);
    if (!value)
      return value.takeError();
    *entry.into = *value;
  }
  // 16-bit GEMMs run at the bf16/f16 peak (equal on every GPU here; the
  // lower of the two if a file says otherwise). TF32 stays unused until
  // the plan says a GEMM may round to it (--allow-tf32 is weft-run's).
  device.flops16PerSecond = std::min(bf16, f16);
  (void)tf32;
  // Optional: achieved GEMM rates, {"source", "dtype", "points": [[m, n,
  // k, FLOP/s], ...]} (weft-run --calibrate writes them), kept as fractions
  // of the dtype's peak (f32 when the file names none).
  if (const json::Object *gemm = root->getObject("gemm_efficiency")) {
    const json::Array *points = gemm->getArray("points");
    std::optional<StringRef> source = gemm->getString("source");
    if (!points || !source || source->trim().empty())
      return fail("device model " + origin +
                  ": field 'gemm_efficiency' needs \"points\" ([[m, n, k, "
                  "FLOP/s], ...]) and a \"source\"");
    StringRef dtype = gemm->getString("dtype").value_or("f32");
    std::optional<double> peak =
        llvm::StringSwitch<std::optional<double>>(dtype)
            .Case("bf16", bf16)
            .Case("f16", f16)
            .Case("tf32", tf32)
            .Case("f32", device.flopsPerSecond)
            .Case("f64", device.flops64PerSecond)
            .Default(std::nullopt);
    if (!peak)
      return fail("device model " + origin + ": gemm_efficiency dtype '" +
                  dtype + "': expected bf16, f16, tf32, f32 or f64");
    for (auto [i, point] : llvm::enumerate(*points)) {
      const json::Array *p = point.getAsArray();
      SmallVector<double, 4> v;
      if (p)
        for (const json::Value &x : *p)
          if (std::optional<double> number = x.getAsNumber();
              number && *number > 0)
            v.push_back(*number);
      if (!p || p->size() != 4 || v.size() != 4)
        return fail("device model " + origin + ": gemm_efficiency point " +
                    Twine(i) + " is not [m, n, k, FLOP/s] of numbers above 0");
      if (v[3] > *peak)
        return fail("device model " + origin + ": gemm_efficiency point " +
                    Twine(i) + " runs above peak_flops_" + dtype);
      device.gemmRates.push_back({v[0], v[1], v[2], v[3] / *peak});
    }
  }
  device.memoryBytes = int64_t(capacity);
  device.devicesPerNode = std::max<int64_t>(1, int64_t(perNode));
  device.nodeBytesPerSecond = nics * nicBandwidth / perNode;
  return device;
}

mlir::FailureOr<weft::DeviceModel>
weft::deviceModelOption(StringRef option, mlir::Operation *at) {
  if (option.empty())
    return DeviceModel();
  Expected<DeviceModel> device = loadDeviceModel(option);
  if (!device) {
    at->emitError() << toString(device.takeError());
    return mlir::failure();
  }
  return *device;
}

Expected<weft::DeviceModel> weft::loadDeviceModel(StringRef nameOrFile) {
  bool isFile = nameOrFile.contains('/') || nameOrFile.ends_with(".json");
  std::string path = isFile ? nameOrFile.str() : fileOf(nameOrFile);
  if (!isFile && !sys::fs::exists(path))
    return fail("unknown device model '" + nameOrFile + "' (known: " +
                join(knownDeviceModels(), ", ") + "; or a JSON file's path)");
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return fail("device model " + path + ": cannot read it (" +
                file.getError().message() + ")");
  return parseDeviceModel((*file)->getBuffer(),
                          isFile ? StringRef(path) : nameOrFile);
}
