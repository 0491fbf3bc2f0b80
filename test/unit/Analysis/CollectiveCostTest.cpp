//===- CollectiveCostTest.cpp - collectives within and across nodes -------===//
//
// collectiveSeconds against the ring formulas written out by hand
// (Patarasuk & Yuan 2009: n - 1 steps for a reduce-scatter or an
// all-gather, 2(n - 1) for an all-reduce, each a latency plus bytes / n)
// on a DGX A100-like node: 8 devices on NVLink, the network a share of the
// node's NICs per device; and the hierarchical scheme across nodes.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/CostModel.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
DeviceModel node() {
  DeviceModel device;
  device.devicesPerNode = 8;
  device.linkBytesPerSecond = 300e9;
  device.linkLatencySeconds = 3.4e-6;
  device.nodeBytesPerSecond = 25e9; // 8 x 200 Gb/s NICs over 8 devices
  device.nodeLatencySeconds = 9.6e-6;
  return device;
}

constexpr double kBytes = 1 << 30;

TEST(CollectiveCost, OneNodeIsARingOverTheLinks) {
  DeviceModel d = node();
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, kBytes, 8, d, 8),
      14 * (3.4e-6 + kBytes / 8 / 300e9));
  EXPECT_DOUBLE_EQ(collectiveSeconds(CollectiveKind::AllGather, kBytes, 4, d),
                   3 * (3.4e-6 + kBytes / 4 / 300e9));
  EXPECT_EQ(collectiveSeconds(CollectiveKind::AllReduce, kBytes, 1, d), 0.0);
}

TEST(CollectiveCost, OneMemberANodeIsARingOverTheNetwork) {
  DeviceModel d = node();
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, kBytes, 4, d, 1),
      6 * (9.6e-6 + kBytes / 4 / 25e9));
}

TEST(CollectiveCost, SeveralMembersANodeGoHierarchical) {
  DeviceModel d = node();
  // 32 ranks, 8 a node: the ring inside each node on the whole tensor,
  // then 4-node rings on an eighth of it.
  double inNode = 14 * (3.4e-6 + kBytes / 8 / 300e9);
  double across = 6 * (9.6e-6 + kBytes / 8 / 4 / 25e9);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllReduce, kBytes, 32, d, 8),
      inNode + across);
  double scatter =
      7 * (3.4e-6 + kBytes / 8 / 300e9) + 3 * (9.6e-6 + kBytes / 8 / 4 / 25e9);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::ReduceScatter, kBytes, 32, d, 8),
      scatter);
  EXPECT_DOUBLE_EQ(
      collectiveSeconds(CollectiveKind::AllGather, kBytes, 32, d, 8), scatter);
  // Faster than one flat ring at the network's rate, which moves the whole
  // tensor through each device's NIC share.
  EXPECT_LT(collectiveSeconds(CollectiveKind::AllReduce, kBytes, 32, d, 8),
            collectiveSeconds(CollectiveKind::AllReduce, kBytes, 32, d, 1));
}
TEST(CollectiveCost, MembersANodeFollowTheMeshsRankOrder) {
  // Mesh (pipeline 1, data 4, tensor 2): a data group's ranks lie 2 apart,
  // at offsets 0, 2, 4, 6; a tensor group's are adjacent.
  const int64_t mesh[] = {1, 4, 2};
  const int16_t data[] = {1}, tensor[] = {2}, both[] = {1, 2};
  EXPECT_EQ(groupRanksPerNode(mesh, data, 8), 4); // inside one node
  EXPECT_EQ(groupRanksPerNode(mesh, data, 4), 2); // 0 and 2
  EXPECT_EQ(groupRanksPerNode(mesh, data, 3), 2); // 0 and 2: T need not
                                                  // divide the node
  EXPECT_EQ(groupRanksPerNode(mesh, data, 2), 1);
  EXPECT_EQ(groupRanksPerNode(mesh, tensor, 2), 2);
  EXPECT_EQ(groupRanksPerNode(mesh, both, 4), 4); // ranks 0-3 of 0-7
}
} // namespace
