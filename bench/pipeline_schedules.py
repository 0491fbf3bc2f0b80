"""Benchmark: weft's six pipeline schedules on the medium gpt example.

P = 2 ranks x 1 thread, M = 8 micro-batches (batch 8), AdamW: gpipe, 1f1b,
interleaved (V = 2), zb-h1, zb-h2 and zb-v, same plan inputs. ROUNDS
rounds, each running every schedule for 2 warm-up and STEPS timed steps,
so that the machine's drift hits all alike; a schedule's figure is the
median of its timed steps (min-max in brackets). Per schedule: steps/s, the
ratio to 1F1B's, weftc's predicted step next to the measured one (with the
default CPU model, and with this machine's from `weft-run --calibrate` on
2 ranks, run first), and the
measured bubble: 1 - (compute time summed over both ranks) / (2 x step), the
compute time from `weft-run --trace` (thread 2: one slice per kernel),
averaged over 4 traced steps.

With torch 2.6's `torch.distributed.pipelining` in a venv (--torch-python or
TORCH_PYTHON; scripts/torch-pipelining-venv.sh makes one), also runs its
schedules on the same model, layout and batch (bench/torch_pipelining.py:
its head untied, 2 stages per rank for its interleaved and ZB schedules)
and prints weft's steps/s over torch's per schedule, in one run.

Usage: python3 bench/pipeline_schedules.py BUILD_DIR [--rounds R]
           [--steps N] [--torch-python PATH]
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import tempfile

from pipeline_common import (CONFIG, REPO, calibrate, export_gpt_medium,
                             run_plan)

SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v"]
# torch.distributed.pipelining's schedule (bench/torch_pipelining.py's
# name) beside each weft schedule: the same order, or for zb-h1 the
# nearest torch has (ScheduleInterleavedZeroBubble, at 2 chunks per rank).
TORCH_NAMES = {"gpipe": "gpipe", "1f1b": "1f1b",
               "interleaved": "interleaved1f1b", "zb-h1": "interleavedzb",
               "zb-v": "zbv"}
WARMUP, M, TRACED = 2, 8, 4


def compile_plan(build, model, plan, schedule, *flags):
    out = subprocess.run(
        [str(build / "bin" / "weftc"), str(model), "-o", str(plan),
         "--pipeline-parallel=2", f"--microbatches={M}",
         f"--schedule={schedule}", *flags], check=True, capture_output=True,
        text=True).stdout
    found = re.search(r"predicted step: ([0-9.]+) ms, bubble fraction "
                      r"([0-9.]+)", out)
    return float(found.group(1)) / 1e3, float(found.group(2))


def measured_bubble(build, plan, directory):
    """1 - busy / (2 step), busy the kernels' time on both ranks, over
    steps 2 .. 2 + TRACED of a trace."""
    trace = pathlib.Path(directory) / "trace.json"
    subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
         "OPENBLAS_NUM_THREADS=1", "-np", "2", str(build / "bin" / "weft-run"),
         str(plan), "--threads", "1", "--steps", str(TRACED + 2), "--trace",
         str(trace)], check=True, capture_output=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    events = json.loads(trace.read_text())["traceEvents"]
    fractions = []
    for step in range(2, 2 + TRACED):
        mine = [e for e in events if e["args"].get("step") == step]
        begin = min(e["ts"] for e in mine)
        end = max(e["ts"] + e["dur"] for e in mine)
        busy = sum(e["dur"] for e in mine if e["tid"] == 2)
        fractions.append(1 - busy / (2 * (end - begin)))
    return statistics.mean(fractions)


def torch_steps(python, rounds, steps):
    """(its first line, {weft schedule: (median, min, max) step seconds})
    from bench/torch_pipelining.py."""
    out = subprocess.run(
        [python, str(REPO / "bench" / "torch_pipelining.py"), "--rounds",
         str(rounds), "--steps", str(steps)],
        check=True, capture_output=True, text=True).stdout
    lines = out.strip().splitlines()
    found = {}
    for line in lines:
        m = re.match(r"(\S+) +([0-9.]+) s \[([0-9.]+)-([0-9.]+)\]", line)
        if m:
            found[m.group(1)] = tuple(float(v) for v in m.groups()[1:])
    return lines[0], {ours: found[theirs] for ours, theirs in
                      TORCH_NAMES.items() if theirs in found}


def summary(samples):
    t = statistics.median(samples)
    return t, f"{t:.3f} s [{min(samples):.3f}-{max(samples):.3f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--torch-python",
                        default=os.environ.get("TORCH_PYTHON"))
    args = parser.parse_args()
    build = args.build.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        model = export_gpt_medium(tmp)
        predicted, times, bubbles = {}, {s: [] for s in SCHEDULES}, {}
        # This machine's device model (weft-run --calibrate on 2 ranks),
        # for the calibrated prediction beside the default one.
        device = calibrate(build, tmp / "cpu.json")
        calibrated = {}
        for s in SCHEDULES:
            calibrated[s] = compile_plan(build, model, tmp / f"{s}.json", s,
                                         f"--device-model={device}")
            predicted[s] = compile_plan(build, model, tmp / f"{s}.json", s)
        for _ in range(args.rounds):
            for s in SCHEDULES:
                records = run_plan(build, tmp / f"{s}.json", 2,
                                   WARMUP + args.steps, tmp / "log.jsonl")
                times[s] += [r["seconds"] for r in records[WARMUP:]]
        for s in SCHEDULES:
            bubbles[s] = measured_bubble(build, tmp / f"{s}.json", tmp)
    print(f"weft, gpt medium ({CONFIG['layers']} layers, hidden "
          f"{CONFIG['hidden']}, seq {CONFIG['seq']}, batch {CONFIG['batch']}"
          f"), P=2, M={M}, AdamW, 1 thread per rank, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', 'native')}; median of "
          f"{args.rounds * args.steps} steps [min-max]")
    base, _ = summary(times["1f1b"])
    for s in SCHEDULES:
        t, text = summary(times[s])
        step, bubble = predicted[s]
        print(f"  {s:12s} {text}  {1 / t:6.3f} steps/s  vs 1f1b "
              f"{base / t:.2f}x  predicted {step:.3f} s (bubble {bubble:.3f})"
              f", calibrated {calibrated[s][0]:.3f} s ("
              f"{calibrated[s][0] / t:.2f}x measured)"
              f"  measured bubble {bubbles[s]:.3f}")
    if not args.torch_python:
        print("torch.distributed.pipelining: not run (no --torch-python or "
              "TORCH_PYTHON)")
        return
    header, theirs = torch_steps(args.torch_python, args.rounds, args.steps)
    print(header)
    for s in SCHEDULES:
        if s not in theirs:
            print(f"  {s:12s} torch: no such schedule")
            continue
        t, low, high = theirs[s]
        ours, _ = summary(times[s])
        print(f"  {s:12s} torch {TORCH_NAMES[s]}: {t:.3f} s [{low:.3f}-"
              f"{high:.3f}]  {1 / t:6.3f} steps/s; weft/torch steps/s "
              f"{t / ours:.2f}x")

if __name__ == "__main__":
    main()
