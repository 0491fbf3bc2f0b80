//===- Cudnn.h - cuDNN, loaded with the first convolution -------*- C++ -*-===//
//
// As cuBLASLt (CublasLt.h, Dlopen.h): not linked, opened when a GPU backend
// first runs a convolution or batch norm. weft uses cuDNN's convolution
// (forward, backward data, backward filter; the algorithms its heuristics
// rank first among the deterministic ones) and spatial batch norm.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_CUDNN_H
#define WEFT_RUNTIME_BACKENDS_CUDA_CUDNN_H

// The descriptor API weft calls is marked deprecated in cuDNN 9 in favour
// of the graph API; it remains supported through cuDNN 9.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cudnn.h>
#pragma GCC diagnostic pop

namespace weft::rt::cuda {

struct Cudnn {
#define WEFT_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnSetStream)                                                            \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensorNdDescriptor)                                                \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilterNdDescriptor)                                                \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolutionNdDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnAddTensor)                                                            \
  X(cudnnDeriveBNTensorDescriptor)                                             \
  X(cudnnBatchNormalizationForwardTraining)                                    \
  X(cudnnBatchNormalizationForwardInference)                                   \
  X(cudnnBatchNormalizationBackward)
#define WEFT_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
  WEFT_CUDNN_FUNCTIONS(WEFT_CUDNN_POINTER)
#undef WEFT_CUDNN_POINTER
  /// The dlopen handle (the graph API's functions resolve in it: cuDNN's
  /// frontend, Attention.cpp).
  void *handle = nullptr;

  /// The library's functions, opened on the first call; throws Error
  /// naming the library and dlerror() when it or a function is missing.
  static const Cudnn &get();
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_CUDNN_H
