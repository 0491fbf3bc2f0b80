//===- Communicator.cpp - MPI and single-rank communicators ---------------===//

#include "weft/runtime/Communicator.h"

#include "weft/runtime/Tensor.h"

#include "../kernels/Half.h"

// The C API only: the deprecated C++ bindings need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <thread>

/// An MPI call's status as an Error naming this file and line (the ranks'
/// errors return rather than abort: MPI_ERRORS_RETURN).
#define WEFT_MPI_CHECK(code, call, tag)                                        \
  check((code), (call), (tag), __FILE__, __LINE__)

namespace weft::rt {

namespace {

/// MPI's view of a float dtype: its datatype and reductions. MPI has no
/// 16-bit float: f16 and bf16 travel as MPI_UINT16_T and reduce through
/// user operations that widen to f32, combine and round to nearest even
/// (Half.h), as NCCL's 16-bit sum rounds at each step.
struct MpiFloat {
  MPI_Datatype type;
  MPI_Op sum, max;
};

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), bool Max>
void reduce16(void *in, void *inout, int *count, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *count; ++i) {
    float x = Widen(a[i]), y = Widen(b[i]);
    b[i] = Narrow(Max ? (x > y ? x : y) : x + y);
  }
}

MpiFloat mpiFloat(DType dtype) {
  if (dtype == DType::F64)
    return {MPI_DOUBLE, MPI_SUM, MPI_MAX};
  if (dtype != DType::F16 && dtype != DType::BF16)
    return {MPI_FLOAT, MPI_SUM, MPI_MAX};
  // Created once, after MPI_Init (the communicator exists), never freed:
  // MPI_Finalize releases them.
  static MpiFloat f16 = [] {
    MpiFloat f{MPI_UINT16_T, MPI_OP_NULL, MPI_OP_NULL};
    MPI_Op_create(reduce16<fromF16, toF16, false>, 1, &f.sum);
    MPI_Op_create(reduce16<fromF16, toF16, true>, 1, &f.max);
    return f;
  }();
  static MpiFloat bf16 = [] {
    MpiFloat f{MPI_UINT16_T, MPI_OP_NULL, MPI_OP_NULL};
    MPI_Op_create(reduce16<fromBF16, toBF16, false>, 1, &f.sum);
    MPI_Op_create(reduce16<fromBF16, toBF16, true>, 1, &f.max);
    return f;
  }();
  return dtype == DType::F16 ? f16 : bf16;
}

class SelfCommunicator final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void isend(const void *, int64_t, int peer, int64_t tag) override {
    noPeer(peer, tag);
  }
  void irecv(void *, int64_t, int peer, int64_t tag) override {
    noPeer(peer, tag);
  }
  void wait(int64_t tag) override { noPeer(-1, tag); }
  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
                 const std::vector<int64_t> &) override {
    for (const auto &[name, size] : axes)
      if (size != 1)
        throw Error("the plan's mesh has " + std::to_string(size) +
                    " ranks along '" + name +
                    "': start it with mpirun -np <ranks>");
  }
  void splitSubAxis(const std::string &name, const std::string &, int64_t size,
                    int64_t, int64_t) override {
    if (size != 1)
      throw Error("the plan's mesh has " + std::to_string(size) +
                  " ranks along '" + name +
                  "': start it with mpirun -np <ranks>");
  }
  // A group of one: the sum, the whole and the part are the input, there
  // at the post; the wait checks the tag was posted.
  void postAllReduce(const std::string &, const void *in, void *out,
                     int64_t count, DType dtype, bool, int64_t tag) override {
    copy(in, out, count * dtypeSize(dtype), tag);
  }
  void postAllGather(const std::string &, const void *in, void *out,
                     int64_t outer, int64_t part, DType dtype,
                     int64_t tag) override {
    copy(in, out, outer * part * dtypeSize(dtype), tag);
  }
  void postReduceScatter(const std::string &, const void *in, void *out,
                         int64_t outer, int64_t part, DType dtype,
                         int64_t tag) override {
    copy(in, out, outer * part * dtypeSize(dtype), tag);
  }
  void waitCollective(int64_t tag) override {
    if (!posted.erase(tag))
      throw Error("wait of collective " + std::to_string(tag) +
                  ", which was not posted");
  }
  std::vector<int64_t> allGather(int64_t value) override { return {value}; }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int) override {
    return {text};
  }
  void broadcast(void *, int64_t, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(1);
  }

private:
  void copy(const void *in, void *out, int64_t bytes, int64_t tag) {
    if (!posted.insert(tag).second)
      throw Error("collective " + std::to_string(tag) + " is already pending");
    if (in != out)
      std::memmove(out, in, bytes);
  }
  std::set<int64_t> posted;

  [[noreturn]] static void noPeer(int peer, int64_t tag) {
    throw Error("transfer " + std::to_string(tag) + " to rank " +
                std::to_string(peer) +
                ": this process runs alone (start it with mpirun -np P)");
  }
};

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(int *argc, char ***argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
      MPI_Init(argc, argv);
    // Errors come back as codes, turned into Error with the call named.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    int *ub = nullptr, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    tagUpperBound = found ? *ub : 32767; // the standard's guaranteed minimum
  }
  ~MpiCommunicator() override {
    for (auto &[axis, comm] : axisComms)
      MPI_Comm_free(&comm);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void isend(const void *data, int64_t bytes, int peer, int64_t tag) override {
    post(transfers, tag, "MPI_Isend",
         "transfer " + std::to_string(tag) + " (send of " +
             std::to_string(bytes) + " bytes to rank " + std::to_string(peer) +
             ")",
         [&](MPI_Request *r) {
           return MPI_Isend(data, checkedCount(bytes, tag), MPI_BYTE, peer,
                            mpiTag(tag), MPI_COMM_WORLD, r);
         });
  }
  void irecv(void *data, int64_t bytes, int peer, int64_t tag) override {
    post(transfers, tag, "MPI_Irecv",
         "transfer " + std::to_string(tag) + " (receive of " +
             std::to_string(bytes) + " bytes from rank " +
             std::to_string(peer) + ")",
         [&](MPI_Request *r) {
           return MPI_Irecv(data, checkedCount(bytes, tag), MPI_BYTE, peer,
                            mpiTag(tag), MPI_COMM_WORLD, r);
         });
  }
  void wait(int64_t tag) override { finish(transfers, tag, "transfer"); }

  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &axes,
                 const std::vector<int64_t> &coords) override {
    for (size_t a = 0; a < axes.size(); ++a) {
      // Color: the row-major index of the other coordinates; key: this
      // rank's coordinate along the axis, so group rank = coordinate.
      int color = 0;
      for (size_t b = 0; b < axes.size(); ++b)
        if (b != a)
          color = color * static_cast<int>(axes[b].second) +
                  static_cast<int>(coords[b]);
      MPI_Comm comm;
      WEFT_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color,
                                    static_cast<int>(coords[a]), &comm),
                     "MPI_Comm_split", -1);
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      axisComms[axes[a].first] = comm;
    }
  }
  void splitSubAxis(const std::string &name, const std::string &of,
                    int64_t size, int64_t stride, int64_t coord) override {
    // Color: the coordinate without the sub-axis' component; key: the
    // component, so group rank = sub-axis coordinate.
    int64_t component = coord / stride % size;
    MPI_Comm comm;
    WEFT_MPI_CHECK(MPI_Comm_split(axisComm(of, "sub-axis", -1),
                                  static_cast<int>(coord - component * stride),
                                  static_cast<int>(component), &comm),
                   "MPI_Comm_split", -1);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    axisComms[name] = comm;
  }
  void postAllReduce(const std::string &axis, const void *in, void *out,
                     int64_t count, DType dtype, bool max,
                     int64_t tag) override {
    MPI_Comm comm = axisComm(axis, "all-reduce", tag);
    MpiFloat f = mpiFloat(dtype);
    post(collectives, tag, "MPI_Iallreduce",
         "all-reduce " + std::to_string(tag) + " over '" + axis + "'",
         [&](MPI_Request *r) {
           return MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                                 elements(count, "all-reduce", tag), f.type,
                                 max ? f.max : f.sum, comm, r);
         });
  }

  void postAllGather(const std::string &axis, const void *in, void *out,
                     int64_t outer, int64_t part, DType dtype,
                     int64_t tag) override {
    MPI_Comm comm = axisComm(axis, "all-gather", tag);
    int members = 0;
    MPI_Comm_size(comm, &members);
    MPI_Datatype type = mpiFloat(dtype).type;
    int64_t size = dtypeSize(dtype);
    int count = elements(outer * part, "all-gather", tag);
    post(collectives, tag, "MPI_Iallgather",
         "all-gather " + std::to_string(tag) + " over '" + axis + "'",
         [&](MPI_Request *r) {
           // Member t's part lands at t * part, then every G * part: a
           // vector type whose extent is one part, so that MPI places part
           // t at t. Freed at once: MPI keeps it until the request is done.
           MPI_Datatype strided, placed;
           WEFT_MPI_CHECK(
               MPI_Type_vector(elements(outer, "all-gather", tag),
                               elements(part, "all-gather", tag),
                               elements(members * part, "all-gather", tag),
                               type, &strided),
               "MPI_Type_vector", tag);
           WEFT_MPI_CHECK(
               MPI_Type_create_resized(strided, 0, part * size, &placed),
               "MPI_Type_create_resized", tag);
           MPI_Type_commit(&placed);
           int status =
               MPI_Iallgather(in, count, type, out, 1, placed, comm, r);
           MPI_Type_free(&strided);
           MPI_Type_free(&placed);
           return status;
         });
  }

  void postReduceScatter(const std::string &axis, const void *in, void *out,
                         int64_t outer, int64_t part, DType dtype,
                         int64_t tag) override {
    MPI_Comm comm = axisComm(axis, "reduce-scatter", tag);
    int members = 0;
    MPI_Comm_size(comm, &members);
    MpiFloat f = mpiFloat(dtype);
    int64_t size = dtypeSize(dtype);
    std::vector<char> staging;
    if (outer > 1) {
      // MPI scatters contiguous blocks: [outer][G][part] -> [G][outer][part].
      staging.resize(outer * members * part * size);
      const char *from = static_cast<const char *>(in);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t t = 0; t < members; ++t)
          std::memcpy(staging.data() + (t * outer + o) * part * size,
                      from + (o * members + t) * part * size, part * size);
    }
    // The vector's heap bytes do not move when it is moved into the
    // pending entry: MPI may keep reading them until the wait.
    const void *send = outer > 1 ? staging.data() : in;
    post(
        collectives, tag, "MPI_Ireduce_scatter_block",
        "reduce-scatter " + std::to_string(tag) + " over '" + axis + "'",
        [&](MPI_Request *r) {
          return MPI_Ireduce_scatter_block(
              send, out, elements(outer * part, "reduce-scatter", tag), f.type,
              f.sum, comm, r);
        },
        std::move(staging));
  }

  void waitCollective(int64_t tag) override {
    finish(collectives, tag, "collective");
  }

  void progress() override {
    // MPI_Test on each posted collective runs its next rounds; a completed
    // one stays pending (its request freed) until its wait.
    for (auto &[tag, pending] : collectives) {
      if (pending.request == MPI_REQUEST_NULL)
        continue;
      int done = 0;
      WEFT_MPI_CHECK(MPI_Test(&pending.request, &done, MPI_STATUS_IGNORE),
                     "MPI_Test", tag);
    }
  }

  std::vector<int64_t> allGather(int64_t value) override {
    std::vector<int64_t> all(size_);
    long long mine = value;
    std::vector<long long> out(size_);
    MPI_Request request;
    WEFT_MPI_CHECK(MPI_Iallgather(&mine, 1, MPI_LONG_LONG, out.data(), 1,
                                  MPI_LONG_LONG, MPI_COMM_WORLD, &request),
                   "MPI_Iallgather", -1);
    complete(request, "MPI_Iallgather", -1, "an all-gather of all ranks");
    for (int r = 0; r < size_; ++r)
      all[r] = out[r];
    return all;
  }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int root) override {
    int length = static_cast<int>(text.size());
    std::vector<int> lengths(size_), displs(size_);
    MPI_Request request;
    WEFT_MPI_CHECK(MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT,
                               root, MPI_COMM_WORLD, &request),
                   "MPI_Igather", -1);
    complete(request, "MPI_Igather", -1,
             "a gather to rank " + std::to_string(root));
    std::string all;
    if (rank_ == root) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        displs[r] = total;
        total += lengths[r];
      }
      all.resize(total);
    }
    WEFT_MPI_CHECK(MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(),
                                lengths.data(), displs.data(), MPI_CHAR, root,
                                MPI_COMM_WORLD, &request),
                   "MPI_Igatherv", -1);
    complete(request, "MPI_Igatherv", -1,
             "a gather to rank " + std::to_string(root));
    std::vector<std::string> out;
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        out.push_back(all.substr(displs[r], lengths[r]));
    return out;
  }
  void broadcast(void *data, int64_t bytes, int root) override {
    MPI_Request request;
    WEFT_MPI_CHECK(
        MPI_Ibcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request),
        "MPI_Ibcast", -1);
    complete(request, "MPI_Ibcast", -1,
             "a broadcast from rank " + std::to_string(root));
  }
  void barrier() override {
    MPI_Request request;
    WEFT_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier", -1);
    complete(request, "MPI_Ibarrier", -1, "a barrier of all ranks");
  }
  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }

private:
  /// The group along `axis` (splitMesh made it).
  MPI_Comm axisComm(const std::string &axis, const char *what,
                    int64_t tag) const {
    auto it = axisComms.find(axis);
    if (it == axisComms.end())
      throw Error(std::string(what) + " " + std::to_string(tag) + " over '" +
                  axis + "': no such mesh axis (splitMesh not called?)");
    return it->second;
  }
  /// `count` as MPI's int, or an Error naming the collective.
  static int elements(int64_t count, const char *what, int64_t tag) {
    if (count > INT_MAX)
      throw Error(std::string(what) + " " + std::to_string(tag) + ": " +
                  std::to_string(count) +
                  " elements exceed one MPI call (2^31 - 1)");
    return static_cast<int>(count);
  }

  /// A posted transfer or collective, until its wait.
  struct Pending {
    MPI_Request request;
    /// For the watchdog: "transfer 4 (receive of N bytes from rank P)",
    /// "all-reduce 3 over 'tensor'".
    std::string what;
    std::vector<char> staging; ///< reduce-scatter's packed input, or empty
  };
  /// Transfers and collectives count their tags from 0 each: two maps.
  using PendingMap = std::map<int64_t, Pending>;

  template <typename Post>
  void post(PendingMap &into, int64_t tag, const char *call, std::string what,
            Post &&postCall, std::vector<char> staging = {}) {
    if (into.count(tag))
      throw Error(std::string(call) + ": " + what + " is already pending");
    MPI_Request request;
    WEFT_MPI_CHECK(postCall(&request), call, tag);
    into[tag] = {request, std::move(what), std::move(staging)};
  }

  /// Waits for the `kind` ("transfer", "collective") posted as `tag`.
  void finish(PendingMap &from, int64_t tag, const char *kind) {
    auto it = from.find(tag);
    if (it == from.end())
      throw Error(std::string("wait of ") + kind + " " + std::to_string(tag) +
                  ", which was not posted");
    Pending posted = std::move(it->second);
    from.erase(it);
    complete(posted.request, "MPI_Wait", tag, posted.what);
  }

  /// Waits for `request` under the watchdog: MPI_Test, spinning briefly
  /// (a transfer between running stages completes in microseconds), then
  /// every 50 us so that a waiting rank leaves the core to a peer sharing
  /// it; after timeoutSeconds, throws naming `what`.
  void complete(MPI_Request &request, const char *call, int64_t tag,
                const std::string &what) {
    if (timeoutSeconds <= 0) {
      WEFT_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE), call, tag);
      return;
    }
    auto start = std::chrono::steady_clock::now();
    for (int64_t polls = 0;; ++polls) {
      int done = 0;
      WEFT_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call, tag);
      if (done)
        return;
      if (polls < 10000)
        continue;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeoutSeconds)
        throw Error(what + " has not completed after " +
                    std::to_string(static_cast<int64_t>(waited)) +
                    " s (--timeout): a peer is stuck, stopped or gone");
    }
  }
  static int checkedCount(int64_t bytes, int64_t tag) {
    if (bytes > INT_MAX)
      throw Error("transfer " + std::to_string(tag) + ": " +
                  std::to_string(bytes) +
                  " bytes exceed one MPI message (2^31 - 1)");
    return static_cast<int>(bytes);
  }
  int mpiTag(int64_t tag) const {
    if (tag > tagUpperBound)
      throw Error("transfer tag " + std::to_string(tag) +
                  " exceeds MPI_TAG_UB " + std::to_string(tagUpperBound));
    return static_cast<int>(tag);
  }
  /// WEFT_MPI_CHECK: throws Error naming `file`:`line`, the MPI call (and
  /// the transfer's tag, when >= 0) and MPI's error string.
  static void check(int code, const char *call, int64_t tag, const char *file,
                    int line) {
    if (code == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(std::string(file) + ":" + std::to_string(line) + ": " +
                std::string(call) +
                (tag >= 0 ? " (transfer " + std::to_string(tag) + ")" : "") +
                ": " + std::string(text, length));
  }

  int rank_ = 0, size_ = 1;
  int64_t tagUpperBound = 32767;             ///< MPI_TAG_UB, read once
  PendingMap transfers, collectives;         ///< posted, by tag
  std::map<std::string, MPI_Comm> axisComms; ///< splitMesh's groups
};

} // namespace

std::unique_ptr<Communicator> createSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

std::unique_ptr<Communicator> createMpiCommunicator(int *argc, char ***argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

std::vector<std::vector<std::pair<int64_t, int64_t>>>
channelRounds(const std::vector<std::pair<int64_t, int64_t>> &channels) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> rounds;
  std::vector<std::set<int64_t>> busy; // per round: its channels' ranks
  for (const auto &channel : channels) {
    auto [from, to] = channel;
    size_t r = 0;
    while (r < rounds.size() && (busy[r].count(from) || busy[r].count(to)))
      ++r;
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].push_back(channel);
    busy[r].insert({from, to});
  }
  return rounds;
}

bool launchedByMpi() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var))
      return true;
  return false;
}

} // namespace weft::rt
