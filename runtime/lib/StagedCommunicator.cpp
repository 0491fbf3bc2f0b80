//===- StagedCommunicator.cpp - device transfers through host staging -----===//
//
// MPI moves host memory. A rank whose arena is device memory (the CUDA
// backend without NCCL, or ranks sharing one GPU, which NCCL refuses)
// stages each transfer through pinned host buffers: a post copies the
// device bytes down (Backend::download, ordered after the kernels enqueued
// before it), hands the staging buffer to the host communicator, and the
// wait copies what arrived up into the arena. The device buffer is free
// again as soon as the post returns. Staging buffers are pinned once and
// reused by size: pinning is slow, and a step posts the same sizes every
// time. The CPU backend can run on it too (weft-run --stage-transfers), so
// the path is tested where there is no GPU.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Communicator.h"

#include "weft/runtime/Backend.h"

#include <map>

namespace weft::rt {

namespace {

class StagedCommunicator final : public ForwardingCommunicator {
public:
  StagedCommunicator(Communicator &inner, Backend &backend)
      : ForwardingCommunicator(inner), backend(backend) {}
  ~StagedCommunicator() override {
    for (auto &[bytes, buffers] : idle)
      for (void *host : buffers)
        backend.freeHost(host);
    for (const auto *map : {&transfers, &collectives})
      for (auto &[tag, staged] : *map)
        for (auto [host, bytes] : staged.buffers)
          backend.freeHost(host);
  }

  void isend(const void *data, int64_t bytes, int peer, int64_t tag) override {
    void *host = take(bytes);
    backend.download(host, data, bytes);
    inner.isend(host, bytes, peer, tag);
    transfers[tag] = {{{host, bytes}}, nullptr};
  }
  void irecv(void *data, int64_t bytes, int peer, int64_t tag) override {
    void *host = take(bytes);
    inner.irecv(host, bytes, peer, tag);
    transfers[tag] = {{{host, bytes}}, data};
  }
  void wait(int64_t tag) override {
    inner.wait(tag);
    finish(transfers, tag);
  }

  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
                 const std::vector<int64_t> &coords) override {
    for (const auto &[name, size] : axes)
      groupSize[name] = size;
    inner.splitMesh(axes, coords);
  }
  void splitSubAxis(const std::string &name, const std::string &of,
                    int64_t size, int64_t stride, int64_t coord) override {
    groupSize[name] = size;
    inner.splitSubAxis(name, of, size, stride, coord);
  }

  void postAllReduce(const std::string &axis, const void *in, void *out,
                     int64_t count, DType dtype, bool max,
                     int64_t tag) override {
    int64_t bytes = count * dtypeSize(dtype);
    void *host = take(bytes);
    backend.download(host, in, bytes);
    inner.postAllReduce(axis, host, host, count, dtype, max, tag);
    collectives[tag] = {{{host, bytes}}, out};
  }
  void postAllGather(const std::string &axis, const void *in, void *out,
                     int64_t outer, int64_t part, DType dtype,
                     int64_t tag) override {
    postParts(&Communicator::postAllGather, true, axis, in, out, outer, part,
              dtype, tag);
  }
  void postReduceScatter(const std::string &axis, const void *in, void *out,
                         int64_t outer, int64_t part, DType dtype,
                         int64_t tag) override {
    postParts(&Communicator::postReduceScatter, false, axis, in, out, outer,
              part, dtype, tag);
  }
  void waitCollective(int64_t tag) override {
    inner.waitCollective(tag);
    finish(collectives, tag);
  }

private:
  using PostParts = void (Communicator::*)(const std::string &, const void *,
                                           void *, int64_t, int64_t, DType,
                                           int64_t);
  /// A sequence-parallel collective through staging: a piece [outer][part]
  /// and the whole [outer][G][part]; an all-gather (`gathers`) sends the
  /// piece and receives the whole, a reduce-scatter the reverse.
  void postParts(PostParts post, bool gathers, const std::string &axis,
                 const void *in, void *out, int64_t outer, int64_t part,
                 DType dtype, int64_t tag) {
    int64_t piece = outer * part * dtypeSize(dtype);
    int64_t whole = piece * members(axis, tag);
    int64_t sent = gathers ? piece : whole, received = gathers ? whole : piece;
    void *hostIn = take(sent), *hostOut = take(received);
    backend.download(hostIn, in, sent);
    (inner.*post)(axis, hostIn, hostOut, outer, part, dtype, tag);
    // The result is the first buffer: finish() uploads it.
    collectives[tag] = {{{hostOut, received}, {hostIn, sent}}, out};
  }

  /// A posted operation's staging buffers (the first receives the result)
  /// and the device bytes the result goes to (null: a send).
  struct Staged {
    std::vector<std::pair<void *, int64_t>> buffers;
    void *device = nullptr;
  };

  int64_t members(const std::string &axis, int64_t tag) const {
    auto it = groupSize.find(axis);
    if (it == groupSize.end())
      throw Error("collective tag " + std::to_string(tag) + ": axis '" + axis +
                  "' has no group on rank " + std::to_string(inner.rank()));
    return it->second;
  }
  void *take(int64_t bytes) {
    std::vector<void *> &free = idle[bytes];
    if (free.empty())
      return backend.allocateHost(bytes);
    void *host = free.back();
    free.pop_back();
    return host;
  }
  /// Transfers and collectives count their tags from 0 each: two maps.
  using StagedMap = std::map<int64_t, Staged>;

  /// Uploads what arrived and returns the staging buffers to the pool.
  void finish(StagedMap &from, int64_t tag) {
    auto it = from.find(tag);
    if (it == from.end())
      return; // the inner communicator has already refused the tag
    Staged staged = std::move(it->second);
    from.erase(it);
    if (staged.device)
      backend.upload(staged.device, staged.buffers[0].first,
                     staged.buffers[0].second);
    for (auto [host, bytes] : staged.buffers)
      idle[bytes].push_back(host);
  }

  Backend &backend;
  std::map<std::string, int64_t> groupSize;
  StagedMap transfers, collectives;
  std::map<int64_t, std::vector<void *>> idle; ///< pinned buffers by size
};

} // namespace

std::unique_ptr<Communicator> createStagedCommunicator(Communicator &inner,
                                                       Backend &backend) {
  return std::make_unique<StagedCommunicator>(inner, backend);
}

} // namespace weft::rt
