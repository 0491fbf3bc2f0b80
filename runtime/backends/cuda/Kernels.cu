//===- Kernels.cu - elementwise, cast and update kernels on the GPU -------===//
//
// Grid-stride loops over f32, bf16 and f16 storage with f32 arithmetic
// (ElementwiseMath.h and UpdateMath.h: the CPU kernels' functions). Binary
// ops broadcast as numpy does through per-operand strides (0 on a broadcast
// dimension), up to kMaxRank dimensions.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaKernels.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include "../../kernels/ElementwiseMath.h"
#include "../../kernels/RowMath.h"
#include "../../kernels/UpdateMath.h"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace weft::rt::cuda {

namespace {

template <Storage S, typename Op>
__global__ void unaryKernel(const void *x, void *y, int64_t n, Op op) {
  WEFT_GRID_STRIDE(i, n) { store<S>(y, i, op(load<S>(x, i))); }
}

template <Storage S, typename Op>
__global__ void binaryKernel(const void *a, const void *b, void *y, int64_t n,
                             Strided<2> shape, Op op) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[2];
    shape.offsets(i, offset);
    store<S>(y, i, op(load<S>(a, offset[0]), load<S>(b, offset[1])));
  }
}

struct Div {
  __device__ float operator()(float a, float b) const { return a / b; }
};

template <typename Op> void unary(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(unaryKernel<S>, grid(n), kThreads, ctx.stream, x.data, y.data,
                n, Op());
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// `a` read at each output element (broadcastInto's binary op).
struct First {
  __device__ float operator()(float a, float) const { return a; }
};

template <typename Op>
void binary(const KernelCall &call, const Context &ctx, const Tensor &a,
            const Tensor &b, const Tensor &y) {
  int64_t n = y.numel();
  if (n == 0)
    return;
  Strided<2> shape = broadcastPair(call, a, b, y);
  byStorage(call, y.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(binaryKernel<S>, grid(n), kThreads, ctx.stream, a.data, b.data,
                y.data, n, shape, Op());
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <typename Op> void binary(const KernelCall &call, const Context &ctx) {
  binary<Op>(call, ctx, call.in[0], call.in[1], call.out[0]);
}

template <Storage From, Storage To, bool Truncate>
__global__ void castKernel(const void *x, void *y, int64_t n) {
  WEFT_GRID_STRIDE(i, n) {
    float v = load<From>(x, i);
    if constexpr (To == Storage::BF16 && Truncate)
      static_cast<uint16_t *>(y)[i] = truncBF16(v);
    else
      store<To>(y, i, v);
  }
}

/// Between f32, bf16 and f16 (the mixed-precision casts); bf16 truncates
/// unless `nearest_even`, as Cast-13 (Half.h).
void cast(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  bool truncate = !call.flag("nearest_even");
  byStorage(call, x.dtype, [&]<Storage From>() {
    byStorage(call, y.dtype, [&]<Storage To>() {
      if (truncate)
        WEFT_LAUNCH((castKernel<From, To, true>), grid(n), kThreads, ctx.stream,
                    x.data, y.data, n);
      else
        WEFT_LAUNCH((castKernel<From, To, false>), grid(n), kThreads,
                    ctx.stream, x.data, y.data, n);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// A warp per row (the `dim` elements of an axis, `inner` apart): the max
/// and the sum of exp(x - max) (double) by shuffles, then RowMath.h's
/// elements, as the CPU's softmaxRow.
template <Storage S, bool Log>
__global__ void softmaxKernel(const void *x, void *y, int64_t rows, int64_t dim,
                              int64_t inner) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r / inner * dim * inner + r % inner;
    float max = -INFINITY;
    for (int64_t d = lane; d < dim; d += 32)
      max = fmaxf(max, load<S>(x, base + d * inner));
    max = warpMax(max);
    double sum = 0;
    for (int64_t d = lane; d < dim; d += 32)
      sum += expf(load<S>(x, base + d * inner) - max);
    float constant = softmaxRowConstant<Log, float>(warpSum(sum));
    for (int64_t d = lane; d < dim; d += 32)
      store<S>(y, base + d * inner,
               softmaxAt<Log>(load<S>(x, base + d * inner), max, constant));
  }
}

template <bool Log> void softmax(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  AxisView v(x.shape, call.i("axis"));
  int64_t rows = v.rows(), dim = v.dim, inner = v.inner;
  if (rows == 0 || dim == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((softmaxKernel<S, Log>), warpGrid(rows), kThreads, ctx.stream,
                x.data, y.data, rows, dim, inner);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// scale_mask_softmax: softmaxKernel's warp per row of the last dim, over
/// the elements the unfused div and where wrote: the quotient rounded to S,
/// or the fill value where the row's mask row (r mod `queries`, the mask being
/// [..., s_q, s_k] with leading dims 1) is set. The same float operations
/// in the same order as div, where and softmax: the same bits.
template <Storage S>
__global__ void scaleMaskSoftmaxKernel(const void *x, const uint8_t *mask,
                                       const void *fillValue, void *y,
                                       int64_t rows, int64_t dim,
                                       int64_t queries, float divisor) {
  int lane = threadIdx.x % 32;
  float fill = load<S>(fillValue, 0);
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * dim;
    const uint8_t *masked = mask + r % queries * dim;
    auto score = [&](int64_t d) {
      return masked[d] ? fill : rounded<S>(load<S>(x, base + d) / divisor);
    };
    float max = -INFINITY;
    for (int64_t d = lane; d < dim; d += 32)
      max = fmaxf(max, score(d));
    max = warpMax(max);
    double sum = 0;
    for (int64_t d = lane; d < dim; d += 32)
      sum += expf(score(d) - max);
    float constant = softmaxRowConstant<false, float>(warpSum(sum));
    for (int64_t d = lane; d < dim; d += 32)
      store<S>(y, base + d, softmaxAt<false>(score(d), max, constant));
  }
}

void scaleMaskSoftmax(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  int64_t dim = x.shape.back(), queries = x.shape.end()[-2];
  if (x.numel() == 0)
    return;
  int64_t rows = x.numel() / dim;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(scaleMaskSoftmaxKernel<S>, warpGrid(rows), kThreads, ctx.stream,
                x.data, static_cast<const uint8_t *>(call.in[1].data),
                call.in[2].data, call.out[0].data, rows, dim, queries,
                float(call.f("divisor")));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// Updates
//===----------------------------------------------------------------------===//

/// The loss scaler and verdict of a scaled update (null when unscaled);
/// both live in device memory, so the step's constants are computed there.
struct Scaling {
  const float *scaler = nullptr, *found = nullptr;
};

Scaling scalingOf(const KernelCall &call, bool scaled) {
  if (!scaled)
    return {};
  size_t n = call.in.size();
  return {call.in[n - 2].as<float>(), call.in[n - 1].as<float>()};
}

/// One tensor an AdamW call updates: its parameter (storage S), gradient,
/// moments and master (null without one; then the step runs on the
/// parameter, f32).
struct AdamWTensor {
  void *param;
  const void *grad;
  float *m, *v, *master;
  int64_t n;
};

/// The step's constants of torch's AdamW at (1-based) `step`, unscaled and
/// counting only the steps taken under loss scaling; false when GradScaler
/// skips the step.
__device__ bool adamwStepAt(Scaling scaling, double step, double lr,
                            double beta1, double beta2, double eps,
                            double decay, AdamWStep<float> &update) {
  if (scaling.found && *scaling.found != 0.0f)
    return false;
  double t = step - (scaling.scaler ? scaling.scaler[2] : 0.0);
  double inverse = scaling.scaler ? 1.0 / scaling.scaler[0] : 1.0;
  update = AdamWStep<float>::at(t, lr, beta1, beta2, eps, decay, inverse);
  return true;
}

/// Element i of `x`: the update on the master (or the parameter), the
/// parameter receiving it rounded to S.
template <Storage S>
__device__ void adamwAt(const AdamWTensor &x, int64_t i,
                        const AdamWStep<float> &update) {
  float p = x.master ? x.master[i] : load<S>(x.param, i);
  update(load<S>(x.grad, i), p, x.m[i], x.v[i]);
  if (x.master)
    x.master[i] = p;
  store<S>(x.param, i, p);
}

template <Storage S>
__global__ void adamwKernel(AdamWTensor x, Scaling scaling, double step,
                            double lr, double beta1, double beta2, double eps,
                            double decay) {
  AdamWStep<float> update;
  if (!adamwStepAt(scaling, step, lr, beta1, beta2, eps, decay, update))
    return;
  WEFT_GRID_STRIDE(i, x.n) { adamwAt<S>(x, i, update); }
}

/// One tensor an SGD call updates: its parameter (storage S), gradient,
/// momentum buffer (null without momentum) and master (null without one).
struct SgdTensor {
  void *param;
  const void *grad;
  float *buffer, *master;
  int64_t n;
};

/// The hyperparameters an SGD call takes once.
struct SgdHyper {
  float lr, momentum, decay;
  bool nesterov;
};

/// torch's SGD step at (0-based) `step`, unscaled, its first step the
/// first one taken under loss scaling; false when GradScaler skips it.
__device__ bool sgdStepAt(Scaling scaling, int64_t step, SgdHyper h,
                          SgdStep<float> &update) {
  if (scaling.found && *scaling.found != 0.0f)
    return false;
  int64_t skipped = scaling.scaler ? int64_t(scaling.scaler[2]) : 0;
  float inverse = scaling.scaler ? 1.0f / scaling.scaler[0] : 1.0f;
  update = {h.lr,    h.momentum, h.decay,
            inverse, h.nesterov, step - skipped == 0};
  return true;
}

/// Element i of `x`: the update on the master (or the parameter), the
/// parameter receiving it rounded to S.
template <Storage S>
__device__ void sgdAt(const SgdTensor &x, int64_t i,
                      const SgdStep<float> &update) {
  float p = x.master ? x.master[i] : load<S>(x.param, i);
  update(load<S>(x.grad, i), p, x.buffer ? x.buffer + i : nullptr);
  if (x.master)
    x.master[i] = p;
  store<S>(x.param, i, p);
}

template <Storage S>
__global__ void sgdKernel(SgdTensor x, Scaling scaling, int64_t step,
                          SgdHyper h) {
  SgdStep<float> update;
  if (!sgdStepAt(scaling, step, h, update))
    return;
  WEFT_GRID_STRIDE(i, x.n) { sgdAt<S>(x, i, update); }
}

/// Without a master the state has the parameter's type: f32 only here.
void requireF32State(const KernelCall &call, const UpdateInputs &inputs) {
  if (!inputs.master && call.in[0].dtype != DType::F32)
    unsupported(call, call.in[0].dtype);
}

/// What AdamW call `call` updates, its inputs checked.
AdamWTensor adamwTensorOf(const KernelCall &call) {
  UpdateInputs inputs = UpdateInputs::adamw(call.in.size());
  requireF32State(call, inputs);
  return {call.out[0].data,
          call.in[1].data,
          call.out[1].as<float>(),
          call.out[2].as<float>(),
          inputs.master ? call.out[3].as<float>() : nullptr,
          call.in[0].numel()};
}

Scaling adamwScalingOf(const KernelCall &call) {
  return scalingOf(call, UpdateInputs::adamw(call.in.size()).scaled);
}

void adamw(const KernelCall &call, const Context &ctx) {
  AdamWTensor x = adamwTensorOf(call);
  byStorage(call, call.in[0].dtype, [&]<Storage S>() {
    WEFT_LAUNCH(adamwKernel<S>, grid(x.n), kThreads, ctx.stream, x,
                adamwScalingOf(call), double(call.ctx.step + 1), call.f("lr"),
                call.f("beta1"), call.f("beta2"), call.f("eps"),
                call.f("weight_decay"));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// One block's work in a multi-tensor update: elements [start, start +
/// kChunk) of a tensor.
struct Chunk {
  int64_t tensor, start;
};
constexpr int64_t kChunk = 1 << 16;

/// The elements of chunk blockIdx.x of `tensors`, for this thread.
#define WEFT_CHUNK_STRIDE(x, i, tensors, chunks)                               \
  Chunk chunk = chunks[blockIdx.x];                                            \
  auto x = tensors[chunk.tensor];                                              \
  int64_t end = x.n < chunk.start + kChunk ? x.n : chunk.start + kChunk;       \
  for (int64_t i = chunk.start + threadIdx.x; i < end; i += blockDim.x)

/// adamwKernel over many tensors, a block per chunk: the same step
/// constants and per-element update, so the same bits.
template <Storage S>
__global__ void adamwGroupKernel(const AdamWTensor *tensors,
                                 const Chunk *chunks, Scaling scaling,
                                 double step, double lr, double beta1,
                                 double beta2, double eps, double decay) {
  AdamWStep<float> update;
  if (!adamwStepAt(scaling, step, lr, beta1, beta2, eps, decay, update))
    return;
  WEFT_CHUNK_STRIDE(x, i, tensors, chunks) { adamwAt<S>(x, i, update); }
}

/// sgdKernel over many tensors, a block per chunk (the same bits).
template <Storage S>
__global__ void sgdGroupKernel(const SgdTensor *tensors, const Chunk *chunks,
                               Scaling scaling, int64_t step, SgdHyper h) {
  SgdStep<float> update;
  if (!sgdStepAt(scaling, step, h, update))
    return;
  WEFT_CHUNK_STRIDE(x, i, tensors, chunks) { sgdAt<S>(x, i, update); }
}

/// What SGD call `call` updates, its inputs checked.
SgdTensor sgdTensorOf(const KernelCall &call) {
  bool buffer = call.f("momentum") != 0;
  UpdateInputs inputs = UpdateInputs::sgd(call.in.size(), buffer);
  requireF32State(call, inputs);
  return {call.out[0].data, call.in[1].data,
          buffer ? call.out[1].as<float>() : nullptr,
          inputs.master ? call.out[call.out.size() - 1].as<float>() : nullptr,
          call.in[0].numel()};
}

Scaling sgdScalingOf(const KernelCall &call) {
  bool buffer = call.f("momentum") != 0;
  return scalingOf(call, UpdateInputs::sgd(call.in.size(), buffer).scaled);
}

SgdHyper sgdHyperOf(const KernelCall &call) {
  return {float(call.f("lr")), float(call.f("momentum")),
          float(call.f("weight_decay")), call.b("nesterov")};
}

void sgd(const KernelCall &call, const Context &ctx) {
  SgdTensor x = sgdTensorOf(call);
  byStorage(call, call.in[0].dtype, [&]<Storage S>() {
    WEFT_LAUNCH(sgdKernel<S>, grid(x.n), kThreads, ctx.stream, x,
                sgdScalingOf(call), call.ctx.step, sgdHyperOf(call));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// Whether the calls update distinct parameters: a launch's chunks run in
/// any order, so a parameter updated twice in a run (no plan weft emits
/// has one) takes the one-by-one path.
bool distinctParameters(const std::vector<KernelCall> &calls) {
  std::set<void *> params;
  for (const KernelCall &call : calls)
    if (!params.insert(call.out[0].data).second)
      return false;
  return true;
}

/// `tensors` and their kChunk-element chunks uploaded as one table of
/// int64 words, then `launch(tensors, chunks, blocks)` on the device's.
template <typename T, typename Launch>
void launchChunks(const std::vector<T> &tensors, const Context &ctx,
                  Launch launch) {
  std::vector<Chunk> chunks;
  for (size_t k = 0; k < tensors.size(); ++k)
    for (int64_t start = 0; start < tensors[k].n; start += kChunk)
      chunks.push_back({int64_t(k), start});
  if (chunks.empty())
    return;
  static_assert(sizeof(T) % 8 == 0 && sizeof(Chunk) == 16);
  size_t tensorWords = sizeof(T) * tensors.size() / 8;
  std::vector<int64_t> table(tensorWords + 2 * chunks.size());
  std::memcpy(table.data(), tensors.data(), sizeof(T) * tensors.size());
  std::memcpy(table.data() + tensorWords, chunks.data(),
              sizeof(Chunk) * chunks.size());
  const int64_t *device = ctx.scratch->upload(table, ctx.stream);
  launch(reinterpret_cast<const T *>(device),
         reinterpret_cast<const Chunk *>(device + tensorWords),
         unsigned(chunks.size()));
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <Storage S>
__global__ void foundInfKernel(const void *x, int64_t n, float *found) {
  WEFT_GRID_STRIDE(i, n) {
    if (!isfinite(load<S>(x, i)))
      *found = 1.0f; // every writer writes the same value
  }
}

void foundInf(const KernelCall &call, const Context &ctx) {
  float *found = call.out[0].as<float>();
  WEFT_CUDA_CHECK(cudaMemsetAsync(found, 0, sizeof(float), ctx.stream));
  for (const Tensor &g : call.in) {
    int64_t n = g.numel();
    if (n == 0)
      continue;
    byStorage(call, g.dtype, [&]<Storage S>() {
      WEFT_LAUNCH(foundInfKernel<S>, grid(n), kThreads, ctx.stream, g.data, n,
                  found);
    });
  }
  WEFT_CUDA_CHECK(cudaGetLastError());
}

__global__ void updateLossScaleKernel(float *state, const float *found,
                                      double growth, double backoff,
                                      int64_t interval) {
  updateLossScale(state, *found != 0.0f, growth, backoff, interval);
}

void lossScaleUpdate(const KernelCall &call, const Context &ctx) {
  WEFT_LAUNCH(updateLossScaleKernel, 1, 1, ctx.stream, call.out[0].as<float>(),
              call.in[1].as<float>(), call.f("growth_factor"),
              call.f("backoff_factor"), call.i("growth_interval"));
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// ZeRO's gathered parameter written back in place: a device copy.
void assign(const KernelCall &call, const Context &ctx) {
  if (call.out[0].data != call.in[1].data)
    WEFT_CUDA_CHECK(cudaMemcpyAsync(call.out[0].data, call.in[1].data,
                                    call.in[1].bytes(),
                                    cudaMemcpyDeviceToDevice, ctx.stream));
}

/// `calls` of one update kernel as multi-tensor launches: the calls whose
/// `keyOf` agree (the parameter dtype first, then what the kernel takes
/// once) launch together, `launch.template operator()<S>(key, tensors,
/// chunks, blocks)` over their `tensorOf`; one by one (`one`) when a
/// parameter repeats.
template <typename T, typename One, typename KeyOf, typename TensorOf,
          typename Launch>
void launchGroups(const std::vector<KernelCall> &calls, const Context &ctx,
                  One one, KeyOf keyOf, TensorOf tensorOf, Launch launch) {
  if (!distinctParameters(calls)) {
    for (const KernelCall &each : calls)
      one(each, ctx);
    return;
  }
  std::map<decltype(keyOf(calls.front())), std::vector<T>> launches;
  for (const KernelCall &call : calls)
    launches[keyOf(call)].push_back(tensorOf(call));
  for (const auto &[key, tensors] : launches)
    byStorage(calls.front(), std::get<0>(key), [&]<Storage S>() {
      launchChunks(tensors, ctx,
                   [&](const T *x, const Chunk *chunks, unsigned blocks) {
                     launch.template operator()<S>(key, x, chunks, blocks);
                   });
    });
}

} // namespace

void broadcastInto(const KernelCall &call, const Context &ctx,
                   const Tensor &src, const Tensor &dst) {
  binary<First>(call, ctx, src, src, dst);
}

[[noreturn]] void unsupported(const KernelCall &call, DType dtype) {
  call.fail(std::string("dtype ") + dtypeName(dtype) +
            " is not supported on the CUDA backend");
}

void registerElementwiseKernels(KernelTable &t) {
  t[Op::Sqrt] = unary<math::Sqrt>;
  t[Op::Reciprocal] = unary<math::Reciprocal>;
  t[Op::Neg] = unary<math::Neg>;
  t[Op::Exp] = unary<math::Exp>;
  t[Op::Log] = unary<math::Log>;
  t[Op::Gelu] = unary<math::Gelu>;
  t[Op::GeluTanh] = unary<math::GeluTanh>;
  t[Op::Erf] = unary<math::Erf>;
  t[Op::Tanh] = unary<math::Tanh>;
  t[Op::Relu] = unary<math::Relu>;
  t[Op::Sigmoid] = unary<math::Sigmoid>;
  t[Op::Sin] = unary<math::Sin>;
  t[Op::Cos] = unary<math::Cos>;
  t[Op::Add] = binary<math::Add>;
  t[Op::Max] = binary<math::Max>;
  t[Op::Min] = binary<math::Min>;
  t[Op::Sub] = binary<math::Sub>;
  t[Op::Mul] = binary<math::Mul>;
  t[Op::Div] = binary<Div>;
  t[Op::Pow] = [](const KernelCall &call, const Context &ctx) {
    // ONNX lets the exponent's type differ; here it must be the base's.
    if (call.in[1].dtype != call.in[0].dtype)
      unsupported(call, call.in[1].dtype);
    binary<math::Pow>(call, ctx);
  };
  t[Op::Cast] = cast;
  t[Op::Softmax] = softmax<false>;
  t[Op::ScaleMaskSoftmax] = scaleMaskSoftmax;
  t[Op::LogSoftmax] = softmax<true>;
}

void adamwGroup(const std::vector<KernelCall> &calls, const Context &ctx) {
  launchGroups<AdamWTensor>(
      calls, ctx, adamw,
      [](const KernelCall &call) {
        Scaling s = adamwScalingOf(call);
        return std::tuple{
            call.in[0].dtype, s.scaler,      s.found,
            call.ctx.step,    call.f("lr"),  call.f("beta1"),
            call.f("beta2"),  call.f("eps"), call.f("weight_decay")};
      },
      adamwTensorOf,
      [&]<Storage S>(const auto &key, const AdamWTensor *x, const Chunk *chunks,
                     unsigned blocks) {
        auto [dtype, scaler, found, step, lr, beta1, beta2, eps, decay] = key;
        WEFT_LAUNCH(adamwGroupKernel<S>, blocks, kThreads, ctx.stream, x,
                    chunks, Scaling{scaler, found}, double(step + 1), lr, beta1,
                    beta2, eps, decay);
      });
}

void sgdGroup(const std::vector<KernelCall> &calls, const Context &ctx) {
  launchGroups<SgdTensor>(
      calls, ctx, sgd,
      [](const KernelCall &call) {
        Scaling s = sgdScalingOf(call);
        SgdHyper h = sgdHyperOf(call);
        return std::tuple{call.in[0].dtype, s.scaler,  s.found,
                          call.ctx.step,    h.lr,      h.momentum,
                          h.decay,          h.nesterov};
      },
      sgdTensorOf,
      [&]<Storage S>(const auto &key, const SgdTensor *x, const Chunk *chunks,
                     unsigned blocks) {
        auto [dtype, scaler, found, step, lr, momentum, decay, nesterov] = key;
        WEFT_LAUNCH(sgdGroupKernel<S>, blocks, kThreads, ctx.stream, x, chunks,
                    Scaling{scaler, found}, step,
                    SgdHyper{lr, momentum, decay, nesterov});
      });
}

void registerUpdateKernels(KernelTable &t) {
  t[Op::AdamW] = adamw;
  t[Op::SGD] = sgd;
  t[Op::FoundInf] = foundInf;
  t[Op::UpdateLossScale] = lossScaleUpdate;
  t[Op::Assign] = assign;
}

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerUpdateKernels(t);
    registerMovementKernels(t);
    registerGemmKernels(t);
    registerPointwiseKernels(t);
    registerRowKernels(t);
    registerLossKernels(t);
    registerReductionKernels(t);
#ifdef WEFT_HAVE_CUDNN
    registerCudnnKernels(t);
#endif
#ifdef WEFT_HAVE_CUDNN_FRONTEND
    registerAttentionKernels(t);
#endif
    registerPoolingKernels(t);
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
