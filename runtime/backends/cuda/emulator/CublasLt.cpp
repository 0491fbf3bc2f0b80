//===- CublasLt.cpp - the cuBLASLt calls weft makes, on the host ----------===//
//
// The CUDA emulator's cuBLASLt: the functions Gemm.cpp calls, with the
// semantics cuBLASLt's documentation gives them (cublasLt.h), so the
// emulator checks how weft describes its GEMMs: column-major layouts
// (rows, cols, leading dimension, strided batches), transposes, alpha and
// beta, and the epilogues weft asks for (BIAS; GELU_AUX and GELU_AUX_BIAS,
// the tanh GELU storing its input; DGELU; BGRADA and BGRADB, the bias
// gradient summed over k). The product accumulates in f32 and is rounded
// once to D's type, as CUBLAS_COMPUTE_32F does; under
// CUBLAS_COMPUTE_32F_FAST_TF32 (f32 matrices only) the products' operands
// are rounded to TF32 first, as TF32 tensor cores read them. Descriptors live
// in the header's semi-opaque storage. A configuration cuBLASLt documents as
// invalid (shapes that do not chain, a leading dimension under the rows,
// a GELU auxiliary leading dimension not a multiple of 8, an attribute
// weft never sets) is refused with the status cuBLASLt gives. An
// algorithm is valid for the problem the heuristic was asked about
// (cublasLt.h): the heuristic writes that problem's fingerprint and the
// operands' promised alignments into the algorithm, and a matmul given
// it for another problem, or with an operand less aligned than promised,
// is refused (CUBLAS_STATUS_INVALID_VALUE), so a plan kept for the wrong
// configuration (GemmPlan.h) fails here as it would misbehave on a GPU.
// A null algorithm is cuBLASLt's implicit heuristic query.
//
//===----------------------------------------------------------------------===//

#include "../CublasLt.h"

#include "Emulator.h"
#include "Values.h"

#include "../../../kernels/ElementwiseMath.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <new>
#include <vector>

namespace weft::rt::cuda {

namespace {

using emulator::Format;

struct Desc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void *bias = nullptr, *aux = nullptr;
  int64_t auxLd = 0;
};
struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Preference {
  uint64_t workspace = 0;
  /// The least alignment (bytes) of A, B, C and D the caller promises;
  /// cuBLASLt's default is 256.
  uint32_t alignment[4] = {256, 256, 256, 256};
};
static_assert(sizeof(Desc) <= sizeof(cublasLtMatmulDescOpaque_t));
static_assert(sizeof(Layout) <= sizeof(cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(Preference) <= sizeof(cublasLtMatmulPreferenceOpaque_t));

template <typename T, typename Opaque> T &of(Opaque *opaque) {
  return *std::launder(reinterpret_cast<T *>(opaque));
}

/// Copies an attribute's value of exactly its size.
template <typename T>
cublasStatus_t set(T &field, const void *buf, size_t bytes) {
  if (bytes != sizeof(T))
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(&field, buf, bytes);
  return CUBLAS_STATUS_SUCCESS;
}

Format formatOf(cudaDataType_t type) {
  return type == CUDA_R_32F    ? Format::F32
         : type == CUDA_R_16BF ? Format::BF16
                               : Format::F16;
}
float load(cudaDataType_t type, const void *p, int64_t i) {
  return emulator::load(formatOf(type), p, i);
}
void store(cudaDataType_t type, void *p, int64_t i, float v) {
  emulator::store(formatOf(type), p, i, v);
}

/// Whether the operation is one cuBLASLt runs: the shapes chain, leading
/// dimensions cover the rows, the types are float types weft uses, the
/// epilogue is one weft asks for with what it needs.
cublasStatus_t check(const Desc &d, const Layout &a, const Layout &b,
                     const Layout &c, const Layout &out) {
  uint64_t m = out.rows, n = out.cols;
  uint64_t am = d.transA == CUBLAS_OP_N ? a.rows : a.cols;
  uint64_t ak = d.transA == CUBLAS_OP_N ? a.cols : a.rows;
  uint64_t bk = d.transB == CUBLAS_OP_N ? b.rows : b.cols;
  uint64_t bn = d.transB == CUBLAS_OP_N ? b.cols : b.rows;
  if (am != m || bn != n || ak != bk || c.rows != m || c.cols != n)
    return CUBLAS_STATUS_INVALID_VALUE;
  for (const Layout *l : {&a, &b, &c, &out})
    if (l->ld < int64_t(l->rows) || l->batch < 1 ||
        (l->type != CUDA_R_32F && l->type != CUDA_R_16BF &&
         l->type != CUDA_R_16F))
      return CUBLAS_STATUS_INVALID_VALUE;
  if (a.type != b.type || c.type != out.type || a.batch != out.batch ||
      b.batch != out.batch || c.batch != out.batch)
    return CUBLAS_STATUS_INVALID_VALUE;
  // TF32 tensor cores take f32 matrices only (cublasLt.h's type table).
  if (d.compute == CUBLAS_COMPUTE_32F_FAST_TF32 &&
      (a.type != CUDA_R_32F || out.type != CUDA_R_32F))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (d.epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    return CUBLAS_STATUS_SUCCESS;
  case CUBLASLT_EPILOGUE_BIAS:
  case CUBLASLT_EPILOGUE_BGRADA:
  case CUBLASLT_EPILOGUE_BGRADB:
    return d.bias ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  case CUBLASLT_EPILOGUE_GELU_AUX:
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
  case CUBLASLT_EPILOGUE_DGELU:
    if (!d.aux || d.auxLd < int64_t(m) ||
        (d.epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS && !d.bias))
      return CUBLAS_STATUS_INVALID_VALUE;
    // "Must be divisible by 8" (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD).
    return d.auxLd % 8 == 0 ? CUBLAS_STATUS_SUCCESS
                            : CUBLAS_STATUS_NOT_SUPPORTED;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

/// A hash of what fixes a matmul's algorithm: the descriptor's operation
/// and epilogue (not its vectors' addresses) and the four layouts.
uint64_t fingerprint(const Desc &d, const Layout &a, const Layout &b,
                     const Layout &c, const Layout &out) {
  uint64_t hash = 14695981039346656037ull; // FNV-1a
  auto mix = [&](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte, value >>= 8)
      hash = (hash ^ (value & 0xff)) * 1099511628211ull;
  };
  for (uint64_t v :
       {uint64_t(d.compute), uint64_t(d.transA), uint64_t(d.transB),
        uint64_t(d.epilogue), uint64_t(d.auxLd)})
    mix(v);
  for (const Layout *l : {&a, &b, &c, &out})
    for (uint64_t v : {uint64_t(l->type), l->rows, l->cols, uint64_t(l->ld),
                       uint64_t(l->batch), uint64_t(l->stride)})
      mix(v);
  return hash;
}

/// The algorithm's slots the emulated heuristic fills: the problem's
/// fingerprint, then A, B, C and D's promised alignments.
enum AlgoSlot { kFingerprint, kAlignment };

/// Whether `algo` (from the heuristic) may run this problem on these
/// operands.
bool algorithmFits(const cublasLtMatmulAlgo_t &algo, uint64_t problem,
                   std::initializer_list<const void *> operands) {
  if (algo.data[kFingerprint] != problem)
    return false;
  int slot = kAlignment;
  for (const void *p : operands)
    if (reinterpret_cast<uintptr_t>(p) %
            std::max<uint64_t>(algo.data[slot++], 1) !=
        0)
      return false;
  return true;
}

/// Element (i, j) of op(X) for column-major X of batch `batch`, as the
/// product reads it: rounded to TF32 under `tf32`.
float element(const Layout &l, const void *p, cublasOperation_t op, int64_t i,
              int64_t j, int64_t batch, bool tf32) {
  if (op != CUBLAS_OP_N)
    std::swap(i, j);
  float v = load(l.type, p, batch * l.stride + i + j * l.ld);
  return tf32 ? emulator::roundToTf32(v) : v;
}

cublasStatus_t
matmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void *alpha,
       const void *A, cublasLtMatrixLayout_t aDesc, const void *B,
       cublasLtMatrixLayout_t bDesc, const void *beta, const void *C,
       cublasLtMatrixLayout_t cDesc, void *D, cublasLtMatrixLayout_t dDesc,
       const cublasLtMatmulAlgo_t *algo, void *, size_t, cudaStream_t stream) {
  // The kernels before it on the stream first.
  emulator::DeviceWork work(emulator::DeviceWork::Library, stream);
  const Desc &d = of<Desc>(desc);
  const Layout &a = of<Layout>(aDesc), &b = of<Layout>(bDesc),
               &c = of<Layout>(cDesc), &out = of<Layout>(dDesc);
  if (cublasStatus_t status = check(d, a, b, c, out);
      status != CUBLAS_STATUS_SUCCESS)
    return status;
  if (algo && !algorithmFits(*algo, fingerprint(d, a, b, c, out), {A, B, C, D}))
    return CUBLAS_STATUS_INVALID_VALUE;
  float scale = *static_cast<const float *>(alpha),
        addend = *static_cast<const float *>(beta);
  int64_t m = out.rows, n = out.cols,
          k = d.transA == CUBLAS_OP_N ? a.cols : a.rows;
  cublasLtEpilogue_t e = d.epilogue;
  bool tf32 = d.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  for (int64_t batch = 0; batch < out.batch; ++batch) {
    // The bias gradient: op(A)'s sums over k per row of D, or op(B)'s per
    // column, in D's type (the bias type's default).
    if (e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB) {
      bool ofA = e == CUBLASLT_EPILOGUE_BGRADA;
      for (int64_t v = 0; v < (ofA ? m : n); ++v) {
        float sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += ofA ? element(a, A, d.transA, v, l, batch, false)
                     : element(b, B, d.transB, l, v, batch, false);
        store(out.type, d.bias, v, sum);
      }
    }
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += element(a, A, d.transA, i, l, batch, tf32) *
                 element(b, B, d.transB, l, j, batch, tf32);
        float v = scale * acc;
        if (addend != 0) // beta 0 does not read C
          v += addend * load(c.type, C, batch * c.stride + i + j * c.ld);
        if (e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
          v += load(out.type, d.bias, i); // one per row of D
        int64_t auxAt = batch * out.stride + i + j * d.auxLd;
        if (e == CUBLASLT_EPILOGUE_GELU_AUX ||
            e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
          store(out.type, d.aux, auxAt, v);
          v = math::GeluTanh()(v);
        } else if (e == CUBLASLT_EPILOGUE_DGELU) {
          v = math::GeluTanhGrad()(load(out.type, d.aux, auxAt), v);
        }
        store(out.type, D, batch * out.stride + i + j * out.ld, v);
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc,
                         cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                         cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                         cublasLtMatmulPreference_t preference, int requested,
                         cublasLtMatmulHeuristicResult_t *results, int *found) {
  emulator::countAlgorithmQuery();
  *found = 0;
  if (requested < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  const Desc &op = of<Desc>(desc);
  const Layout &la = of<Layout>(a), &lb = of<Layout>(b), &lc = of<Layout>(c),
               &ld = of<Layout>(d);
  cublasStatus_t status = check(op, la, lb, lc, ld);
  if (status != CUBLAS_STATUS_SUCCESS)
    return status;
  results[0] = cublasLtMatmulHeuristicResult_t{};
  results[0].state = CUBLAS_STATUS_SUCCESS;
  uint64_t *slots = results[0].algo.data;
  slots[kFingerprint] = fingerprint(op, la, lb, lc, ld);
  for (int k = 0; k < 4; ++k)
    slots[kAlignment + k] = of<Preference>(preference).alignment[k];
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t setDesc(cublasLtMatmulDesc_t desc,
                       cublasLtMatmulDescAttributes_t attribute,
                       const void *buf, size_t bytes) {
  Desc &d = of<Desc>(desc);
  switch (attribute) {
  case CUBLASLT_MATMUL_DESC_TRANSA:
    return set(d.transA, buf, bytes);
  case CUBLASLT_MATMUL_DESC_TRANSB:
    return set(d.transB, buf, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    return set(d.epilogue, buf, bytes);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    return set(d.bias, buf, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
    return set(d.aux, buf, bytes);
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    return set(d.auxLd, buf, bytes);
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

cublasStatus_t setLayout(cublasLtMatrixLayout_t layout,
                         cublasLtMatrixLayoutAttribute_t attribute,
                         const void *buf, size_t bytes) {
  Layout &l = of<Layout>(layout);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
    return set(l.batch, buf, bytes);
  if (attribute == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
    return set(l.stride, buf, bytes);
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t setPreference(cublasLtMatmulPreference_t preference,
                             cublasLtMatmulPreferenceAttributes_t attribute,
                             const void *buf, size_t bytes) {
  Preference &p = of<Preference>(preference);
  switch (attribute) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    return set(p.workspace, buf, bytes);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    return set(p.alignment[0], buf, bytes);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    return set(p.alignment[1], buf, bytes);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    return set(p.alignment[2], buf, bytes);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    return set(p.alignment[3], buf, bytes);
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

template <typename T, typename Opaque> cublasStatus_t create(Opaque **out) {
  *out = new Opaque{};
  new (*out) T{};
  return CUBLAS_STATUS_SUCCESS;
}
template <typename Opaque> cublasStatus_t destroy(Opaque *opaque) {
  delete opaque; // null is fine
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

const CublasLt &CublasLt::get() {
  static const CublasLt table = [] {
    CublasLt t;
    t.cublasLtCreate = [](cublasLtHandle_t *handle) -> cublasStatus_t {
      *handle = nullptr;
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtDestroy = [](cublasLtHandle_t) -> cublasStatus_t {
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtGetStatusName = [](cublasStatus_t status) -> const char * {
      switch (status) {
      case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
      case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
      case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
      default:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
      }
    };
    t.cublasLtGetStatusString = [](cublasStatus_t) -> const char * {
      return "the CUDA emulator's cuBLASLt";
    };
    t.cublasLtMatmul = matmul;
    t.cublasLtMatmulAlgoGetHeuristic = heuristic;
    t.cublasLtMatmulDescCreate = [](cublasLtMatmulDesc_t *desc,
                                    cublasComputeType_t compute,
                                    cudaDataType_t scale) -> cublasStatus_t {
      if ((compute != CUBLAS_COMPUTE_32F &&
           compute != CUBLAS_COMPUTE_32F_FAST_TF32) ||
          scale != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
      create<Desc>(desc);
      of<Desc>(*desc).compute = compute;
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtMatmulDescDestroy = destroy;
    t.cublasLtMatmulDescSetAttribute = setDesc;
    t.cublasLtMatmulPreferenceCreate = create<Preference>;
    t.cublasLtMatmulPreferenceDestroy = destroy;
    t.cublasLtMatmulPreferenceSetAttribute = setPreference;
    t.cublasLtMatrixLayoutCreate =
        [](cublasLtMatrixLayout_t *layout, cudaDataType_t type, uint64_t rows,
           uint64_t cols, int64_t ld) -> cublasStatus_t {
      create<Layout>(layout);
      of<Layout>(*layout) = Layout{type, rows, cols, ld};
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtMatrixLayoutDestroy = destroy;
    t.cublasLtMatrixLayoutSetAttribute = setLayout;
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
