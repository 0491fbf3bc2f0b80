//===- KernelSpec.h - the kernel specification table ------------*- C++ -*-===//
//
// One entry per kernel of the plan format (docs/plan-format.md, "Kernels"):
// how many inputs it takes, its attributes (kind, required or optional), the
// rule that gives its outputs' dtypes and shapes from the inputs and the
// attributes, the outputs that update an input in place, and its cost.
//
// The shape rules are those of the ONNX opset-17 operators the kernels
// implement, and the compiler's: its kernel ops infer and verify their
// result types with them (include/weft/Dialect/Weft/IR/KernelContract.h).
// The FLOP counts follow CostOpInterface's conventions: a multiply-add is 2
// FLOPs, an elementwise op 1 FLOP per element, data movement 0.
//
// The plan loader checks every compute instruction against its entry
// (checkKernel) and keeps the decoded attributes; the executor hands kernels
// those attributes and buffers whose dtypes and shapes the entry admits, so
// no kernel parses JSON or sees a shape its rule does not produce. The table
// has no device code: the CPU and CUDA backends and cost reports share it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELSPEC_H
#define WEFT_RUNTIME_KERNELSPEC_H

#include "weft/ops/OpRecord.h"
#include "weft/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace weft::rt {

/// A tensor as a kernel signature sees it: element type and row-major shape.
struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const; ///< saturating at INT64_MAX
  int64_t bytes() const; ///< saturating at INT64_MAX
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
};

/// "[2x3] f32", for messages.
std::string typeString(const TensorType &type);

/// A set of plan dtypes: what one input of a kernel admits, as data.
struct DTypeSet {
  uint32_t bits = 0;

  constexpr DTypeSet() = default;
  constexpr DTypeSet(std::initializer_list<DType> dtypes) {
    for (DType d : dtypes)
      bits |= 1u << static_cast<unsigned>(d);
  }
  constexpr bool contains(DType d) const {
    return (bits >> static_cast<unsigned>(d)) & 1u;
  }
  constexpr DTypeSet operator|(DTypeSet o) const {
    DTypeSet s;
    s.bits = bits | o.bits;
    return s;
  }
  constexpr bool operator==(DTypeSet o) const { return bits == o.bits; }
  /// For messages: "f32, f64, f16 or bf16", "i32 or i64 indices".
  std::string expected() const;
  /// For the table's docs: "float", "index", ..., or the dtypes.
  std::string name() const;
};

/// The sets the kernels admit. 16-bit floats compute in f32 (the CPU
/// backend widens them, the CUDA kernels load them); integers and bool are
/// moved, compared or counted, never rounded.
namespace dtypes {
inline constexpr DTypeSet Float{DType::F32, DType::F64, DType::F16,
                                DType::BF16};
inline constexpr DTypeSet Index{DType::I32, DType::I64};
inline constexpr DTypeSet Bool{DType::Bool};
inline constexpr DTypeSet F32{DType::F32};
inline constexpr DTypeSet Integer{DType::I64, DType::I32, DType::I16,
                                  DType::I8,  DType::U8,  DType::U16,
                                  DType::U32, DType::U64};
inline constexpr DTypeSet Numeric = Float | Integer;
inline constexpr DTypeSet Any = Numeric | Bool;
} // namespace dtypes

enum class AttrKind { Int, Float, Bool, String, Ints, Floats };

/// An instruction's attributes, decoded once when the plan is loaded. The
/// accessors throw Error for an attribute the instruction lacks (kernels ask
/// `has` first for optional ones) or of another kind.
class KernelAttrs {
public:
  using Value = std::variant<int64_t, double, bool, std::string,
                             std::vector<int64_t>, std::vector<double>>;

  bool has(std::string_view name) const { return find(name) != nullptr; }
  int64_t i(std::string_view name) const { return get<int64_t>(name); }
  double f(std::string_view name) const { return get<double>(name); }
  bool b(std::string_view name) const { return get<bool>(name); }
  /// An optional bool attribute: false when absent.
  bool flag(std::string_view name) const { return has(name) && b(name); }
  const std::string &s(std::string_view name) const {
    return get<std::string>(name);
  }
  const std::vector<int64_t> &ints(std::string_view name) const {
    return get<std::vector<int64_t>>(name);
  }
  const std::vector<double> &floats(std::string_view name) const {
    return get<std::vector<double>>(name);
  }
  void set(std::string name, Value value);

private:
  const Value *find(std::string_view name) const;
  template <typename T> const T &get(std::string_view name) const {
    const Value *v = find(name);
    if (!v || !std::holds_alternative<T>(*v))
      throw Error("attribute '" + std::string(name) +
                  (v ? "' has another kind" : "' is missing"));
    return std::get<T>(*v);
  }
  using Values = std::vector<std::pair<std::string, Value>>;
  /// Shared by copies (the loader copies a task body's instruction to
  /// each of its instances: a GPT-3 stage has a hundred thousand); set()
  /// copies first when shared.
  std::shared_ptr<Values> values;
};

/// A plan attribute of a kernel, from its op's record (the ODS attributes
/// and planAttrs of its .td definition, weft-tblgen's WEFT_OP_ATTR lines).
struct AttrSpec {
  const char *name;
  AttrKind kind;
  /// false: a plan may omit it; the kernel then reads `byDefault` (an ODS
  /// DefaultValuedAttr, filled in when the plan is loaded) or, without one,
  /// has a meaning without it (`has` first).
  bool required = true;
  std::optional<KernelAttrs::Value> byDefault = std::nullopt;
};

/// What a shape rule sees: the instruction's inputs and decoded attributes.
/// `fail` throws Error with the message; the checker prefixes the kernel.
struct SpecCall {
  const std::vector<TensorType> &in;
  const KernelAttrs &attrs;

  [[noreturn]] void fail(const std::string &message) const;
  /// Inputs `a` and `b` must share a dtype.
  void requireSameDType(size_t a, size_t b) const;
  /// Input `k` must be exactly `type`.
  void requireType(size_t k, const TensorType &type, const char *what) const;
  /// Attribute `name` must be an axis of a rank-`rank` tensor: [0, rank).
  int64_t axis(const char *name, int64_t rank) const;
  /// numpy broadcast of two shapes; fails naming both when they do not.
  std::vector<int64_t> broadcast(const std::vector<int64_t> &a,
                                 const std::vector<int64_t> &b) const;
  /// a + b and a * b, failing on int64 overflow (hostile attributes).
  int64_t add(int64_t a, int64_t b) const;
  int64_t mul(int64_t a, int64_t b) const;
};

/// Work of one instruction: FLOPs (CostOpInterface conventions) and bytes.
struct KernelCost {
  int64_t flops = 0, bytesRead = 0, bytesWritten = 0;
};

using ops::Op;

struct KernelSpec {
  /// The op it runs (weft/ops/Ops.def: one record per op, and one entry per
  /// op whose Lowering is Kernel).
  Op op;
  /// The ONNX operator (section of the opset-17 spec) or weft op it runs.
  const char *source;
  /// The input counts, plan attributes, in-place pairs and input dtypes are
  /// the op record's (its .td definition): kernelSpecs() fills them in,
  /// entries do not write them.
  int minInputs = 0, maxInputs = 0; ///< maxInputs kVariadic: no upper bound
  std::vector<AttrSpec> attrs = {};
  /// The outputs' types for these inputs and attributes; fails on inputs or
  /// attribute values the kernel does not admit.
  std::vector<TensorType> (*infer)(const SpecCall &call);
  /// FLOPs of one call (saturating at INT64_MAX), for an op whose record's
  /// Flops is Custom; null where the record counts them (PerInput,
  /// PerOutput, NoFlops), which a test holds.
  int64_t (*flops)(const SpecCall &call, const std::vector<TensorType> &out);
  /// Bytes read, when not every input byte is (gather, slice).
  int64_t (*bytesRead)(const SpecCall &call,
                       const std::vector<TensorType> &out) = nullptr;
  /// Outputs that update an input in place: exactly the input's bytes, or
  /// (when not `required`) bytes apart from every input. Any other overlap
  /// of an output with an input or another output is refused.
  struct InPlace {
    int output, input;
    bool required; ///< the kernel reads the state it updates from the output
  };
  std::vector<InPlace> inPlace = {}; ///< the record's `inPlace`
  /// The dtypes each input admits, as data: one set per input, the last for
  /// the inputs after it (the record's: its operands' Weft_TensorOf
  /// constraints). The check refuses any other before the rule runs, and
  /// the table's docs print them; rules state only relations between inputs
  /// (alike, f32 beside a 16-bit input), which `dtypeNote` says.
  std::vector<DTypeSet> dtypes = {};
  const char *dtypeNote = "";

  /// The plan's kernel name: the op's mnemonic.
  std::string_view name() const { return ops::record(op).mnemonic; }
};

inline constexpr int kVariadic = 1 << 30;

/// Every kernel of the plan format, by name.
const std::vector<KernelSpec> &kernelSpecs();
/// The entry for `name`, or null.
const KernelSpec *findKernelSpec(std::string_view name);
/// The entry of `op`, or null (an op whose Lowering is not Kernel).
const KernelSpec *findKernelSpec(Op op);

/// The table as markdown, one row per kernel: inputs, each input's dtypes
/// (and the rule's ties between them), attributes (kind; optional ones
/// marked ?), in-place outputs, source, and the op record's columns. weft-run
/// --kernels prints it; the build writes it to docs/generated/Kernels.md.
std::string kernelSpecsMarkdown();

/// One operand of an instruction as the plan places it in the rank's arena.
struct OperandPlacement {
  TensorType type;
  int64_t offset = 0; ///< bytes from the start of the arena
};

/// The result of checking one instruction.
struct CheckedKernel {
  KernelAttrs attrs;
  KernelCost cost;
};

/// Decodes an instruction's attributes against `spec`: each known and of its
/// kind, required ones present. Throws Error naming the attribute.
KernelAttrs decodeKernelAttrs(const KernelSpec &spec,
                              const nlohmann::json &attrs);

/// The outputs' types `spec`'s rule gives for inputs `in` and decoded
/// attributes `attrs`, after checking the input count and each input's
/// dtype against `spec.dtypes`. Throws Error with the
/// rule's message. The compiler infers and verifies kernel ops with it
/// (weft/ops/OpCheck.h), so an op's type rule is written once, here.
std::vector<TensorType> inferKernel(const KernelSpec &spec,
                                    const std::vector<TensorType> &in,
                                    const KernelAttrs &attrs);

/// Checks a compute instruction against `spec`: the input count, every
/// attribute (known, of its kind, required ones present), the output count
/// and each output's dtype and shape against the rule, and in-place and
/// overlapping operands. Throws Error with a message that names the
/// operand or attribute, e.g. "output 0 is [3x2] f32, gemm writes [2x2]
/// f32".
CheckedKernel checkKernel(const KernelSpec &spec,
                          const std::vector<OperandPlacement> &inputs,
                          const std::vector<OperandPlacement> &outputs,
                          const nlohmann::json &attrs);

/// checkKernel's last step alone: required in-place outputs at their
/// input's offset, no other output overlapping an input or another output.
/// The loader runs it for each instance of a task body whose types and
/// attributes were checked once (only the offsets differ between them).
void checkKernelPlacement(const KernelSpec &spec,
                          const std::vector<OperandPlacement> &inputs,
                          const std::vector<OperandPlacement> &outputs);

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELSPEC_H
