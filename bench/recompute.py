"""Benchmark: activation recompute on the medium gpt example, P=2, M=8.

For each policy (none, selective, full per stage, full per layer, and
FlashAttention's fused core attention, weftc --flash-attention, which keeps
one log-sum-exp per query row instead of the scores and recomputes them in
its backward) and schedule (1f1b, gpipe): the planned arena of each rank
(= the peak weft-run measures), the step time on 2 ranks x 1 thread (median of 2 interleaved
rounds of 4 steps, each after 2 warm-up steps) and its ratio to no
recompute. Megatron-LM's finding (Korthikanti et al. 2022, Table 4) is the
expected shape: selective saves part of full's memory at a few percent of
its time overhead. At this example's s = 256, h = 384, a = 6, core
attention is 5as/h = 20 of 54 sbh units per layer (Megatron's count, which
weft's planner matches: docs/memory.md).

Usage: python3 bench/recompute.py BUILD_DIR
"""

import pathlib
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import export_gpt_medium, run_plan

WARMUP, STEPS, ROUNDS = 2, 4, 2
SCHEDULES = ("1f1b", "gpipe")
POLICIES = ("none", "selective", "full", "full-layer", "flash")


def compile_plan(build, onnx_path, plan, schedule, policy):
    name, _, granularity = policy.partition("-")
    flags = ["--flash-attention"] if name == "flash" else [
        f"--recompute={name}",
        f"--recompute-granularity={granularity or 'stage'}"]
    subprocess.run(
        [str(build / "bin" / "weftc"), str(onnx_path), "-o", str(plan),
         "--pipeline-parallel=2", "--microbatches=8",
         f"--schedule={schedule}", *flags],
        check=True, capture_output=True)


def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        configs = [(s, p) for s in SCHEDULES for p in POLICIES]
        for schedule, policy in configs:
            compile_plan(build, onnx_path, tmp / f"{schedule}-{policy}.json",
                         schedule, policy)
        # Interleaved rounds: each configuration runs once per round, so a
        # slow spell of this shared machine hits every configuration alike.
        seconds = {c: [] for c in configs}
        peaks = {}
        for _ in range(ROUNDS):
            for schedule, policy in configs:
                records = run_plan(build, tmp / f"{schedule}-{policy}.json", 2,
                                   WARMUP + STEPS, tmp / "log.jsonl")
                seconds[schedule, policy] += [r["seconds"]
                                              for r in records[WARMUP:]]
                peaks[schedule, policy] = records[-1]["rank_peak_bytes"]
                arenas = records[-1]["rank_arena_bytes"]
                assert peaks[schedule, policy] == arenas, (peaks, arenas)
        print("gpt medium, P=2, M=8, 1 thread per rank; per rank: planned "
              f"arena = measured peak (MB); median of {ROUNDS}x{STEPS} steps "
              "in interleaved rounds")
        for schedule in SCHEDULES:
            base_time = statistics.median(seconds[schedule, "none"])
            base_peak = max(peaks[schedule, "none"])
            for policy in POLICIES:
                time = statistics.median(seconds[schedule, policy])
                peak = peaks[schedule, policy]
                print(f"  {schedule:5s} {policy:10s}: peak "
                      f"{' / '.join(f'{p / 1e6:.1f}' for p in peak)} MB "
                      f"(max {max(peak) / base_peak:.2f}x of none)  "
                      f"{time:.3f} s/step ({time / base_time:.2f}x)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
