//===- Communicator.h - how ranks exchange tensors --------------*- C++ -*-===//
//
// The executor's view of the other ranks: non-blocking point-to-point
// transfers identified by the plan's tags (posted by isend/irecv
// instructions, completed by wait_send/wait_recv), the plan's collectives
// over one mesh axis (posted by all_reduce, all_gather and reduce_scatter
// instructions, completed by wait_collective; one group per axis), a few
// collectives over all ranks for logging, and abort. The MPI
// implementation (one process per rank, MPI_Isend/MPI_Irecv, non-blocking
// collectives on MPI_COMM_WORLD and on MPI_Comm_split's axis groups,
// completed by MPI_Test under a watchdog) serves the CPU backend; ranks on
// distinct GPUs use NCCL behind the same interface (NcclCommunicator.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMMUNICATOR_H
#define WEFT_RUNTIME_COMMUNICATOR_H

#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace weft::rt {

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Posts the send of `bytes` bytes at `data` to rank `peer`; `data` must
  /// stay untouched until wait(tag). Tags are the plan's (unique per step).
  virtual void isend(const void *data, int64_t bytes, int peer,
                     int64_t tag) = 0;
  /// Posts the receive of `bytes` bytes from rank `peer` into `data`.
  virtual void irecv(void *data, int64_t bytes, int peer, int64_t tag) = 0;
  /// Blocks until the transfer `tag` posted on this rank has completed.
  /// Throws Error when no transfer with that tag is pending.
  virtual void wait(int64_t tag) = 0;

  /// Makes one group per axis of the device mesh `axes` (name, size; row-
  /// major, the last fastest): the ranks whose coordinates on the other axes
  /// equal this rank's `coords` (MPI_Comm_split). Collective over all ranks;
  /// call once, before the collectives below.
  virtual void
  splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
            const std::vector<int64_t> &coords) = 0;
  /// Makes the group of sub-axis `name` of mesh axis `of` (ZeRO's groups,
  /// Plan.h's SubAxis): the ranks of this rank's `of` group whose `of`
  /// coordinates differ from `coord` only in (coord / stride) % size, in
  /// that order. Collective over all ranks; after splitMesh.
  virtual void splitSubAxis(const std::string &name, const std::string &of,
                            int64_t size, int64_t stride, int64_t coord) = 0;
  /// Prepares the point-to-point channels `channels` (sender, receiver;
  /// transferChannels of the plan: every rank passes the same list) before
  /// the first transfer. Collective over all ranks. MPI needs nothing (a
  /// transfer names its peer); NCCL makes one communicator per channel and
  /// connects it, so that no post blocks the host on a peer's setup.
  virtual void
  connectTransfers(const std::vector<std::pair<int64_t, int64_t>> &channels) {}

  /// The plan's collectives over this rank's group along `axis`, posted
  /// (non-blocking: MPI_Iallreduce, MPI_Iallgather,
  /// MPI_Ireduce_scatter_block) and completed by waitCollective(tag); until
  /// then `out` is undefined and `in` must stay untouched. Every member
  /// posts the group's collectives in one order; `tag` (the plan's, unique
  /// per step) names the collective in waitCollective, errors and the
  /// watchdog's message. Elements are f32 or f64 (`dtype`).
  ///
  /// postAllReduce sums (or, with `max`, takes the maximum of) `count`
  /// elements at `in` over the group into `out` (`out` may be `in`).
  virtual void postAllReduce(const std::string &axis, const void *in, void *out,
                             int64_t count, DType dtype, bool max,
                             int64_t tag) = 0;

  /// Sequence parallelism's collectives (G members). The whole tensor is
  /// laid out as [outer][G][part] elements (its dimension `dim` split into
  /// G parts: `outer` = the product of the sizes before `dim`, `part` = a
  /// rank's elements of one outer row); member t holds [outer][part], the
  /// t-th part. postAllGather writes the whole tensor at `out` from every
  /// member's part at `in`; postReduceScatter sums every member's whole
  /// tensor at `in` and writes this member's part of the sum at `out`. A
  /// part that is not contiguous in the whole (outer > 1) is gathered
  /// through an MPI strided datatype, and scattered after packing the
  /// input into part-major order, at the post, in a staging buffer the
  /// communicator owns until the wait (outside the plan's arena, as MPI's
  /// own buffers).
  virtual void postAllGather(const std::string &axis, const void *in, void *out,
                             int64_t outer, int64_t part, DType dtype,
                             int64_t tag) = 0;
  virtual void postReduceScatter(const std::string &axis, const void *in,
                                 void *out, int64_t outer, int64_t part,
                                 DType dtype, int64_t tag) = 0;
  /// Blocks (under the watchdog) until the collective `tag` posted on this
  /// rank has completed. Throws Error when none with that tag is pending.
  virtual void waitCollective(int64_t tag) = 0;
  /// Lets posted collectives advance without blocking: MPI moves a
  /// non-blocking collective's data only inside MPI calls (Open MPI's
  /// libnbc has no progress thread), so the executor calls this between
  /// instructions while collectives are in flight.
  virtual void progress() {}
  /// Blocks (under the watchdog) until every operation this rank posted
  /// has finished on the device, at the end of a step: a communicator that
  /// enqueues on a device stream (NCCL's) reports a stuck transfer here
  /// rather than hanging the next synchronisation. The host ones have
  /// nothing left by then.
  virtual void drain() {}

  /// Every rank's `value`, indexed by rank (collective).
  virtual std::vector<int64_t> allGather(int64_t value) = 0;
  /// Every rank's `text`, on rank `root` only (collective; empty elsewhere).
  virtual std::vector<std::string> gatherStrings(const std::string &text,
                                                 int root) = 0;
  /// Copies the `bytes` bytes at `data` of rank `root` to `data` on every
  /// rank (collective; NCCL's unique id, for one).
  virtual void broadcast(void *data, int64_t bytes, int root) = 0;
  /// Blocks until every rank has called it (collective).
  virtual void barrier() = 0;

  /// Prints `message` to stderr and ends every rank with exit status 1.
  [[noreturn]] virtual void abort(const std::string &message) = 0;

  /// The watchdog: a wait or collective that has not completed after
  /// `seconds` throws Error naming this rank, the peer and the transfer, so
  /// a stuck or stopped peer ends the job instead of hanging it. 0 waits
  /// forever.
  void setTimeout(double seconds) { timeoutSeconds = seconds; }

protected:
  double timeoutSeconds = 0;
};

/// Every call forwarded to `inner` (which must outlive it): the base of a
/// communicator that changes how some operations move (staging, NCCL) and
/// leaves the rest to the one beneath.
class ForwardingCommunicator : public Communicator {
public:
  explicit ForwardingCommunicator(Communicator &inner) : inner(inner) {}
  int rank() const override { return inner.rank(); }
  int size() const override { return inner.size(); }
  void isend(const void *data, int64_t bytes, int peer, int64_t tag) override {
    inner.isend(data, bytes, peer, tag);
  }
  void irecv(void *data, int64_t bytes, int peer, int64_t tag) override {
    inner.irecv(data, bytes, peer, tag);
  }
  void wait(int64_t tag) override { inner.wait(tag); }
  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
                 const std::vector<int64_t> &coords) override {
    inner.splitMesh(axes, coords);
  }
  void splitSubAxis(const std::string &name, const std::string &of,
                    int64_t size, int64_t stride, int64_t coord) override {
    inner.splitSubAxis(name, of, size, stride, coord);
  }
  void connectTransfers(
      const std::vector<std::pair<int64_t, int64_t>> &channels) override {
    inner.connectTransfers(channels);
  }
  void postAllReduce(const std::string &axis, const void *in, void *out,
                     int64_t count, DType dtype, bool max,
                     int64_t tag) override {
    inner.postAllReduce(axis, in, out, count, dtype, max, tag);
  }
  void postAllGather(const std::string &axis, const void *in, void *out,
                     int64_t outer, int64_t part, DType dtype,
                     int64_t tag) override {
    inner.postAllGather(axis, in, out, outer, part, dtype, tag);
  }
  void postReduceScatter(const std::string &axis, const void *in, void *out,
                         int64_t outer, int64_t part, DType dtype,
                         int64_t tag) override {
    inner.postReduceScatter(axis, in, out, outer, part, dtype, tag);
  }
  void waitCollective(int64_t tag) override { inner.waitCollective(tag); }
  void progress() override { inner.progress(); }
  void drain() override { inner.drain(); }
  std::vector<int64_t> allGather(int64_t value) override {
    return inner.allGather(value);
  }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int root) override {
    return inner.gatherStrings(text, root);
  }
  void broadcast(void *data, int64_t bytes, int root) override {
    inner.broadcast(data, bytes, root);
  }
  void barrier() override { inner.barrier(); }
  [[noreturn]] void abort(const std::string &message) override {
    inner.abort(message);
    std::abort(); // not reached: inner.abort ends the process
  }

protected:
  Communicator &inner;
};

/// One rank, no peers: collectives return this rank's value; a transfer is
/// an Error (the plan has one rank).
std::unique_ptr<Communicator> createSelfCommunicator();

/// MPI_COMM_WORLD. Calls MPI_Init (and MPI_Finalize on destruction).
std::unique_ptr<Communicator> createMpiCommunicator(int *argc, char ***argv);

class Backend;
/// `inner`'s transfers and collectives of `backend`'s device memory,
/// staged through pinned host buffers (StagedCommunicator.cpp): for a
/// device arena over a host communicator (MPI). Collective sizes come from
/// splitMesh/splitSubAxis, which it forwards; everything else is `inner`'s.
/// Both must outlive it.
std::unique_ptr<Communicator> createStagedCommunicator(Communicator &inner,
                                                       Backend &backend);

/// `channels` (sender, receiver) in rounds in which no rank is in two
/// channels: a communicator split (ncclCommSplit, collective over all
/// ranks) puts each rank in at most one new communicator, so one split per
/// round makes every channel's two-rank communicator. A greedy edge
/// colouring in the channels' order: every rank computes the same rounds
/// from the same list, at most 2 d - 1 of them for ranks in at most d
/// channels.
std::vector<std::vector<std::pair<int64_t, int64_t>>>
channelRounds(const std::vector<std::pair<int64_t, int64_t>> &channels);

/// True when this process was started by mpirun/mpiexec (Open MPI, MPICH).
bool launchedByMpi();

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMMUNICATOR_H
