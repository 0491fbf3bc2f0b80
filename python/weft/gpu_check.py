"""The CUDA backend's checks on a GPU machine without weftc (issue 15's
verification), in two halves, as scripts/gpu-bundle.sh and
scripts/gpu-check.sh run them:

    python3 -m weft.gpu_check prepare BUILD_DIR DIR     (here: weftc)
    python3 -m weft.gpu_check run DIR OUT [--device cuda]
        [--weft-run PATH] [--weft-libs PATHS] [--emulator]   (there)

`prepare` writes into DIR the gpt example (2 layers, h 64, batch 8 in
MICRO_BATCHES micro-batches, weights inline), STEPS steps of its data, its
plans (f32, bf16, bf16 --flash-attention) and the resnet example (resnet18,
f32) with its weights externalized: `run` writes them from torch's model
(weft.export.write_weights), as both backends only need the same ones.

`run` trains each plan with weft-run on the CPU and on `--device`, then runs
torch on `--device` and prints one verdict per check (PASS or FAIL), each
with its figures:

- gpt f32: the device's STEPS AdamW losses equal the CPU backend's within
  1e-5 of the largest |loss| (the issue's bound: summation orders and math
  libraries differ, dropout masks do not).
- resnet f32: step 1's loss, the same bound (batch-norm CNNs drift apart
  in float32 over steps, docs/numerics.md, so later steps are no oracle).
- gpt bf16, and bf16 with fused attention: weft's largest loss error from
  torch float64 (same weights, data and micro-batch split) within
  DRIFT_BOUND x torch autocast bf16's own error on the same device
  (test_mixed_precision's bound, measured there on the CPU backend).
- memory: what the device shows in use holds at least weft's planned arena
  plus the libraries' workspaces; the rest (allocator rounding, lazily
  loaded kernel code) is printed, not bounded.

Exit 1 when a check fails or a run it needs failed (named); 0 otherwise.
On a CPU (`--device cpu`) the same code runs end to end
(python/tests/test_gpu_check.py): the f32 and resnet checks are then CPU
against CPU, the bf16 ones weft's CPU backend against torch autocast on
the CPU. With `--emulator` (`--weft-run` is weft-run-cuda-emulator) the
device runs are the CUDA backend on the CUDA emulator, torch's references
run on the CPU, and the fused-attention plan, which the emulator cannot
run, is reported as SKIP: the GPU run's whole path, memory check
included, without a GPU (python/tests/test_gpu_check.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from weft import oracle
from weft.examples import gpt, resnet
from weft.examples.common import export as export_example
from weft.export import externalize, write_weights

GPT = dict(layers=2, hidden=64, heads=4, seq=16, vocab=128, batch=8, seed=3)
RESNET = dict(batch=4, size=64, classes=10, seed=0)
MICRO_BATCHES, STEPS, DATA_SEED = 2, 4, 4
GPT_PLANS = {"f32": ["--precision=f32"], "bf16": ["--precision=bf16"],
             "bf16-flash": ["--precision=bf16", "--flash-attention"]}
F32_BOUND, DRIFT_BOUND = 1e-5, 4.0
RUN_TIMEOUT = 120  # seconds per weft-run; these take a few each


def prepare(build: pathlib.Path, out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    model, inputs = gpt.build(**GPT)
    export_example(model, inputs, ["tokens", "targets"],
                   str(out / "gpt.onnx"))
    tokens = inputs[0]
    g = torch.Generator().manual_seed(DATA_SEED)
    for step in range(STEPS):
        batch = [torch.randint(0, GPT["vocab"], tokens.shape, generator=g)
                 for _ in range(2)]
        oracle.write_step(out / "data", ["tokens", "targets"], batch, step)
    weftc = str(build / "bin" / "weftc")
    for name, flags in GPT_PLANS.items():
        compile_plan(weftc, out, "gpt.onnx", f"gpt.{name}.json",
                     [*flags, f"--microbatches={MICRO_BATCHES}"])
    model, inputs = resnet.build(**RESNET)
    export_example(model, inputs, ["images", "labels"],
                   str(out / "resnet.onnx"))
    externalize(str(out / "resnet.onnx"), "resnet.weights")
    compile_plan(weftc, out, "resnet.onnx", "resnet.f32.json", [])
    (out / "resnet.weights").unlink()


def compile_plan(weftc, out, model, plan, flags):
    """weftc `out/model` -> `out/plan` with `flags`; the plan names the
    model relative to `out`, where weft-run runs, wherever `out` lands."""
    subprocess.run([str(weftc), str(out / model), *flags, "-o",
                    str(out / plan)], check=True)
    text = json.loads((out / plan).read_text())
    text["model"]["path"] = model
    (out / plan).write_text(json.dumps(text))


def run_weft(binary, libs, folder, args, log: pathlib.Path, timeout):
    """Runs `binary` (weft-run) with `args` in `folder`, its --log-json at
    `log` and its output beside it (`log` with .txt), `libs` leading its
    LD_LIBRARY_PATH (not this process's). Returns (the per-step records,
    None), or (None, why: the exit status and the output's last lines, or
    the timeout after which it was killed: a hung GPU run must not spend
    the device session)."""
    env = dict(os.environ)
    if libs:
        env["LD_LIBRARY_PATH"] = libs + ":" + env.get("LD_LIBRARY_PATH", "")
    try:
        result = subprocess.run([str(binary), *args, "--log-json", str(log)],
                                cwd=folder, env=env, capture_output=True,
                                text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"no exit after {timeout} s (killed)"
    output = result.stdout + result.stderr
    log.with_suffix(".txt").write_text(output)
    if result.returncode != 0:
        tail = output.strip().splitlines()[-3:]
        return None, f"exit {result.returncode}: " + " | ".join(tail)
    return [json.loads(line) for line in log.read_text().splitlines()], None


class Runner:
    """weft-run on the bundle's plans, its logs in OUT."""

    def __init__(self, args):
        self.args, self.failed = args, []

    def losses(self, plan, role, steps, data=True):
        """The per-step records of `plan` run as `role` ("cpu": the CPU
        backend's reference; "device": on --device), or None (the failure
        printed and recorded)."""
        device = "cpu" if role == "cpu" else self.args.device
        name = "cpu" if role == "cpu" else "device-" + device
        flags = [plan, "--device", device, "--steps", str(steps)]
        if data:
            flags += ["--data", "data"]
        records, why = run_weft(self.args.weft_run, self.args.weft_libs,
                                self.args.dir, flags,
                                self.args.out / f"{plan[:-5]}.{name}.jsonl",
                                RUN_TIMEOUT)
        if why:
            self.fail(f"weft-run {plan} --device {device}: {why}")
        return records

    def fail(self, line):
        self.failed.append(line)
        print("FAIL " + line, flush=True)


def verdict(runner, ok, line):
    if ok:
        print("PASS " + line, flush=True)
    else:
        runner.fail(line)


def gpt_batches(folder):
    def read(step, name):
        proto = onnx.load_tensor(str(folder / "data" / f"step_{step}" /
                                     f"{name}.pb"))
        return torch.from_numpy(numpy_helper.to_array(proto).copy())
    return [(read(s, "tokens"), read(s, "targets")) for s in range(STEPS)]


def run(args) -> int:
    emulated = args.emulator and args.device == "cuda"
    if args.device == "cuda" and not emulated and \
            not torch.cuda.is_available():
        print("FAIL no GPU that torch sees on this machine: nothing checked")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    runner, device = Runner(args), args.device
    torch_device = "cpu" if emulated else device
    plans = [name for name in GPT_PLANS
             if not (emulated and "flash" in name)]
    if emulated:
        print("SKIP gpt bf16-flash: the CUDA emulator has no fused attention",
              flush=True)
    # "device": --device's runs, also when that is the CPU (a second run).
    logs = {(name, role): runner.losses(f"gpt.{name}.json", role, STEPS)
            for name in plans for role in ("cpu", "device")}

    cpu, dev = logs[("f32", "cpu")], logs[("f32", "device")]
    if cpu and dev:
        a = np.array([r["loss"] for r in cpu])
        b = np.array([r["loss"] for r in dev])
        error = np.abs(b - a).max() / np.abs(a).max()
        verdict(runner, error <= F32_BOUND,
                f"gpt f32 {device} vs cpu, {STEPS} AdamW steps: largest "
                f"|difference| / max|loss| {error:.2e} (bound {F32_BOUND:g})")
        memory(runner, dev[-1])

    model, _ = resnet.build(**RESNET)
    write_weights(model, args.dir / "resnet.onnx")
    first = {role: runner.losses("resnet.f32.json", role, 1, data=False)
             for role in ("cpu", "device")}
    if first["cpu"] and first["device"]:
        a, b = first["cpu"][0]["loss"], first["device"][0]["loss"]
        error = abs(b - a) / abs(a)
        verdict(runner, error <= F32_BOUND,
                f"resnet f32 {device} vs cpu, step 1: loss {b:.7f} vs "
                f"{a:.7f}, relative {error:.2e} (bound {F32_BOUND:g})")

    model, _ = gpt.build(**GPT)
    oracle.load_initializers(model, args.dir / "gpt.onnx")
    batches = gpt_batches(args.dir)

    def adamw(parameters):
        return torch.optim.AdamW(parameters, lr=1e-3)
    ref, drift = oracle.autocast_drift(model, batches, MICRO_BATCHES, adamw,
                                       torch_device)
    for name in (p for p in plans if p != "f32"):
        records = logs[(name, "device")]
        if records:
            weft = np.array([r["loss"] for r in records])
            error = np.abs(weft - ref).max()
            verdict(runner, error <= DRIFT_BOUND * drift,
                    f"gpt {name} on {device} vs torch float64: largest error "
                    f"{error:.2e} = {error / drift:.2f}x torch autocast bf16's "
                    f"{drift:.2e} on {torch_device} "
                    f"(bound {DRIFT_BOUND:g}x)")
    return 1 if runner.failed else 0


def memory(runner, record):
    """Device memory of the step's last record (CUDA only: the CPU backend
    records none)."""
    used = record.get("device_used_bytes")
    if used is None:
        return
    arena, workspaces = record["arena_bytes"], record["workspace_bytes"]
    verdict(runner, used >= arena + workspaces,
            f"memory: device in use {used} B >= arena {arena} B + "
            f"workspaces {workspaces} B; other {used - arena - workspaces} B")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m weft.gpu_check",
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("build", type=pathlib.Path)
    p.add_argument("dir", type=pathlib.Path)
    r = sub.add_parser("run")
    r.add_argument("dir", type=pathlib.Path)
    r.add_argument("out", type=pathlib.Path)
    r.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    r.add_argument("--weft-run", type=pathlib.Path, default=pathlib.Path(
        __file__).resolve().parents[2] / "build" / "bin" / "weft-run")
    r.add_argument("--weft-libs", help="prepended to weft-run's "
                   "LD_LIBRARY_PATH (not this process's)")
    r.add_argument("--emulator", action="store_true",
                   help="--weft-run is weft-run-cuda-emulator: torch on the "
                   "CPU, the fused-attention plan skipped")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.build, args.dir)
        return 0
    args.dir, args.out = args.dir.resolve(), args.out.resolve()
    args.weft_run = args.weft_run.resolve()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
