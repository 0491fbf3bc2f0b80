//===- Convolution.cpp - convolutions and batch norm through cuDNN --------===//
//
// conv (ONNX Conv-11: forward), conv_transpose (ConvTranspose-11: cuDNN's
// backward data of the convolution it transposes), conv_weight_grad
// (backward filter) and spatial batch norm, with cuDNN's descriptor API.
// Algorithms: the first deterministic one cuDNN's heuristics rank, so a
// step repeats bit for bit. The descriptors and algorithm of each
// configuration are made by its first call and kept with the cuDNN handle
// (ConvPlan), as PyTorch keeps its algorithm choices: the heuristics are
// asked once per configuration, in the first step. f32 convolutions use FMA
// math (no TF32, so they stay within f32's tolerance of the CPU; TF32
// tensor cores under weft-run --allow-tf32), 16-bit ones
// tensor cores with f32 accumulation. Workspaces come from the scratch buffer.
// A 1-D window gains a unit dimension (cuDNN wants two or three); asymmetric
// pads, a biased running variance (ONNX's form) or frozen batch-norm
// gradients are refused with the kernel named, as cuDNN has no such mode.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaKernels.h"
#include "Cudnn.h"

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace weft::rt {

/// Throws Error naming `file`:`line`, the call and cuDNN's error string.
inline void cudnnCheck(cudnnStatus_t status, const char *what, const char *file,
                       int line) {
  if (status != CUDNN_STATUS_SUCCESS)
    libraryError(file, line, what,
                 cuda::Cudnn::get().cudnnGetErrorString(status));
}

} // namespace weft::rt

#define WEFT_CUDNN_CHECK(call)                                                 \
  ::weft::rt::cudnnCheck((call), #call, __FILE__, __LINE__)

namespace weft::rt::cuda {

namespace {

const float kOne = 1.0f, kZero = 0.0f;

cudnnDataType_t cudnnType(const KernelCall &call, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDNN_DATA_FLOAT;
  case DType::BF16:
    return CUDNN_DATA_BFLOAT16;
  case DType::F16:
    return CUDNN_DATA_HALF;
  default:
    unsupported(call, dtype);
  }
}

/// [N, C, spatial...] with at least two spatial dims (a 1-D window, and a
/// batch norm's [N, C], gain unit dims after C).
std::vector<int> cudnnDims(const KernelCall &call,
                           const std::vector<int64_t> &shape) {
  if (shape.size() < 2 || shape.size() > 5)
    call.fail("rank " + std::to_string(shape.size()) +
              " is not [N, C] with up to three spatial dims");
  std::vector<int> dims(shape.begin(), shape.end());
  while (dims.size() < 4)
    dims.insert(dims.begin() + 2, 1);
  return dims;
}

struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(const KernelCall &call, const Tensor &t)
      : TensorDesc(call, t.dtype, t.shape) {}
  TensorDesc(const KernelCall &call, DType dtype,
             const std::vector<int64_t> &shape) {
    std::vector<int> dims = cudnnDims(call, shape), strides(dims.size(), 1);
    for (int k = int(dims.size()) - 2; k >= 0; --k)
      strides[k] = strides[k + 1] * dims[k + 1];
    const Cudnn &dnn = Cudnn::get();
    WEFT_CUDNN_CHECK(dnn.cudnnCreateTensorDescriptor(&d));
    WEFT_CUDNN_CHECK(dnn.cudnnSetTensorNdDescriptor(
        d, cudnnType(call, dtype), int(dims.size()), dims.data(),
        strides.data()));
  }
  ~TensorDesc() { Cudnn::get().cudnnDestroyTensorDescriptor(d); }
};

struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc(const KernelCall &call, const Tensor &w) {
    std::vector<int> dims = cudnnDims(call, w.shape);
    const Cudnn &dnn = Cudnn::get();
    WEFT_CUDNN_CHECK(dnn.cudnnCreateFilterDescriptor(&d));
    WEFT_CUDNN_CHECK(dnn.cudnnSetFilterNdDescriptor(
        d, cudnnType(call, w.dtype), CUDNN_TENSOR_NCHW, int(dims.size()),
        dims.data()));
  }
  ~FilterDesc() { Cudnn::get().cudnnDestroyFilterDescriptor(d); }
};

/// The window of a conv, conv_transpose or conv_weight_grad call over
/// `spatial` dims (ONNX pads [begin..., end...]; symmetric only).
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc(const KernelCall &call, size_t spatial, DType dtype, bool tf32) {
    const std::vector<int64_t> &pads = call.ints("pads");
    std::vector<int> pad, stride, dilation;
    for (size_t k = 0; k < spatial; ++k) {
      if (pads[k] != pads[k + spatial])
        call.fail("asymmetric pads " + shapeString(pads) +
                  " are not supported by cuDNN (the CUDA backend)");
      pad.push_back(int(pads[k]));
      stride.push_back(int(call.ints("strides")[k]));
      dilation.push_back(int(call.ints("dilations")[k]));
    }
    if (spatial == 1) { // the unit dim cudnnDims added
      pad.insert(pad.begin(), 0);
      stride.insert(stride.begin(), 1);
      dilation.insert(dilation.begin(), 1);
    }
    const Cudnn &dnn = Cudnn::get();
    WEFT_CUDNN_CHECK(dnn.cudnnCreateConvolutionDescriptor(&d));
    WEFT_CUDNN_CHECK(dnn.cudnnSetConvolutionNdDescriptor(
        d, int(pad.size()), pad.data(), stride.data(), dilation.data(),
        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    WEFT_CUDNN_CHECK(
        dnn.cudnnSetConvolutionGroupCount(d, int(call.i("group"))));
    // f32: FMA math, or with --allow-tf32 cuDNN's default, which lets f32
    // convolutions use TF32 tensor cores; 16 bits: tensor cores.
    WEFT_CUDNN_CHECK(dnn.cudnnSetConvolutionMathType(
        d, dtype != DType::F32 ? CUDNN_TENSOR_OP_MATH
           : tf32              ? CUDNN_DEFAULT_MATH
                               : CUDNN_FMA_MATH));
  }
  ~ConvDesc() { Cudnn::get().cudnnDestroyConvolutionDescriptor(d); }
};

constexpr int kAlgorithms = 8;

/// cuDNN's three convolution passes.
enum class Pass { Forward, BackwardData, BackwardFilter };

/// What fixes a pass's descriptors and algorithm: the pass, the dtype, the
/// shapes of the forward convolution's x, w and y, its window and groups,
/// and whether a bias is added after. cuDNN's heuristics see no address.
struct ConvKey {
  Pass pass;
  DType dtype;
  std::vector<int64_t> x, w, y, pads, strides, dilations;
  int64_t group;
  bool bias, tf32;

  auto tie() const {
    return std::tie(pass, dtype, x, w, y, pads, strides, dilations, group, bias,
                    tf32);
  }
  bool operator<(const ConvKey &other) const { return tie() < other.tie(); }
};

/// The first algorithm of `perf` (cuDNN's ranking) that ran and is
/// deterministic, so a step repeats bit for bit.
template <typename Perf>
int firstDeterministic(const KernelCall &call, const Perf *perf, int count) {
  for (int k = 0; k < count; ++k)
    if (perf[k].status == CUDNN_STATUS_SUCCESS &&
        perf[k].determinism == CUDNN_DETERMINISTIC)
      return int(perf[k].algo);
  call.fail("cuDNN offers no deterministic algorithm for this convolution");
}

} // namespace

/// One pass's descriptors (of the forward convolution from x to y with
/// filter w, whichever pass runs), its algorithm and workspace bytes, and
/// the bias's descriptor when one is added.
struct ConvPlan {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  std::optional<TensorDesc> bias;
  int algo = 0; ///< the pass's cudnnConvolution*Algo_t
  size_t bytes = 0;

  ConvPlan(const KernelCall &call, cudnnHandle_t h, Pass pass, const Tensor &x,
           const Tensor &y, const Tensor &w, bool addsBias, bool tf32)
      : x(call, x), y(call, y), w(call, w),
        conv(call, x.shape.size() - 2, x.dtype, tf32) {
    if (addsBias) { // [K] along dim 1 of the pass's output
      const Tensor &out = pass == Pass::Forward ? y : x;
      std::vector<int64_t> shape(out.shape.size(), 1);
      shape[1] = out.shape[1];
      bias.emplace(call, out.dtype, shape);
    }
    const Cudnn &dnn = Cudnn::get();
    int count = 0;
    switch (pass) {
    case Pass::Forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[kAlgorithms];
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionForwardAlgorithm_v7(
          h, this->x.d, this->w.d, conv.d, this->y.d, kAlgorithms, &count,
          perf));
      algo = firstDeterministic(call, perf, count);
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionForwardWorkspaceSize(
          h, this->x.d, this->w.d, conv.d, this->y.d,
          cudnnConvolutionFwdAlgo_t(algo), &bytes));
      break;
    }
    case Pass::BackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kAlgorithms];
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, this->w.d, this->y.d, conv.d, this->x.d, kAlgorithms, &count,
          perf));
      algo = firstDeterministic(call, perf, count);
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, this->w.d, this->y.d, conv.d, this->x.d,
          cudnnConvolutionBwdDataAlgo_t(algo), &bytes));
      break;
    }
    case Pass::BackwardFilter: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[kAlgorithms];
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, this->x.d, this->y.d, conv.d, this->w.d, kAlgorithms, &count,
          perf));
      algo = firstDeterministic(call, perf, count);
      WEFT_CUDNN_CHECK(dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, this->x.d, this->y.d, conv.d, this->w.d,
          cudnnConvolutionBwdFilterAlgo_t(algo), &bytes));
      break;
    }
    }
  }
};

/// A backend's convolution plans by configuration, made by the first
/// call of each (PyTorch keeps its cuDNN algorithm choices so too).
struct ConvPlans {
  std::map<ConvKey, std::unique_ptr<ConvPlan>> plans;
};

namespace {

/// One pass of the convolution from `x` to `y` with filter `w` (the
/// forward direction, whichever pass runs): the handle, the plan, and
/// the workspace from the scratch buffer.
struct Convolution {
  const Cudnn &dnn = Cudnn::get();
  cudnnHandle_t h;
  const ConvPlan &plan;
  void *workspace;

  Convolution(const KernelCall &call, const Context &ctx, Pass pass,
              const Tensor &x, const Tensor &y, const Tensor &w)
      : h(static_cast<cudnnHandle_t>(ctx.cudnn->get(ctx.stream))),
        plan(planOf(call, ctx, pass, x, y, w)),
        workspace(ctx.scratch->get(plan.bytes, ctx.stream)) {}

  /// bias [K] added along dim 1 of `out`, when the call has one.
  void addBias(const KernelCall &call, const TensorDesc &outDesc,
               const Tensor &out) const {
    if (plan.bias)
      WEFT_CUDNN_CHECK(dnn.cudnnAddTensor(
          h, &kOne, plan.bias->d, call.in[2].data, &kOne, outDesc.d, out.data));
  }

private:
  const ConvPlan &planOf(const KernelCall &call, const Context &ctx, Pass pass,
                         const Tensor &x, const Tensor &y, const Tensor &w) {
    bool addsBias = pass != Pass::BackwardFilter && call.in.size() > 2;
    ConvKey key{pass,
                x.dtype,
                x.shape,
                w.shape,
                y.shape,
                call.ints("pads"),
                call.ints("strides"),
                call.ints("dilations"),
                call.i("group"),
                addsBias,
                ctx.tf32 && x.dtype == DType::F32};
    std::unique_ptr<ConvPlan> &plan = ctx.cudnn->convPlans().plans[key];
    if (!plan)
      plan = std::make_unique<ConvPlan>(call, h, pass, x, y, w, addsBias,
                                        key.tf32);
    return *plan;
  }
};

void conv(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &w = call.in[1], &y = call.out[0];
  Convolution c(call, ctx, Pass::Forward, x, y, w);
  const ConvPlan &p = c.plan;
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionForward(
      c.h, &kOne, p.x.d, x.data, p.w.d, w.data, p.conv.d,
      cudnnConvolutionFwdAlgo_t(p.algo), c.workspace, p.bytes, &kZero, p.y.d,
      y.data));
  c.addBias(call, p.y, y);
}

/// The transpose of the convolution from `y`'s shape to `x`'s with the
/// same weight: cuDNN's backward data.
void convTranspose(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &w = call.in[1], &y = call.out[0];
  // The convolution this transposes runs from y to x.
  Convolution c(call, ctx, Pass::BackwardData, y, x, w);
  const ConvPlan &p = c.plan;
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionBackwardData(
      c.h, &kOne, p.w.d, w.data, p.y.d, x.data, p.conv.d,
      cudnnConvolutionBwdDataAlgo_t(p.algo), c.workspace, p.bytes, &kZero,
      p.x.d, y.data));
  c.addBias(call, p.x, y); // the transpose's output: the conv's input
}

void convWeightGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dw = call.out[0];
  Convolution c(call, ctx, Pass::BackwardFilter, x, dy, dw);
  const ConvPlan &p = c.plan;
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionBackwardFilter(
      c.h, &kOne, p.x.d, x.data, p.y.d, dy.data, p.conv.d,
      cudnnConvolutionBwdFilterAlgo_t(p.algo), c.workspace, p.bytes, &kZero,
      p.w.d, dw.data));
}

/// Batch norm's f32 operands and epsilon, checked against what cuDNN's
/// spatial mode computes.
double batchNormEpsilon(const KernelCall &call) {
  if (call.in[0].dtype != DType::F32)
    unsupported(call, call.in[0].dtype);
  double eps = call.f("epsilon");
  if (eps < CUDNN_BN_MIN_EPSILON)
    call.fail("epsilon " + std::to_string(eps) + " is under cuDNN's minimum " +
              std::to_string(CUDNN_BN_MIN_EPSILON));
  return eps;
}

struct BatchNormDesc {
  cudnnTensorDescriptor_t d = nullptr;
  explicit BatchNormDesc(const TensorDesc &x) {
    const Cudnn &dnn = Cudnn::get();
    WEFT_CUDNN_CHECK(dnn.cudnnCreateTensorDescriptor(&d));
    WEFT_CUDNN_CHECK(
        dnn.cudnnDeriveBNTensorDescriptor(d, x.d, CUDNN_BATCHNORM_SPATIAL));
  }
  ~BatchNormDesc() { Cudnn::get().cudnnDestroyTensorDescriptor(d); }
};

/// ONNX BatchNormalization-15: running = momentum running + (1 - momentum)
/// batch, cuDNN's exponential average with factor 1 - momentum (its
/// running variance is the unbiased one, torch's).
void batchNorm(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  double eps = batchNormEpsilon(call);
  bool training = call.b("training");
  if (training && !call.flag("unbiased_running_var"))
    call.fail("a biased running variance (ONNX's, unbiased_running_var "
              "false) is not cuDNN's: not on the CUDA backend");
  const Cudnn &dnn = Cudnn::get();
  auto h = static_cast<cudnnHandle_t>(ctx.cudnn->get(ctx.stream));
  // The running statistics are updated in their output buffers.
  for (int k = 0; k < 2; ++k)
    if (call.out[k + 1].data != call.in[k + 3].data)
      WEFT_CUDA_CHECK(cudaMemcpyAsync(call.out[k + 1].data, call.in[k + 3].data,
                                      call.in[k + 3].bytes(),
                                      cudaMemcpyDeviceToDevice, ctx.stream));
  TensorDesc xd(call, x);
  BatchNormDesc bd(xd);
  if (training)
    WEFT_CUDNN_CHECK(dnn.cudnnBatchNormalizationForwardTraining(
        h, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd.d, x.data, xd.d, y.data,
        bd.d, call.in[1].data, call.in[2].data, 1.0 - call.f("momentum"),
        call.out[1].data, call.out[2].data, eps, nullptr, nullptr));
  else
    WEFT_CUDNN_CHECK(dnn.cudnnBatchNormalizationForwardInference(
        h, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, xd.d, x.data, xd.d, y.data,
        bd.d, call.in[1].data, call.in[2].data, call.in[3].data,
        call.in[4].data, eps));
}

/// (x, scale, mean, var, dy) -> (dx, dscale, dbias) in training mode: the
/// batch statistics recomputed from x, as the CPU kernel does.
void batchNormGrad(const KernelCall &call, const Context &ctx) {
  double eps = batchNormEpsilon(call);
  if (!call.b("training"))
    call.fail("the gradient of a frozen batch norm (training false) is not "
              "implemented on the CUDA backend");
  const Cudnn &dnn = Cudnn::get();
  auto h = static_cast<cudnnHandle_t>(ctx.cudnn->get(ctx.stream));
  TensorDesc xd(call, call.in[0]);
  BatchNormDesc bd(xd);
  WEFT_CUDNN_CHECK(dnn.cudnnBatchNormalizationBackward(
      h, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, xd.d,
      call.in[0].data, xd.d, call.in[4].data, xd.d, call.out[0].data, bd.d,
      call.in[1].data, call.out[1].data, call.out[2].data, eps, nullptr,
      nullptr));
}

} // namespace

void registerCudnnKernels(KernelTable &t) {
  t[Op::Conv] = conv;
  t[Op::ConvTranspose] = convTranspose;
  t[Op::ConvWeightGrad] = convWeightGrad;
  t[Op::BatchNorm] = batchNorm;
  t[Op::BatchNormGrad] = batchNormGrad;
}

void *CudnnHandle::get(cudaStream_t stream) {
  if (!handle) {
    cudnnHandle_t made = nullptr;
    WEFT_CUDNN_CHECK(Cudnn::get().cudnnCreate(&made));
    handle = made;
    plans = new ConvPlans;
    destroy = [](void *h, ConvPlans *plans) {
      delete plans; // its descriptors before the handle
      Cudnn::get().cudnnDestroy(static_cast<cudnnHandle_t>(h));
    };
    WEFT_CUDNN_CHECK(Cudnn::get().cudnnSetStream(made, stream));
  }
  return handle;
}

} // namespace weft::rt::cuda
