"""Benchmark: pipeline parallelism on the medium gpt example.

1 rank x 1 thread (the whole step, M micro-batches) against 2 ranks x 1
thread (P=2 stages, same M, 1F1B and GPipe), same plan inputs. Two rounds,
each running every configuration for 2 warm-up and 8 timed steps, so that
the machine's drift hits all alike; the figure of a configuration is the
median of its 16 timed steps (min-max in brackets). Prints steps/s, the
ratio to one rank (the GPipe bound for P=2, M=8 with equal stages and a
one-rank step that is the sum of the stages is P M / (M + P - 1) = 1.78x),
and weftc's predicted step time next to the measured one.

Usage: python3 bench/pipeline.py BUILD_DIR [M]
"""

import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import CONFIG, export_gpt_medium, run_plan

WARMUP, STEPS, ROUNDS = 2, 8, 2


def compile_plan(build, model, plan, stages, m, schedule):
    out = subprocess.run(
        [str(build / "bin" / "weftc"), str(model), "-o", str(plan),
         f"--pipeline-parallel={stages}", f"--microbatches={m}",
         f"--schedule={schedule}"], check=True, capture_output=True,
        text=True).stdout
    found = re.search(r"predicted step: ([0-9.]+) ms", out)
    return float(found.group(1)) / 1e3 if found else None


def step_seconds(build, plan, ranks, log):
    records = run_plan(build, plan, ranks, WARMUP + STEPS, log)
    return [r["seconds"] for r in records[WARMUP:]]


def main(build, m):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        plans = {"1 rank": (tmp / "single.json", 1)}
        predicted = {}
        compile_plan(build, onnx_path, plans["1 rank"][0], 1, m, "1f1b")
        for schedule in ("1f1b", "gpipe"):
            name = f"2 ranks ({schedule})"
            plans[name] = (tmp / f"{schedule}.json", 2)
            predicted[name] = compile_plan(build, onnx_path, plans[name][0],
                                           2, m, schedule)
        times = {name: [] for name in plans}
        for _ in range(ROUNDS):
            for name, (plan, ranks) in plans.items():
                times[name] += step_seconds(build, plan, ranks,
                                            tmp / "log.jsonl")
        print(f"gpt medium, M={m}, batch {CONFIG['batch']}, 1 thread per "
              f"rank, median of {ROUNDS * STEPS} steps [min-max]")
        t1 = statistics.median(times["1 rank"])
        for name, samples in times.items():
            t = statistics.median(samples)
            line = (f"  {name:16s}: {t:.3f} s/step [{min(samples):.3f}-"
                    f"{max(samples):.3f}]  {1 / t:.3f} steps/s")
            if name in predicted:
                line += (f"  speedup {t1 / t:.2f}x (GPipe bound "
                         f"{2 * m / (m + 1):.2f}x); predicted {predicted[name]:.3f} s, "
                         f"measured/predicted {t / predicted[name]:.2f}")
            print(line)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve(),
         int(sys.argv[2]) if len(sys.argv) > 2 else 8)
