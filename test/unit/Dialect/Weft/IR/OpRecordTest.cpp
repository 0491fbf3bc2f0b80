//===- OpRecordTest.cpp - every dialect op has its record, and back -------===//
//
// The op records (runtime/include/weft/ops/Ops.def, which weft-tblgen
// writes from the .td files) against the dialect the compiler registers, so
// a checked-in table the build did not regenerate fails here too: a
// registered op without a record, a record whose mnemonic is not its
// class's, or a Gradient column that says what the op's interfaces do not,
// fails here naming the op. (Kernels: the spec entry, the CPU kernel and the
// pins of the records' facts are test/unit/runtime/KernelRecordTest.cpp's,
// the CUDA kernel the emulator test's.)
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/OpRecords.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
namespace ops = weft::ops;

namespace {

struct OpRecordTest : ::testing::Test {
  OpRecordTest() { ctx.loadDialect<weft::WeftDialect>(); }
  MLIRContext ctx;
};

/// Every registered `weft.*` op, by mnemonic.
std::map<std::string, RegisteredOperationName> dialectOps(MLIRContext &ctx) {
  std::map<std::string, RegisteredOperationName> out;
  for (RegisteredOperationName name : ctx.getRegisteredOperations())
    if (name.getDialectNamespace() == weft::WeftDialect::getDialectNamespace())
      out.emplace(name.stripDialect().str(), name);
  return out;
}

} // namespace

TEST_F(OpRecordTest, EveryDialectOpHasARecord) {
  auto registered = dialectOps(ctx);
  ASSERT_GT(registered.size(), 80u);
  for (const auto &[mnemonic, name] : registered)
    EXPECT_NE(ops::findOpRecord(mnemonic), nullptr)
        << "weft." << mnemonic << " has no record in weft/ops/Ops.def";
  std::set<std::string_view> seen;
  for (const ops::OpRecord &r : ops::opRecords()) {
    EXPECT_TRUE(seen.insert(r.mnemonic).second)
        << "two records for " << r.mnemonic;
    EXPECT_TRUE(registered.count(std::string(r.mnemonic)))
        << "the record " << r.mnemonic << " names no registered op";
  }
}

/// Each record's Id is the dialect class of its mnemonic (weft::<Id>Op).
TEST_F(OpRecordTest, RecordsNameTheirClasses) {
#define WEFT_OP(Id, mnemonic, ...)                                             \
  EXPECT_EQ(::weft::Id##Op::getOperationName().str(),                          \
            std::string("weft.") + mnemonic);
#include "weft/ops/Ops.def"
}

/// The Gradient column says what weft-autodiff will find: a rule
/// (GradientOpInterface) exactly where the record says Rule. Every op has
/// a cost (CostOpInterface), kernels and instructions alike.
TEST_F(OpRecordTest, GradientColumnMatchesTheInterfaces) {
  for (const auto &[mnemonic, name] : dialectOps(ctx)) {
    const ops::OpRecord *r = ops::findOpRecord(mnemonic);
    ASSERT_NE(r, nullptr) << mnemonic;
    EXPECT_EQ(name.hasInterface<weft::GradientOpInterface>(),
              r->gradient == ops::Gradient::Rule)
        << "weft." << mnemonic << ": the record says "
        << ops::name(r->gradient);
    EXPECT_TRUE(name.hasInterface<weft::CostOpInterface>()) << mnemonic;
  }
}

/// An op declares how a tensor-parallel shard passes through it exactly
/// where its record's Split class is Layout (SplitLayoutOpInterface): the
/// tensor-parallel analysis asks the op, and finds a rule for every such op.
TEST_F(OpRecordTest, LayoutOpsDeclareTheirSplit) {
  for (const auto &[mnemonic, name] : dialectOps(ctx)) {
    const ops::OpRecord *r = ops::findOpRecord(mnemonic);
    ASSERT_NE(r, nullptr) << mnemonic;
    EXPECT_EQ(name.hasInterface<weft::SplitLayoutOpInterface>(),
              r->split == ops::Split::Layout)
        << "weft." << mnemonic << ": the record's split class is "
        << ops::name(r->split);
  }
}
