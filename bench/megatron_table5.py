"""Benchmark (no GPU needed): weftc's predicted iteration time for the rows
of Korthikanti et al. 2022, Table 5 (shared/papers; A100 80GB on Selene),
beside the paper's, with --device-model a100-sxm4-80gb (or FILE).

Layouts are Table 3's: t = 8; p = 1, 8, 35, 64; micro-batch 1, global
batch 4, 64, 280, 512 (M = the global batch); s = 2048, V = 51200; bf16,
AdamW. Two variants per model, as Table 5 has them: full recompute, and
selective recompute + sequence parallelism. 175B and 530B run the
interleaved schedule with 3 chunks per rank (--schedule 1f1b here runs
them on 1F1B instead). Each model is the weights-free export
(weft.examples.gpt_weights_free, Table 2's shapes). One more row, from
the same paper's Section 6.2 (after Table 5): 530B with 8-way data
parallelism on 2240 GPUs, the batch 8 times as large (M = 280 per
replica), selective + SP only: 39.15 s, MFU 54.2% (37.83 s without data
parallelism; the paper's gradient all-reduce did not overlap the
backward, weft's does).

Issue 41's validation set, never fitted to: the A100 model's only fitted
number is its GEMM efficiency, fitted to Table 4 (bench/megatron_table4.py).
It prints predicted seconds, the paper's, their ratio, and the predicted
MFU, per row (about 9 minutes on 2 cores, too long for CI: no test runs
all nine; docs/planner.md has the figures).

Usage: python3 bench/megatron_table5.py BUILD_DIR [--rows 22B,530B-D8,...]
           [--schedule interleaved|1f1b]
"""

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "python"))

import onnx  # noqa: E402

from weft.examples import gpt_weights_free  # noqa: E402

# Table 3 (layout) and Table 5 (seconds per iteration: full recompute;
# selective recompute + sequence parallelism).
ROWS = {
    "22B": dict(pipeline=1, batch=4, full=1.42, selective=1.10),
    "175B": dict(pipeline=8, batch=64, full=18.13, selective=13.75),
    "530B": dict(pipeline=35, batch=280, full=49.05, selective=37.83),
    "1T": dict(pipeline=64, batch=512, full=94.42, selective=71.49),
    # Section 6.2: 530B over 8 data-parallel replicas of Table 3's layout.
    "530B-D8": dict(pipeline=35, data=8, batch=2240, selective=39.15),
}
INTERLEAVED = {"175B", "530B", "530B-D8"}


def predict(build, model, row, variant, schedule, device):
    data = row.get("data", 1)
    flags = ["--optimizer=adamw", "--tensor-parallel=8", "--precision=bf16",
             f"--microbatches={row['batch'] // data}",
             f"--device-model={device}", "-o", "/dev/null"]
    if row["pipeline"] > 1:
        flags.append(f"--pipeline-parallel={row['pipeline']}")
    if data > 1:
        flags.append(f"--data-parallel={data}")
    flags += (["--recompute=full"] if variant == "full" else
              ["--recompute=selective", "--sequence-parallel"])
    if schedule == "interleaved" and row["pipeline"] > 1:
        flags += ["--schedule=interleaved", "--virtual-stages=3"]
    start = time.perf_counter()
    result = subprocess.run([str(build / "bin" / "weftc"), str(model),
                             *flags], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"weftc failed: {result.stderr.strip()[:500]}")
    text = result.stdout + result.stderr
    step = float(re.search(r"predicted step: ([0-9.]+) ms", text).group(1))
    mfu = float(re.search(r"predicted MFU ([0-9.]+)%", text).group(1))
    return step / 1e3, mfu, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--schedule", default="interleaved",
                        choices=["interleaved", "1f1b"])
    parser.add_argument("--device-model", default="a100-sxm4-80gb",
                        help="a device model name or file (megatron_table4.py"
                             " --write writes the A100 with a fitted GEMM "
                             "efficiency)")
    args = parser.parse_args()
    build = args.build.resolve()
    print(f"Korthikanti et al. 2022, Table 5, predicted by weftc "
          f"--device-model {args.device_model}")
    print(f"{'model':6s} {'variant':22s} {'schedule':12s} {'predicted':>10s} "
          f"{'paper':>8s} {'ratio':>6s} {'MFU':>6s} {'compile':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.rows.split(","):
            row = ROWS[name]
            model = pathlib.Path(tmp) / f"{name}.onnx"
            onnx.save(gpt_weights_free.megatron(name.split("-")[0],
                                                row["batch"]), str(model))
            for variant in ("full", "selective"):
                if variant not in row:
                    continue
                schedule = (args.schedule if name in INTERLEAVED else "1f1b")
                step, mfu, seconds = predict(build, model, row, variant,
                                             schedule, args.device_model)
                paper = row[variant]
                label = ("full recompute" if variant == "full" else
                         "selective + SP")
                print(f"{name:6s} {label:22s} {schedule:12s} {step:9.2f}s "
                      f"{paper:7.2f}s {step / paper:6.2f} {mfu:5.1f}% "
                      f"{seconds:7.1f}s", flush=True)
            model.unlink()


if __name__ == "__main__":
    main()
