"""Benchmark: Megatron tensor and sequence parallelism on the medium gpt
example.

1 rank x 1 thread (the whole step) against T = 2 ranks x 1 thread (each
attention and MLP block sharded over both), without and with sequence
parallelism, the same batch (8 x 256 tokens, one micro-batch). Two rounds,
each running every configuration for 2 warm-up and 8 timed steps; a
configuration's figure is the median of its 16 timed steps (min-max in
brackets). Prints the step-time ratio (the ideal is 2x: the blocks' and the
vocab-parallel LM head's FLOPs halve; without sequence parallelism the
LayerNorms, residuals and position embeddings are replicated; each layer
adds 4 all-reduces of s*b*h floats, or 4 all-gathers and 4 reduce-scatters
with sequence parallelism) and, from a measured `weft-run --trace` of each
T = 2 configuration, compiled with and without --overlap-collectives, per
rank and averaged over 4 traced steps: the time it spent in the
collectives' post and wait calls (exposed: compute did not hide it) and its
share of the step. Without the overlap
every collective is waited for at once, so that time is all of it.

Usage: python3 bench/tensor_parallel.py BUILD_DIR
"""

import pathlib
import statistics
import sys
import tempfile

from pipeline_common import (CONFIG, TRACED, compile_plan, export_gpt_medium,
                             run_plan, traced_collectives)

WARMUP, STEPS, ROUNDS = 2, 8, 2


def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        plans = {"1 rank": (tmp / "t1.json", 1, []),
                 "T=2": (tmp / "t2.json", 2, ["--tensor-parallel=2"]),
                 "T=2 SP": (tmp / "t2sp.json", 2,
                            ["--tensor-parallel=2", "--sequence-parallel"])}
        for plan, _, flags in plans.values():
            compile_plan(build, onnx_path, plan, flags)
        times = {name: [] for name in plans}
        for _ in range(ROUNDS):
            for name, (plan, ranks, _) in plans.items():
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
            ranks = plans[name][1]
            print(f"  {name:8s} on {ranks} rank(s) {median * 1e3:8.1f} ms  "
                  f"[{min(values) * 1e3:.1f}-{max(values) * 1e3:.1f}]  "
                  f"speed-up {base / median:.2f}x")
        for name in ("T=2", "T=2 SP"):
            plan, _, flags = plans[name]
            blocking = tmp / "blocking.json"
            compile_plan(build, onnx_path, blocking,
                         flags + ["--overlap-collectives=false"])
            for label, path in (("overlapped", plan), ("blocking", blocking)):
                shares = traced_collectives(build, path, tmp)
                for rank, (count, _, exposed, step) in enumerate(shares):
                    print(f"  {name:6s} {label:10s} rank {rank}: "
                          f"{count:.0f} collectives, {exposed * 1e3:6.1f} ms "
                          f"in their calls ({100 * exposed / step:4.1f}% of "
                          f"a {step * 1e3:.1f} ms step, mean of {TRACED} "
                          f"traced steps)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
