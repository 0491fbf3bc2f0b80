"""Benchmark (a GPU): one bf16 AdamW training step of a GPT-2-medium shape
(24 layers, hidden 1024, 16 heads, sequence 1024, vocabulary 50257, batch
8) on one GPU: weft-run --device cuda, with the exported attention and
with --flash-attention (cuDNN's fused flash attention), against torch eager
and torch.compile (autocast bf16, fused AdamW off, the same model and
batch), and weft's MFU.

Step time: the median of 10 steps after 2 warm-up steps (weft: its
--log-json seconds; torch: wall time around the step with
torch.cuda.synchronize). Model FLOPs per step (Megatron-LM's count, Narayanan
et al. 2021, eq. 3 without the recompute term): 6 N T + 12 L h s T, N
parameters, T tokens. MFU = model FLOPs / step time / the GPU's dense bf16
peak (H100 SXM: 989.4e12, overridable with --peak). Memory: weft's planned
arena, its libraries' workspaces and what the device shows in use; torch's
max_memory_allocated.

Without a GPU it says so and exits 0: nothing is measured.

Usage: python3 bench/gpu_gpt.py BUILD_DIR [--peak FLOPS] [--batch B]
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402

STEPS, WARMUP = 10, 2
SHAPE = dict(layers=24, hidden=1024, heads=16, seq=1024, vocab=50257)


def model_flops(model, layers, hidden, seq, tokens):
    params = sum(p.numel() for p in model.parameters())
    return 6 * params * tokens + 12 * layers * hidden * seq * tokens


def torch_step_seconds(model, batch, compiled):
    model = model.cuda()
    step_model = torch.compile(model) if compiled else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens, targets = (t.cuda() for t in batch)
    times = []
    torch.cuda.reset_peak_memory_stats()
    for step in range(STEPS + WARMUP):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= WARMUP:
            times.append(time.perf_counter() - start)
    return statistics.median(times), torch.cuda.max_memory_allocated()


def weft_step(build, onnx_path, tmp, flags=()):
    plan = tmp / "plan.json"
    subprocess.run([str(build / "bin" / "weftc"), str(onnx_path),
                    "--precision=bf16", "--optimizer=adamw", "--lr=1e-3",
                    *flags, "-o", str(plan)], check=True)
    log = tmp / "log.jsonl"
    subprocess.run([str(build / "bin" / "weft-run"), str(plan), "--device",
                    "cuda", "--steps", str(STEPS + WARMUP), "--log-json",
                    str(log)], check=True, stdout=subprocess.DEVNULL)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return statistics.median(r["seconds"] for r in records[WARMUP:]), \
        records[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--peak", type=float, default=989.4e12)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    smi = shutil.which("nvidia-smi")
    if not smi or subprocess.run([smi, "-L"],
                                 capture_output=True).returncode != 0:
        print("no GPU on this machine: nothing measured")
        return
    model, batch = gpt.build(**SHAPE, batch=args.batch)
    tokens = args.batch * SHAPE["seq"]
    flops = model_flops(model, SHAPE["layers"], SHAPE["hidden"],
                        SHAPE["seq"], tokens)
    print(f"GPT-2 medium shape, batch {args.batch}, bf16, AdamW, "
          f"{torch.cuda.get_device_name()}; model FLOPs/step {flops:.3e}")
    rows, records = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = pathlib.Path(tmp) / "gpt2_medium.onnx"
        export(model, batch, ["tokens", "targets"], str(onnx_path))
        for name, flags in (("weft", ()),
                            ("weft flash", ("--flash-attention",))):
            seconds, records[name] = weft_step(args.build, onnx_path,
                                               pathlib.Path(tmp), flags)
            rows.append((name, seconds, None))
    weft_s = rows[0][1]
    for name, compiled in (("torch eager", False), ("torch.compile", True)):
        seconds, peak = torch_step_seconds(model, batch, compiled)
        rows.append((name, seconds, peak))
    for name, seconds, peak in rows:
        mfu = flops / seconds / args.peak
        memory = "" if peak is None else f"  max_memory_allocated {peak}"
        print(f"{name:14s} {seconds * 1e3:8.1f} ms/step  MFU {mfu:6.1%}"
              f"  weft/this {weft_s / seconds:5.2f}{memory}")
    for name, record in records.items():
        print(f"{name} memory: arena {record['arena_bytes']}, workspaces "
              f"{record['workspace_bytes']}, device in use "
              f"{record['device_used_bytes']} bytes")


if __name__ == "__main__":
    main()
