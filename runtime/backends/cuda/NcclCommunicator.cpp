//===- NcclCommunicator.cpp - collectives and transfers over NCCL ---------===//
//
// Ranks on distinct GPUs run the plan's collectives with NCCL: a world
// communicator bootstrapped over the host communicator (rank 0's unique id,
// broadcast), one communicator per mesh axis and ZeRO sub-axis by
// ncclCommSplit, each with its own stream (ProcessGroupNCCL's form: a
// collective on one axis never queues behind another axis's, as MPI's
// communicators progress independently, so the group orders the plan
// loader checked cannot deadlock on a shared stream). A post makes the
// axis stream wait for the backend's comm stream (which waits for the
// producing kernels); a wait makes the comm stream wait for an event
// recorded right behind that collective, not for the whole axis stream
// (and the executor the compute stream for the comm stream): the
// host never blocks until drain(), at the end of a step, which polls under
// the watchdog and aborts the communicators when it expires.
//
// A part of a sequence-parallel all-gather or reduce-scatter that is not
// contiguous in the whole (outer > 1) is gathered into, or packed from, a
// device staging buffer of the axis (in part-major order) with 2-D copies
// on the axis stream.
//
// Point-to-point transfers (between pipeline stages) run on NCCL too, one
// two-rank communicator and stream per channel (sender, receiver), made by
// connectTransfers: NCCL's send and receive block their stream until the
// peer's match runs, so a channel of its own keeps a send waiting for its
// receiver from holding back a receive from another rank (or the reverse
// direction), and matching by order is safe because the plan loader has
// checked that both ends post a channel's transfers in one order. Each
// channel exchanges one byte when it is made: NCCL connects a pair at its
// first transfer, a host-blocking handshake that must not wait on a peer
// still busy posting something else.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"
#include "weft/runtime/Communicator.h"

#include "CudaCheck.h"
#include "NcclCheck.h"

#include <chrono>
#include <map>
#include <thread>

namespace weft::rt {

namespace {

ncclDataType_t ncclType(DType dtype, int64_t tag) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  default:
    throw Error("collective tag " + std::to_string(tag) + ": dtype " +
                dtypeName(dtype) + " has no NCCL reduction here");
  }
}

class NcclCommunicator final : public ForwardingCommunicator {
public:
  /// The host-side collectives stay `host`'s, and so do transfers on a
  /// channel connectTransfers did not make.
  NcclCommunicator(Communicator &host, cudaStream_t comm)
      : ForwardingCommunicator(host), nccl(cuda::Nccl::get()), comm(comm) {
    ncclUniqueId id{};
    if (inner.rank() == 0)
      WEFT_NCCL_CHECK(nccl.ncclGetUniqueId(&id));
    inner.broadcast(&id, sizeof id, 0);
    WEFT_NCCL_CHECK(
        nccl.ncclCommInitRank(&world, inner.size(), id, inner.rank()));
    WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  }
  ~NcclCommunicator() override {
    for (auto &[name, group] : groups)
      destroy(group);
    for (auto &[channel, group] : channels)
      destroy(group);
    nccl.ncclCommDestroy(world);
    cudaEventDestroy(ready);
    for (const auto *pending : {&collectives, &transfers})
      for (auto [tag, event] : *pending)
        cudaEventDestroy(event);
    for (cudaEvent_t event : idleEvents)
      cudaEventDestroy(event);
  }

  // A channel's sender is its rank 0, its receiver rank 1.
  void isend(const void *data, int64_t bytes, int peer, int64_t tag) override {
    Group *g = channel(rank(), peer);
    if (!g)
      return inner.isend(data, bytes, peer, tag);
    post(*g, transfers, tag, [&](Group &g) {
      WEFT_NCCL_CHECK(
          nccl.ncclSend(data, size_t(bytes), ncclUint8, 1, g.comm, g.stream));
    });
  }
  void irecv(void *data, int64_t bytes, int peer, int64_t tag) override {
    Group *g = channel(peer, rank());
    if (!g)
      return inner.irecv(data, bytes, peer, tag);
    post(*g, transfers, tag, [&](Group &g) {
      WEFT_NCCL_CHECK(
          nccl.ncclRecv(data, size_t(bytes), ncclUint8, 0, g.comm, g.stream));
    });
  }
  void wait(int64_t tag) override {
    if (!completed(transfers, tag))
      inner.wait(tag);
  }

  void connectTransfers(
      const std::vector<std::pair<int64_t, int64_t>> &list) override {
    inner.connectTransfers(list);
    int64_t me = rank();
    for (const auto &round : channelRounds(list)) {
      // This rank's channel in the round, if any: its index is the color,
      // the sender is the new communicator's rank 0.
      int color = NCCL_SPLIT_NOCOLOR, key = 0;
      std::pair<int64_t, int64_t> mine;
      for (size_t c = 0; c < round.size(); ++c)
        if (round[c].first == me || round[c].second == me) {
          color = int(c);
          key = round[c].second == me;
          mine = round[c];
        }
      Group g = makeGroup(world, color, key);
      if (color == NCCL_SPLIT_NOCOLOR)
        continue;
      connect(g, key == 0);
      channels[mine] = g;
    }
  }

  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
                 const std::vector<int64_t> &coords) override {
    inner.splitMesh(axes, coords); // the host's groups serve its transfers
    for (size_t a = 0; a < axes.size(); ++a) {
      // The group: the ranks whose other coordinates equal this rank's,
      // ordered by their coordinate on the axis.
      int64_t color = 0;
      for (size_t b = 0; b < axes.size(); ++b)
        if (b != a)
          color = color * axes[b].second + coords[b];
      split(axes[a].first, world, color, coords[a]);
    }
  }
  void splitSubAxis(const std::string &name, const std::string &of,
                    int64_t size, int64_t stride, int64_t coord) override {
    inner.splitSubAxis(name, of, size, stride, coord);
    int64_t digit = coord / stride % size;
    split(name, group(of, -1).comm, coord - digit * stride, digit);
  }

  void postAllReduce(const std::string &axis, const void *in, void *out,
                     int64_t count, DType dtype, bool max,
                     int64_t tag) override {
    post(group(axis, tag), collectives, tag, [&](Group &g) {
      WEFT_NCCL_CHECK(nccl.ncclAllReduce(in, out, count, ncclType(dtype, tag),
                                         max ? ncclMax : ncclSum, g.comm,
                                         g.stream));
    });
  }
  void postAllGather(const std::string &axis, const void *in, void *out,
                     int64_t outer, int64_t part, DType dtype,
                     int64_t tag) override {
    ncclDataType_t type = ncclType(dtype, tag);
    post(group(axis, tag), collectives, tag, [&](Group &g) {
      if (outer == 1) {
        WEFT_NCCL_CHECK(
            nccl.ncclAllGather(in, out, part, type, g.comm, g.stream));
        return;
      }
      // [G][outer][part] from NCCL, laid out as [outer][G][part].
      int64_t size = dtypeSize(dtype), piece = outer * part * size;
      char *gathered = stage(g, g.members * piece);
      WEFT_NCCL_CHECK(nccl.ncclAllGather(in, gathered, outer * part, type,
                                         g.comm, g.stream));
      for (int64_t m = 0; m < g.members; ++m)
        WEFT_CUDA_CHECK(cudaMemcpy2DAsync(
            static_cast<char *>(out) + m * part * size, g.members * part * size,
            gathered + m * piece, part * size, part * size, outer,
            cudaMemcpyDeviceToDevice, g.stream));
    });
  }
  void postReduceScatter(const std::string &axis, const void *in, void *out,
                         int64_t outer, int64_t part, DType dtype,
                         int64_t tag) override {
    ncclDataType_t type = ncclType(dtype, tag);
    post(group(axis, tag), collectives, tag, [&](Group &g) {
      if (outer == 1) {
        WEFT_NCCL_CHECK(nccl.ncclReduceScatter(in, out, part, type, ncclSum,
                                               g.comm, g.stream));
        return;
      }
      // [outer][G][part] packed as [G][outer][part] for NCCL.
      int64_t size = dtypeSize(dtype), piece = outer * part * size;
      char *packed = stage(g, g.members * piece);
      for (int64_t m = 0; m < g.members; ++m)
        WEFT_CUDA_CHECK(
            cudaMemcpy2DAsync(packed + m * piece, part * size,
                              static_cast<const char *>(in) + m * part * size,
                              g.members * part * size, part * size, outer,
                              cudaMemcpyDeviceToDevice, g.stream));
      WEFT_NCCL_CHECK(nccl.ncclReduceScatter(packed, out, outer * part, type,
                                             ncclSum, g.comm, g.stream));
    });
  }
  void waitCollective(int64_t tag) override {
    // What follows on the comm stream (and, through the executor's event,
    // the compute stream) waits for the collective.
    if (!completed(collectives, tag))
      throw Error("wait_collective tag " + std::to_string(tag) +
                  ": no collective with that tag is pending on rank " +
                  std::to_string(rank()));
  }
  void drain() override {
    inner.drain();
    auto start = std::chrono::steady_clock::now();
    for (auto &[name, g] : groups)
      finish(g, "the collectives on axis '" + name + "'", start);
    for (auto &[channel, g] : channels)
      finish(g,
             "the transfers from rank " + std::to_string(channel.first) +
                 " to rank " + std::to_string(channel.second),
             start);
  }

private:
  /// One mesh axis's (or sub-axis's) communicator and stream.
  struct Group {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    int64_t members = 1;
    void *staging = nullptr; ///< outer > 1 gathers and scatters
    int64_t stagingBytes = 0;
  };

  void split(const std::string &name, ncclComm_t parent, int64_t color,
             int64_t key) {
    groups[name] = makeGroup(parent, int(color), int(key));
  }
  /// A split of `parent` (collective over it) with its stream; an empty
  /// Group for a rank that passes NCCL_SPLIT_NOCOLOR.
  Group makeGroup(ncclComm_t parent, int color, int key) {
    Group g;
    WEFT_NCCL_CHECK(nccl.ncclCommSplit(parent, color, key, &g.comm, nullptr));
    if (color == NCCL_SPLIT_NOCOLOR)
      return g;
    int count = 1;
    WEFT_NCCL_CHECK(nccl.ncclCommCount(g.comm, &count));
    g.members = count;
    WEFT_CUDA_CHECK(
        cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&g.done, cudaEventDisableTiming));
    return g;
  }
  /// A channel's first transfer, one byte from its sender (rank 0 of the
  /// pair) to its receiver, waited for: both ends are in this round's
  /// split, so NCCL's connection handshake meets its peer now.
  void connect(Group &g, bool sender) {
    void *byte = nullptr;
    WEFT_CUDA_CHECK(cudaMallocAsync(&byte, 1, g.stream));
    WEFT_CUDA_CHECK(cudaMemsetAsync(byte, 0, 1, g.stream));
    if (sender)
      WEFT_NCCL_CHECK(nccl.ncclSend(byte, 1, ncclUint8, 1, g.comm, g.stream));
    else
      WEFT_NCCL_CHECK(nccl.ncclRecv(byte, 1, ncclUint8, 0, g.comm, g.stream));
    WEFT_CUDA_CHECK(cudaFreeAsync(byte, g.stream));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(g.stream));
  }
  void destroy(Group &g) {
    if (g.staging)
      cudaFreeAsync(g.staging, g.stream);
    cudaStreamSynchronize(g.stream);
    nccl.ncclCommDestroy(g.comm);
    cudaEventDestroy(g.done);
    cudaStreamDestroy(g.stream);
  }
  /// Polls until what `g`'s stream holds has run, under the watchdog
  /// (counted from `start`); on expiry aborts every communicator and
  /// throws naming `what`.
  void finish(Group &g, const std::string &what,
              std::chrono::steady_clock::time_point start) {
    WEFT_CUDA_CHECK(cudaEventRecord(g.done, g.stream));
    while (cudaEventQuery(g.done) == cudaErrorNotReady) {
      ncclResult_t async = ncclSuccess;
      WEFT_NCCL_CHECK(nccl.ncclCommGetAsyncError(g.comm, &async));
      WEFT_NCCL_CHECK(async);
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (timeoutSeconds > 0 && waited > timeoutSeconds) {
        for (auto &[name, h] : groups)
          nccl.ncclCommAbort(h.comm);
        for (auto &[channel, h] : channels)
          nccl.ncclCommAbort(h.comm);
        throw Error("rank " + std::to_string(rank()) + ": " + what +
                    " have not finished after " +
                    std::to_string(timeoutSeconds) +
                    " s (NCCL communicators aborted)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    WEFT_CUDA_CHECK(cudaEventQuery(g.done));
  }
  Group &group(const std::string &axis, int64_t tag) {
    auto it = groups.find(axis);
    if (it == groups.end())
      throw Error("collective tag " + std::to_string(tag) + ": axis '" + axis +
                  "' has no NCCL communicator on rank " +
                  std::to_string(rank()));
    return it->second;
  }
  /// The channel from rank `from` to rank `to`, or null when
  /// connectTransfers made none.
  Group *channel(int64_t from, int64_t to) {
    auto it = channels.find({from, to});
    return it == channels.end() ? nullptr : &it->second;
  }
  /// Runs `enqueue(g)` on `g`'s stream after the kernels enqueued so far
  /// (the backend's comm stream waits for them: Executor::run), then
  /// records right behind it the event the wait of `tag` orders the comm
  /// stream after. Not one recorded at the wait: by then the stream may
  /// hold operations posted later, which can depend on kernels this rank
  /// enqueues after the wait (through another rank), a cycle that would
  /// hang the device.
  template <typename Enqueue>
  void post(Group &g, std::map<int64_t, cudaEvent_t> &pending, int64_t tag,
            Enqueue &&enqueue) {
    WEFT_CUDA_CHECK(cudaEventRecord(ready, comm));
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(g.stream, ready, 0));
    enqueue(g);
    cudaEvent_t done = nullptr;
    if (idleEvents.empty()) {
      WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    } else {
      done = idleEvents.back();
      idleEvents.pop_back();
    }
    WEFT_CUDA_CHECK(cudaEventRecord(done, g.stream));
    pending[tag] = done;
  }
  /// Orders the comm stream after the operation posted as `tag`; false
  /// when none is pending.
  bool completed(std::map<int64_t, cudaEvent_t> &pending, int64_t tag) {
    auto it = pending.find(tag);
    if (it == pending.end())
      return false;
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(comm, it->second, 0));
    // Reusable at once: a stream wait captures the event's current work.
    idleEvents.push_back(it->second);
    pending.erase(it);
    return true;
  }
  /// The group's device staging of at least `bytes`: used only on its
  /// stream, so growing it is ordered there (the old buffer is freed after
  /// the collectives queued before).
  char *stage(Group &g, int64_t bytes) {
    if (bytes > g.stagingBytes) {
      if (g.staging)
        WEFT_CUDA_CHECK(cudaFreeAsync(g.staging, g.stream));
      WEFT_CUDA_CHECK(cudaMallocAsync(&g.staging, bytes, g.stream));
      g.stagingBytes = bytes;
    }
    return static_cast<char *>(g.staging);
  }

  const cuda::Nccl &nccl;
  cudaStream_t comm;
  ncclComm_t world = nullptr;
  cudaEvent_t ready = nullptr;
  std::map<std::string, Group> groups;
  /// Point-to-point: (sender, receiver) -> its pair's communicator.
  std::map<std::pair<int64_t, int64_t>, Group> channels;
  /// Posted and not yet waited for, by tag: the event behind each.
  std::map<int64_t, cudaEvent_t> collectives, transfers;
  std::vector<cudaEvent_t> idleEvents;
};

} // namespace

std::unique_ptr<Communicator> createNcclCommunicator(Communicator &host,
                                                     Backend &backend) {
  auto *comm = static_cast<cudaStream_t>(backend.nativeStream(Stream::Comm));
  if (!comm)
    throw Error("--device cuda: NCCL needs the CUDA backend (" +
                backend.name() + ")");
  return std::make_unique<NcclCommunicator>(host, comm);
}

} // namespace weft::rt
