//===- RunOptions.cpp - weft-run's command line ---------------------------===//

#include "RunOptions.h"

#include "weft/runtime/KernelSpec.h"

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace weft::rt {

namespace {

const char *kUsage =
    "usage: weft-run PLAN.json [options]\n"
    "       weft-run --calibrate OUT.json [--device cpu|cuda] [--threads N]\n"
    "                        measure this machine's GEMM rates, memory\n"
    "                        bandwidth and (under mpirun -np 2) transfers\n"
    "                        and write a device model for weftc\n"
    "                        --device-model (docs/planner.md)\n"
    "  --data DIR|synthetic|text:FILE\n"
    "                        inputs: DIR/step_<i>/<input>.pb (ONNX "
    "TensorProto),\n"
    "                        generated from --seed (default: synthetic), or\n"
    "                        byte-level LM windows of a text file\n"
    "  --split train|val     text: which split to read (default train)\n"
    "  --holdout F           text: the file's last fraction F is the\n"
    "                        validation split (default 0.1)\n"
    "  --text-inputs T,Y     text: the token and target inputs (default\n"
    "                        tokens,targets)\n"
    "  --seed S              seed of synthetic data and dropout (default 0)\n"
    "  --steps K             steps to run (default 1)\n"
    "  --threads N           BLAS threads (default 1)\n"
    "  --device cpu|cuda     the backend (default cpu; cuda: a GPU per rank,\n"
    "                        the node's GPUs taken in turn; several ranks\n"
    "                        transfer through pinned host memory and MPI)\n"
    "  --allow-tf32          cuda: f32 GEMMs and convolutions may run on\n"
    "                        TF32 tensor cores (inputs rounded to 10\n"
    "                        mantissa bits, f32 accumulation; torch's\n"
    "                        allow_tf32)\n"
    "  --stage-transfers     copy every transfer and collective through\n"
    "                        host staging buffers, as --device cuda does\n"
    "                        over MPI (on the CPU: to test that path)\n"
    "  --log-json FILE       one JSON object per step: step, loss, seconds,\n"
    "                        samples_per_s, arena_bytes, peak_bytes,\n"
    "                        communicator (mpi, staged or nccl),\n"
    "                        allow_tf32\n"
    "  --trace FILE          Chrome/Perfetto trace, one slice per instruction\n"
    "  --dump-outputs DIR    write every output as DIR/step_<i>/<name>.pb\n"
    "  --timeout S           a rank waiting on a transfer or collective for\n"
    "                        S seconds ends the job naming the peer\n"
    "                        (default 300; 0 waits forever)\n"
    "  --on-nan stop|continue  a non-finite loss stops the run with exit 1\n"
    "                        naming the step (default stop)\n"
    "  --save OUT.onnx       after the last step, write the trained model as\n"
    "                        one ONNX file (also --save-onnx)\n"
    "  --checkpoint DIR      write checkpoints to DIR (one shard per rank, a\n"
    "                        manifest, DIR/latest), after the last step and\n"
    "  --save-every N        every N steps (default 0: the last step only)\n"
    "  --keep K              keep the newest K checkpoints (default 1)\n"
    "  --resume DIR          continue from the checkpoint DIR/latest names\n"
    "                        (or DIR itself, a step_<N> directory)\n"
    "  --reshard             --resume: a checkpoint of another plan of the\n"
    "                        same model (pipeline, tensor, data-parallel\n"
    "                        degree, ZeRO stage) is loaded into this one's\n"
    "                        layout\n"
    "  --kernels             print the kernel specification table (markdown)\n"
    "  --check               load the plan, check every rank's instructions\n"
    "                        as a run would (kernels, dtypes, shapes, arena\n"
    "                        placement, schedule) and exit: 0 when it would\n"
    "                        run, 1 naming what it refuses\n"
    "  --check-rank R        --check as rank R's process loads the plan (its\n"
    "                        program in full, every rank's transfers)\n"
    "  --view                print each rank's view of the plan (its program\n"
    "                        with its coordinates filled in) and exit\n"
    "  --view-rank R         --view of rank R only\n"
    "  --explicit            print the plan with every task-form program\n"
    "                        written out (its bodies instantiated per task "
    "and\n"
    "                        micro-batch; programs and coordinate expressions\n"
    "                        kept) and exit\n";

int64_t number(const char *flag, const char *text) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < 0)
    throw Error(std::string(flag) + ": '" + text +
                "' is not a non-negative integer");
  return v;
}

} // namespace

RunOptions parseOptions(int argc, char **argv) {
  RunOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--kernels") {
      std::cout << kernelSpecsMarkdown();
      std::exit(0);
    } else if (arg == "--calibrate") {
      o.calibrate = value();
    } else if (arg == "--check") {
      o.check = true;
    } else if (arg == "--check-rank") {
      o.check = true;
      o.checkRank = number("--check-rank", value());
    } else if (arg == "--view") {
      o.view = true;
    } else if (arg == "--explicit") {
      o.explicitForm = true;
    } else if (arg == "--view-rank") {
      o.view = true;
      o.viewRank = number("--view-rank", value());
    } else if (arg == "--data") {
      o.data = value();
    } else if (arg == "--split") {
      std::string split = value();
      if (split != "train" && split != "val")
        throw Error("--split: '" + split + "' is not train or val");
      o.split = split == "train" ? TextData::Split::Train
                                 : TextData::Split::Validation;
    } else if (arg == "--holdout") {
      const char *text = value();
      char *end = nullptr;
      o.holdout = std::strtod(text, &end);
      if (!*text || *end)
        throw Error(std::string("--holdout: '") + text + "' is not a number");
    } else if (arg == "--text-inputs") {
      std::string names = value();
      size_t comma = names.find(',');
      if (comma == std::string::npos || comma == 0 || comma + 1 == names.size())
        throw Error("--text-inputs: '" + names +
                    "' is not TOKENS,TARGETS (two input names)");
      o.tokens = names.substr(0, comma);
      o.targets = names.substr(comma + 1);
    } else if (arg == "--timeout") {
      const char *text = value();
      char *end = nullptr;
      o.timeout = std::strtod(text, &end);
      if (!*text || *end || !(o.timeout >= 0) || std::isinf(o.timeout))
        throw Error(std::string("--timeout: '") + text +
                    "' is not a number of seconds >= 0");
    } else if (arg == "--on-nan") {
      std::string policy = value();
      if (policy != "stop" && policy != "continue")
        throw Error("--on-nan: '" + policy + "' is not stop or continue");
      o.stopOnNan = policy == "stop";
    } else if (arg == "--seed") {
      o.seed = number("--seed", value());
    } else if (arg == "--steps") {
      o.steps = number("--steps", value());
    } else if (arg == "--threads") {
      o.threads = std::max<int64_t>(1, number("--threads", value()));
    } else if (arg == "--device") {
      o.device = value();
      if (o.device != "cpu" && o.device != "cuda")
        throw Error("--device: '" + o.device + "' is not cpu or cuda");
    } else if (arg == "--allow-tf32") {
      o.allowTf32 = true;
    } else if (arg == "--stage-transfers") {
      o.stageTransfers = true;
    } else if (arg == "--log-json") {
      o.logJson = value();
    } else if (arg == "--trace") {
      o.trace = value();
    } else if (arg == "--dump-outputs") {
      o.dumpOutputs = value();
    } else if (arg == "--save" || arg == "--save-onnx") {
      o.save = value();
    } else if (arg == "--checkpoint") {
      o.checkpoint = value();
    } else if (arg == "--save-every") {
      o.saveEvery = number("--save-every", value());
    } else if (arg == "--keep") {
      o.keep = number("--keep", value());
      if (o.keep < 1)
        throw Error("--keep: 0 would delete every checkpoint; keep 1 or more");
    } else if (arg == "--resume") {
      o.resume = value();
    } else if (arg == "--reshard") {
      o.reshard = true;
    } else if (!arg.empty() && arg[0] == '-') {
      throw Error("unknown option '" + arg + "'\n" + kUsage);
    } else if (o.plan.empty()) {
      o.plan = arg;
    } else {
      throw Error("unexpected argument '" + arg + "'");
    }
  }
  if (!o.calibrate.empty() && !o.plan.empty())
    throw Error("--calibrate measures the machine, not a plan: give "
                "--calibrate OUT.json or a plan, not both");
  if (o.plan.empty() && o.calibrate.empty())
    throw Error(std::string("no plan given\n") + kUsage);
  if (o.saveEvery && o.checkpoint.empty())
    throw Error("--save-every needs --checkpoint DIR");
  if (o.explicitForm && o.view)
    throw Error("--explicit prints the plan, --view each rank's view of it: "
                "give one");
  if (o.reshard && o.resume.empty())
    throw Error("--reshard needs --resume DIR");
  if (o.allowTf32 && o.device != "cuda")
    throw Error("--allow-tf32 needs --device cuda: TF32 is a tensor-core "
                "mode, the CPU backend computes in f32");
  return o;
}

} // namespace weft::rt
