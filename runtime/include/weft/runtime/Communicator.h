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
// completed by MPI_Test under a watchdog) serves the CPU backend; a CUDA
// backend would use NCCL (ncclCommSplit) behind the same interface.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_COMMUNICATOR_H
#define WEFT_RUNTIME_COMMUNICATOR_H

#include "weft/runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <string>
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
  virtual void splitMesh(
      const std::vector<std::pair<std::string, int64_t>> &axes,
      const std::vector<int64_t> &coords) = 0;
  /// Makes the group of sub-axis `name` of mesh axis `of` (ZeRO's groups,
  /// Plan.h's SubAxis): the ranks of this rank's `of` group whose `of`
  /// coordinates differ from `coord` only in (coord / stride) % size, in
  /// that order. Collective over all ranks; after splitMesh.
  virtual void splitSubAxis(const std::string &name, const std::string &of,
                            int64_t size, int64_t stride, int64_t coord) = 0;
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
  virtual void postAllReduce(const std::string &axis, const void *in,
                             void *out, int64_t count, DType dtype, bool max,
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
  virtual void postAllGather(const std::string &axis, const void *in,
                             void *out, int64_t outer, int64_t part,
                             DType dtype, int64_t tag) = 0;
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

  /// Every rank's `value`, indexed by rank (collective).
  virtual std::vector<int64_t> allGather(int64_t value) = 0;
  /// Every rank's `text`, on rank `root` only (collective; empty elsewhere).
  virtual std::vector<std::string> gatherStrings(const std::string &text,
                                                 int root) = 0;
  /// `value` of rank `root`, on every rank (collective).
  virtual double broadcast(double value, int root) = 0;
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

/// One rank, no peers: collectives return this rank's value; a transfer is
/// an Error (the plan has one rank).
std::unique_ptr<Communicator> createSelfCommunicator();

/// MPI_COMM_WORLD. Calls MPI_Init (and MPI_Finalize on destruction).
std::unique_ptr<Communicator> createMpiCommunicator(int *argc, char ***argv);

/// True when this process was started by mpirun/mpiexec (Open MPI, MPICH).
bool launchedByMpi();

} // namespace weft::rt

#endif // WEFT_RUNTIME_COMMUNICATOR_H
