#!/usr/bin/env python3
"""Compares two builds of weft on the layouts a plan-format or memory-plan
change must not alter numerically: each layout is compiled by both builds'
weftc and trained for 3 steps by each build's weft-run (synthetic data,
the same seed); prints whether the losses are bit-identical, each rank's
measured peak bytes (old and new, the largest's ratio), whether the new
measured peak equals the new planned arena, and the plan sizes.

Usage: python3 scripts/compare-builds.py OLD_BUILD NEW_BUILD
  (each a build directory with bin/weftc and bin/weft-run; the models are
  NEW_BUILD/models, built by the test suite's set-up)
Exits 1 when a layout's losses differ or a compile or run fails.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

LAYOUTS = {
    "gpt P=2 1F1B M=4": ("gpt", ["--pipeline-parallel=2",
                                 "--microbatches=4"], 2),
    "gpt P=2 GPipe M=8": ("gpt", ["--pipeline-parallel=2", "--microbatches=8",
                                  "--schedule=gpipe"], 2),
    "gpt P=4 1F1B M=8": ("gpt", ["--pipeline-parallel=4",
                                 "--microbatches=8"], 4),
    "gpt T=2 SP sel bf16 M=4": ("gpt", ["--tensor-parallel=2",
                                        "--sequence-parallel",
                                        "--recompute=selective",
                                        "--precision=bf16",
                                        "--microbatches=4"], 2),
    "gpt D=2 ZeRO-2 M=4": ("gpt", ["--data-parallel=2", "--zero-stage=2",
                                   "--microbatches=4"], 2),
    "gpt P=2 full recompute M=4": ("gpt", ["--pipeline-parallel=2",
                                           "--recompute=full",
                                           "--microbatches=4"], 2),
    "gpt M=1": ("gpt", [], 1),
    "llama T=2 P=2 M=4": ("llama", ["--tensor-parallel=2",
                                    "--pipeline-parallel=2",
                                    "--microbatches=4"], 4),
    "resnet P=2 M=2 sgd": ("resnet", ["--pipeline-parallel=2",
                                      "--microbatches=2",
                                      "--optimizer=sgd"], 2),
}


def run_layout(build, models, model, flags, ranks, work, tag):
    plan = work / f"{tag}.json"
    subprocess.run([str(build / "bin" / "weftc"), str(models / f"{model}.onnx"),
                    *flags, "-o", str(plan)], check=True, capture_output=True)
    log = work / f"{tag}.jsonl"
    mpi = [] if ranks == 1 else [
        "mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
        "OPENBLAS_NUM_THREADS=1", "-np", str(ranks)]
    subprocess.run(mpi + [str(build / "bin" / "weft-run"), str(plan),
                          "--steps", "3", "--log-json", str(log)],
                   check=True, capture_output=True,
                   env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return ([r["loss"] for r in records], records[-1]["rank_peak_bytes"],
            records[-1]["rank_arena_bytes"], plan.stat().st_size)


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    old, new = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    models = new / "models"
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        for name, (model, flags, ranks) in LAYOUTS.items():
            try:
                o = run_layout(old, models, model, flags, ranks, work, "old")
                n = run_layout(new, models, model, flags, ranks, work, "new")
            except subprocess.CalledProcessError as e:
                print(f"{name}: failed: {e.stderr.decode()[-300:]}")
                status = 1
                continue
            same = o[0] == n[0]
            status |= not same
            print(f"{name:28s} losses {'identical' if same else 'DIFFER'}; "
                  f"peaks old {o[1]} new {n[1]} "
                  f"(x{max(n[1]) / max(o[1]):.3f}); measured=planned "
                  f"{n[1] == n[2]}; plan {o[3] / 1e3:.0f} -> "
                  f"{n[3] / 1e3:.0f} kB")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
