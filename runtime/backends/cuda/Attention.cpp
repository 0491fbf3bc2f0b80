//===- Attention.cpp - fused attention through cuDNN's SDPA ---------------===//
//
// attention and attention_grad (runtime/lib/specs/AttentionSpecs.cpp) as
// cuDNN's fused flash attention: the scaled-dot-product-attention forward
// and backward graphs of cuDNN's frontend (cudnn_frontend::graph::Graph::
// sdpa and sdpa_backward, the header-only library cuDNN's own samples use),
// built once per shape and kept. cuDNN's statistics are the per-row
// log-sum-exp the CPU kernel writes, so the two backends agree on the
// plan's stats buffer. Every layout is strides to cuDNN (Transformer
// Engine's bshd and bs3hd are its native ones): under bs3hd q, k and v,
// and dq, dk and dv, are one buffer at the parts' offsets.
//
// A bias (an additive mask, [B or 1, H or 1, Sq or 1, Sk]) is cuDNN's
// SDPA bias, its broadcast dims stride 0; the backward takes it too and
// gives no dbias. Not yet run on a GPU: compiled and linked only.
//
// cuDNN's flash attention runs bf16 and f16 only; an f32 plan's attention
// is refused naming the kernel (compile it with --precision bf16|f16, or
// without --flash-attention). A dropout inside it is refused as well:
// cuDNN draws its own Philox stream, and weft's masks are the CPU's bit
// for bit (DropoutMask.h).
//
// The frontend resolves cuDNN's functions through the handle weft opened
// (Cudnn.h): weft-run links no cuDNN.
//
//===----------------------------------------------------------------------===//

#define NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING 1
#include <cudnn_frontend.h>

#include "CudaKernels.h"
#include "Cudnn.h"

#include "../../kernels/AttentionGeometry.h"

#include <compare>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

/// The library the frontend's calls resolve in (cudnn_frontend_shim.h).
namespace cudnn_frontend {
void *cudnn_dlhandle = nullptr;
} // namespace cudnn_frontend

namespace weft::rt::cuda {

namespace {

namespace fe = cudnn_frontend;
using TensorPtr = std::shared_ptr<fe::graph::Tensor_attributes>;

/// What a built graph depends on: direction, dtype, the sizes and layout
/// of the operands, and the attributes.
struct Key {
  bool backward;
  DType dtype;
  AttentionGeometry g;
  double scale;
  bool causal;
  /// The bias's [B, H, Sq, Sk] dims (1 where it broadcasts); empty without.
  std::vector<int64_t> bias;
  auto operator<=>(const Key &) const = default;
};

Key keyOf(const KernelCall &call, bool backward) {
  size_t biasIndex = backward ? 6 : 3;
  return {backward,
          call.in[0].dtype,
          AttentionGeometry::of(call.in[0].shape, call.in[1].shape,
                                call.in[2].shape,
                                AttentionGeometry::layoutOf(call)),
          call.f("scale"),
          call.flag("causal"),
          call.in.size() > biasIndex ? call.in[biasIndex].shape
                                     : std::vector<int64_t>()};
}

/// A built graph and the tensors its variant pack names.
struct Compiled {
  std::shared_ptr<fe::graph::Graph> graph;
  TensorPtr q, k, v, o, stats, dO, dq, dk, dv, bias;
  int64_t workspace = 0;
};

[[noreturn]] void fail(const KernelCall &call, const std::string &what,
                       fe::error_t status) {
  call.fail("cuDNN's fused attention: " + what + ": " + status.get_message());
}

void check(const KernelCall &call, const char *what, fe::error_t status) {
  if (status.is_bad())
    fail(call, what, status);
}

using Operand = AttentionOperand;

/// `t` as a [b, h, s, width] tensor laid out as the call's `operand` is
/// (AttentionGeometry::strides).
fe::graph::Tensor_attributes &laidOut(fe::graph::Tensor_attributes &t,
                                      const Key &k, Operand operand) {
  return t
      .set_dim({k.g.batch, k.g.headsOf(operand), k.g.rows(operand),
                k.g.width(operand)})
      .set_stride(k.g.strides(operand));
}

/// An input of the graph.
TensorPtr tensor(fe::graph::Graph &g, const char *name, const Key &k,
                 Operand operand) {
  fe::graph::Tensor_attributes t;
  return g.tensor(laidOut(t.set_name(name), k, operand));
}

/// Marks a graph result as an output of the call.
void output(const TensorPtr &t, const Key &k, Operand operand) {
  laidOut(t->set_output(true), k, operand);
}

/// Where `operand` starts in `buffer` (under bs3hd, its part's offset).
void *at(const Tensor &buffer, const Key &k, Operand operand) {
  return static_cast<char *>(buffer.data) +
         k.g.base(0, operand) * int64_t(dtypeSize(buffer.dtype));
}

Compiled build(const KernelCall &call, const Key &k, cudnnHandle_t handle) {
  Compiled c;
  c.graph = std::make_shared<fe::graph::Graph>();
  fe::graph::Graph &g = *c.graph;
  g.set_io_data_type(k.dtype == DType::BF16 ? fe::DataType_t::BFLOAT16
                                            : fe::DataType_t::HALF)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  c.q = tensor(g, "q", k, Operand::Q);
  c.k = tensor(g, "k", k, Operand::K);
  c.v = tensor(g, "v", k, Operand::V);
  std::vector<int64_t> statsDim{k.g.batch, k.g.heads, k.g.sq, 1},
      statsStride{k.g.heads * k.g.sq, k.g.sq, 1, 1};
  if (!k.bias.empty()) {
    // Row-major over its own dims, stride 0 where it broadcasts.
    std::vector<int64_t> stride(4, 0);
    for (int64_t d = 3, s = 1; d >= 0; --d) {
      stride[d] = k.bias[d] == 1 ? 0 : s;
      s *= k.bias[d];
    }
    c.bias = g.tensor(fe::graph::Tensor_attributes()
                          .set_name("bias")
                          .set_dim(k.bias)
                          .set_stride(stride));
  }
  if (!k.backward) {
    auto options = fe::graph::SDPA_attributes()
                       .set_name("attention")
                       .set_generate_stats(true)
                       .set_attn_scale(static_cast<float>(k.scale))
                       .set_causal_mask(k.causal);
    if (c.bias)
      options.set_bias(c.bias);
    auto [o, stats] = g.sdpa(c.q, c.k, c.v, options);
    output(o, k, Operand::Out);
    stats->set_output(true)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(statsDim)
        .set_stride(statsStride);
    c.o = o;
    c.stats = stats;
  } else {
    c.o = tensor(g, "o", k, Operand::Out);
    c.dO = tensor(g, "do", k, Operand::Out);
    c.stats = g.tensor(fe::graph::Tensor_attributes()
                           .set_name("stats")
                           .set_dim(statsDim)
                           .set_stride(statsStride)
                           .set_data_type(fe::DataType_t::FLOAT));
    // Deterministic: dk and dv summed in a fixed order, so a step repeats
    // bit for bit, as every other weft kernel.
    auto options = fe::graph::SDPA_backward_attributes()
                       .set_name("attention_grad")
                       .set_attn_scale(static_cast<float>(k.scale))
                       .set_causal_mask(k.causal)
                       .set_deterministic_algorithm(true);
    if (c.bias)
      options.set_bias(c.bias);
    auto [dq, dk, dv] =
        g.sdpa_backward(c.q, c.k, c.v, c.o, c.dO, c.stats, options);
    output(dq, k, Operand::Q);
    output(dk, k, Operand::K);
    output(dv, k, Operand::V);
    c.dq = dq;
    c.dk = dk;
    c.dv = dv;
  }
  check(call, "validate", g.validate());
  check(call, "build_operation_graph", g.build_operation_graph(handle));
  check(call, "create_execution_plans",
        g.create_execution_plans({fe::HeurMode_t::A}));
  check(call, "check_support", g.check_support(handle));
  check(call, "build_plans", g.build_plans(handle));
  check(call, "get_workspace_size", g.get_workspace_size(c.workspace));
  return c;
}

/// The graph for this call, built on first use.
const Compiled &compiled(const Key &key, const KernelCall &call,
                         cudnnHandle_t handle) {
  static std::mutex mutex;
  static std::map<Key, Compiled> graphs;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = graphs.find(key);
  if (it == graphs.end())
    it = graphs.emplace(key, build(call, key, handle)).first;
  return it->second;
}

/// The refusals, before anything runs: dtype and dropout.
void requireSupported(const KernelCall &call) {
  DType dtype = call.in[0].dtype;
  if (dtype != DType::BF16 && dtype != DType::F16)
    call.fail(std::string("cuDNN's fused attention runs bf16 and f16, not ") +
              dtypeName(dtype) +
              ": compile with --precision bf16|f16, or without "
              "--flash-attention");
  if (call.has("dropout_ratio") && call.f("dropout_ratio") > 0)
    call.fail("cuDNN's fused attention draws its own dropout mask, not "
              "weft's (the CPU's bit for bit): compile with attention "
              "dropout 0, or without --flash-attention");
}

cudnnHandle_t handleFor(const Context &ctx) {
  cudnn_frontend::cudnn_dlhandle = Cudnn::get().handle;
  return static_cast<cudnnHandle_t>(ctx.cudnn->get(ctx.stream));
}

void execute(const KernelCall &call, const Context &ctx, const Compiled &c,
             cudnnHandle_t handle, std::unordered_map<TensorPtr, void *> pack) {
  void *workspace =
      c.workspace ? ctx.scratch->get(size_t(c.workspace), ctx.stream) : nullptr;
  check(call, "execute", c.graph->execute(handle, pack, workspace));
}

void attention(const KernelCall &call, const Context &ctx) {
  requireSupported(call);
  cudnnHandle_t handle = handleFor(ctx);
  Key k = keyOf(call, false);
  const Compiled &c = compiled(k, call, handle);
  std::unordered_map<TensorPtr, void *> pack{
      {c.q, at(call.in[0], k, Operand::Q)},
      {c.k, at(call.in[1], k, Operand::K)},
      {c.v, at(call.in[2], k, Operand::V)},
      {c.o, call.out[0].data},
      {c.stats, call.out[1].data}};
  if (c.bias)
    pack[c.bias] = call.in[3].data;
  execute(call, ctx, c, handle, std::move(pack));
}

void attentionGrad(const KernelCall &call, const Context &ctx) {
  requireSupported(call);
  cudnnHandle_t handle = handleFor(ctx);
  Key k = keyOf(call, true);
  const Compiled &c = compiled(k, call, handle);
  // Under bs3hd one packed gradient holds dq, dk and dv.
  bool packed = call.out.size() == 1;
  std::unordered_map<TensorPtr, void *> pack{
      {c.q, at(call.in[0], k, Operand::Q)},
      {c.k, at(call.in[1], k, Operand::K)},
      {c.v, at(call.in[2], k, Operand::V)},
      {c.o, call.in[3].data},
      {c.stats, call.in[4].data},
      {c.dO, call.in[5].data},
      {c.dq, at(call.out[0], k, Operand::Q)},
      {c.dk, at(call.out[packed ? 0 : 1], k, Operand::K)},
      {c.dv, at(call.out[packed ? 0 : 2], k, Operand::V)}};
  if (c.bias)
    pack[c.bias] = call.in[6].data;
  execute(call, ctx, c, handle, std::move(pack));
}

} // namespace

void registerAttentionKernels(KernelTable &t) {
  t[Op::Attention] = attention;
  t[Op::AttentionGrad] = attentionGrad;
}

} // namespace weft::rt::cuda
