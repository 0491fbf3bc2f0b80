"""Benchmark (no GPU needed): weft's host time per training step on the CUDA
path, beside torch eager's whole step at the same shape.

A GPU step is host-bound when the host takes longer to enqueue it than the
GPU to run it, so the host time per step bounds how fast any GPU can run
weft. The shape is GPT-2 medium's depth (24 layers, 16 heads; GPT-2's tanh
GELU) at a tiny width (hidden 64, sequence 32, vocabulary 128, batch 2),
bf16 (or --precision f32) with AdamW as bench/gpu_gpt.py: as many
instructions as a 24-layer plan has, each with little work.

weft: `weft-bench-host-overhead` (bench/HostOverhead.cpp) runs the plan
through the CUDA backend on the CUDA emulator and takes the emulated
device's work (kernels, cuBLASLt's and cuDNN's arithmetic, copies) out of
each step's wall time. What is left is the executor and the backend's
launch path, plus the emulator's stand-ins for CUDA's runtime calls, which
cost less than the driver's (a few microseconds per launch on a GPU, not
counted here).
torch: eager on the CPU, autocast bf16 (f32: none), one thread, forward,
backward and AdamW from the same model and batch: its whole step, which
at this width is mostly its per-op cost (dispatch, autograd, allocation)
and a little arithmetic. Neither side includes the CUDA driver's launch cost.

Prints the medians over --steps steps after one warm-up step: weft's host
milliseconds per step and microseconds per instruction, torch's step, and
their ratio. --json writes them.

Usage: python3 bench/host_overhead.py BUILD_DIR [--steps N]
           [--precision bf16|f32] [--json OUT]
Errors: a failed weftc or weft-bench-host-overhead exits 1 with its
output.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402

SHAPE = dict(layers=24, hidden=64, heads=16, seq=32, vocab=128, batch=2)
INPUTS = ["tokens", "targets"]


def weft_steps(build, workdir, steps, precision="bf16"):
    """The plan's per-step records from weft-bench-host-overhead."""
    model, inputs = gpt.build(**SHAPE, gelu="tanh")
    onnx_path = workdir / "model.onnx"
    export(model, inputs, INPUTS, str(onnx_path))
    plan = workdir / "plan.json"
    for command in (
            [build / "bin" / "weftc", onnx_path, "-o", plan,
             f"--precision={precision}", "--optimizer=adamw", "--lr=1e-3"],
            [build / "bin" / "weft-bench-host-overhead", plan,
             str(steps + 1)]):
        done = subprocess.run([str(c) for c in command], capture_output=True,
                              text=True)
        if done.returncode != 0:
            sys.exit(f"{pathlib.Path(command[0]).name} failed:\n"
                     f"{done.stdout}{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines()]


def torch_seconds(steps, precision="bf16"):
    """Median wall seconds of torch eager's AdamW step."""
    torch.set_num_threads(1)
    model, (tokens, targets) = gpt.build(**SHAPE, gelu="tanh")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for step in range(steps + 1):
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16,
                            enabled=precision == "bf16"):
            loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step > 0:  # the first: warm-up
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precision", choices=("bf16", "f32"),
                        default="bf16")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        records = weft_steps(args.build, pathlib.Path(tmp), args.steps,
                             args.precision)[1:]
    host = statistics.median(r["host_seconds"] for r in records)
    last = records[-1]
    torch_step = torch_seconds(args.steps, args.precision)
    result = dict(shape=SHAPE, precision=args.precision, steps=len(records),
                  instructions=last["instructions"],
                  kernel_launches=last["kernel_launches"],
                  library_calls=last["library_calls"],
                  weft_host_seconds=host,
                  weft_host_us_per_instruction=1e6 * host /
                  last["instructions"],
                  weft_device_seconds=statistics.median(
                      r["device_seconds"] for r in records),
                  torch_eager_seconds=torch_step,
                  ratio=host / torch_step)
    torch_mode = ("autocast bf16" if args.precision == "bf16"
                  else "f32")
    print(f"GPT-2-medium depth, tiny width, {args.precision} AdamW; "
          f"medians of {len(records)} steps\n"
          f"weft host time per step (CUDA path, emulated device's work "
          f"taken out): {1e3 * host:.2f} ms for {last['instructions']} "
          f"instructions ({last['kernel_launches']} kernel launches, "
          f"{last['library_calls']} cuBLASLt and cuDNN calls): "
          f"{result['weft_host_us_per_instruction']:.2f} us each\n"
          f"torch eager step (CPU, {torch_mode}, 1 thread): "
          f"{1e3 * torch_step:.2f} ms\n"
          f"weft host / torch eager step: {result['ratio']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
