//===- Convolution.cpp - convolutions and batch norm through cuDNN --------===//
//
// conv (ONNX Conv-11: forward), conv_transpose (ConvTranspose-11: cuDNN's
// backward data of the convolution it transposes), conv_weight_grad
// (backward filter) and spatial batch norm, with cuDNN's descriptor API.
// Algorithms: the first deterministic one cuDNN's heuristics rank, so a
// step repeats bit for bit; f32 convolutions use FMA math (no TF32, so
// they stay within f32's tolerance of the CPU), 16-bit ones tensor cores
// with f32 accumulation. Workspaces come from the scratch buffer. A 1-D
// window gains a unit dimension (cuDNN wants two or three); asymmetric
// pads, a biased running variance (ONNX's form) or frozen batch-norm
// gradients are refused with the kernel named, as cuDNN has no such mode.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaKernels.h"
#include "Cudnn.h"

#include <array>

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

void *CudnnHandle::get(cudaStream_t stream) {
  if (!handle) {
    cudnnHandle_t made = nullptr;
    WEFT_CUDNN_CHECK(Cudnn::get().cudnnCreate(&made));
    handle = made;
    destroy = [](void *h) {
      Cudnn::get().cudnnDestroy(static_cast<cudnnHandle_t>(h));
    };
    WEFT_CUDNN_CHECK(Cudnn::get().cudnnSetStream(made, stream));
  }
  return handle;
}

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
  ConvDesc(const KernelCall &call, size_t spatial, DType dtype) {
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
    WEFT_CUDNN_CHECK(dnn.cudnnSetConvolutionMathType(
        d, dtype == DType::F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  }
  ~ConvDesc() { Cudnn::get().cudnnDestroyConvolutionDescriptor(d); }
};

constexpr int kAlgorithms = 8;

/// The descriptors of one convolution from `x` to `y` with filter `w`
/// (the forward direction, whichever pass runs).
struct Convolution {
  const Cudnn &dnn = Cudnn::get();
  cudnnHandle_t h;
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  Convolution(const KernelCall &call, const Context &ctx, const Tensor &x,
              const Tensor &y, const Tensor &w)
      : h(static_cast<cudnnHandle_t>(ctx.cudnn->get(ctx.stream))), x(call, x),
        y(call, y), w(call, w), conv(call, x.shape.size() - 2, x.dtype) {}
};

/// A pass's algorithm (the first deterministic one cuDNN's heuristics
/// rank: `rank(max, &count, perf)`) and its workspace
/// (`size(algo, &bytes)`), from the scratch buffer.
template <typename Perf> struct Algorithm {
  decltype(Perf::algo) algo;
  void *workspace = nullptr;
  size_t bytes = 0;

  template <typename Rank, typename Size>
  Algorithm(const KernelCall &call, const Context &ctx, Rank rank, Size size) {
    Perf perf[kAlgorithms];
    int count = 0;
    WEFT_CUDNN_CHECK(rank(kAlgorithms, &count, perf));
    int k = 0;
    while (k < count && (perf[k].status != CUDNN_STATUS_SUCCESS ||
                         perf[k].determinism != CUDNN_DETERMINISTIC))
      ++k;
    if (k == count)
      call.fail("cuDNN offers no deterministic algorithm for this "
                "convolution");
    algo = perf[k].algo;
    WEFT_CUDNN_CHECK(size(algo, &bytes));
    workspace = ctx.scratch->get(bytes, ctx.stream);
  }
};

/// bias [K] added along dim 1 of `y` (described by `yd`), when the call
/// has one.
void addBias(const KernelCall &call, const Convolution &c, const TensorDesc &yd,
             const Tensor &y) {
  if (call.in.size() < 3)
    return;
  std::vector<int64_t> shape(y.shape.size(), 1);
  shape[1] = y.shape[1];
  TensorDesc bd(call, y.dtype, shape);
  WEFT_CUDNN_CHECK(c.dnn.cudnnAddTensor(c.h, &kOne, bd.d, call.in[2].data,
                                        &kOne, yd.d, y.data));
}

void conv(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &w = call.in[1], &y = call.out[0];
  Convolution c(call, ctx, x, y, w);
  Algorithm<cudnnConvolutionFwdAlgoPerf_t> a(
      call, ctx,
      [&](int n, int *count, auto *perf) {
        return c.dnn.cudnnGetConvolutionForwardAlgorithm_v7(
            c.h, c.x.d, c.w.d, c.conv.d, c.y.d, n, count, perf);
      },
      [&](auto algo, size_t *bytes) {
        return c.dnn.cudnnGetConvolutionForwardWorkspaceSize(
            c.h, c.x.d, c.w.d, c.conv.d, c.y.d, algo, bytes);
      });
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionForward(
      c.h, &kOne, c.x.d, x.data, c.w.d, w.data, c.conv.d, a.algo, a.workspace,
      a.bytes, &kZero, c.y.d, y.data));
  addBias(call, c, c.y, y);
}

/// The transpose of the convolution from `y`'s shape to `x`'s with the
/// same weight: cuDNN's backward data.
void convTranspose(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &w = call.in[1], &y = call.out[0];
  // The convolution this transposes runs from y to x.
  Convolution c(call, ctx, y, x, w);
  Algorithm<cudnnConvolutionBwdDataAlgoPerf_t> a(
      call, ctx,
      [&](int n, int *count, auto *perf) {
        return c.dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
            c.h, c.w.d, c.y.d, c.conv.d, c.x.d, n, count, perf);
      },
      [&](auto algo, size_t *bytes) {
        return c.dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
            c.h, c.w.d, c.y.d, c.conv.d, c.x.d, algo, bytes);
      });
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionBackwardData(
      c.h, &kOne, c.w.d, w.data, c.y.d, x.data, c.conv.d, a.algo, a.workspace,
      a.bytes, &kZero, c.x.d, y.data));
  addBias(call, c, c.x, y); // the transpose's output: the conv's input
}

void convWeightGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dw = call.out[0];
  Convolution c(call, ctx, x, dy, dw);
  Algorithm<cudnnConvolutionBwdFilterAlgoPerf_t> a(
      call, ctx,
      [&](int n, int *count, auto *perf) {
        return c.dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            c.h, c.x.d, c.y.d, c.conv.d, c.w.d, n, count, perf);
      },
      [&](auto algo, size_t *bytes) {
        return c.dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            c.h, c.x.d, c.y.d, c.conv.d, c.w.d, algo, bytes);
      });
  WEFT_CUDNN_CHECK(c.dnn.cudnnConvolutionBackwardFilter(
      c.h, &kOne, c.x.d, x.data, c.y.d, dy.data, c.conv.d, a.algo, a.workspace,
      a.bytes, &kZero, c.w.d, dw.data));
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
  t["conv"] = conv;
  t["conv_transpose"] = convTranspose;
  t["conv_weight_grad"] = convWeightGrad;
  t["batch_norm"] = batchNorm;
  t["batch_norm_grad"] = batchNormGrad;
}

} // namespace weft::rt::cuda
