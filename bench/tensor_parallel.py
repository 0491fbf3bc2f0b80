"""Benchmark: Megatron tensor parallelism on the medium gpt example.

1 rank x 1 thread (the whole step) against T = 2 ranks x 1 thread (each
attention and MLP block sharded over both), the same batch (8 x 256 tokens,
one micro-batch). Two rounds, each running both for 2 warm-up and 8 timed
steps; a configuration's figure is the median of its 16 timed steps
(min-max in brackets). Prints the step-time ratio (the ideal is 2x: the
blocks' and the vocab-parallel LM head's FLOPs halve; LayerNorms, residuals
and position embeddings are replicated; each layer adds 4 all-reduces of
s*b*h floats, the vocabulary 4 more per step)
and, from a measured `weft-run --trace` of T = 2, the share of the step
each rank spends in collectives (waiting for the slower rank included).

Usage: python3 bench/tensor_parallel.py BUILD_DIR
"""

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import CONFIG, export_gpt_medium, run_plan

WARMUP, STEPS, ROUNDS = 2, 8, 2


def compile_plan(build, model, plan, tensor):
    subprocess.run([str(build / "bin" / "weftc"), str(model), "-o",
                    str(plan), f"--tensor-parallel={tensor}"], check=True,
                   capture_output=True)


def collective_share(build, plan, directory):
    """Per rank: (collective seconds, step seconds) of the last of 3 traced
    steps."""
    trace = directory / "trace.json"
    run_plan(build, plan, 2, 3, directory / "trace-log.jsonl")
    subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
         "OPENBLAS_NUM_THREADS=1", "-np", "2", str(build / "bin" / "weft-run"),
         str(plan), "--threads", "1", "--steps", "3", "--trace", str(trace)],
        check=True, capture_output=True)
    events = json.loads(trace.read_text())["traceEvents"]
    shares = []
    for rank in (0, 1):
        mine = [e for e in events if e["pid"] == rank
                and e["args"].get("step") == 2 and e["tid"] in (1, 2, 3)]
        begin = min(e["ts"] for e in mine)
        end = max(e["ts"] + e["dur"] for e in mine)
        comm = sum(e["dur"] for e in mine if e["cat"] == "collective")
        count = sum(1 for e in mine if e["cat"] == "collective")
        shares.append((comm / 1e6, (end - begin) / 1e6, count))
    return shares


def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        plans = {"1 rank": (tmp / "t1.json", 1),
                 "T=2 on 2 ranks": (tmp / "t2.json", 2)}
        for plan, ranks in plans.values():
            compile_plan(build, onnx_path, plan, ranks)
        times = {name: [] for name in plans}
        for _ in range(ROUNDS):
            for name, (plan, ranks) in plans.items():
                records = run_plan(build, plan, ranks, WARMUP + STEPS,
                                   tmp / "log.jsonl")
                times[name] += [r["seconds"] for r in records[WARMUP:]]
        print(f"gpt medium ({CONFIG['layers']} layers, hidden "
              f"{CONFIG['hidden']}, {CONFIG['heads']} heads, seq "
              f"{CONFIG['seq']}, batch {CONFIG['batch']}), AdamW step, 1 "
              f"thread per rank, median of {ROUNDS * STEPS} steps [min-max]")
        base = statistics.median(times["1 rank"])
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:16s} {median * 1e3:8.1f} ms  [{min(values) * 1e3:.1f}"
                  f"-{max(values) * 1e3:.1f}]  speed-up {base / median:.2f}x")
        for rank, (comm, step, count) in enumerate(
                collective_share(build, plans["T=2 on 2 ranks"][0], tmp)):
            print(f"  T=2 rank {rank}: {count} all-reduces, {comm * 1e3:.1f} "
                  f"ms of a {step * 1e3:.1f} ms traced step in collectives "
                  f"({100 * comm / step:.1f}%)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
