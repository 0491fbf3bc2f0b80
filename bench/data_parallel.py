"""Benchmark: data parallelism (DDP's bucketed all-reduce) on the medium gpt
example, weak scaling.

1 rank x 1 thread on a batch of 8 (8 x 256 tokens) against D = 2 ranks x 1
thread on a global batch of 16 (each replica the same 8 sequences' worth),
one micro-batch, AdamW. Two rounds, each running both configurations for
2 warm-up and 8 timed steps; a figure is the median of the 16 timed steps
(min-max in brackets). Prints the throughput ratio (samples/s of D = 2
over 1 rank; the ideal is 2x: each replica computes what the single rank
does, plus one all-reduce of the gradients in buckets) and, from a measured
`weft-run --trace` of the D = 2 plan, per rank: the buckets' all-reduce
time in flight (post to the end of its wait), the part of it spent inside
the post and wait calls (exposed: compute did not hide it), and so the
fraction of the all-reduce time hidden behind the backward. The same plan
compiled with --overlap-collectives=false (each all-reduce waited for at
once, so all of its time is exposed) for contrast.

Usage: python3 bench/data_parallel.py BUILD_DIR
"""

import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

from pipeline_common import CONFIG, export_gpt_medium, run_plan

WARMUP, STEPS, ROUNDS = 2, 8, 2


def compile_plan(build, model, plan, flags):
    subprocess.run([str(build / "bin" / "weftc"), str(model), "-o",
                    str(plan), *flags], check=True, capture_output=True)


def bucket_overlap(build, plan, directory):
    """Per rank, from the last of 3 traced steps: (data-axis all-reduces,
    seconds in flight, seconds exposed in their calls, step seconds)."""
    trace = directory / "trace.json"
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
        # The data axis's all-reduces: the buckets and the scalar loss.
        flights = [e for e in mine if e["cat"] == "collective"
                   and e["args"].get("axis") == "data"]
        calls = [e for e in mine if e["cat"] == "collective_call"
                 and e["args"].get("axis") == "data"]
        shares.append((len(flights), sum(e["dur"] for e in flights) / 1e6,
                       sum(e["dur"] for e in calls) / 1e6,
                       (end - begin) / 1e6))
    return shares


def main(build):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = export_gpt_medium(tmp)
        batch, seq = CONFIG["batch"], CONFIG["seq"]
        global_shape = [f"--input-shape=tokens={2 * batch}x{seq}",
                        f"--input-shape=targets={2 * batch}x{seq}"]
        plans = {"1 rank": (tmp / "d1.json", 1, batch, []),
                 "D=2": (tmp / "d2.json", 2, 2 * batch,
                         ["--data-parallel=2"] + global_shape)}
        for plan, _, _, flags in plans.values():
            compile_plan(build, onnx_path, plan, flags)
        times = {name: [] for name in plans}
        for _ in range(ROUNDS):
            for name, (plan, ranks, _, _) in plans.items():
                records = run_plan(build, plan, ranks, WARMUP + STEPS,
                                   tmp / "log.jsonl")
                times[name] += [r["seconds"] for r in records[WARMUP:]]
        print(f"gpt medium ({CONFIG['layers']} layers, hidden "
              f"{CONFIG['hidden']}, {CONFIG['heads']} heads, seq {seq}), "
              f"AdamW step, batch {batch} per replica, 1 thread per rank, "
              f"median of {ROUNDS * STEPS} steps [min-max]")
        base = batch / statistics.median(times["1 rank"])
        for name, values in times.items():
            median = statistics.median(values)
            _, ranks, samples, _ = plans[name]
            print(f"  {name:6s} on {ranks} rank(s), batch {samples:2d}: "
                  f"{median * 1e3:8.1f} ms [{min(values) * 1e3:.1f}-"
                  f"{max(values) * 1e3:.1f}]  {samples / median:6.2f} "
                  f"samples/s  throughput {samples / median / base:.2f}x")
        blocking = tmp / "blocking.json"
        compile_plan(build, onnx_path, blocking,
                     plans["D=2"][3] + ["--overlap-collectives=false"])
        for label, path in (("overlapped", plans["D=2"][0]),
                            ("blocking", blocking)):
            shares = bucket_overlap(build, path, tmp)
            for rank, (count, flight, exposed, step) in enumerate(shares):
                hidden = 1 - exposed / flight if flight else 0.0
                print(f"  D=2 {label:11s} rank {rank}: {count} all-reduce(s) "
                      f"in flight {flight * 1e3:6.1f} ms, exposed "
                      f"{exposed * 1e3:6.1f} ms ({100 * exposed / step:4.1f}"
                      f"% of a {step * 1e3:.1f} ms step): "
                      f"{100 * hidden:4.1f}% hidden")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]).resolve())
