"""Benchmark (no GPU needed): one transformer layer of Korthikanti et al.
2022's 22B model (Table 4: forward and backward ms on A100s, t = 8),
predicted by weftc with --device-model a100-sxm4-80gb, beside the paper's;
and the A100's GEMM efficiency fitted to it (issue 41's calibration set).

A layer's time is the difference between the 2-layer and the 1-layer model
(gpt_weights_free, Table 2's 22B shapes: h 6144, 64 heads, s 2048, V 51200)
over the batch of 4 sequences in micro-batches of 1 (Table 3's layout;
Table 4's rows summed over the 48 layers give Table 5's 22B iteration
less 0.12-0.13 s, which only the whole batch does). Forward is the F tasks'
wall time, backward the B, W and R tasks' (recompute runs in the backward),
collectives' exposed waits included. bf16, AdamW, t = 8.

The fit: the fraction of the bf16 dense peak at which every GEMM runs such
that the baseline's forward takes the paper's 7.7 ms (bisection). It prints
the fraction and every row again under it; `--write FILE` writes the
a100-sxm4-80gb model with that fraction as its gemm_efficiency (the
shipped model holds it; python/tests/test_megatron_table4.py checks that
it is still the fit). When even
GEMMs at the peak leave the forward above 7.7 ms there is no such fraction:
it says so and prints where one layer's time goes instead, by op kind
(roofline seconds of the 2-layer step less the 1-layer step's, forward and
backward of the 4 micro-batches and the layer's optimizer update;
collectives left out).

Usage: python3 bench/megatron_table4.py BUILD_DIR [--write FILE]
"""

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import onnx  # noqa: E402

from weft.examples import gpt_weights_free  # noqa: E402

# Table 4: (row, weftc flags, forward ms, backward ms).
TABLE4 = [
    ("baseline, no recompute", [], 7.7, 11.9),
    ("sequence parallelism", ["--sequence-parallel"], 7.2, 11.8),
    ("full recompute", ["--recompute=full", "--recompute-granularity=layer"],
     7.7, 19.5),
    ("selective recompute", ["--recompute=selective"], 7.7, 13.2),
    ("selective + SP", ["--recompute=selective", "--sequence-parallel"],
     7.2, 13.1),
]
A100 = REPO / "bench" / "devices" / "a100-sxm4-80gb.json"
BF16_PEAK = 312e12


def task_seconds(build, model, device, flags, trace):
    """(forward, backward) seconds of the step's tasks: each task's wall
    span (first slice's start to last slice's end), summed by kind."""
    result = subprocess.run(
        [str(build / "bin" / "weftc"), str(model), "-o", "/dev/null",
         "--tensor-parallel=8", "--precision=bf16", "--microbatches=4",
         f"--device-model={device}", f"--timeline={trace}", *flags],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"weftc failed: {result.stderr.strip()[:500]}")
    spans = collections.defaultdict(lambda: [float("inf"), 0.0])
    for event in json.loads(pathlib.Path(trace).read_text())["traceEvents"]:
        if event["pid"] != 0 or event["cat"] not in ("forward", "backward"):
            continue
        span = spans[event["name"]]
        span[0] = min(span[0], event["ts"])
        span[1] = max(span[1], event["ts"] + event["dur"])
    forward = sum(e - s for name, (s, e) in spans.items()
                  if name.startswith("F"))
    backward = sum(e - s for name, (s, e) in spans.items()
                   if name[0] in "BWR")
    return forward / 1e6, backward / 1e6


def layer_ms(build, models, device, flags, tmp):
    """One layer's (forward, backward) ms: 2 layers' less 1 layer's."""
    one = task_seconds(build, models[1], device, flags, tmp / "t1.json")
    two = task_seconds(build, models[2], device, flags, tmp / "t2.json")
    return (two[0] - one[0]) * 1e3, (two[1] - one[1]) * 1e3


def op_seconds(build, model, tmp):
    """{op name: [count, roofline seconds on the A100]} of the baseline's
    compiled step (weft-test-print-cost: FLOPs and bytes per op)."""
    weftc = str(build / "bin" / "weftc")
    flags = ["--tensor-parallel=8", "--precision=bf16", "--microbatches=4"]
    imported = tmp / "imported.mlir"
    subprocess.run([weftc, str(model), "--emit=import", "-o", str(imported),
                    *flags], check=True)
    pipeline = subprocess.run([weftc, str(model), "--print-pipeline",
                               *flags], check=True, capture_output=True,
                              text=True).stdout.strip()
    printed = subprocess.run(
        [str(build / "bin" / "weft-opt"), str(imported), pipeline,
         "--weft-test-print-cost", "-o", "/dev/null"], check=True,
        capture_output=True, text=True).stderr
    device = {k: v["value"] for k, v in json.loads(A100.read_text()).items()
              if isinstance(v, dict) and "value" in v}
    ops = collections.defaultdict(lambda: [0, 0.0])
    for m in re.finditer(r"cost @\S+: (\S+) flops=(\d+) read=(\d+) "
                         r"written=(\d+)", printed):
        if m[1] == "total" or m[1].startswith("shard."):
            continue  # the function's total; collectives (ring-timed)
        entry = ops[m[1]]
        entry[0] += 1
        entry[1] += max(int(m[2]) / device["peak_flops_bf16"],
                        (int(m[3]) + int(m[4])) / device["memory_bandwidth"])
    return ops


def by_op_kind(build, models, tmp):
    """(op, count, ms) of one layer, slowest first."""
    one, two = (op_seconds(build, models[n], tmp) for n in (1, 2))
    rows = [(name, two[name][0] - one.get(name, [0, 0])[0],
             (two[name][1] - one.get(name, [0, 0.0])[1]) * 1e3)
            for name in two]
    return sorted((r for r in rows if r[2] > 0.005), key=lambda r: -r[2])


def device_with(fraction, path):
    """The A100 model with every GEMM at `fraction` of its dtype's peak
    (None: the datasheet peak, no gemm_efficiency)."""
    model = json.loads(A100.read_text())
    model.pop("gemm_efficiency", None)
    if fraction is None:
        path.write_text(json.dumps(model, indent=2) + "\n")
        return path
    model["gemm_efficiency"] = {
        "source": (f"fitted: the fraction of the bf16 dense peak at which "
                   f"Korthikanti et al. 2022, Table 4's 22B baseline layer "
                   f"forward takes 7.7 ms in weft's time model "
                   f"(bench/megatron_table4.py); one fraction for every "
                   f"shape"),
        "dtype": "bf16",
        "points": [[8192, 3072, 6144, fraction * BF16_PEAK]],
    }
    path.write_text(json.dumps(model, indent=2) + "\n")
    return path


def shipped_fraction():
    """The fraction of the bf16 peak the shipped A100 model's GEMMs run at
    (its one gemm_efficiency point), or None without one."""
    model = json.loads(A100.read_text())
    if "gemm_efficiency" not in model:
        return None
    (point,) = model["gemm_efficiency"]["points"]
    return point[3] / BF16_PEAK


def models(tmp):
    """{layers: path} of the 22B model with 1 and 2 layers, batch 4."""
    out = {}
    for layers in (1, 2):
        out[layers] = tmp / f"22B-{layers}.onnx"
        onnx.save(gpt_weights_free.megatron("22B", 4, layers),
                  str(out[layers]))
    return out


def fit(build, models, tmp):
    """The fraction of the bf16 peak at which the baseline's forward takes
    7.7 ms (bisection to 1e-6), or None when the forward is slower with
    GEMMs at the peak."""
    at_peak, _ = layer_ms(build, models, device_with(None, tmp / "peak.json"),
                          [], tmp)
    if at_peak > 7.7:
        return None
    low, high = 0.05, 1.0
    for _ in range(20):
        mid = (low + high) / 2
        f, _ = layer_ms(build, models, device_with(mid, tmp / "fit.json"),
                        [], tmp)
        # Slower than the paper: the GEMMs run at a larger fraction.
        low, high = (mid, high) if f > 7.7 else (low, mid)
    return (low + high) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--write", type=pathlib.Path)
    args = parser.parse_args()
    build = args.build.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        layers = models(tmp)

        def table(device, title):
            print(title)
            print(f"  {'row':24s} {'forward ms':>16s} {'backward ms':>17s}")
            for name, flags, forward, backward in TABLE4:
                f, b = layer_ms(build, layers, device, flags, tmp)
                print(f"  {name:24s} {f:6.2f} / {forward:4.1f} ({f / forward:4.2f})"
                      f" {b:6.2f} / {backward:4.1f} ({b / backward:4.2f})",
                      flush=True)

        table(device_with(None, tmp / "peak.json"),
              "Table 4, 22B layer, predicted / paper (GEMMs at the "
              "datasheet peak)")
        fraction = fit(build, layers, tmp)
        if fraction is None:
            at_peak, _ = layer_ms(build, layers,
                                  device_with(None, tmp / "peak.json"), [],
                                  tmp)
            print(f"no GEMM efficiency fits: with GEMMs at the peak the "
                  f"forward is already {at_peak:.2f} ms, not 7.7; one "
                  f"layer's step by op kind, ms:")
            for name, count, ms in by_op_kind(build, layers, tmp):
                print(f"  {name:28s} {count:4d} ops {ms:8.3f}")
            return
        fitted = device_with(fraction, tmp / "fit.json")
        table(fitted, f"fitted: GEMMs at {fraction:.4f} of the bf16 peak "
                      f"({fraction * BF16_PEAK / 1e12:.1f} TFLOP/s)")
        shipped = shipped_fraction()
        print(f"shipped ({A100.name}): "
              + (f"{shipped:.4f} of the bf16 peak" if shipped else
                 "no gemm_efficiency"))
        if args.write:
            args.write.write_text(fitted.read_text())


if __name__ == "__main__":
    main()
