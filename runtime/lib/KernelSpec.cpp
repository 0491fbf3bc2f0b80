//===- KernelSpec.cpp - checking instructions against the kernel table ----===//

#include "weft/runtime/KernelSpec.h"

#include "specs/Specs.h"

#include <algorithm>
#include <array>
#include <climits>

using json = nlohmann::json;

namespace weft::rt {

int64_t TensorType::numel() const { return specs::product(shape); }

int64_t TensorType::bytes() const {
  return specs::satMul(numel(), dtypeSize(dtype));
}

std::string typeString(const TensorType &type) {
  return shapeString(type.shape) + " " + dtypeName(type.dtype);
}

void KernelAttrs::set(std::string name, Value value) {
  if (!values)
    values = std::make_shared<Values>();
  else if (values.use_count() > 1)
    values = std::make_shared<Values>(*values);
  values->emplace_back(std::move(name), std::move(value));
}

const KernelAttrs::Value *KernelAttrs::find(std::string_view name) const {
  if (values)
    for (const auto &[key, value] : *values)
      if (key == name)
        return &value;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// SpecCall
//===----------------------------------------------------------------------===//

void SpecCall::fail(const std::string &message) const { throw Error(message); }

void SpecCall::requireSameDType(size_t a, size_t b) const {
  if (in[a].dtype != in[b].dtype)
    fail("inputs " + std::to_string(a) + " and " + std::to_string(b) +
         " differ in dtype: " + dtypeName(in[a].dtype) + " and " +
         dtypeName(in[b].dtype));
}

void SpecCall::requireType(size_t k, const TensorType &type,
                           const char *what) const {
  if (in[k] != type)
    fail("input " + std::to_string(k) + " (" + what + ") is " +
         typeString(in[k]) + ", expected " + typeString(type));
}

int64_t SpecCall::axis(const char *name, int64_t rank) const {
  int64_t a = attrs.i(name);
  if (a < 0 || a >= rank)
    fail(std::string("attribute '") + name + "' is " + std::to_string(a) +
         ", outside [0, " + std::to_string(rank) + ")");
  return a;
}

std::vector<int64_t> SpecCall::broadcast(const std::vector<int64_t> &a,
                                         const std::vector<int64_t> &b) const {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // numpy: align from the trailing dim, missing leading dims act as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("shapes " + shapeString(a) + " and " + shapeString(b) +
           " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t SpecCall::add(int64_t a, int64_t b) const {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail("size arithmetic overflows int64");
  return r;
}

int64_t SpecCall::mul(int64_t a, int64_t b) const {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail("size arithmetic overflows int64");
  return r;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

namespace {

/// An attribute's ODS default as the plan's value of its kind; none when
/// the record states no default.
template <AttrKind> struct StorageOf;
template <> struct StorageOf<AttrKind::Int> { using type = int64_t; };
template <> struct StorageOf<AttrKind::Float> { using type = double; };
template <> struct StorageOf<AttrKind::Bool> { using type = bool; };
template <> struct StorageOf<AttrKind::String> { using type = std::string; };
template <> struct StorageOf<AttrKind::Ints> {
  using type = std::vector<int64_t>;
};
template <> struct StorageOf<AttrKind::Floats> {
  using type = std::vector<double>;
};
template <AttrKind> std::optional<KernelAttrs::Value> defaultOf() {
  return std::nullopt;
}
template <AttrKind K, typename T>
std::optional<KernelAttrs::Value> defaultOf(T value) {
  using S = typename StorageOf<K>::type;
  return KernelAttrs::Value(std::in_place_type<S>, S(value));
}

/// A kernel op's input counts, plan attributes, input dtypes and in-place
/// pairs, as its record states them.
struct Signature {
  int minInputs = -1, maxInputs = -1;
  std::vector<AttrSpec> attrs;
  std::vector<DTypeSet> dtypes;
  std::vector<KernelSpec::InPlace> inPlace;
};

const std::array<Signature, ops::kOpCount> &signatures() {
  static const std::array<Signature, ops::kOpCount> table = [] {
    std::array<Signature, ops::kOpCount> s;
    enum Presence { Required, Optional, Defaulted };
#define WEFT_OP_INPUTS(Id, min, max)                                           \
  s[size_t(Op::Id)].minInputs = min;                                           \
  s[size_t(Op::Id)].maxInputs = (max) < 0 ? kVariadic : (max);
#define WEFT_OP_ATTR(Id, name, Kind, Presence, ...)                            \
  s[size_t(Op::Id)].attrs.push_back({name, AttrKind::Kind,                     \
                                     Presence == Required,                     \
                                     defaultOf<AttrKind::Kind>(__VA_ARGS__)});
    using namespace dtypes; // WEFT_OP_DTYPES names the sets
#define WEFT_OP_DTYPES(Id, ...) s[size_t(Op::Id)].dtypes = {__VA_ARGS__};
#define WEFT_OP_INPLACE(Id, output, input, required)                           \
  s[size_t(Op::Id)].inPlace.push_back({output, input, required});
#include "weft/ops/Ops.def"
    return s;
  }();
  return table;
}

} // namespace

const std::vector<KernelSpec> &kernelSpecs() {
  static const std::vector<KernelSpec> table = [] {
    std::vector<KernelSpec> t;
    specs::addElementwiseSpecs(t);
    specs::addTensorSpecs(t);
    specs::addNetworkSpecs(t);
    specs::addBackwardSpecs(t);
    specs::addParallelSpecs(t);
    specs::addAttentionSpecs(t);
    for (KernelSpec &spec : t) {
      const Signature &s = signatures()[static_cast<size_t>(spec.op)];
      spec.minInputs = s.minInputs;
      spec.maxInputs = s.maxInputs;
      spec.attrs = s.attrs;
      spec.dtypes = s.dtypes;
      spec.inPlace = s.inPlace;
    }
    std::sort(t.begin(), t.end(), [](const KernelSpec &a, const KernelSpec &b) {
      return a.name() < b.name();
    });
    return t;
  }();
  return table;
}

const KernelSpec *findKernelSpec(std::string_view name) {
  const auto &table = kernelSpecs();
  auto it = std::lower_bound(
      table.begin(), table.end(), name,
      [](const KernelSpec &s, std::string_view n) { return s.name() < n; });
  return it != table.end() && it->name() == name ? &*it : nullptr;
}

const KernelSpec *findKernelSpec(Op op) {
  static const std::array<const KernelSpec *, ops::kOpCount> byOp = [] {
    std::array<const KernelSpec *, ops::kOpCount> index{};
    for (const KernelSpec &spec : kernelSpecs())
      index[static_cast<size_t>(spec.op)] = &spec;
    return index;
  }();
  return byOp[static_cast<size_t>(op)];
}

//===----------------------------------------------------------------------===//
// checkKernel
//===----------------------------------------------------------------------===//

namespace {

/// How the table docs and the error messages name each AttrKind, in the
/// enum's order.
struct KindNames {
  const char *symbol, *phrase;
};
constexpr KindNames kKindNames[] = {
    {"int", "an integer"},           {"float", "a number"},
    {"bool", "a boolean"},           {"string", "a string"},
    {"int[]", "a list of integers"}, {"float[]", "a list of numbers"}};
const KindNames &namesOf(AttrKind kind) {
  return kKindNames[static_cast<int>(kind)];
}

/// An int64: unsigned JSON values above INT64_MAX are refused, not wrapped.
bool isInt64(const json &v) {
  return v.is_number_integer() &&
         !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX);
}

/// The value of `v` as `kind`, or nullopt when it is not one.
std::optional<KernelAttrs::Value> decode(const json &v, AttrKind kind) {
  auto allOf = [&](auto pred) {
    return v.is_array() && std::all_of(v.begin(), v.end(), pred);
  };
  switch (kind) {
  case AttrKind::Int:
    if (isInt64(v))
      return v.get<int64_t>();
    break;
  case AttrKind::Float:
    if (v.is_number())
      return v.get<double>();
    break;
  case AttrKind::Bool:
    if (v.is_boolean())
      return v.get<bool>();
    break;
  case AttrKind::String:
    if (v.is_string())
      return v.get<std::string>();
    break;
  case AttrKind::Ints:
    if (allOf(isInt64))
      return v.get<std::vector<int64_t>>();
    break;
  case AttrKind::Floats:
    if (allOf([](const json &e) { return e.is_number(); }))
      return v.get<std::vector<double>>();
    break;
  }
  return std::nullopt;
}

void checkInputCount(const KernelSpec &spec, size_t inputs);

/// Input counts, then each input's dtype against the spec's sets.
void checkInputs(const KernelSpec &spec, const std::vector<TensorType> &in) {
  checkInputCount(spec, in.size());
  for (size_t k = 0; k < in.size() && !spec.dtypes.empty(); ++k) {
    DTypeSet admits = spec.dtypes[std::min(k, spec.dtypes.size() - 1)];
    if (!admits.contains(in[k].dtype))
      throw Error("input " + std::to_string(k) + " is " +
                  dtypeName(in[k].dtype) + ", expected " + admits.expected());
  }
}

void checkInputCount(const KernelSpec &spec, size_t inputs) {
  int count = static_cast<int>(inputs);
  if (count >= spec.minInputs && count <= spec.maxInputs)
    return;
  std::string expected = std::to_string(spec.minInputs);
  if (spec.maxInputs == kVariadic)
    expected = "at least " + expected;
  else if (spec.maxInputs != spec.minInputs)
    expected += " to " + std::to_string(spec.maxInputs);
  throw Error("takes " + expected + " input(s), the instruction has " +
              std::to_string(count));
}

} // namespace

KernelAttrs decodeKernelAttrs(const KernelSpec &spec, const json &attrs) {
  KernelAttrs out;
  for (const auto &[name, value] : attrs.items()) {
    auto it = std::find_if(spec.attrs.begin(), spec.attrs.end(),
                           [&](const AttrSpec &a) { return name == a.name; });
    if (it == spec.attrs.end())
      throw Error("unknown attribute '" + name + "'");
    std::optional<KernelAttrs::Value> decoded = decode(value, it->kind);
    if (!decoded)
      throw Error("attribute '" + name + "' must be " +
                  namesOf(it->kind).phrase + ", got " + value.dump());
    out.set(name, std::move(*decoded));
  }
  for (const AttrSpec &a : spec.attrs) {
    if (out.has(a.name))
      continue;
    if (a.byDefault)
      out.set(a.name, *a.byDefault);
    else if (a.required)
      throw Error(std::string("missing attribute '") + a.name + "'");
  }
  return out;
}

namespace {

/// Byte ranges [offset, offset + bytes) share a byte (an empty one never
/// does).
bool overlaps(const OperandPlacement &a, const OperandPlacement &b) {
  int64_t ae = a.offset + a.type.bytes(), be = b.offset + b.type.bytes();
  bool empty = a.offset == ae || b.offset == be;
  return !empty && a.offset < be && b.offset < ae;
}

} // namespace

void checkKernelPlacement(const KernelSpec &spec,
                          const std::vector<OperandPlacement> &inputs,
                          const std::vector<OperandPlacement> &outputs) {
  auto same = [&](size_t o, size_t k) {
    return outputs[o].offset == inputs[k].offset &&
           outputs[o].type.bytes() == inputs[k].type.bytes();
  };
  auto inPlace = [&](size_t o, size_t k) {
    return std::any_of(spec.inPlace.begin(), spec.inPlace.end(),
                       [&](const KernelSpec::InPlace &p) {
                         return p.output == int(o) && p.input == int(k);
                       });
  };
  for (const KernelSpec::InPlace &p : spec.inPlace)
    if (p.required && size_t(p.output) < outputs.size() &&
        size_t(p.input) < inputs.size() && !same(p.output, p.input))
      throw Error("output " + std::to_string(p.output) + " must update input " +
                  std::to_string(p.input) +
                  " in place (the same bytes), it is at offset " +
                  std::to_string(outputs[p.output].offset) + ", the input at " +
                  std::to_string(inputs[p.input].offset));
  for (size_t o = 0; o < outputs.size(); ++o) {
    for (size_t k = 0; k < inputs.size(); ++k)
      if (!(inPlace(o, k) && same(o, k)) && overlaps(outputs[o], inputs[k]))
        throw Error("output " + std::to_string(o) + " overlaps input " +
                    std::to_string(k) + " in the arena");
    for (size_t p = 0; p < o; ++p)
      if (overlaps(outputs[o], outputs[p]))
        throw Error("outputs " + std::to_string(p) + " and " +
                    std::to_string(o) + " overlap in the arena");
  }
}

std::vector<TensorType> inferKernel(const KernelSpec &spec,
                                    const std::vector<TensorType> &in,
                                    const KernelAttrs &attrs) {
  checkInputs(spec, in);
  return spec.infer(SpecCall{in, attrs});
}

CheckedKernel checkKernel(const KernelSpec &spec,
                          const std::vector<OperandPlacement> &inputs,
                          const std::vector<OperandPlacement> &outputs,
                          const json &attrs) {
  std::vector<TensorType> in;
  for (const OperandPlacement &p : inputs)
    in.push_back(p.type);
  // The inputs first: a wrong count or dtype says more than an attribute.
  checkInputs(spec, in);
  CheckedKernel result{decodeKernelAttrs(spec, attrs), {}};
  SpecCall call{in, result.attrs};
  std::vector<TensorType> expected = spec.infer(call);
  if (expected.size() != outputs.size())
    throw Error("writes " + std::to_string(expected.size()) +
                " output(s), the instruction has " +
                std::to_string(outputs.size()));
  for (size_t o = 0; o < outputs.size(); ++o)
    if (outputs[o].type != expected[o])
      throw Error("output " + std::to_string(o) + " is " +
                  typeString(outputs[o].type) + ", " +
                  std::string(spec.name()) + " writes " +
                  typeString(expected[o]));
  checkKernelPlacement(spec, inputs, outputs);

  const ops::FlopRule &rule = ops::record(spec.op).flops;
  result.cost.flops =
      spec.flops ? spec.flops(call, expected)
                 : rule.count(in.empty() ? 0 : in[0].numel(),
                              expected.empty() ? 0 : expected[0].numel());
  for (const TensorType &t : expected)
    result.cost.bytesWritten += t.bytes();
  if (spec.bytesRead)
    result.cost.bytesRead = spec.bytesRead(call, expected);
  else
    for (const TensorType &t : in)
      result.cost.bytesRead += t.bytes();
  return result;
}

std::string DTypeSet::expected() const {
  if (*this == dtypes::Float)
    return "f32, f64, f16 or bf16";
  if (*this == dtypes::Index)
    return "i32 or i64 indices";
  if (*this == dtypes::Numeric)
    return "a float or integer dtype";
  std::vector<std::string> names;
  for (unsigned d = 0; d <= static_cast<unsigned>(DType::Bool); ++d)
    if (contains(static_cast<DType>(d)))
      names.push_back(dtypeName(static_cast<DType>(d)));
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

std::string DTypeSet::name() const {
  const std::pair<DTypeSet, const char *> named[] = {
      {dtypes::Float, "float"},     {dtypes::Index, "index"},
      {dtypes::Bool, "bool"},       {dtypes::Integer, "integer"},
      {dtypes::Numeric, "numeric"}, {dtypes::Any, "any"}};
  for (const auto &[set, text] : named)
    if (*this == set)
      return text;
  return expected();
}

namespace {

/// A scalar attribute value as the docs print it (defaults are scalars).
std::string valueString(const KernelAttrs::Value &v) {
  if (const auto *i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (const auto *d = std::get_if<double>(&v))
    return json(*d).dump();
  if (const auto *b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (const auto *s = std::get_if<std::string>(&v))
    return json(*s).dump();
  return "[...]";
}

/// "0 float, 1 index, 2+ any; <note>": each input's set, the last for the
/// rest.
std::string dtypesColumn(const KernelSpec &spec) {
  std::string out;
  for (size_t k = 0; k < spec.dtypes.size(); ++k) {
    bool rest = k + 1 == spec.dtypes.size() &&
                (spec.maxInputs > int(spec.dtypes.size()));
    if (spec.dtypes.size() == 1 && (spec.minInputs == 1 || rest))
      out = spec.dtypes[k].name() + (spec.maxInputs > 1 ? " (each)" : "");
    else
      out += (k ? ", " : "") + std::to_string(k) + (rest ? "+ " : " ") +
             spec.dtypes[k].name();
  }
  if (*spec.dtypeNote)
    out += std::string("; ") + spec.dtypeNote;
  return out;
}

} // namespace

std::string kernelSpecsMarkdown() {
  std::string out =
      "# Kernels\n\n"
      "Generated from the kernel specification table "
      "(`runtime/include/weft/runtime/KernelSpec.h`, entries in "
      "`runtime/lib/specs/`) by `weft-run --kernels`; "
      "[the plan format](../plan-format.md#kernels) says how it is used.\n\n"
      "Each kernel is a weft op; the op's record (its definition in the "
      "dialect's .td files, which weft-tblgen writes to "
      "`runtime/include/weft/ops/Ops.def`) gives its inputs and attributes "
      "(`name?`: the plan may omit it; `= v`: weft-run fills in the default "
      "v when the plan omits it), the backends that implement it, whether "
      "`weft-autodiff` differentiates it, its operands' precision under "
      "`--precision bf16|f16` and how a tensor- or sequence-parallel shard "
      "passes through it.\n\n"
      "The dtypes column gives the set of dtypes the check admits for each "
      "input, the op's operand types in its .td definition (`0 float, 1 "
      "index, 2+ any`: input 0 a float, input 1 an index, the others any "
      "dtype; `float (each)`: every input a float), which the kernel's rule "
      "then ties to one another, most often to input 0's own dtype: float is "
      "f32, f64, f16 or bf16 (16-bit computed in f32), index i32 or i64, "
      "integer the signed and unsigned integers, numeric float or integer, "
      "any numeric or bool. After the `;`, the ties the rule states beyond "
      "\"as input 0\".\n\n"
      "| kernel | inputs | dtypes | attributes | in place (output <- input) "
      "| implements | backends | gradient | precision | split |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const KernelSpec &spec : kernelSpecs()) {
    std::string inputs = std::to_string(spec.minInputs);
    if (spec.maxInputs == kVariadic)
      inputs += "+";
    else if (spec.maxInputs != spec.minInputs)
      inputs += "-" + std::to_string(spec.maxInputs);
    std::string attrs, inPlace;
    for (const AttrSpec &a : spec.attrs)
      attrs += std::string(attrs.empty() ? "" : ", ") + "`" + a.name +
               (a.required || a.byDefault ? "" : "?") +
               "`: " + namesOf(a.kind).symbol +
               (a.byDefault ? " = " + valueString(*a.byDefault) : "");
    for (const KernelSpec::InPlace &p : spec.inPlace)
      inPlace += std::string(inPlace.empty() ? "" : ", ") +
                 std::to_string(p.output) + " <- " + std::to_string(p.input) +
                 (p.required ? "" : " (may)");
    const ops::OpRecord &r = ops::record(spec.op);
    out += std::string("| `") + std::string(spec.name()) + "` | " + inputs +
           " | " + dtypesColumn(spec) + " | " + attrs + " | " + inPlace +
           " | " + spec.source + " | " + ops::name(r.backends) + " | " +
           ops::name(r.gradient) + " | " + ops::name(r.precision) + " | " +
           ops::name(r.split) + " |\n";
  }
  out += "\n## Ops that are not kernels\n\n"
         "| op | in the plan | gradient | precision | split |\n"
         "|---|---|---|---|---|\n";
  for (const ops::OpRecord &r : ops::opRecords())
    if (!r.isKernel())
      out += std::string("| `weft.") + std::string(r.mnemonic) + "` | " +
             ops::name(r.lowering) + " | " + ops::name(r.gradient) + " | " +
             ops::name(r.precision) + " | " + ops::name(r.split) + " |\n";
  return out;
}

} // namespace weft::rt
