"""Benchmark: activation recompute on the medium gpt example, P=2, M=8.

For each policy (none, selective, full per stage, full per layer) and
schedule (1f1b, gpipe): the
planned arena of each rank (= the peak weft-run measures), the step time on
2 ranks x 1 thread (median of 6 steps after 2 warm-up steps) and its ratio
to no recompute. Megatron-LM's finding (Korthikanti et al. 2022, Table 4)
is the expected shape: selective saves part of full's memory at a few
percent of its time overhead; at this example's s = 256, h = 384, a = 6 core
attention is 5as/h = 20 of ~54 sbh units per layer.

Usage: python3 bench/recompute.py BUILD_DIR
"""

import pathlib
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import export_gpt_medium, run_plan

WARMUP, STEPS = 2, 6


def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        print("gpt medium, P=2, M=8, 1 thread per rank; per rank: planned "
              "arena = measured peak (MB)")
        for schedule in ("1f1b", "gpipe"):
            base = None
            for policy in ("none", "selective", "full", "full-layer"):
                plan = tmp / f"{schedule}-{policy}.json"
                name, _, granularity = policy.partition("-")
                subprocess.run(
                    [str(build / "bin" / "weftc"), str(onnx_path), "-o",
                     str(plan), "--pipeline-parallel=2", "--microbatches=8",
                     f"--schedule={schedule}", f"--recompute={name}",
                     f"--recompute-granularity={granularity or 'stage'}"],
                    check=True, capture_output=True)
                records = run_plan(build, plan, 2, WARMUP + STEPS,
                                   tmp / "log.jsonl")
                seconds = statistics.median(r["seconds"]
                                            for r in records[WARMUP:])
                peaks = records[-1]["rank_peak_bytes"]
                arenas = records[-1]["rank_arena_bytes"]
                assert peaks == arenas, (peaks, arenas)
                base = base or (seconds, max(peaks))
                print(f"  {schedule:5s} {policy:10s}: peak "
                      f"{' / '.join(f'{p / 1e6:.1f}' for p in peaks)} MB "
                      f"(max {max(peaks) / base[1]:.2f}x of none)  "
                      f"{seconds:.3f} s/step ({seconds / base[0]:.2f}x)")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
