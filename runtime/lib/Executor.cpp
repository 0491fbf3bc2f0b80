//===- Executor.cpp - runs one rank's instruction list --------------------===//

#include "weft/runtime/Executor.h"

#include "weft/runtime/Files.h"
#include "weft/runtime/OnnxTensor.h"
#include "weft/runtime/Sha256.h"
#include "weft/runtime/Shard.h"

#include "../kernels/Half.h"
#include "../kernels/Kernel.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

namespace weft::rt {

Executor::Executor(const Plan &plan, int64_t rank, Backend &backend,
                   Communicator *comm)
    : plan(plan), rankPlan(plan.ranks.at(rank)), backend(backend),
      ownComm(comm ? nullptr : createSelfCommunicator()),
      comm(comm ? comm : ownComm.get()), produced(backend.createEvent()),
      arrived(backend.createEvent()) {
  // Checked before the arena exists: a constructor that throws runs no
  // destructor, so the arena would leak (found by the plan-loader fuzzer).
  measureLiveness();
  const std::vector<Instruction> &instructions = rankPlan.instructions;
  runEnd.resize(instructions.size());
  for (size_t i = instructions.size(); i-- > 0;) {
    const Instruction &inst = instructions[i];
    bool grouped =
        inst.op == "compute" && backend.launchesGrouped(inst.kernel) &&
        i + 1 < instructions.size() && instructions[i + 1].op == "compute" &&
        instructions[i + 1].kernel == inst.kernel;
    runEnd[i] = grouped ? runEnd[i + 1] : i + 1;
  }
  arena = static_cast<char *>(backend.allocateArena(rankPlan.arenaBytes));
  for (const ConstantDesc &c : rankPlan.constants)
    backend.upload(arena + rankPlan.buffers[c.buffer].offset, c.bytes.data(),
                   c.bytes.size());
}

Executor::~Executor() { backend.freeArena(arena); }

Tensor Executor::view(int64_t buffer) const {
  const BufferDesc &b = rankPlan.buffers[buffer];
  return Tensor{arena + b.offset, b.dtype, b.shape};
}

namespace {
onnx::ModelProto readModel(const std::string &path, const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(what + ": cannot read '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw Error(what + ": '" + path + "' is not a binary ONNX model");
  return model;
}

} // namespace

namespace {
/// f32 bytes rounded to nearest even as f16 or bf16 bytes.
std::string roundedTo(DType dtype, const std::string &f32) {
  size_t n = f32.size() / 4;
  std::string out(n * 2, '\0');
  for (size_t i = 0; i < n; ++i) {
    float v;
    std::memcpy(&v, f32.data() + 4 * i, 4);
    uint16_t bits = dtype == DType::F16 ? toF16(v) : toBF16(v);
    std::memcpy(out.data() + 2 * i, &bits, 2);
  }
  return out;
}

/// The piece of the model's whole tensor `named` holds.
PieceDesc pieceOf(const NamedBuffer &named, const BufferDesc &b) {
  std::vector<int64_t> local =
      named.flatShard ? named.flatShard->shape : b.shape;
  return {named.shard ? fullShape(local, *named.shard) : local, named.shard,
          named.flatShard};
}
} // namespace

void Executor::loadInitializers(const std::string &modelPath,
                                const std::vector<NamedBuffer> &buffers,
                                const std::string &what) {
  onnx::ModelProto model = readModel(
      modelPath, what == "weight" ? plan.path + ": model.path" : what);
  std::map<std::string, const onnx::TensorProto *> initializers;
  for (const auto &t : model.graph().initializer())
    initializers[t.name()] = &t;
  std::string modelDir =
      std::filesystem::path(modelPath).parent_path().string();
  for (const NamedBuffer &named : buffers) {
    const BufferDesc &b = rankPlan.buffers[named.buffer];
    std::string label = what + " '" + named.name + "'";
    auto it = initializers.find(named.name);
    if (it == initializers.end())
      throw Error(label + ": no such initializer in " + modelPath);
    const onnx::TensorProto &t = *it->second;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    DType dtype = dtypeOfONNX(t.data_type(), label);
    // A tensor-parallel shard is sliced from the whole initializer, and a
    // ZeRO piece from that.
    PieceDesc piece = pieceOf(named, b);
    // A 16-bit working copy (mixed precision) is the f32 initializer
    // rounded to nearest even.
    bool narrow = dtype == DType::F32 && isHalf(b.dtype);
    if (dims != piece.shape || (dtype != b.dtype && !narrow))
      throw Error(
          label + ": the plan expects " + shapeString(piece.shape) + " " +
          dtypeName(b.dtype) +
          (named.shard
               ? " (sharded " + std::to_string(named.shard->count) + " ways)"
               : "") +
          (named.flatShard
               ? " (a piece of " + std::to_string(named.flatShard->count) + ")"
               : "") +
          ", " + modelPath + " holds " + shapeString(dims) + " " +
          dtypeName(dtype));
    std::string bytes =
        slicePiece(tensorBytes(t, modelDir, label), piece, dtypeSize(dtype));
    if (narrow)
      bytes = roundedTo(b.dtype, bytes);
    backend.upload(arena + b.offset, bytes.data(), bytes.size());
  }
}

void Executor::loadWeights() {
  // The plan's buffers, shapes and op order were derived from that exact
  // file: another model's weights of the same names would load and train
  // a different graph's numbers.
  if (!plan.modelSha256.empty()) {
    std::string actual = sha256File(plan.modelPath, plan.path + ": model.path");
    if (actual != plan.modelSha256)
      throw Error(plan.path + ": model.sha256: '" + plan.modelPath +
                  "' is not the model the plan was compiled from (sha256 " +
                  actual.substr(0, 12) + "..., the plan's " +
                  plan.modelSha256.substr(0, 12) +
                  "...); recompile the plan with weftc");
  }
  std::vector<NamedBuffer> all = rankPlan.params;
  all.insert(all.end(), rankPlan.state.begin(), rankPlan.state.end());
  // A master copy starts as its parameter's initializer, in f32.
  for (const NamedBuffer &state : rankPlan.optimizerState)
    if (!state.init.empty()) {
      all.push_back(state);
      all.back().name = state.init;
    }
  loadInitializers(plan.modelPath, all, "weight");
  // Explicit starting values (the loss scaler's).
  for (const NamedBuffer &state : rankPlan.optimizerState)
    if (!state.fill.empty()) {
      std::vector<float> values(state.fill.begin(), state.fill.end());
      backend.upload(arena + rankPlan.buffers[state.buffer].offset,
                     values.data(), values.size() * sizeof(float));
    }
}

void Executor::exportModel(const std::string &path, const std::string &temp,
                           bool first, bool last, bool replicaZero) const {
  onnx::ModelProto model =
      first ? readModel(plan.modelPath, plan.path + ": model.path")
            : readModel(temp, "--save");
  std::map<std::string, const NamedBuffer *> current;
  for (const auto *list : {&rankPlan.params, &rankPlan.state})
    for (const NamedBuffer &named : *list)
      current[named.name] = &named;
  // A parameter with a master copy is saved as the master: f32, not the
  // rounded working copy.
  for (const NamedBuffer &state : rankPlan.optimizerState)
    if (!state.init.empty())
      current[state.init] = &state;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    auto it = current.find(t.name());
    if (it == current.end())
      continue;
    const NamedBuffer &named = *it->second;
    // Replicated tensors come from data-parallel replica 0 (its batch-norm
    // statistics, as DDP broadcasts rank 0's); every replica writes its
    // ZeRO pieces.
    if (!named.flatShard && !replicaZero)
      continue;
    const BufferDesc &b = rankPlan.buffers[named.buffer];
    std::string bytes(b.bytes, '\0');
    backend.download(bytes.data(), arena + b.offset, b.bytes);
    if (named.shard || named.flatShard) {
      // This rank's part goes into the whole tensor the model holds.
      std::string whole = tensorBytes(
          t, std::filesystem::path(plan.modelPath).parent_path().string(),
          "--save: '" + t.name() + "'");
      placePiece(whole, pieceOf(named, b), dtypeSize(b.dtype), bytes);
      bytes = std::move(whole);
    }
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.clear_float_data();
    t.set_raw_data(bytes);
  }
  // The last rank writes the result itself; earlier ranks hand it on.
  writeFileAtomically(last ? path : temp, model.SerializeAsString(), "--save");
  if (last && !first)
    std::filesystem::remove(temp);
}

std::optional<std::array<float, 3>> Executor::lossScaler() const {
  for (const NamedBuffer &state : rankPlan.optimizerState)
    if (state.name == "loss_scaler" && !state.fill.empty()) {
      std::array<float, 3> values;
      backend.download(values.data(),
                       arena + rankPlan.buffers[state.buffer].offset,
                       sizeof values);
      return values;
    }
  return std::nullopt;
}

std::vector<const NamedBuffer *> Executor::stateBuffers() const {
  std::vector<const NamedBuffer *> out;
  for (const auto *list :
       {&rankPlan.params, &rankPlan.state, &rankPlan.optimizerState})
    for (const NamedBuffer &named : *list)
      out.push_back(&named);
  return out;
}

std::vector<Executor::StateTensor> Executor::snapshot() const {
  std::vector<StateTensor> out;
  for (const NamedBuffer *named : stateBuffers()) {
    const BufferDesc &b = rankPlan.buffers[named->buffer];
    StateTensor t{named->name, b.dtype, b.shape, std::string(b.bytes, '\0')};
    backend.download(t.bytes.data(), arena + b.offset, b.bytes);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<std::string> Executor::stateNames() const {
  std::vector<std::string> names;
  for (const NamedBuffer *named : stateBuffers())
    names.push_back(named->name);
  return names;
}

std::vector<Executor::TensorPiece> Executor::pieces() const {
  std::vector<TensorPiece> out;
  for (const NamedBuffer *named : stateBuffers()) {
    const BufferDesc &b = rankPlan.buffers[named->buffer];
    out.push_back({named->name, b.dtype, pieceOf(*named, b)});
  }
  return out;
}

void Executor::restoreWhole(const std::string &name, const std::string &bytes) {
  for (const NamedBuffer *named : stateBuffers()) {
    if (named->name != name)
      continue;
    const BufferDesc &b = rankPlan.buffers[named->buffer];
    PieceDesc piece = pieceOf(*named, b);
    int64_t size = dtypeSize(b.dtype);
    if (int64_t(bytes.size()) != elementCount(piece.shape) * size)
      throw Error("checkpoint tensor '" + name + "': " +
                  std::to_string(bytes.size()) + " bytes, the plan's is " +
                  shapeString(piece.shape) + " " + dtypeName(b.dtype));
    return write(*named, slicePiece(bytes, piece, size), "checkpoint tensor");
  }
  throw Error("checkpoint tensor '" + name + "' is not a tensor of rank " +
              std::to_string(rankPlan.rank));
}

void Executor::restore(const std::string &name, const std::string &bytes) {
  for (const NamedBuffer *named : stateBuffers())
    if (named->name == name)
      return write(*named, bytes, "checkpoint tensor");
  throw Error("checkpoint tensor '" + name + "' is not a tensor of rank " +
              std::to_string(rankPlan.rank));
}

namespace {
/// The buffer named `name` in `list`, or null.
const NamedBuffer *find(const std::vector<NamedBuffer> &list,
                        const std::string &name) {
  for (const NamedBuffer &b : list)
    if (b.name == name)
      return &b;
  return nullptr;
}
} // namespace

void Executor::write(const NamedBuffer &named, const std::string &bytes,
                     const std::string &what) {
  const BufferDesc &b = rankPlan.buffers[named.buffer];
  if (static_cast<int64_t>(bytes.size()) != b.bytes)
    throw Error(
        what + " '" + named.name + "': " + std::to_string(bytes.size()) +
        " bytes, the plan expects " + shapeString(b.shape) + " " +
        dtypeName(b.dtype) + " (" + std::to_string(b.bytes) + " bytes)");
  backend.upload(arena + b.offset, bytes.data(), bytes.size());
}

void Executor::setInput(const std::string &name, const std::string &bytes) {
  const NamedBuffer *in = find(rankPlan.inputs, name);
  if (!in)
    throw Error("input '" + name + "' is not an input of rank " +
                std::to_string(rankPlan.rank));
  if (!in->shard) {
    write(*in, bytes, "input");
    return;
  }
  // A data-parallel replica reads its rows of the global batch.
  const BufferDesc &b = rankPlan.buffers[in->buffer];
  std::vector<int64_t> global = fullShape(b.shape, *in->shard);
  if (int64_t(bytes.size()) != b.bytes * in->shard->count)
    throw Error("input '" + name + "': " + std::to_string(bytes.size()) +
                " bytes, the plan expects " + shapeString(global) + " " +
                dtypeName(b.dtype));
  write(*in, sliceShard(bytes, global, dtypeSize(b.dtype), *in->shard),
        "input");
}

void Executor::setParameter(const std::string &name, const std::string &bytes) {
  const NamedBuffer *param = find(rankPlan.params, name);
  if (!param)
    throw Error("'" + name + "' is not a parameter of rank " +
                std::to_string(rankPlan.rank));
  write(*param, bytes, "parameter");
}

void Executor::run(int64_t step, uint64_t seed,
                   std::vector<TraceEvent> *trace) {
  using clock = std::chrono::steady_clock;
  using us = std::chrono::duration<double, std::micro>;
  const std::vector<Instruction> &instructions = rankPlan.instructions;
  if (trace && timing.empty()) {
    // Kernels are timed by events around them on the compute stream (no
    // synchronisation per instruction); made once, reused every step.
    for (size_t k = 0; k < 2 * instructions.size() + 1; ++k)
      timing.push_back(backend.createEvent());
  }
  auto origin = clock::now();
  if (trace)
    backend.record(*timing.back(), Stream::Compute);
  // Collectives in flight: tag -> (post instruction, when it was posted).
  std::map<int64_t, std::pair<const Instruction *, clock::time_point>> posted;
  // Compute events of `trace` whose times the events give after the step.
  std::vector<std::pair<size_t, size_t>> timed; // (trace index, instruction)
  for (size_t i = 0; i < instructions.size(); ++i) {
    const Instruction &inst = instructions[i];
    auto start = clock::now();
    std::optional<std::pair<const Instruction *, clock::time_point>> waited;
    // A run of one kernel the backend launches as one (the optimizer's
    // updates: a multi-tensor AdamW). --trace times each kernel by its
    // events, so it launches them one by one.
    size_t after = trace ? i + 1 : runEnd[i];
    try {
      if (inst.op == "compute") {
        if (after > i + 1)
          launchRun(i, after, step, seed);
        else {
          if (trace)
            backend.record(*timing[2 * i], Stream::Compute);
          KernelContext ctx{seed, step, inst.microBatch, int64_t(i)};
          backend.launch(callOf(inst, ctx));
          if (trace)
            backend.record(*timing[2 * i + 1], Stream::Compute);
        }
        if (!posted.empty())
          comm->progress();
      } else if (isCollectiveWait(inst.op) || isTransferWait(inst.op)) {
        if (auto it = posted.find(inst.tag); it != posted.end()) {
          waited = it->second;
          posted.erase(it);
        }
        if (isCollectiveWait(inst.op))
          comm->waitCollective(inst.tag);
        else
          comm->wait(inst.tag);
        // Kernels enqueued from here on read what arrived (and may
        // overwrite what was sent).
        backend.record(*arrived, Stream::Comm);
        backend.wait(Stream::Compute, *arrived);
      } else {
        // The comm stream starts the transfer after the kernels enqueued
        // so far: its buffer's producer among them.
        backend.record(*produced, Stream::Compute);
        backend.wait(Stream::Comm, *produced);
        transfer(inst);
        if (isCollective(inst.op))
          posted[inst.tag] = {&inst, start};
      }
    } catch (const Error &e) {
      throw Error((after > i + 1 ? "instructions " + std::to_string(i) + ".." +
                                       std::to_string(after - 1) + " (" +
                                       inst.kernel + ", launched together"
                                 : "instruction " + std::to_string(i) + " (" +
                                       (inst.op == "compute"
                                            ? inst.name
                                            : inst.op + " tag " +
                                                  std::to_string(inst.tag))) +
                  "): " + e.what());
    }
    if (!trace) {
      i = after - 1;
      continue;
    }
    auto end = clock::now();
    TraceEvent event{inst.name,
                     inst.op == "compute" ? inst.kernel : inst.op,
                     inst.phase,
                     inst.microBatch,
                     isTransfer(inst.op),
                     false,
                     false,
                     inst.axis,
                     step,
                     rankPlan.rank,
                     us(start - origin).count(),
                     us(end - start).count(),
                     inst.cost,
                     inst.chunk};
    if (inst.op == "compute")
      timed.push_back({trace->size(), i});
    const Instruction *post = waited                  ? waited->first
                              : isCollective(inst.op) ? &inst
                                                      : nullptr;
    if (post) {
      // The rank's own time in the post or the wait call; bytes: what
      // each rank sends in.
      event.collectiveCall = true;
      event.axis = post->axis;
      event.name = post->name;
      event.kernel = (waited ? "wait " : "post ") + post->op;
      event.cost = KernelCost{};
      event.cost.bytesRead = rankPlan.buffers[post->inputs[0]].bytes;
    }
    if (waited) {
      // The collective in flight: from its post to the end of its wait.
      TraceEvent flight = event;
      flight.collectiveCall = false;
      flight.collective = true;
      flight.kernel = post->op;
      flight.startUs = us(waited->second - origin).count();
      flight.durationUs = us(end - waited->second).count();
      trace->push_back(flight);
    }
    trace->push_back(event);
  }
  comm->drain();
  backend.synchronize();
  // The kernels' times, from the events (device time on a GPU), on the
  // host's timeline: the origin event was recorded at `origin`.
  for (auto [index, i] : timed) {
    TraceEvent &event = (*trace)[index];
    event.startUs = backend.elapsedUs(*timing.back(), *timing[2 * i]);
    event.durationUs = backend.elapsedUs(*timing[2 * i], *timing[2 * i + 1]);
  }
}

void Executor::launchRun(size_t first, size_t after, int64_t step,
                         uint64_t seed) {
  const std::vector<Instruction> &instructions = rankPlan.instructions;
  // A call refers to its context: they live side by side here.
  std::vector<KernelContext> contexts;
  for (size_t k = first; k < after; ++k)
    contexts.push_back({seed, step, instructions[k].microBatch, int64_t(k)});
  std::vector<KernelCall> calls;
  for (size_t k = first; k < after; ++k)
    calls.push_back(callOf(instructions[k], contexts[k - first]));
  backend.launchGroup(calls);
}

KernelCall Executor::callOf(const Instruction &inst,
                            const KernelContext &ctx) const {
  KernelCall call{inst.kernel, {}, {}, inst.attrs, ctx};
  for (int64_t b : inst.inputs)
    call.in.push_back(view(b));
  for (int64_t b : inst.outputs)
    call.out.push_back(view(b));
  return call;
}

void Executor::transfer(const Instruction &inst) {
  // Posted on the comm stream, which waits for the producer (run()).
  if (isCollective(inst.op)) {
    // Posted; the plan's wait_collective completes it.
    const BufferDesc &x = rankPlan.buffers[inst.inputs[0]],
                     &y = rankPlan.buffers[inst.outputs[0]];
    if (inst.op == "all_reduce") {
      comm->postAllReduce(inst.axis, arena + x.offset, arena + y.offset,
                          x.bytes / dtypeSize(x.dtype), x.dtype,
                          inst.reduction == "max", inst.tag);
      return;
    }
    // A rank's part of the whole along `dim`: [outer][part] of
    // [outer][G][part] (the loader checked the shapes against G).
    const std::vector<int64_t> &local = (inst.op == "all_gather" ? x : y).shape;
    int64_t outer = 1, part = 1;
    for (size_t d = 0; d < local.size(); ++d)
      (int64_t(d) < inst.dim ? outer : part) *= local[d];
    if (inst.op == "all_gather")
      comm->postAllGather(inst.axis, arena + x.offset, arena + y.offset, outer,
                          part, x.dtype, inst.tag);
    else
      comm->postReduceScatter(inst.axis, arena + x.offset, arena + y.offset,
                              outer, part, x.dtype, inst.tag);
  } else if (inst.op == "isend") {
    const BufferDesc &b = rankPlan.buffers[inst.inputs[0]];
    comm->isend(arena + b.offset, b.bytes, inst.peer, inst.tag);
  } else {
    const BufferDesc &b = rankPlan.buffers[inst.outputs[0]];
    comm->irecv(arena + b.offset, b.bytes, inst.peer, inst.tag);
  }
}

const BufferDesc &Executor::outputBuffer(const std::string &name) const {
  for (const NamedBuffer &out : rankPlan.outputs)
    if (out.name == name)
      return rankPlan.buffers[out.buffer];
  throw Error("'" + name + "' is not an output of rank " +
              std::to_string(rankPlan.rank));
}

std::string Executor::output(const std::string &name) const {
  const BufferDesc &b = outputBuffer(name);
  std::string bytes(b.bytes, '\0');
  backend.download(bytes.data(), arena + b.offset, b.bytes);
  return bytes;
}

void Executor::measureLiveness() {
  // Liveness in instruction steps, independent of the compiler's: a view
  // keeps its base alive, arguments/constants/outputs live all step.
  const auto &buffers = rankPlan.buffers;
  int64_t last = std::max<int64_t>(rankPlan.instructions.size() - 1, 0);
  auto root = [&](int64_t id) {
    while (buffers[id].viewOf >= 0)
      id = buffers[id].viewOf;
    return id;
  };
  std::vector<int64_t> start(buffers.size(), INT64_MAX),
      end(buffers.size(), -1);
  for (const BufferDesc &b : buffers)
    if (b.kind != "activation") {
      start[root(b.id)] = 0;
      end[root(b.id)] = last;
    }
  for (const NamedBuffer &out : rankPlan.outputs)
    end[root(out.buffer)] = last;
  for (size_t i = 0; i < rankPlan.instructions.size(); ++i) {
    const Instruction &inst = rankPlan.instructions[i];
    for (int64_t b : inst.outputs)
      start[root(b)] = std::min<int64_t>(start[root(b)], i);
    for (int64_t b : inst.inputs)
      end[root(b)] = std::max<int64_t>(end[root(b)], i);
  }
  // Sweep the steps; at each, the top of the live buffers, and a check that
  // no two live buffers share bytes (the compiler's layout promise).
  peak = 0;
  for (int64_t step = 0; step <= last; ++step) {
    std::vector<std::pair<int64_t, int64_t>> live; // (offset, end byte)
    for (const BufferDesc &b : buffers) {
      if (b.viewOf >= 0)
        continue;
      bool alive =
          start[b.id] <= step && step <= std::max(end[b.id], start[b.id]);
      if (alive)
        live.push_back({b.offset, b.offset + b.bytes});
    }
    std::sort(live.begin(), live.end());
    for (size_t k = 0; k < live.size(); ++k) {
      peak = std::max(peak, live[k].second);
      if (k && live[k].first < live[k - 1].second &&
          live[k].first != live[k].second &&
          live[k - 1].first != live[k - 1].second)
        throw Error(plan.path + ": ranks[" + std::to_string(rankPlan.rank) +
                    "]: two buffers live at instruction " +
                    std::to_string(step) + " overlap in the arena at byte " +
                    std::to_string(live[k].first));
    }
  }
}

} // namespace weft::rt
