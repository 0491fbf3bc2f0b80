//===- Nccl.cpp - the NCCL calls weft makes, over MPI ---------------------===//
//
// The CUDA emulator's NCCL: a communicator is an MPI communicator (the
// world's duplicate; ncclCommSplit is MPI_Comm_split, NCCL_SPLIT_NOCOLOR
// giving none), and each operation is MPI's nonblocking one, posted when
// NCCL would enqueue it (after the stream's earlier work has run) and
// completed (MPI_Wait) when the stream's work is waited for
// (emulator::defer), as a GPU finishes it asynchronously: so a rank that
// posts a collective and goes on to send to a peer does not deadlock here
// either. In-place forms are NCCL's (an all-gather's input
// at its rank's slot of the output, a reduce-scatter's output at its
// slot of the input); 16-bit reductions sum in f32 and round once.
//
//===----------------------------------------------------------------------===//

#include "../Nccl.h"

#include "Emulator.h"
#include "Values.h"

// MPI's C API (Open MPI's C++ bindings are not linked).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstring>
#include <memory>
#include <vector>

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
};

namespace weft::rt::cuda {

namespace {

using emulator::Format;

size_t sizeOf(ncclDataType_t type) {
  switch (type) {
  case ncclFloat64:
  case ncclInt64:
  case ncclUint64:
    return 8;
  case ncclFloat32:
  case ncclInt32:
  case ncclUint32:
    return 4;
  case ncclFloat16:
  case ncclBfloat16:
    return 2;
  default:
    return 1;
  }
}

/// A reduction's operands in a type MPI reduces: f32 and f64 as they are,
/// bf16 and f16 widened to f32 (rounded back when it completes).
struct Widened {
  MPI_Datatype mpi = MPI_FLOAT;
  bool narrow = false;
  Format format = Format::F32;
  static bool of(ncclDataType_t type, Widened &w) {
    if (type == ncclFloat64)
      w.mpi = MPI_DOUBLE;
    else if (type == ncclBfloat16 || type == ncclFloat16) {
      w.narrow = true;
      w.format = type == ncclBfloat16 ? Format::BF16 : Format::F16;
    } else if (type != ncclFloat32) {
      return false;
    }
    return true;
  }
  /// `count` elements of `p`, in the type MPI reduces.
  std::vector<char> copy(const void *p, size_t count) const {
    if (!narrow) {
      size_t bytes = count * (mpi == MPI_DOUBLE ? 8 : 4);
      return std::vector<char>(static_cast<const char *>(p),
                               static_cast<const char *>(p) + bytes);
    }
    std::vector<char> out(count * 4);
    for (size_t i = 0; i < count; ++i) {
      float v = emulator::load(format, p, int64_t(i));
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
  void store(const std::vector<char> &from, void *to, size_t count) const {
    if (!narrow)
      return (void)std::memcpy(to, from.data(), from.size());
    for (size_t i = 0; i < count; ++i) {
      float v;
      std::memcpy(&v, from.data() + 4 * i, 4);
      emulator::store(format, to, int64_t(i), v);
    }
  }
};

using Bytes = std::shared_ptr<std::vector<char>>;

/// Posts `request`'s completion on `stream`, then `done` (which keeps the
/// buffers the request reads or writes alive until then).
void later(cudaStream_t stream, MPI_Request request,
           std::function<void()> done = nullptr) {
  emulator::defer(stream, [request, done]() mutable {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    if (done)
      done();
  });
}

ncclResult_t allReduce(const void *send, void *recv, size_t count,
                       ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                       cudaStream_t stream) {
  emulator::order(stream); // what the stream ran before, first
  Widened w;
  if (!Widened::of(type, w) || (op != ncclSum && op != ncclMax))
    return ncclInvalidArgument;
  auto data = std::make_shared<std::vector<char>>(w.copy(send, count));
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, data->data(), int(count), w.mpi,
                 op == ncclSum ? MPI_SUM : MPI_MAX, comm->mpi, &request);
  later(stream, request,
        [w, data, recv, count] { w.store(*data, recv, count); });
  return ncclSuccess;
}

// The input is copied first, so NCCL's in-place form (the input at this
// rank's slot of the output) needs nothing more.
ncclResult_t allGather(const void *send, void *recv, size_t count,
                       ncclDataType_t type, ncclComm_t comm,
                       cudaStream_t stream) {
  emulator::order(stream); // what the stream ran before, first
  size_t bytes = count * sizeOf(type);
  auto data = std::make_shared<std::vector<char>>(
      static_cast<const char *>(send), static_cast<const char *>(send) + bytes);
  MPI_Request request;
  MPI_Iallgather(data->data(), int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE,
                 comm->mpi, &request);
  later(stream, request, [data] {});
  return ncclSuccess;
}

ncclResult_t reduceScatter(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  emulator::order(stream); // what the stream ran before, first
  Widened w;
  int members = 1;
  MPI_Comm_size(comm->mpi, &members);
  if (!Widened::of(type, w) || op != ncclSum)
    return ncclInvalidArgument;
  Bytes in = std::make_shared<std::vector<char>>(
      w.copy(send, count * size_t(members)));
  Bytes out = std::make_shared<std::vector<char>>(in->size() / members);
  MPI_Request request;
  MPI_Ireduce_scatter_block(in->data(), out->data(), int(count), w.mpi, MPI_SUM,
                            comm->mpi, &request);
  later(stream, request,
        [w, in, out, recv, count] { w.store(*out, recv, count); });
  return ncclSuccess;
}

ncclResult_t send(const void *data, size_t count, ncclDataType_t type, int peer,
                  ncclComm_t comm, cudaStream_t stream) {
  emulator::order(stream); // what the stream ran before, first
  MPI_Request request;
  MPI_Isend(data, int(count * sizeOf(type)), MPI_BYTE, peer, 0, comm->mpi,
            &request);
  later(stream, request);
  return ncclSuccess;
}

ncclResult_t recv(void *data, size_t count, ncclDataType_t type, int peer,
                  ncclComm_t comm, cudaStream_t stream) {
  emulator::order(stream); // what the stream ran before, first
  MPI_Request request;
  MPI_Irecv(data, int(count * sizeOf(type)), MPI_BYTE, peer, 0, comm->mpi,
            &request);
  later(stream, request);
  return ncclSuccess;
}

} // namespace

const Nccl &Nccl::get() {
  static const Nccl table = [] {
    Nccl t;
    t.ncclGetUniqueId = [](ncclUniqueId *id) -> ncclResult_t {
      std::memset(id, 0, sizeof *id); // every comm starts from the world
      return ncclSuccess;
    };
    t.ncclCommInitRank = [](ncclComm_t *comm, int ranks, ncclUniqueId,
                            int rank) -> ncclResult_t {
      int size = 0, me = 0;
      MPI_Comm_size(MPI_COMM_WORLD, &size);
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      if (ranks != size || rank != me)
        return ncclInvalidArgument;
      *comm = new ncclComm;
      MPI_Comm_dup(MPI_COMM_WORLD, &(*comm)->mpi);
      return ncclSuccess;
    };
    t.ncclCommSplit = [](ncclComm_t parent, int color, int key, ncclComm_t *out,
                         ncclConfig_t *) -> ncclResult_t {
      MPI_Comm split;
      MPI_Comm_split(parent->mpi,
                     color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key,
                     &split);
      *out = nullptr;
      if (split != MPI_COMM_NULL) {
        *out = new ncclComm;
        (*out)->mpi = split;
      }
      return ncclSuccess;
    };
    t.ncclCommCount = [](const ncclComm_t comm, int *count) -> ncclResult_t {
      MPI_Comm_size(comm->mpi, count);
      return ncclSuccess;
    };
    t.ncclCommDestroy = [](ncclComm_t comm) -> ncclResult_t {
      if (comm) {
        MPI_Comm_free(&comm->mpi);
        delete comm;
      }
      return ncclSuccess;
    };
    t.ncclCommAbort = t.ncclCommDestroy;
    t.ncclCommGetAsyncError = [](ncclComm_t,
                                 ncclResult_t *error) -> ncclResult_t {
      *error = ncclSuccess;
      return ncclSuccess;
    };
    t.ncclGetErrorString = [](ncclResult_t result) -> const char * {
      return result == ncclInvalidArgument
                 ? "invalid argument (the CUDA emulator's NCCL)"
                 : "the CUDA emulator's NCCL";
    };
    t.ncclAllReduce = allReduce;
    t.ncclAllGather = allGather;
    t.ncclReduceScatter = reduceScatter;
    t.ncclSend = send;
    t.ncclRecv = recv;
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
