//===- Gather.cu - reductions, gather and its scatter-add on the GPU ------===//
//
// reduce_sum/mean/max: per-chunk partial results in double (the CPU
// accumulates in double too) combined in chunk order, so a sum over many
// rows (a bias gradient) spreads over the GPU and stays deterministic.
// gather copies rows; gather_grad adds the rows of dy into the rows of dx
// the indices name, zero-filled first or, accumulating, as they stand (and
// the vocabulary-parallel forms, for the rows of a rank's shard): the
// indices are stably sorted (CUB's radix sort, the positions as values),
// and each run of equal indices is summed in position order: the CPU's
// order, without atomics, bit for bit repeatable.
// Indices outside [-dim, dim) are a Fault reported at the next
// synchronisation.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include <cub/device/device_radix_sort.cuh>

#include <cfloat>

namespace weft::rt::cuda {

namespace {

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean, reduce_max
//===----------------------------------------------------------------------===//

enum class Reduce { Sum, Mean, Max };

/// Reduced elements per partial result.
constexpr int64_t kChunk = 256;

/// partial[c][o]: output o's reduction over reduced elements
/// [c kChunk, (c + 1) kChunk); `kept` maps o, `reduced` maps r to x.
template <Storage S, Reduce Kind>
__global__ void reducePartialKernel(const void *x, double *partial,
                                    int64_t outputs, int64_t count,
                                    int64_t chunks, Strided<1> kept,
                                    Strided<1> reduced) {
  WEFT_GRID_STRIDE(i, chunks * outputs) {
    int64_t c = i / outputs, o = i % outputs, base[1], offset[1];
    kept.offsets(o, base);
    double acc = Kind == Reduce::Max ? -DBL_MAX : 0.0;
    for (int64_t r = c * kChunk; r < count && r < (c + 1) * kChunk; ++r) {
      reduced.offsets(r, offset);
      double v = load<S>(x, base[0] + offset[0]);
      acc = Kind == Reduce::Max ? (v > acc || v != v ? v : acc) : acc + v;
    }
    partial[i] = acc;
  }
}

template <Storage S, Reduce Kind>
__global__ void reduceDoneKernel(const double *partial, void *y,
                                 int64_t outputs, int64_t count,
                                 int64_t chunks) {
  WEFT_GRID_STRIDE(o, outputs) {
    double acc = Kind == Reduce::Max ? -DBL_MAX : 0.0;
    for (int64_t c = 0; c < chunks; ++c) {
      double v = partial[c * outputs + o];
      acc = Kind == Reduce::Max ? (v > acc || v != v ? v : acc) : acc + v;
    }
    if (Kind == Reduce::Max && count == 0)
      acc = -INFINITY;
    store<S>(y, o, float(Kind == Reduce::Mean ? acc / double(count) : acc));
  }
}

template <Reduce Kind> void reduce(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  const std::vector<int64_t> &axes = call.ints("axes");
  std::vector<int64_t> strides = stridesOf(x.shape), keptDims, keptStrides,
                       reducedDims, reducedStrides;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), d) != axes.end();
    (r ? reducedDims : keptDims).push_back(x.shape[d]);
    (r ? reducedStrides : keptStrides).push_back(strides[d]);
  }
  int64_t outputs = y.numel();
  int64_t count = outputs ? x.numel() / outputs : 0;
  if (outputs == 0)
    return;
  int64_t chunks = std::max<int64_t>((count + kChunk - 1) / kChunk, 1);
  auto kept = Strided<1>::of(call, keptDims, {keptStrides});
  auto reduced = Strided<1>::of(call, reducedDims, {reducedStrides});
  auto *partial = static_cast<double *>(
      ctx.scratch->get(chunks * outputs * sizeof(double), ctx.stream));
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((reducePartialKernel<S, Kind>), grid(chunks * outputs),
                kThreads, ctx.stream, x.data, partial, outputs, count, chunks,
                kept, reduced);
    WEFT_LAUNCH((reduceDoneKernel<S, Kind>), grid(outputs), kThreads,
                ctx.stream, partial, y.data, outputs, count, chunks);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// gather, gather_grad
//===----------------------------------------------------------------------===//

/// Index k normalised into [0, dim), or -1 after raising a fault.
__device__ inline int64_t indexAt(const void *indices, bool wide, int64_t k,
                                  int64_t dim, Fault *fault,
                                  int64_t instruction) {
  int64_t i = loadIndex(indices, wide, k);
  if (i < -dim || i >= dim) {
    raise(fault, Fault::Index, instruction, i, dim);
    return -1;
  }
  return i < 0 ? i + dim : i;
}

/// The row of `data` index k names: ONNX's (negative from the end, a
/// fault outside [-dim, dim)) or, for a vocabulary shard holding rows
/// [start, start + dim), index - start (another rank's row outside: -1).
struct Rows {
  const void *indices;
  bool wide;
  int64_t dim, start;
  bool shard;
  Fault *fault;
  int64_t instruction;

  __device__ int64_t at(int64_t k) const {
    if (!shard)
      return indexAt(indices, wide, k, dim, fault, instruction);
    int64_t row = loadIndex(indices, wide, k) - start;
    return row >= 0 && row < dim ? row : -1;
  }
};

Rows rowsOf(const KernelCall &call, const Context &ctx, const Tensor &indices,
            int64_t dim, bool shard) {
  return {indices.data,
          indices.dtype == DType::I64,
          dim,
          shard ? call.i("start") : 0,
          shard,
          ctx.fault,
          call.ctx.instruction};
}

template <typename E>
__global__ void gatherKernel(const E *data, Rows rows, E *y, int64_t count,
                             AxisView a) {
  WEFT_GRID_STRIDE(e, a.outer * count * a.inner) {
    int64_t j = e % a.inner, k = e / a.inner % count, o = e / a.inner / count;
    int64_t i = rows.at(k);
    y[e] = i < 0 ? E(0) : data[(o * a.dim + i) * a.inner + j];
  }
}

/// ONNX Gather-13 (an embedding lookup along axis 0), or a vocabulary
/// shard's lookup (`Shard`: rows of other ranks read as zeros).
template <bool Shard> void gather(const KernelCall &call, const Context &ctx) {
  const Tensor &data = call.in[0], &indices = call.in[1];
  AxisView a(data.shape, Shard ? 0 : call.i("axis"));
  int64_t count = indices.numel(), n = a.outer * count * a.inner;
  if (n == 0)
    return;
  Rows rows = rowsOf(call, ctx, indices, a.dim, Shard);
  dispatchBySize(dtypeSize(data.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(gatherKernel<E>, grid(n), kThreads, ctx.stream, data.as<E>(),
                rows, call.out[0].as<E>(), count, a);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// Sort keys: the rows (dim, past every row, for none); values: the
/// positions.
__global__ void sortKeysKernel(Rows rows, int64_t count, uint32_t *keys,
                               uint32_t *values) {
  WEFT_GRID_STRIDE(k, count) {
    int64_t i = rows.at(k);
    keys[k] = uint32_t(i < 0 ? rows.dim : i);
    values[k] = uint32_t(k);
  }
}

/// Each run of equal sorted keys writes its dx row: the sum, in position
/// order, of the dy rows at the run's positions; with `Accumulate`, that
/// sum as a dx of its own would hold it (rounded to S) added to the row.
template <Storage S, bool Accumulate>
__global__ void scatterAddKernel(const void *dy, const uint32_t *keys,
                                 const uint32_t *positions, void *dx,
                                 int64_t count, AxisView a) {
  WEFT_GRID_STRIDE(e, a.outer * count * a.inner) {
    int64_t j = e % a.inner, s = e / a.inner % count, o = e / a.inner / count;
    uint32_t key = keys[s];
    if ((s > 0 && keys[s - 1] == key) || key >= a.dim)
      continue; // not the start of a run, or an index out of range
    float acc = 0;
    for (int64_t t = s; t < count && keys[t] == key; ++t)
      acc += load<S>(dy, (o * count + positions[t]) * a.inner + j);
    int64_t at = (o * a.dim + key) * a.inner + j;
    store<S>(dx, at, Accumulate ? load<S>(dx, at) + rounded<S>(acc) : acc);
  }
}

/// gather_grad, or a vocabulary shard's (`Shard`: other ranks' rows are
/// not this rank's to add). The accumulating forms (a third input, whose
/// bytes dx is: the kernel spec requires it) add the rows into dx as it
/// stands: no fill, and only the named rows are touched.
template <bool Shard>
void gatherGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &dy = call.in[0], &indices = call.in[1], &dx = call.out[0];
  AxisView a(dx.shape, Shard ? 0 : call.i("axis"));
  int64_t count = indices.numel();
  const bool accumulate = call.in.size() == 3;
  if (!accumulate)
    WEFT_CUDA_CHECK(cudaMemsetAsync(dx.data, 0, dx.bytes(), ctx.stream));
  if (count == 0 || a.outer * a.inner == 0)
    return;
  if (a.dim >= (int64_t(1) << 31) || count >= (int64_t(1) << 32))
    call.fail("over 2^31 rows or 2^32 indices: not on the CUDA backend");
  int endBit = 1;
  while ((int64_t(1) << endBit) <= a.dim)
    ++endBit;
  size_t sortBytes = 0;
  WEFT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sortBytes, (uint32_t *)nullptr, (uint32_t *)nullptr,
      (uint32_t *)nullptr, (uint32_t *)nullptr, count, 0, endBit, ctx.stream));
  size_t words = (4 * count + 63) / 64 * 64;
  auto *keys = static_cast<uint32_t *>(
      ctx.scratch->get(words * sizeof(uint32_t) + sortBytes, ctx.stream));
  uint32_t *values = keys + count, *sortedKeys = keys + 2 * count,
           *positions = keys + 3 * count;
  WEFT_LAUNCH(sortKeysKernel, grid(count), kThreads, ctx.stream,
              rowsOf(call, ctx, indices, a.dim, Shard), count, keys, values);
  WEFT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      keys + words, sortBytes, keys, sortedKeys, values, positions, count, 0,
      endBit, ctx.stream));
  int64_t n = a.outer * count * a.inner;
  byStorage(call, dy.dtype, [&]<Storage S>() {
    auto kernel =
        accumulate ? scatterAddKernel<S, true> : scatterAddKernel<S, false>;
    WEFT_LAUNCH(kernel, grid(n), kThreads, ctx.stream, dy.data, sortedKeys,
                positions, dx.data, count, a);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// gather_elements, gather_elements_grad
//===----------------------------------------------------------------------===//

/// The dims of data and indices (one rank) and the axis, by value.
struct ElementsShape {
  int rank = 0, axis = 0;
  int64_t data[kMaxRank] = {}, index[kMaxRank] = {};

  static ElementsShape of(const KernelCall &call,
                          const std::vector<int64_t> &data,
                          const std::vector<int64_t> &indices) {
    if (data.size() > size_t(kMaxRank))
      call.fail("rank " + std::to_string(data.size()) +
                " is over the CUDA backend's " + std::to_string(kMaxRank));
    ElementsShape e;
    e.rank = int(data.size());
    e.axis = int(call.i("axis"));
    for (int d = 0; d < e.rank; ++d) {
      e.data[d] = data[d];
      e.index[d] = indices[d];
    }
    return e;
  }
};

/// output[p] = data[p with p[axis] = index[p]], one thread per p; an
/// index out of range raises the fault and reads 0.
template <typename E>
__global__ void gatherElementsKernel(const E *data, Rows rows, E *y, int64_t n,
                                     ElementsShape e) {
  WEFT_GRID_STRIDE(p, n) {
    int64_t row = rows.at(p), rest = p, q = 0, stride = 1;
    for (int d = e.rank - 1; d >= 0; --d) {
      int64_t c = rest % e.index[d];
      rest /= e.index[d];
      q += (d == e.axis ? row : c) * stride;
      stride *= e.data[d];
    }
    y[p] = row < 0 ? E(0) : data[q];
  }
}

void gatherElements(const KernelCall &call, const Context &ctx) {
  const Tensor &data = call.in[0], &indices = call.in[1];
  int64_t n = indices.numel();
  if (n == 0)
    return;
  ElementsShape e = ElementsShape::of(call, data.shape, indices.shape);
  Rows rows = rowsOf(call, ctx, indices, data.shape[e.axis], false);
  dispatchBySize(dtypeSize(data.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(gatherElementsKernel<E>, grid(n), kThreads, ctx.stream,
                data.as<E>(), rows, call.out[0].as<E>(), n, e);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// dx[q] = the sum of dy[p] over the p (q with its axis coordinate
/// replaced, in order along the axis) whose index names q's: one thread
/// per dx element, no atomics, the CPU kernel's order.
template <Storage S>
__global__ void gatherElementsGradKernel(const void *dy, Rows rows, void *dx,
                                         int64_t n, ElementsShape e) {
  WEFT_GRID_STRIDE(q, n) {
    int64_t rest = q, base = 0, stride = 1, axisStride = 1, row = 0;
    bool read = true;
    for (int d = e.rank - 1; d >= 0; --d) {
      int64_t c = rest % e.data[d];
      rest /= e.data[d];
      if (d == e.axis) {
        row = c;
        axisStride = stride;
      } else {
        read = read && c < e.index[d];
        base += c * stride;
      }
      stride *= e.index[d];
    }
    float acc = 0;
    for (int64_t k = 0; read && k < e.index[e.axis]; ++k) {
      int64_t p = base + k * axisStride;
      if (rows.at(p) == row)
        acc += load<S>(dy, p);
    }
    store<S>(dx, q, acc);
  }
}

void gatherElementsGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &dy = call.in[0], &indices = call.in[1], &dx = call.out[0];
  int64_t n = dx.numel();
  if (n == 0)
    return;
  ElementsShape e = ElementsShape::of(call, dx.shape, indices.shape);
  Rows rows = rowsOf(call, ctx, indices, dx.shape[e.axis], false);
  byStorage(call, dy.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(gatherElementsGradKernel<S>, grid(n), kThreads, ctx.stream,
                dy.data, rows, dx.data, n, e);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerReductionKernels(KernelTable &t) {
  t[Op::ReduceSum] = reduce<Reduce::Sum>;
  t[Op::ReduceMean] = reduce<Reduce::Mean>;
  t[Op::ReduceMax] = reduce<Reduce::Max>;
  t[Op::Gather] = gather<false>;
  t[Op::GatherGrad] = gatherGrad<false>;
  t[Op::GatherElements] = gatherElements;
  t[Op::GatherElementsGrad] = gatherElementsGrad;
  t[Op::VocabParallelGather] = gather<true>;
  t[Op::VocabParallelGatherGrad] = gatherGrad<true>;
}

} // namespace weft::rt::cuda
