"""Benchmark: data parallelism (DDP's bucketed all-reduce) on the medium gpt
example, weak scaling.

1 rank x 1 thread on a batch of 8 (8 x 256 tokens) against D = 2 ranks x 1
thread on a global batch of 16 (each replica the same 8 sequences' worth),
one micro-batch, AdamW, and D = 2 with ZeRO stage 1 (optimizer state
sharded: a reduce-scatter and an all-gather per bucket instead of the
all-reduce, and each replica's AdamW over half the parameters) and stage 3
(parameters sharded too: each gathered before each forward and backward
use; the default 64 KiB threshold keeps LayerNorm weights and biases
replicated), and ZeRO-1 with --zero-prefetch (MindSpore's level1: the
parameters' all-gather posted at the start of the next step's forward
instead of ending the step). Prints each configuration's planned arena per
rank, the ZeRO-3 / ZeRO-0 and prefetch / ZeRO-1 step-time ratios, and
for ZeRO-1 with and without prefetch the time each rank spends in the
data axis's collective calls (measured trace). Two rounds, each running
every configuration for 2 warm-up and 8 timed steps; a figure is the median
of the 16 timed steps (min-max in brackets). Prints the throughput ratio
(samples/s of D = 2 over 1 rank; the ideal is 2x: each replica computes
what the single rank does, plus one all-reduce of the gradients in
buckets) and, from a measured
`weft-run --trace` of the D = 2 plan, per rank: the buckets' all-reduce
time in flight (post to the end of its wait) and the part of it spent
inside the post and wait calls (exposed: compute did not hide it), per
step over 4 traced steps; the same for the plan compiled with
--overlap-collectives=false (each all-reduce waited for at once, all of
its time exposed); and the fraction of the blocking plan's exposed time
the overlapped plan hides (1 - overlapped / blocking, both ranks summed;
it includes waiting for the slower rank, which no overlap hides).

Usage: python3 bench/data_parallel.py BUILD_DIR
"""

import pathlib
import statistics
import sys
import tempfile

from pipeline_common import (CONFIG, compile_plan, export_gpt_medium,
                             run_plan, traced_collectives)

WARMUP, STEPS, ROUNDS = 2, 8, 2
def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        batch, seq = CONFIG["batch"], CONFIG["seq"]
        global_shape = [f"--input-shape=tokens={2 * batch}x{seq}",
                        f"--input-shape=targets={2 * batch}x{seq}"]
        plans = {"1 rank": (tmp / "d1.json", 1, batch, []),
                 "D=2": (tmp / "d2.json", 2, 2 * batch,
                         ["--data-parallel=2"] + global_shape),
                 "D=2 ZeRO-1": (tmp / "z1.json", 2, 2 * batch,
                                ["--data-parallel=2", "--zero-stage=1"] +
                                global_shape),
                 "D=2 ZeRO-1p": (tmp / "z1p.json", 2, 2 * batch,
                                 ["--data-parallel=2", "--zero-stage=1",
                                  "--zero-prefetch"] + global_shape),
                 "D=2 ZeRO-3": (tmp / "z3.json", 2, 2 * batch,
                                ["--data-parallel=2", "--zero-stage=3"] +
                                global_shape)}
        for plan, _, _, flags in plans.values():
            compile_plan(build, onnx_path, plan, flags)
        times = {name: [] for name in plans}
        arenas = {}
        for _ in range(ROUNDS):
            for name, (plan, ranks, _, _) in plans.items():
                records = run_plan(build, plan, ranks, WARMUP + STEPS,
                                   tmp / "log.jsonl")
                times[name] += [r["seconds"] for r in records[WARMUP:]]
                arenas[name] = max(records[-1]["rank_arena_bytes"])
        print(f"gpt medium ({CONFIG['layers']} layers, hidden "
              f"{CONFIG['hidden']}, {CONFIG['heads']} heads, seq {seq}), "
              f"AdamW step, batch {batch} per replica, 1 thread per rank, "
              f"median of {ROUNDS * STEPS} steps [min-max]")
        base = batch / statistics.median(times["1 rank"])
        for name, values in times.items():
            median = statistics.median(values)
            _, ranks, samples, _ = plans[name]
            print(f"  {name:11s} on {ranks} rank(s), batch {samples:2d}: "
                  f"{median * 1e3:8.1f} ms [{min(values) * 1e3:.1f}-"
                  f"{max(values) * 1e3:.1f}]  {samples / median:6.2f} "
                  f"samples/s  throughput {samples / median / base:.2f}x"
                  f"  arena {arenas[name] / 2**20:6.1f} MiB/rank")
        ratio = (statistics.median(times["D=2 ZeRO-3"]) /
                 statistics.median(times["D=2"]))
        print(f"  ZeRO-3 / ZeRO-0 step time (D=2): {ratio:.2f}")
        ratio = (statistics.median(times["D=2 ZeRO-1p"]) /
                 statistics.median(times["D=2 ZeRO-1"]))
        print(f"  ZeRO-1 with --zero-prefetch / without, step time: "
              f"{ratio:.2f}")
        # The parameters' all-gather at the end of the step (ZeRO-1) or
        # posted at the start of the next one's forward (prefetch): the
        # time ranks spend in the data axis's collective calls.
        for name in ("D=2 ZeRO-1", "D=2 ZeRO-1p"):
            shares = traced_collectives(build, plans[name][0], tmp, "data")
            for rank, (count, flight, calls, step) in enumerate(shares):
                print(f"  {name:11s} rank {rank}: {count:.0f} data-axis "
                      f"collectives, in flight {flight * 1e3:7.1f} ms, in "
                      f"their calls {calls * 1e3:5.1f} ms "
                      f"({100 * calls / step:4.1f}% of a {step * 1e3:.1f} "
                      f"ms step)")
        blocking = tmp / "blocking.json"
        compile_plan(build, onnx_path, blocking,
                     plans["D=2"][3] + ["--overlap-collectives=false"])
        exposed = {}
        for label, path in (("overlapped", plans["D=2"][0]),
                            ("blocking", blocking)):
            shares = traced_collectives(build, path, tmp, "data")
            exposed[label] = sum(share[2] for share in shares)
            for rank, (count, flight, calls, step) in enumerate(shares):
                print(f"  D=2 {label:10s} rank {rank}: {count:.0f} "
                      f"all-reduces, in flight {flight * 1e3:7.1f} ms, in "
                      f"their calls {calls * 1e3:5.1f} ms "
                      f"({100 * calls / step:4.1f}% of a {step * 1e3:.1f} "
                      f"ms step)")
        # What blocking all-reduces expose and overlapped ones no longer do.
        print(f"  all-reduce time hidden behind the backward (both ranks, "
              f"1 - overlapped / blocking calls): "
              f"{100 * (1 - exposed['overlapped'] / exposed['blocking']):.1f}"
              f"%")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
