//===- FuseGelu.cpp - weft-fuse-gelu: GELU chains into one op -------------===//
//
// ONNX before opset 20 has no Gelu, so every exporter writes GELU as a chain
// of elementwise ops, each in its own spelling: torch's
// x * (1 + erf(x / sqrt(2))) * 0.5, BERT's x * 0.5 * (1 + erf(x * 0.7071)),
// Hugging Face's gelu_new with pow(x, 3), Megatron-LM's bias_gelu with
// x * (1 + 0.044715 * x * x), any of them in f16 with rounded constants.
// Matching spellings one by one misses the next one, so the pass reads the
// chain around each erf or tanh as a polynomial in x and e (the erf or tanh
// value) and compares coefficients with GELU's, within the rounding of the
// constants' dtype.
//
// Differentiated as it stands, a chain keeps up to four activations for the
// backward; weft.gelu keeps x alone, as Megatron-LM's activation-memory
// formula assumes (Korthikanti et al. 2022, section 4.1).
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <map>
#include <optional>

namespace weft {
#define GEN_PASS_DEF_FUSEGELU
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// (power of x, power of e).
using Monomial = std::pair<unsigned, unsigned>;
/// A polynomial in x and e: monomial -> coefficient.
using Polynomial = std::map<Monomial, double>;

/// Highest power of x or e a chain may reach (x^3 in gelu_new, x^3 e in
/// its expanded product); beyond it the chain is not a GELU.
constexpr unsigned kMaxPower = 6;

Polynomial constantTerm(double c) { return {{{0, 0}, c}}; }
Polynomial xTerm() { return {{{1, 0}, 1.0}}; }
Polynomial eTerm() { return {{{0, 1}, 1.0}}; }

/// The ops a chain is read through.
bool isArithmetic(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, PowOp>(op);
}

Polynomial combine(const Polynomial &a, const Polynomial &b, double sign) {
  Polynomial sum = a;
  for (const auto &[m, c] : b)
    sum[m] += sign * c;
  return sum;
}

Polynomial scaled(Polynomial p, double s) {
  for (auto &[m, c] : p)
    c *= s;
  return p;
}

std::optional<Polynomial> multiply(const Polynomial &a, const Polynomial &b) {
  Polynomial product;
  for (const auto &[ma, ca] : a)
    for (const auto &[mb, cb] : b) {
      Monomial m{ma.first + mb.first, ma.second + mb.second};
      if (m.first > kMaxPower || m.second > kMaxPower)
        return std::nullopt;
      product[m] += ca * cb;
    }
  return product;
}

/// The constant term alone, if `p` has no other.
std::optional<double> constantOf(const Polynomial &p) {
  for (const auto &[m, coefficient] : p)
    if (m != Monomial{0, 0} && coefficient != 0)
      return std::nullopt;
  auto it = p.find({0, 0});
  return it == p.end() ? 0.0 : it->second;
}

/// `got` equals `want` coefficient by coefficient within `tolerance`
/// relative to the larger coefficients of `want`.
bool sameCoefficients(const Polynomial &got, const Polynomial &want,
                      double tolerance) {
  double largest = 0;
  for (const auto &[m, c] : want)
    largest = std::max(largest, std::abs(c));
  for (const Polynomial *p : {&got, &want})
    for (const auto &[m, unused] : *p) {
      auto g = got.find(m), w = want.find(m);
      double gc = g == got.end() ? 0 : g->second;
      double wc = w == want.end() ? 0 : w->second;
      double scale = wc != 0 ? std::abs(wc) : largest;
      if (std::abs(gc - wc) > tolerance * scale)
        return false;
    }
  return true;
}

/// Reads the elementwise chain computing a value as a polynomial in x and e.
/// It descends through add, sub, mul, neg, div by a constant and pow by a
/// small integer constant, into ops whose result has this one use (so the
/// chain dies with its root); constants are scalar or splat floats. Any other
/// value is a leaf: e if it is e, else x, which must be one value throughout
/// (found at the first leaf when not given).
class ChainReader {
public:
  ChainReader(Value x, Value e) : x(x), e(e) {}

  /// The polynomial `op`'s result computes, or nullopt.
  std::optional<Polynomial> readOp(Operation *op);

  Value x, e;
  /// The largest unit roundoff among the constants read (2^-p for a
  /// p-bit significand).
  double roundoff = 0;
  /// The ops read below the root, each used once, inside the chain.
  SmallVector<Operation *> interior;
  llvm::SetVector<Operation *> constants;

private:
  std::optional<Polynomial> read(Value v);
};

std::optional<Polynomial> ChainReader::read(Value v) {
  if (e && v == e)
    return eTerm();
  ElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    auto type = dyn_cast<FloatType>(attr.getElementType());
    if (!type || !attr.isSplat())
      return std::nullopt;
    roundoff = std::max(
        roundoff, std::ldexp(1.0, -static_cast<int>(
                                      APFloat::semanticsPrecision(
                                          type.getFloatSemantics()))));
    constants.insert(v.getDefiningOp());
    return constantTerm(attr.getSplatValue<APFloat>().convertToDouble());
  }
  if (v == x)
    return xTerm();
  Operation *def = v.getDefiningOp();
  if (def && v.hasOneUse() && isArithmetic(def)) {
    interior.push_back(def);
    return readOp(def);
  }
  if (x)
    return std::nullopt; // a second leaf: not a function of x alone
  x = v;
  return xTerm();
}

std::optional<Polynomial> ChainReader::readOp(Operation *op) {
  if (!isArithmetic(op))
    return std::nullopt;
  std::optional<Polynomial> lhs = read(op->getOperand(0));
  if (!lhs)
    return std::nullopt;
  if (isa<NegOp>(op))
    return scaled(*lhs, -1);
  std::optional<Polynomial> rhs = read(op->getOperand(1));
  if (!rhs)
    return std::nullopt;
  if (isa<AddOp>(op))
    return combine(*lhs, *rhs, 1);
  if (isa<SubOp>(op))
    return combine(*lhs, *rhs, -1);
  if (isa<MulOp>(op))
    return multiply(*lhs, *rhs);
  std::optional<double> c = constantOf(*rhs);
  if (isa<DivOp>(op))
    return c && *c != 0 ? std::optional(scaled(*lhs, 1 / *c)) : std::nullopt;
  // pow(p, n) for a small integer n.
  if (!c || *c != std::floor(*c) || *c < 0 || *c > kMaxPower)
    return std::nullopt;
  Polynomial power = constantTerm(1);
  for (int i = 0; i < static_cast<int>(*c); ++i) {
    std::optional<Polynomial> next = multiply(power, *lhs);
    if (!next)
      return std::nullopt;
    power = *next;
  }
  return power;
}

/// Coefficients may differ from GELU's by this many units of the constants'
/// rounding (a coefficient is a product of up to three rounded literals),
/// and never less than f32's: a literal written to f32 precision (Megatron's
/// 0.79788456) is as good in an f64 graph.
double toleranceFor(double roundoff) {
  return 8 * std::max(roundoff, std::ldexp(1.0, -24));
}

/// A GELU found around one erf or tanh: the op computing it, its input, the
/// ops and constants the chain consists of.
struct GeluChain {
  Operation *root = nullptr;
  Value x;
  bool tanh = false;
  SmallVector<Operation *> ops;
  llvm::SetVector<Operation *> constants;
};

/// The GELU whose erf or tanh is `nonlinear`, if the chain around it is one:
///   erf form:  0.5 x + 0.5 x e,  e = erf(x / sqrt(2))
///   tanh form: 0.5 x + 0.5 x e,  e = tanh(k x + k c x^3),
///              k = sqrt(2 / pi), c = 0.044715
/// erf and tanh are odd, so e of the negated argument with -0.5 x e matches
/// too.
std::optional<GeluChain> matchGelu(Operation *nonlinear) {
  GeluChain chain;
  chain.tanh = isa<TanhOp>(nonlinear);
  Value e = nonlinear->getResult(0);
  Value argument = nonlinear->getOperand(0);
  if (!e.hasOneUse() || !argument.hasOneUse())
    return std::nullopt;
  ChainReader inner{Value(), Value()};
  Operation *argumentDef = argument.getDefiningOp();
  if (!argumentDef)
    return std::nullopt;
  inner.interior.push_back(argumentDef);
  std::optional<Polynomial> got = inner.readOp(argumentDef);
  if (!got || !inner.x)
    return std::nullopt;
  const double k = M_2_SQRTPI * M_SQRT1_2;
  Polynomial want = chain.tanh
                        ? Polynomial{{{1, 0}, k}, {{3, 0}, k * 0.044715}}
                        : Polynomial{{{1, 0}, M_SQRT1_2}};
  double sign = 1;
  if (!sameCoefficients(*got, want, toleranceFor(inner.roundoff))) {
    sign = -1;
    if (!sameCoefficients(*got, scaled(want, -1),
                          toleranceFor(inner.roundoff)))
      return std::nullopt;
  }
  // Up from e, through its single-use users, to the first op computing the
  // GELU.
  Polynomial gelu{{{1, 0}, 0.5}, {{1, 1}, 0.5 * sign}};
  Operation *op = *e.getUsers().begin();
  for (int depth = 0; op && depth < 8; ++depth) {
    ChainReader outer(inner.x, e);
    std::optional<Polynomial> value = outer.readOp(op);
    if (value && sameCoefficients(*value, gelu,
                                  toleranceFor(std::max(outer.roundoff,
                                                        inner.roundoff)))) {
      chain.root = op;
      chain.x = inner.x;
      chain.ops = outer.interior;
      chain.ops.push_back(nonlinear);
      chain.ops.append(inner.interior);
      chain.constants = outer.constants;
      chain.constants.insert_range(inner.constants);
      // One block, so the chain can be erased users first.
      if (llvm::any_of(chain.ops, [&](Operation *o) {
            return o->getBlock() != op->getBlock();
          }))
        return std::nullopt;
      return chain;
    }
    if (op->getNumResults() != 1)
      return std::nullopt;
    Value result = op->getResult(0);
    op = result.hasOneUse() ? *result.getUsers().begin() : nullptr;
  }
  return std::nullopt;
}

struct FuseGeluPass : weft::impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    SmallVector<Operation *> nonlinear;
    getOperation().walk([&](Operation *op) {
      if (isa<ErfOp, TanhOp>(op))
        nonlinear.push_back(op);
    });
    for (Operation *candidate : nonlinear) {
      std::optional<GeluChain> chain = matchGelu(candidate);
      // The GELU must have x's type: no broadcasting hides in the chain.
      if (!chain || chain->root->getResult(0).getType() != chain->x.getType())
        continue;
      Operation *root = chain->root;
      OpBuilder b(root);
      Value gelu =
          chain->tanh
              ? GeluTanhOp::create(b, root->getLoc(), chain->x.getType(),
                                   chain->x)
                    .getResult()
              : GeluOp::create(b, root->getLoc(), chain->x.getType(), chain->x)
                    .getResult();
      root->getResult(0).replaceAllUsesWith(gelu);
      // The chain is dead now: every op in it was used once, inside it.
      // Erase users before producers.
      SmallVector<Operation *> dead = chain->ops;
      dead.push_back(root);
      llvm::sort(dead, [](Operation *a, Operation *b) {
        return b->isBeforeInBlock(a);
      });
      for (Operation *op : dead)
        op->erase();
      for (Operation *op : chain->constants)
        if (op->use_empty())
          op->erase();
    }
  }
};

} // namespace
