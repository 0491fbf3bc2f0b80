//===- Data.cpp - where a step's input batch comes from -------------------===//

#include "weft/runtime/Data.h"

#include "weft/runtime/OnnxTensor.h"

#include "../kernels/Philox.h"

#include <cstring>
#include <filesystem>

namespace weft::rt {

std::map<std::string, std::string>
readStepInputs(const Plan &plan, const std::string &dir, int64_t step,
               const std::set<std::string> &only) {
  std::map<std::string, std::string> inputs;
  for (const InputDesc &in : plan.inputs) {
    if (!only.count(in.name))
      continue;
    std::string path = (std::filesystem::path(dir) /
                        ("step_" + std::to_string(step)) / (in.name + ".pb"))
                           .string();
    if (!std::filesystem::exists(path))
      throw Error("--data: missing '" + path + "' for input '" + in.name + "'");
    onnx::TensorProto proto = readTensorFile(path);
    std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    DType dtype = dtypeOfONNX(proto.data_type(), path);
    // ONNX's test data stores bfloat16 as its raw uint16 bits.
    if (dtype == DType::U16 && in.dtype == DType::BF16)
      dtype = DType::BF16;
    if (dims != in.shape || dtype != in.dtype)
      throw Error(path + ": holds " + shapeString(dims) + " " +
                  dtypeName(dtype) + ", input '" + in.name + "' is " +
                  shapeString(in.shape) + " " + dtypeName(in.dtype));
    inputs[in.name] = tensorBytes(proto, dir, path);
  }
  return inputs;
}

std::map<std::string, std::string>
syntheticInputs(const Plan &plan, uint64_t seed, int64_t step) {
  std::map<std::string, std::string> inputs;
  PhiloxKey key = {uint32_t(seed), uint32_t(seed >> 32)};
  for (const InputDesc &in : plan.inputs) {
    // Keyed by the input's name, not its position: a pipelined plan lists
    // inputs in stage order and must draw the single-rank plan's batches.
    uint32_t stream = 2166136261u; // FNV-1a
    for (unsigned char c : in.name)
      stream = (stream ^ c) * 16777619u;
    Tensor shape{nullptr, in.dtype, in.shape};
    int64_t count = shape.numel(), size = dtypeSize(in.dtype);
    std::string bytes(count * size, '\0');
    int64_t bound = in.indexBound.value_or(2);
    for (int64_t e = 0; e < count; ++e) {
      uint32_t bits = philox4x32(
          {uint32_t(e / 4), stream, uint32_t(step), 0xDA7Au}, key)[e % 4];
      char *dst = bytes.data() + e * size;
      if (in.dtype == DType::F32) {
        float v = 2.0f * uniform01(bits) - 1.0f;
        std::memcpy(dst, &v, 4);
      } else if (in.dtype == DType::F64) {
        double v = 2.0 * uniform01(bits) - 1.0;
        std::memcpy(dst, &v, 8);
      } else if (in.dtype == DType::Bool) {
        *dst = bits & 1;
      } else if (!isFloat(in.dtype)) {
        int64_t v = bound > 0 ? int64_t(bits % uint64_t(bound)) : 0;
        std::memcpy(dst, &v, size); // little-endian: the low bytes
      } else {
        throw Error("--data synthetic: input '" + in.name + "' has dtype " +
                    dtypeName(in.dtype) +
                    ", which the generator does not make");
      }
    }
    inputs[in.name] = std::move(bytes);
  }
  return inputs;
}

} // namespace weft::rt
