"""Where a weft-run step's time goes, kernel by kernel, from its --trace.

For one step of one rank's trace (default: rank 0's last traced step):
each kernel's instruction count, summed duration, share of the step's
kernel time, achieved memory rate (the bytes the trace records each
instruction reading and writing, per second of its duration) and
arithmetic rate (its FLOPs per second). These are measurements of the
traced run: on a GPU the durations are the device's, taken with events
around each instruction; on a CPU, the host's. Recording the events costs
a little, so step times are taken without --trace.

    python3 bench/trace_kernels.py TRACE.json [--rank R] [--step S]
        [--top K] [--json OUT]

Raises SystemExit naming the rank or step the trace has no kernels of.
"""
import argparse
import collections
import json
import pathlib
import sys


def breakdown(trace, rank=0, step=None):
    """(step, rows) for rank `rank`'s kernels in `step` (default its last):
    rows of {kernel, count, seconds, bytes, flops}, the longest first."""
    kernels = [e for e in trace["traceEvents"]
               if e.get("cat") == "kernel" and e.get("pid") == rank]
    if not kernels:
        raise SystemExit(f"the trace has no kernels of rank {rank}")
    steps = {e["args"]["step"] for e in kernels}
    step = max(steps) if step is None else step
    if step not in steps:
        raise SystemExit(f"the trace has no kernels of rank {rank} in step "
                         f"{step} (steps {min(steps)} to {max(steps)})")
    totals = collections.defaultdict(lambda: [0, 0.0, 0, 0])
    for e in kernels:
        if e["args"]["step"] != step:
            continue
        row = totals[e["name"]]
        row[0] += 1
        row[1] += e["dur"]  # the trace's microseconds
        row[2] += e["args"].get("bytes", 0)
        row[3] += e["args"].get("flops", 0)
    rows = [dict(kernel=k, count=c, seconds=us / 1e6, bytes=b, flops=f)
            for k, (c, us, b, f) in totals.items()]
    rows.sort(key=lambda r: -r["seconds"])
    return step, rows


def lines(rows, top=None):
    """The table: one line per kernel (the `top` longest, then the rest
    summed), then the total."""
    total = sum(r["seconds"] for r in rows) or 1.0
    shown = rows if top is None else rows[:top]
    out = []
    for r in shown:
        s = r["seconds"] or float("inf")
        out.append(f"{r['kernel']:30s} {r['count']:5d} x "
                   f"{r['seconds'] * 1e3:9.3f} ms {r['seconds'] / total:6.1%}"
                   f"  {r['bytes'] / s / 1e9:8.1f} GB/s "
                   f"{r['flops'] / s / 1e12:7.1f} TFLOP/s")
    rest = rows[len(shown):]
    if rest:
        seconds = sum(r["seconds"] for r in rest)
        name = f"{len(rest)} other kernels"
        out.append(f"{name:30s} {sum(r['count'] for r in rest):5d} x "
                   f"{seconds * 1e3:9.3f} ms {seconds / total:6.1%}")
    out.append(f"kernel time {total * 1e3:.3f} ms in "
               f"{sum(r['count'] for r in rows)} instructions")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=pathlib.Path)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--step", type=int)
    p.add_argument("--top", type=int)
    p.add_argument("--json", type=pathlib.Path)
    args = p.parse_args(argv)
    step, rows = breakdown(json.loads(args.trace.read_text()), args.rank,
                           args.step)
    print(f"rank {args.rank}, step {step}:")
    print("\n".join(lines(rows, args.top)))
    if args.json:
        args.json.write_text(json.dumps(dict(rank=args.rank, step=step,
                                             kernels=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
