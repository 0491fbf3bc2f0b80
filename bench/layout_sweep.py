"""Benchmark: weftc's predicted step against weft-run's measured one over
2-rank layouts of the medium gpt example (issue 41's sweep), with this
machine's device model from `weft-run --calibrate` on 2 ranks.

Layouts (1 thread per rank, AdamW, batch 8): P = 2 with M in {2, 4, 8} and
recompute none, selective or full (1F1B); T = 2 with M in {1, 4} and
recompute none or selective; D = 2 with M in {1, 4} and ZeRO 0 to 3. Each
runs 2 warm-up and STEPS timed steps; its figure is their median. Prints,
per layout, measured and predicted seconds and their ratio, then the
ratios' range, how many are within 15%, and the Spearman rank correlation
of predicted with measured (issue 41's targets: every layout within 15%,
correlation >= 0.8).

Then `weftc --auto-parallel --devices 2` with the same device model: its
top TOP layouts (flash attention, interleaved and zero-bubble schedules
among them, which the sweep leaves out) are measured the same way, and it
prints the measured step of the layout the search picks against the
fastest measured of all (issue 41's target: within 10%), and the search's
time.

Usage: python3 bench/layout_sweep.py BUILD_DIR [--steps N] [--top TOP]
"""

import argparse
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    build = args.build.resolve()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = export_gpt_medium(tmp)
        device = calibrate(build, tmp / "cpu.json")
        print(f"gpt medium, 2 ranks x 1 thread, OPENBLAS_CORETYPE="
              f"{os.environ.get('OPENBLAS_CORETYPE', 'native')}; median of "
              f"{args.steps} steps after 2 warm-up; predicted with this "
              f"machine's weft-run --calibrate model")
        def measure(flags, label):
            plan = tmp / "plan.json"
            out = subprocess.run(
                [str(build / "bin" / "weftc"), str(model), "-o", str(plan),
                 f"--device-model={device}", *flags], check=True,
                capture_output=True, text=True).stdout
            predicted = float(re.search(r"predicted step: ([0-9.]+) ms",
                                        out).group(1)) / 1e3
            records = run_plan(build, plan, 2, 2 + args.steps,
                               tmp / "log.jsonl")
            measured = statistics.median(r["seconds"] for r in records[2:])
            rows.append((label, measured, predicted))
            print(f"  {label:58s} measured {measured:.3f} s  "
                  f"predicted {predicted:.3f} s  "
                  f"{predicted / measured:.2f}x", flush=True)

        for layout in LAYOUTS:
            flags = [f"--{k}={v}" for k, v in layout]
            measure(flags, " ".join(flags))
        search = subprocess.run(
            [str(build / "bin" / "weftc"), str(model), "--auto-parallel",
             "--devices=2", f"--device-model={device}", f"--top={args.top}"],
            check=True, capture_output=True, text=True).stdout
        print(search.splitlines()[0])
        top = [re.match(r"^\s*\d+  (P\d.*?)\s{2,}", line).group(1)
               for line in search.splitlines()[2:2 + args.top]]
        for brief in top:
            measure(layout_flags(brief), "auto-parallel: " + brief)
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
