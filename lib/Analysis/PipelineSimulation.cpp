//===- PipelineSimulation.cpp - predicted timeline of a pipeline ----------===//

#include "weft/Analysis/PipelineSimulation.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace mlir;
using namespace weft;

namespace {

/// Both sides of one transfer, as far as they have been posted.
struct Transfer {
  std::optional<double> sendPost, recvPost;
  int64_t sender = -1, receiver = -1, bytes = 0;
  std::string task;
  bool crossesNodes = false;
};

std::string describe(const SimOp &op) {
  switch (op.kind) {
  case SimOp::Kind::WaitRecv:
    return llvm::formatv("wait_recv of tag {0} from stage {1}", op.tag,
                         op.peer);
  case SimOp::Kind::WaitSend:
    return llvm::formatv("wait_send of tag {0} to stage {1}", op.tag, op.peer);
  default:
    return "op";
  }
}

/// A collective's label on the timeline: the op, e.g. "all_reduce".
std::string opName(const SimOp &op) {
  return op.op ? op.op->getName().stripDialect().str() : "collective";
}

std::string categoryOf(const std::string &task) {
  if (task.empty() || task == "U")
    return "optimizer";
  return task[0] == 'B' ? "backward" : "forward";
}

} // namespace

SimResult weft::simulatePipeline(const std::vector<std::vector<SimOp>> &ranks,
                                 const DeviceModel &device) {
  SimResult result;
  size_t n = ranks.size();
  std::vector<double> clock(n, 0.0);
  std::vector<size_t> next(n, 0);
  result.busySeconds.assign(n, 0.0);
  std::map<int64_t, Transfer> transfers;
  // (rank, tag) of each posted collective -> when it completes.
  std::map<std::pair<size_t, int64_t>, double> collectiveDone;
  // The open compute slice of each rank, merged while the task is the same.
  std::vector<std::optional<SimEvent>> open(n);
  auto closeSlice = [&](size_t r) {
    if (open[r])
      result.events.push_back(*open[r]);
    open[r].reset();
  };

  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < n; ++r) {
      while (next[r] < ranks[r].size()) {
        const SimOp &op = ranks[r][next[r]];
        if (op.kind == SimOp::Kind::Compute) {
          if (open[r] && open[r]->name != op.task)
            closeSlice(r);
          if (!open[r])
            open[r] = SimEvent{static_cast<int64_t>(r), op.task,
                               categoryOf(op.task), clock[r], clock[r]};
          clock[r] += op.seconds;
          open[r]->end = clock[r];
          result.busySeconds[r] += op.seconds;
        } else if (op.kind == SimOp::Kind::PostCollective) {
          collectiveDone[{r, op.tag}] = clock[r] + op.seconds;
          result.events.push_back({static_cast<int64_t>(r), opName(op),
                                   "collective", clock[r],
                                   clock[r] + op.seconds});
        } else if (op.kind == SimOp::Kind::WaitCollective) {
          double done = collectiveDone.at({r, op.tag});
          if (done > clock[r])
            closeSlice(r);
          clock[r] = std::max(clock[r], done);
        } else if (op.kind == SimOp::Kind::ISend ||
                   op.kind == SimOp::Kind::IRecv) {
          Transfer &t = transfers[op.tag];
          bool send = op.kind == SimOp::Kind::ISend;
          (send ? t.sendPost : t.recvPost) = clock[r];
          (send ? t.sender : t.receiver) = r;
          if (send) {
            t.bytes = op.bytes;
            t.task = op.task;
            t.crossesNodes = op.crossesNodes;
          }
        } else {
          Transfer &t = transfers[op.tag];
          bool recvSide = op.kind == SimOp::Kind::WaitRecv;
          // The other side must have been posted; our own side was.
          std::optional<double> other = recvSide ? t.sendPost : t.recvPost;
          if (!other)
            break; // blocked
          double done = std::max(*t.sendPost, *t.recvPost) +
                        transferSeconds(t.bytes, device, t.crossesNodes);
          if (recvSide)
            result.events.push_back(
                {t.sender,
                 llvm::formatv("send {0} -> {1}", t.task, t.receiver).str(),
                 "transfer", std::max(*t.sendPost, *t.recvPost), done});
          if (done > clock[r])
            closeSlice(r);
          clock[r] = std::max(clock[r], done);
        }
        ++next[r];
        progress = true;
      }
    }
  }
  for (size_t r = 0; r < n; ++r)
    closeSlice(r);

  for (size_t r = 0; r < n; ++r) {
    if (next[r] == ranks[r].size())
      continue;
    const SimOp &op = ranks[r][next[r]];
    result.completed = false;
    result.blockedRank = r;
    result.blockedOp = next[r];
    bool recvSide = op.kind == SimOp::Kind::WaitRecv;
    int64_t peer = op.peer;
    std::string peerState =
        peer >= 0 && static_cast<size_t>(peer) < n &&
                next[peer] < ranks[peer].size()
            ? llvm::formatv("stage {0} is itself blocked at its op {1} ({2})",
                            peer, next[peer], describe(ranks[peer][next[peer]]))
                  .str()
            : llvm::formatv("stage {0} never posts it", peer).str();
    result.deadlock =
        llvm::formatv("deadlock: stage {0} blocks at its op {1} ({2}, task "
                      "{3}): the matching {4} is never posted; {5}",
                      r, next[r], describe(op), op.task,
                      recvSide ? "isend" : "irecv", peerState)
            .str();
    break;
  }
  for (size_t r = 0; r < n; ++r)
    result.stepSeconds = std::max(result.stepSeconds, clock[r]);
  double busy = 0;
  for (double b : result.busySeconds)
    busy += b;
  if (n && result.stepSeconds > 0)
    result.bubbleFraction = 1.0 - busy / n / result.stepSeconds;
  return result;
}

SmallVector<func::FuncOp> weft::rankFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> funcs;
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr(kStageAttr))
      funcs.push_back(func);
  llvm::sort(funcs, [](func::FuncOp a, func::FuncOp b) {
    return *stageOf(a) < *stageOf(b);
  });
  if (funcs.empty())
    if (auto main = module.lookupSymbol<func::FuncOp>("main"))
      funcs.push_back(main);
  return funcs;
}

int64_t weft::ranksPerProgram(ModuleOp module) {
  int64_t programs = rankFunctions(module).size();
  FailureOr<std::optional<DeviceMesh>> mesh = getDeviceMesh(module);
  return succeeded(mesh) && *mesh && programs > 0
             ? std::max<int64_t>(1, (*mesh)->size() / programs)
             : 1;
}

std::vector<std::vector<SimOp>> weft::stagePrograms(ModuleOp module,
                                                    const DeviceModel &device) {
  // Without stages, the one @main is every rank's program (its collectives
  // still overlap its compute). Each function is read alone: in parallel.
  SmallVector<func::FuncOp> funcs = rankFunctions(module);
  std::vector<std::vector<SimOp>> programs(funcs.size());
  // Ranks per program (its data x tensor ranks), to place a peer's node.
  int64_t perProgram = ranksPerProgram(module);
  auto nodeOf = [&](int64_t program) {
    return program * perProgram / device.devicesPerNode;
  };
  mlir::parallelFor(module.getContext(), 0, funcs.size(), [&](size_t rank) {
    func::FuncOp func = funcs[rank];
    std::vector<SimOp> &program = programs[rank];
    llvm::DenseMap<Operation *, int64_t> collectiveTag;
    bool chunked = func->hasAttr(kChunkStagesAttr);
    std::string task = chunked ? "F0.0" : "F0";
    for (Operation &op : func.getBody().front().without_terminator()) {
      // Untagged ops (gradient sums) belong to the task before them.
      TaskKind kind = scheduledTaskKind(&op);
      if (kind == TaskKind::Update)
        task = "U";
      else if (std::optional<int64_t> mb = microBatchOf(&op))
        // With model chunks, "F1.3": chunk 1's forward of micro-batch 3
        // (weft-test-print-task-orders' labels).
        task =
            taskKindLetter(kind) +
            (chunked ? std::to_string(TaskFields::of(&op).chunk) + "." : "") +
            std::to_string(*mb);
      SimOp sim{SimOp::Kind::Compute};
      sim.task = task;
      sim.op = &op;
      if (auto send = dyn_cast<ISendOp>(op)) {
        sim.kind = SimOp::Kind::ISend;
        sim.peer = send.getPeer();
        sim.tag = send.getTag();
        sim.bytes = byteSize(send.getValue().getType());
        sim.crossesNodes = nodeOf(int64_t(rank)) != nodeOf(sim.peer);
      } else if (auto recv = dyn_cast<IRecvOp>(op)) {
        sim.kind = SimOp::Kind::IRecv;
        sim.peer = recv.getPeer();
        sim.tag = recv.getTag();
      } else if (auto wait = dyn_cast<WaitSendOp>(op)) {
        auto send = wait.getRequest().getDefiningOp<ISendOp>();
        sim.kind = SimOp::Kind::WaitSend;
        sim.peer = send ? send.getPeer() : -1;
        sim.tag = send ? send.getTag() : -1;
      } else if (auto wait = dyn_cast<WaitRecvOp>(op)) {
        auto recv = wait.getRequest().getDefiningOp<IRecvOp>();
        sim.kind = SimOp::Kind::WaitRecv;
        sim.peer = recv ? recv.getPeer() : -1;
        sim.tag = recv ? recv.getTag() : -1;
      } else if (isa<WaitCollectiveOp>(op)) {
        sim.kind = SimOp::Kind::WaitCollective;
        sim.tag = collectiveTag.lookup(
            cast<WaitCollectiveOp>(op).getPosted().getDefiningOp());
      } else {
        sim.seconds = opSeconds(&op, device);
        if (isa<ConstantOp>(op))
          continue;
        // A collective is a post; one no weft.wait_collective waits for
        // (weft-overlap-collectives did not run) is waited for at once, as
        // plan emission has it.
        if (collectiveKind(&op)) {
          sim.kind = SimOp::Kind::PostCollective;
          sim.tag = static_cast<int64_t>(collectiveTag.size());
          collectiveTag[&op] = sim.tag;
          if (!isWaitedFor(&op)) {
            program.push_back(sim);
            sim.kind = SimOp::Kind::WaitCollective;
            sim.seconds = 0;
          }
        }
      }
      program.push_back(sim);
    }
  });
  return programs;
}

std::string weft::chromeTrace(const std::vector<SimEvent> &events) {
  llvm::json::Array list;
  for (const SimEvent &e : events)
    list.push_back(llvm::json::Object{
        {"name", e.name},
        {"cat", e.category},
        {"ph", "X"},
        {"ts", e.start * 1e6},
        {"dur", (e.end - e.start) * 1e6},
        {"pid", e.rank},
        {"tid", e.category == "transfer"     ? 1
                : e.category == "collective" ? 2
                                             : 0}});
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(llvm::json::Object{
      {"traceEvents", std::move(list)}, {"displayTimeUnit", "ms"}});
  return text;
}

void weft::printAsciiTimeline(const SimResult &result, int64_t ranks,
                              llvm::raw_ostream &os, int64_t width) {
  if (result.stepSeconds <= 0)
    return;
  double scale = width / result.stepSeconds;
  std::vector<std::string> rows(ranks, std::string(width, ' '));
  for (const SimEvent &e : result.events) {
    if (e.category == "transfer" || e.category == "collective" ||
        e.rank >= ranks)
      continue;
    int64_t begin = std::min<int64_t>(e.start * scale, width - 1);
    int64_t end = std::max<int64_t>(begin + 1, e.end * scale);
    end = std::min(end, width);
    std::string &row = rows[e.rank];
    // The label, then '-' to the end of the slice; '|' opens each slice.
    std::string text = "|" + e.name;
    for (int64_t c = begin; c < end; ++c) {
      size_t k = c - begin;
      row[c] = k < text.size() ? text[k] : '-';
    }
  }
  for (int64_t r = 0; r < ranks; ++r)
    os << llvm::formatv("stage {0,-2} {1}\n", r, rows[r]);
  os << llvm::formatv("         0{0}{1:f1} ms\n",
                      std::string(std::max<int64_t>(width - 8, 1), ' '),
                      result.stepSeconds * 1e3);
}
