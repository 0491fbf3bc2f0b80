//===- StagedCommunicatorTest.cpp - transfers through host staging --------===//
//
// The staged communicator over a host communicator that fills what it
// receives with a marker byte when the wait completes: what arrives must
// reach the device buffer the post named, also when a transfer and a
// collective are in flight with the same tag (each counts its tags from 0)
// and when a buffer is staged again in a later step.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"
#include "weft/runtime/Communicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace weft::rt;

namespace {

/// Receives fill their host buffer with 'R' at the wait, all-reduces with
/// 'C' (a group of one would copy: the marker shows which buffer landed
/// where).
class MarkingCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void isend(const void *, int64_t, int, int64_t) override {}
  void irecv(void *data, int64_t bytes, int, int64_t tag) override {
    receives[tag] = {data, bytes};
  }
  void wait(int64_t tag) override {
    if (receives.count(tag))
      std::memset(receives[tag].first, 'R', receives[tag].second);
    receives.erase(tag);
  }
  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &,
                 const std::vector<int64_t> &) override {}
  void splitSubAxis(const std::string &, const std::string &, int64_t, int64_t,
                    int64_t) override {}
  void postAllReduce(const std::string &, const void *, void *out,
                     int64_t count, DType dtype, bool, int64_t tag) override {
    reduces[tag] = {out, count * dtypeSize(dtype)};
  }
  void postAllGather(const std::string &, const void *, void *, int64_t,
                     int64_t, DType, int64_t) override {}
  void postReduceScatter(const std::string &, const void *, void *, int64_t,
                         int64_t, DType, int64_t) override {}
  void waitCollective(int64_t tag) override {
    std::memset(reduces[tag].first, 'C', reduces[tag].second);
    reduces.erase(tag);
  }
  std::vector<int64_t> allGather(int64_t v) override { return {v, v}; }
  std::vector<std::string> gatherStrings(const std::string &t, int) override {
    return {t, t};
  }
  void broadcast(void *, int64_t, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string &message) override {
    throw Error(message);
  }

private:
  std::map<int64_t, std::pair<void *, int64_t>> receives, reduces;
};

TEST(StagedCommunicator, KeepsTransfersAndCollectivesOfOneTagApart) {
  auto backend = createCpuBackend();
  MarkingCommunicator host;
  auto staged = createStagedCommunicator(host, *backend);
  staged->splitMesh({{"data", 2}}, {0});
  for (int step = 0; step < 2; ++step) { // the second reuses the staging
    std::vector<char> received(16, 0), input(16, 0), reduced(16, 0);
    staged->irecv(received.data(), 16, 1, 0);
    staged->postAllReduce("data", input.data(), reduced.data(), 4, DType::F32,
                          false, 0);
    staged->waitCollective(0);
    staged->wait(0);
    EXPECT_EQ(std::string(received.begin(), received.end()),
              std::string(16, 'R'));
    EXPECT_EQ(std::string(reduced.begin(), reduced.end()),
              std::string(16, 'C'));
  }
}

} // namespace
