"""Benchmark (a GPU): one bf16 AdamW training step of a GPT-2-medium shape
(24 layers, hidden 1024, 16 heads, sequence 1024, vocabulary 50257, batch 8;
GPT-2's tanh GELU) on one GPU: weft-run --device cuda, with the exported
attention and with --flash-attention (cuDNN's fused flash attention),
against torch eager (the same attention ops, and with
F.scaled_dot_product_attention: torch's flash attention, torch >= 2.0) and
torch.compile (autocast bf16, the same weights and batch), and weft's MFU.

It runs in two halves, because the GPU machine has no weftc (MLIR and LLVM
are not there) and a 1.4 GB model does not travel to it:

  prepare (here):  exports the model with its weights as ONNX external data,
      compiles the weft plans with weftc, then deletes the weights file:
      the folder holds the graph (model.onnx), the plans and bench.json.
  run (there):  builds the same torch model, writes ITS weights into the
      file model.onnx names (every initializer is a tensor of the model's
      state_dict, by name, at the offset and length the ONNX records), and
      the batch as `weft-run --data` steps; then times weft-run and torch
      from those identical weights on that identical batch, so each row's
      step-1 loss must agree (a check of the whole path at full size).

Step time: the median of --steps steps after --warmup steps (weft: its
--log-json seconds; torch: wall time around the step, synchronised on a
GPU). Model FLOPs per step (Megatron-LM's count, Narayanan et al. 2021,
eq. 3 without the recompute term): 6 N T + 12 L h s T, N parameters, T
tokens. MFU = model FLOPs / step time / the GPU's dense bf16 peak (H100
and H200 SXM: 989.4e12 FLOP/s, overridable with --peak); on a CPU it is not
printed. Memory: weft's planned arena, its libraries' workspaces and what
the device shows in use; torch's max_memory_allocated. Last, the fused-
attention plan runs again with --trace and its last step's time is
broken down by kernel (bench/trace_kernels.py: count, milliseconds,
share, GB/s, TFLOP/s), the row's `kernels` in --json.

Usage:
  python3 bench/gpu_gpt.py prepare BUILD_DIR DIR [--shape medium|tiny]
      [--precision bf16|f32] [--batch B]
  python3 bench/gpu_gpt.py run DIR [--device cuda|cpu] [--weft-run PATH]
      [--weft-libs PATHS] [--steps N] [--warmup N] [--no-compile]
      [--timeout S] [--json OUT.json]
`ninja bench-gpu-gpt` does both halves on this machine when it has a GPU;
scripts/gpu-bundle.sh prepares here and scripts/gpu-check.sh runs there.
Without a GPU `run --device cuda` says so and exits 0: nothing measured.

Errors (exit 1, one line): an initializer of model.onnx that is not a
tensor of the torch model, or differs from it in dtype, shape or length.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import sys
import time

import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))
import trace_kernels  # noqa: E402
from weft import oracle  # noqa: E402
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402
from weft.export import externalize, write_weights  # noqa: E402
from weft.gpu_check import compile_plan, run_weft  # noqa: E402

SHAPES = {
    "medium": dict(layers=24, hidden=1024, heads=16, seq=1024, vocab=50257),
    # The path's own check on a CPU (python/tests/test_gpu_gpt_bench.py).
    "tiny": dict(layers=2, hidden=64, heads=4, seq=32, vocab=128),
}
PLANS = (("weft", ()), ("weft flash", ("--flash-attention",)))
INPUTS = ["tokens", "targets"]
SEED = 0
# Steps of the traced run: the last, past the first's one-time work
# (cuBLASLt's heuristics, cuDNN's graphs), is the one broken down.
TRACED_STEPS = 3
# GPT-2's own GELU (gelu_new, the tanh form), in weft and torch alike: the
# form cuBLASLt's GEMM epilogues compute (weft-fold-gemm-gelu).
GELU = "tanh"


def model_flops(model, layers, hidden, seq, tokens):
    params = sum(p.numel() for p in model.parameters())
    return 6 * params * tokens + 12 * layers * hidden * seq * tokens


def plan_file(name):
    return "plan-" + name.replace(" ", "-") + ".json"


def prepare(build, out, shape_name, precision, batch):
    """Writes DIR/model.onnx (weights external, then deleted), one plan per
    PLANS row and bench.json."""
    out.mkdir(parents=True, exist_ok=True)
    shape = SHAPES[shape_name]
    model, inputs = gpt.build(**shape, batch=batch, seed=SEED, gelu=GELU)
    onnx_path = out / "model.onnx"
    # The batch axis is dynamic: exporting one sequence keeps the trace's
    # memory small (batch 8 at this size holds over 23 GB), and weftc
    # compiles the plan at the benchmark's batch (--input-shape).
    export(model, tuple(t[:1] for t in inputs), INPUTS, str(onnx_path))
    externalize(str(onnx_path), "model.weights")
    for name, flags in PLANS:
        compile_plan(build / "bin" / "weftc", out, "model.onnx",
                     plan_file(name),
                     [f"--precision={precision}", "--optimizer=adamw",
                      "--lr=1e-3", *flags,
                      *(f"--input-shape={n}={batch}x{shape['seq']}"
                        for n in INPUTS)])
    (out / "model.weights").unlink()
    tokens = batch * shape["seq"]
    meta = dict(shape=shape_name, batch=batch, precision=precision,
                flops=model_flops(model, shape["layers"], shape["hidden"],
                                  shape["seq"], tokens),
                plans={name: plan_file(name) for name, _ in PLANS})
    (out / "bench.json").write_text(json.dumps(meta, indent=1))


def weft_step(args, meta, name, steps):
    """Runs one plan; returns (median step seconds, the first record, the
    last record) or None when weft-run failed or hung (why printed; the
    torch rows still run)."""
    records, why = run_weft(args.weft_run, args.weft_libs, args.dir,
                            [meta["plans"][name], "--device", args.device,
                             "--steps", str(steps), "--data", "data"],
                            args.dir / f"log-{plan_file(name)}l",
                            args.timeout)
    if why:
        print(f"{name}: weft-run {why}", flush=True)
        return None
    return (statistics.median(r["seconds"] for r in records[args.warmup:]),
            records[0], records[-1])


def torch_step(args, meta, batch, compiled, sdpa, steps):
    """Times the torch model from the same weights (with `sdpa`, its
    attention through F.scaled_dot_product_attention); returns (median
    step seconds, step-1 loss, max_memory_allocated or None)."""
    model, _ = gpt.build(**SHAPES[meta["shape"]], batch=meta["batch"],
                         seed=SEED, gelu=GELU)
    for block in model.blocks:
        block.sdpa = sdpa
    device = torch.device(args.device)
    model = model.to(device)
    step_model = torch.compile(model) if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens, targets = (t.to(device) for t in batch)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times, first_loss = [], None
    for step in range(steps):
        sync()
        start = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16,
                            enabled=meta["precision"] == "bf16"):
            loss = step_model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
        if first_loss is None:
            first_loss = loss.item()
    peak = torch.cuda.max_memory_allocated() if cuda else None
    return statistics.median(times), first_loss, peak


def run(args):
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no GPU on this machine: nothing measured")
        return
    meta = json.loads((args.dir / "bench.json").read_text())
    steps = args.steps + args.warmup
    model, batch = gpt.build(**SHAPES[meta["shape"]], batch=meta["batch"],
                             seed=SEED, gelu=GELU)
    write_weights(model, args.dir / "model.onnx")  # ValueError: exit 1
    del model
    shutil.rmtree(args.dir / "data", ignore_errors=True)
    for step in range(steps):
        oracle.write_step(args.dir / "data", INPUTS, batch, step)
    name = (torch.cuda.get_device_name() if args.device == "cuda"
            else "CPU")
    print(f"GPT-2 {meta['shape']} shape, batch {meta['batch']}, "
          f"{meta['precision']}, AdamW, {name}; model FLOPs/step "
          f"{meta['flops']:.3e}", flush=True)
    rows = []
    for plan in meta["plans"]:
        result = weft_step(args, meta, plan, steps)
        if result:
            seconds, first, last = result
            rows.append(dict(name=plan, seconds=seconds, loss=first["loss"],
                             arena=last.get("arena_bytes"),
                             workspaces=last.get("workspace_bytes"),
                             device_used=last.get("device_used_bytes")))
            report(args, meta, rows)
    torches = [("torch eager", False, False)]
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        torches.append(("torch eager sdpa", False, True))
    else:
        print(f"torch {torch.__version__} has no "
              "scaled_dot_product_attention: no sdpa row", flush=True)
    if not args.no_compile:
        torches.append(("torch.compile", True, False))
    for plan, compiled, sdpa in torches:
        seconds, loss, peak = torch_step(args, meta, batch, compiled, sdpa,
                                         steps)
        rows.append(dict(name=plan, seconds=seconds, loss=loss,
                         max_memory_allocated=peak))
        report(args, meta, rows)
    # Where weft's step goes, last: the fused-attention plan traced.
    traced(args, meta, "weft flash", min(steps, TRACED_STEPS), rows)


def traced(args, meta, name, steps, rows):
    """Runs plan `name` for `steps` steps with --trace (beside --json, or
    in DIR) and prints its last step's time by kernel
    (bench/trace_kernels.py), added to its row as `kernels`. Apart from
    the timed rows: the trace's events cost a little."""
    trace = (args.json.parent if args.json else args.dir) / \
        ("trace-" + plan_file(name))
    _, why = run_weft(args.weft_run, args.weft_libs, args.dir,
                      [meta["plans"][name], "--device", args.device,
                       "--steps", str(steps), "--data", "data",
                       "--trace", str(trace)],
                      args.dir / f"log-trace-{plan_file(name)}l",
                      args.timeout)
    if why:
        print(f"{name} traced: weft-run {why}", flush=True)
        return
    step, kernels = trace_kernels.breakdown(json.loads(trace.read_text()))
    print(f"{name}: step {step + 1} by kernel ({trace}):\n" +
          "\n".join(trace_kernels.lines(kernels, top=12)), flush=True)
    for row in rows:
        if row["name"] == name:
            row["kernels"] = kernels
    write_json(args, meta, rows)


def report(args, meta, rows):
    """Prints the newest row (each as soon as measured: a run cut short
    still tells what it measured) and rewrites --json with all of them."""
    row = rows[-1]
    weft = next((r for r in rows if r["name"] == "weft"), None)
    line = (f"{row['name']:14s} {row['seconds'] * 1e3:9.1f} ms/step  "
            f"step-1 loss {row['loss']:.6f}")
    if args.device == "cuda":
        line += f"  MFU {meta['flops'] / row['seconds'] / args.peak:6.1%}"
    if weft and row is not weft:
        line += f"  weft/this {weft['seconds'] / row['seconds']:5.2f}"
    if row.get("arena") is not None:
        line += f"\n{'':14s} arena {row['arena']} B"
    if row.get("device_used") is not None:
        line += (f", workspaces {row['workspaces']} B, device in use "
                 f"{row['device_used']} B")
    if row.get("max_memory_allocated") is not None:
        line += f"  max_memory_allocated {row['max_memory_allocated']} B"
    print(line, flush=True)
    write_json(args, meta, rows)


def write_json(args, meta, rows):
    if args.json:
        args.json.write_text(json.dumps(dict(meta, device=args.device,
                                             rows=rows), indent=1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("build", type=pathlib.Path)
    p.add_argument("dir", type=pathlib.Path)
    p.add_argument("--shape", choices=SHAPES, default="medium")
    p.add_argument("--precision", choices=("bf16", "f32"), default="bf16")
    p.add_argument("--batch", type=int, default=8)
    r = sub.add_parser("run")
    r.add_argument("dir", type=pathlib.Path)
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    r.add_argument("--weft-run", type=pathlib.Path,
                   default=REPO / "build" / "bin" / "weft-run")
    r.add_argument("--weft-libs", help="prepended to weft-run's "
                   "LD_LIBRARY_PATH (not this process's)")
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--warmup", type=int, default=2)
    r.add_argument("--peak", type=float, default=989.4e12)
    r.add_argument("--no-compile", action="store_true")
    r.add_argument("--timeout", type=float, default=240,
                   help="seconds a weft-run may take before it is killed")
    r.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            prepare(args.build, args.dir, args.shape, args.precision,
                    args.batch)
        else:
            args.dir = args.dir.resolve()
            args.weft_run = args.weft_run.resolve()
            run(args)
    except ValueError as e:
        print(f"gpu_gpt.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
