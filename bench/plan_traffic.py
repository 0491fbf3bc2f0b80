"""Per-kernel instruction counts and memory traffic of a weft plan.

For each kernel of rank R's instructions (default 0): how many run per
step and the bytes they read and write, the sum of their operands' and
results' buffer sizes (docs/plan-format.md: `buffers[i].bytes`). GEMMs and
fused attention are bound by arithmetic on a GPU; every other kernel is
bound by memory traffic, so the sum of the rest over a bandwidth is a
floor on their time: printed for --bandwidth (bytes/s; default 2.5e12,
about what an H100's HBM3 sustains). These are figures read from a plan,
not measurements: a buffer one instruction names twice counts once (the
packed q, k and v of a "bs3hd" attention are one read of it), two views of
one buffer count twice, and a kernel that keeps a tile in registers or
cache reads it less. Two kernels read less than they name: a gather_grad
accumulating into a table (weft-fold-gather-grad-add) reads and writes
only the rows its indices name, counted as min(rows, indices) of them;
an AdamW or SGD update with an f32 master copy (an optimizer_state entry
named `<param>.master`) reads the master, not the 16-bit parameter it
then writes, so that parameter counts once, as written.

    python3 bench/plan_traffic.py PLAN.json [--rank R] [--bandwidth B]
        [--json OUT] [--weft-run PATH]

PLAN.json is a plan (its rank views read with `weft-run --view`, default
build/bin/weft-run) or views already (`weft-run --view`, `weftc
--emit=plan-json`: format "weft-plan-view"). The functions below take the
views: {"ranks": [{rank, buffers, instructions, ...}, ...]}.

Raises SystemExit naming the plan when it has no rank R.
"""
import argparse
import collections
import json
import math
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft import plan as weft_plan  # noqa: E402

# Kernels bound by arithmetic rather than memory traffic on a GPU.
COMPUTE_BOUND = ("gemm", "matmul", "wgrad_bias", "gemm_gelu_tanh",
                 "gemm_gelu_tanh_grad", "attention", "attention_grad",
                 "conv", "conv_transpose")


def traffic(plan, rank=0):
    """{kernel: (count, bytes)} over rank `rank`'s instructions, in bytes
    read plus written per step; instructions without a kernel (transfers,
    collectives) are keyed by their `op`."""
    ranks = [r for r in plan["ranks"] if r["rank"] == rank]
    if not ranks:
        raise SystemExit(f"the plan has no rank {rank}")
    records = {b["id"]: b for b in ranks[0]["buffers"]}
    buffers = {i: b["bytes"] for i, b in records.items()}
    masters = {s["buffer"] for s in ranks[0].get("optimizer_state", [])
               if s["name"].endswith(".master")}
    out = collections.defaultdict(lambda: [0, 0])
    for inst in ranks[0]["instructions"]:
        key = inst.get("kernel", inst.get("op"))
        out[key][0] += 1
        named = set(inst.get("inputs", []) + inst.get("outputs", []))
        if key == "gather_grad" and len(inst["inputs"]) == 3:
            named -= {inst["inputs"][2], *inst["outputs"]}
            out[key][1] += rows_touched(inst, records)
        if key in GROUPED and masters.intersection(inst["inputs"]):
            named.discard(inst["inputs"][0])
        out[key][1] += sum(buffers[b] for b in named)
    return {k: tuple(v) for k, v in out.items()}


def rows_touched(inst, records):
    """Bytes an accumulating gather_grad reads and writes of its table
    (input 2, whose bytes output 0 is): each row its indices (input 1)
    name, read and written once, at most min(rows, indices) of them."""
    table = records[inst["inputs"][2]]
    rows = table["shape"][inst["attrs"]["axis"]]
    indices = math.prod(records[inst["inputs"][1]]["shape"])
    return 2 * table["bytes"] * min(rows, indices) // max(rows, 1)


# Kernels the CUDA backend launches a run of consecutive instructions of
# as one (Backend::launchesGrouped: the multi-tensor AdamW and SGD).
GROUPED = ("adamw", "sgd")


def launches(plan, rank=0):
    """Kernel instructions of rank `rank` as the CUDA backend launches them
    (an instruction of a fused kernel may be a few CUDA kernels):
    each run of consecutive instructions of a GROUPED kernel counts once."""
    ranks = [r for r in plan["ranks"] if r["rank"] == rank]
    if not ranks:
        raise SystemExit(f"the plan has no rank {rank}")
    count, previous = 0, None
    for inst in ranks[0]["instructions"]:
        kernel = inst.get("kernel")
        if kernel and not (kernel == previous and kernel in GROUPED):
            count += 1
        previous = kernel
    return count


def views(path, weft_run, rank):
    """The views in `path`, or rank `rank`'s view of the plan in `path`
    (programs shared by ranks, read by `weft_run --view`)."""
    plan = json.loads(path.read_text())
    if plan.get("format") == "weft-plan-view":
        return plan
    try:
        return weft_plan.view(path, weft_run, rank)
    except RuntimeError as e:  # weft-run's line, e.g. no such rank
        raise SystemExit(str(e))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("plan", type=pathlib.Path)
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--bandwidth", type=float, default=2.5e12)
    p.add_argument("--json", type=pathlib.Path)
    p.add_argument("--weft-run", type=pathlib.Path,
                   default=REPO / "build" / "bin" / "weft-run")
    args = p.parse_args(argv)
    plan = views(args.plan, args.weft_run, args.rank)
    rows = traffic(plan, args.rank)
    rank = next(r for r in plan["ranks"] if r["rank"] == args.rank)
    memory_bound = sum(b for k, (_, b) in rows.items()
                       if k not in COMPUTE_BOUND)
    for kernel, (count, nbytes) in sorted(rows.items(),
                                          key=lambda kv: -kv[1][1]):
        print(f"{kernel:28s} {count:6d} x  {nbytes / 1e9:8.2f} GB")
    print(f"instructions: {sum(c for c, _ in rows.values())} "
          f"({launches(plan, args.rank)} on a GPU, where a run of AdamW "
          f"or SGD updates launches as one); arena {rank['arena_bytes']} "
          f"bytes")
    print(f"memory-bound kernels: {memory_bound / 1e9:.2f} GB per step, at "
          f"least {memory_bound / args.bandwidth * 1e3:.2f} ms at "
          f"{args.bandwidth:.3g} B/s")
    if args.json:
        args.json.write_text(json.dumps(
            {"kernels": {k: {"count": c, "bytes": b}
                         for k, (c, b) in rows.items()},
             "memory_bound_bytes": memory_bound,
             "gpu_launches": launches(plan, args.rank),
             "arena_bytes": rank["arena_bytes"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
