"""Benchmark: weftc's predicted step against weft-run's measured one over
2-rank layouts of the medium gpt example (issue 41's sweep), with this
machine's device model from `weft-run --calibrate` on 2 ranks.

Layouts (1 thread per rank, AdamW, batch 8): P = 2 with M in {2, 4, 8} and
recompute none, selective or full (1F1B); T = 2 with M in {1, 4} and
recompute none or selective; D = 2 with M in {1, 4} and ZeRO 0 to 3. Then
`weftc --auto-parallel --devices 2` with the same device model, whose top
TOP layouts (flash attention, interleaved and zero-bubble schedules among
them, which the sweep leaves out) join them.

Every layout runs 2 warm-up and STEPS timed steps per round, ROUNDS rounds
over all layouts in turn, and its figure is its fastest timed step of all
rounds. This machine is shared: a burst of load from elsewhere only ever
adds time, and the rounds put a burst on different layouts each time, so
the fastest step is the one least disturbed (calibration likewise keeps
each point's fastest run). The device model is calibrated before the first
round and again after the last, and both models' GEMM peak and memory
bandwidth are printed: when they differ by more than 10%, the machine's
load changed during the sweep and the figures say so.

Prints, per layout, measured and predicted seconds and their ratio, then
the ratios' range, how many are within 15%, the Spearman rank correlation
of predicted with measured (issue 41's targets: every layout within 15%,
correlation >= 0.8), and the measured step of the layout the search picks
against the fastest measured of all (issue 41's target: within 10%).

Usage: python3 bench/layout_sweep.py BUILD_DIR [--steps N] [--rounds R]
                                        [--top TOP]
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import calibrate, export_gpt_medium, run_plan

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent /
                       "python"))
from weft.layouts import layout_flags  # noqa: E402

LAYOUTS = (
    [[("pipeline-parallel", 2), ("microbatches", m), ("recompute", r)]
     for m in (2, 4, 8) for r in ("none", "selective", "full")] +
    [[("tensor-parallel", 2), ("microbatches", m), ("recompute", r)]
     for m in (1, 4) for r in ("none", "selective")] +
    [[("data-parallel", 2), ("microbatches", m), ("zero-stage", z)]
     for m in (1, 4) for z in (0, 1, 2, 3)])


def ranks(values):
    """Average ranks (1-based) of `values`, ties sharing theirs."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(a, b):
    """Pearson's correlation of the ranks of a and b."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.mean(ra), statistics.mean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / (sum((x - ma) ** 2 for x in ra) *
                  sum((y - mb) ** 2 for y in rb)) ** 0.5


def machine(device):
    """(GEMM peak FLOP/s, memory bytes/s) of a calibrated device model."""
    model = json.loads(pathlib.Path(device).read_text())
    return model["peak_flops_f32"]["value"], model["memory_bandwidth"]["value"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    build = args.build.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = export_gpt_medium(tmp)
        device = calibrate(build, tmp / "cpu.json")
        layouts = [(" ".join(f"--{k}={v}" for k, v in layout),
                    [f"--{k}={v}" for k, v in layout]) for layout in LAYOUTS]
        search = subprocess.run(
            [str(build / "bin" / "weftc"), str(model), "--auto-parallel",
             "--devices=2", f"--device-model={device}", f"--top={args.top}"],
            check=True, capture_output=True, text=True).stdout
        search_line = search.splitlines()[0]
        # The table's rows (the summary, the reasons some layouts do not
        # compile and the header come first).
        briefs = re.findall(r"^\s*\d+  (P\d.*?)\s{2,}", search, re.M)
        for brief in briefs[:args.top]:
            layouts.append(("auto-parallel: " + brief, layout_flags(brief)))

        plans, predicted = [], []
        for i, (_, flags) in enumerate(layouts):
            plans.append(tmp / f"plan-{i}.json")
            out = subprocess.run(
                [str(build / "bin" / "weftc"), str(model), "-o",
                 str(plans[-1]), f"--device-model={device}", *flags],
                check=True, capture_output=True, text=True).stdout
            predicted.append(float(re.search(
                r"predicted step: ([0-9.]+) ms", out).group(1)) / 1e3)
        measured = [float("inf")] * len(layouts)
        for _ in range(args.rounds):
            for i, plan in enumerate(plans):
                records = run_plan(build, plan, 2, 2 + args.steps,
                                   tmp / "log.jsonl")
                measured[i] = min([measured[i]] +
                                  [r["seconds"] for r in records[2:]])
        after = calibrate(build, tmp / "cpu-after.json")
        (flops0, bytes0), (flops1, bytes1) = machine(device), machine(after)

    print(f"gpt medium, 2 ranks x 1 thread, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', 'native')}; fastest of "
          f"{args.rounds} rounds x {args.steps} steps after 2 warm-up; "
          f"predicted with this machine's weft-run --calibrate model")
    print(f"calibrated before / after: GEMM peak {flops0 / 1e9:.1f} / "
          f"{flops1 / 1e9:.1f} GFLOP/s, memory {bytes0 / 1e9:.1f} / "
          f"{bytes1 / 1e9:.1f} GB/s")
    if max(flops0 / flops1, flops1 / flops0, bytes0 / bytes1,
           bytes1 / bytes0) > 1.1:
        print("the machine's load changed during the sweep (over 10%): "
              "these figures are not a measurement of weft")
    rows = list(zip((label for label, _ in layouts), measured, predicted))
    for label, m, p in rows:
        print(f"  {label:58s} measured {m:.3f} s  predicted {p:.3f} s  "
              f"{p / m:.2f}x")
    print(search_line)
    ratios = [p / m for _, m, p in rows]
    within = sum(abs(r - 1) <= 0.15 for r in ratios)
    print(f"predicted/measured {min(ratios):.2f}-{max(ratios):.2f}, "
          f"{within} of {len(rows)} within 15%; Spearman "
          f"{spearman([m for _, m, _ in rows], [p for _, _, p in rows]):.2f}")
    pick = next(m for label, m, _ in rows if label.startswith("auto-"))
    fastest = min(rows, key=lambda row: row[1])
    print(f"the search's pick measures {pick:.3f} s, {pick / fastest[1]:.3f}x "
          f"the fastest measured ({fastest[0]}, {fastest[1]:.3f} s)")


if __name__ == "__main__":
    main()
