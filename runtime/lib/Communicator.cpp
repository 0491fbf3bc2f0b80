//===- Communicator.cpp - MPI and single-rank communicators ---------------===//

#include "weft/runtime/Communicator.h"

#include "weft/runtime/Tensor.h"

// The C API only: the deprecated C++ bindings need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace weft::rt {

namespace {

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
  std::vector<int64_t> allGather(int64_t value) override { return {value}; }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int) override {
    return {text};
  }
  double broadcast(double value, int) override { return value; }
  void barrier() override {}
  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(1);
  }

private:
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
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void isend(const void *data, int64_t bytes, int peer, int64_t tag) override {
    post(tag, "MPI_Isend", [&](MPI_Request *r) {
      return MPI_Isend(data, checkedCount(bytes, tag), MPI_BYTE, peer,
                       mpiTag(tag), MPI_COMM_WORLD, r);
    });
  }
  void irecv(void *data, int64_t bytes, int peer, int64_t tag) override {
    post(tag, "MPI_Irecv", [&](MPI_Request *r) {
      return MPI_Irecv(data, checkedCount(bytes, tag), MPI_BYTE, peer,
                       mpiTag(tag), MPI_COMM_WORLD, r);
    });
  }
  void wait(int64_t tag) override {
    auto it = pending.find(tag);
    if (it == pending.end())
      throw Error("wait of transfer " + std::to_string(tag) +
                  ", which was not posted");
    MPI_Request request = it->second;
    pending.erase(it);
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait", tag);
  }

  std::vector<int64_t> allGather(int64_t value) override {
    std::vector<int64_t> all(size_);
    long long mine = value;
    std::vector<long long> out(size_);
    check(MPI_Allgather(&mine, 1, MPI_LONG_LONG, out.data(), 1, MPI_LONG_LONG,
                        MPI_COMM_WORLD),
          "MPI_Allgather", -1);
    for (int r = 0; r < size_; ++r)
      all[r] = out[r];
    return all;
  }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int root) override {
    int length = static_cast<int>(text.size());
    std::vector<int> lengths(size_), displs(size_);
    check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root,
                     MPI_COMM_WORLD),
          "MPI_Gather", -1);
    std::string all;
    if (rank_ == root) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        displs[r] = total;
        total += lengths[r];
      }
      all.resize(total);
    }
    check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(),
                      lengths.data(), displs.data(), MPI_CHAR, root,
                      MPI_COMM_WORLD),
          "MPI_Gatherv", -1);
    std::vector<std::string> out;
    if (rank_ == root)
      for (int r = 0; r < size_; ++r)
        out.push_back(all.substr(displs[r], lengths[r]));
    return out;
  }
  double broadcast(double value, int root) override {
    check(MPI_Bcast(&value, 1, MPI_DOUBLE, root, MPI_COMM_WORLD), "MPI_Bcast",
          -1);
    return value;
  }
  void barrier() override {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", -1);
  }
  [[noreturn]] void abort(const std::string &message) override {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::exit(1);
  }

private:
  template <typename Post>
  void post(int64_t tag, const char *call, Post &&postCall) {
    MPI_Request request;
    check(postCall(&request), call, tag);
    if (!pending.insert({tag, request}).second)
      throw Error(std::string(call) + ": transfer " + std::to_string(tag) +
                  " is already pending");
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
  static void check(int code, const char *call, int64_t tag) {
    if (code == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(std::string(call) +
                (tag >= 0 ? " (transfer " + std::to_string(tag) + ")" : "") +
                ": " + std::string(text, length));
  }

  int rank_ = 0, size_ = 1;
  int64_t tagUpperBound = 32767; ///< MPI_TAG_UB, read once
  std::map<int64_t, MPI_Request> pending;
};

} // namespace

std::unique_ptr<Communicator> createSelfCommunicator() {
  return std::make_unique<SelfCommunicator>();
}

std::unique_ptr<Communicator> createMpiCommunicator(int *argc, char ***argv) {
  return std::make_unique<MpiCommunicator>(argc, argv);
}

bool launchedByMpi() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var))
      return true;
  return false;
}

} // namespace weft::rt
