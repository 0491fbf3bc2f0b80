"""Benchmark: pipeline parallelism on the medium gpt example.

1 rank x 1 thread (the whole step, M micro-batches) against 2 ranks x 1
thread (P=2 stages, same M, 1F1B and GPipe), same plan inputs, 10 timed
steps after 2 warm-up steps. Prints steps/s of each, their ratio (the GPipe
limit for P=2, M=8 is P (M) / (M + P - 1) = 1.78x), and weftc's predicted
step time next to the measured one.

Usage: python3 bench/pipeline.py BUILD_DIR [M]
"""

import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402

WARMUP, STEPS = 2, 10


def compile_plan(build, model, plan, stages, m, schedule):
    out = subprocess.run(
        [str(build / "bin" / "weftc"), str(model), "-o", str(plan),
         f"--pipeline-parallel={stages}", f"--microbatches={m}",
         f"--schedule={schedule}"], check=True, capture_output=True,
        text=True).stdout
    found = re.search(r"predicted step: ([0-9.]+) ms", out)
    return float(found.group(1)) / 1e3 if found else None


def step_seconds(build, plan, ranks, log):
    command = [str(build / "bin" / "weft-run"), str(plan), "--threads", "1",
               "--steps", str(WARMUP + STEPS), "--log-json", str(log)]
    if ranks > 1:
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
                   "OPENBLAS_NUM_THREADS=1", "-np", str(ranks)] + command
    subprocess.run(command, check=True, capture_output=True,
                   env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return statistics.median(r["seconds"] for r in records[WARMUP:])


def main(build, m):
    config = gpt.CONFIGS["medium"]
    model, inputs = gpt.build(**config)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = tmp / "gpt_medium.onnx"
        export(model, inputs, ["tokens", "targets"], str(onnx_path),
               training=True)
        single = tmp / "single.json"
        predicted1 = compile_plan(build, onnx_path, single, 1, m, "1f1b")
        t1 = step_seconds(build, single, 1, tmp / "single.jsonl")
        print(f"gpt medium, M={m}, batch {config['batch']}, 1 thread per rank")
        print(f"  1 rank : {t1:.3f} s/step  {1 / t1:.3f} steps/s")
        for schedule in ("1f1b", "gpipe"):
            plan = tmp / f"{schedule}.json"
            predicted = compile_plan(build, onnx_path, plan, 2, m, schedule)
            t2 = step_seconds(build, plan, 2, tmp / f"{schedule}.jsonl")
            print(f"  2 ranks ({schedule}): {t2:.3f} s/step  "
                  f"{1 / t2:.3f} steps/s  speedup {t1 / t2:.2f}x "
                  f"(GPipe limit {2 * m / (m + 1):.2f}x)")
            print(f"    predicted step {predicted:.3f} s, measured {t2:.3f} s "
                  f"(measured / predicted {t2 / predicted:.2f})")
        if predicted1 is None:
            print("  (one-rank plans have no predicted step time)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve(),
         int(sys.argv[2]) if len(sys.argv) > 2 else 8)
