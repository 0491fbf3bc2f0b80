"""Benchmark (no GPU needed): how weftc's compile and its plan scale with
the model and the layout (issue 39).

Layouts: the GPT-3 175B, 530B and 1T rows of Korthikanti et al. 2022,
Table 3 (shared/papers; the selective-recompute paper): t = 8 and p = 8, 35
and 64 over 64, 280 and 512 GPUs, micro-batch 1, global batch 64, 280 and
512, so M = 64, 280 and 512 micro-batches. Each is the weights-free export
(weft.examples.gpt_weights_free, Table 2's shape, vocabulary 51200, one
shared causal mask) compiled with

    weftc MODEL --optimizer=adamw --tensor-parallel T --pipeline-parallel P
          --sequence-parallel --recompute=selective --microbatches M
          --precision bf16 -o plan.json

(without --sequence-parallel at T = 1).
For each: the compile's wall seconds and peak RSS (os.wait4's ru_maxrss of
the weftc process), the plan's bytes (every rank's, one file),
`weft-run --check`'s wall seconds and peak RSS (it loads the plan and
checks every rank), and one rank's load as its process loads it
(`weft-run --check-rank R`, R a middle stage's first rank: the seconds it
reports for loading, without the process's start, and its peak RSS). Each is printed beside issue 39's target. weftc and
the check run under a memory cap (--cap-gib, RLIMIT_AS, default 16) and a
time limit (--timeout, default 600 s): one that passes either is reported
as such ("over the 16 GiB cap after 41 s"), not waited out.

--growth prints how the same figures grow with M, T and P on a small GPT
(--small: layers, hidden, heads, seq, vocab), each against the first row:
the issue's "plan size grows with layers per stage and the schedule's
length, not with layers x micro-batches x ranks".

Units: seconds, GiB (2^30 bytes) of RSS, MB (10^6 bytes) of plan.

Usage: python3 bench/compile_scale.py BUILD_DIR [--layouts 175B,530B,1T]
           [--growth] [--small L,H,A,S,V] [--cap-gib G] [--timeout S]
           [--json OUT]
Errors: a weftc failure other than the cap or the timeout exits 1 with its
message.
"""

import argparse
import json
import os
import pathlib
import resource
import signal
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
import onnx  # noqa: E402

from weft.examples import gpt_weights_free  # noqa: E402

#: Korthikanti et al. 2022, Table 3: (GPUs, t, p, global batch) with
#: micro-batch 1, so M = the global batch (d = GPUs / (t p) = 1).
TABLE3 = {"175B": (64, 8, 8, 64), "530B": (280, 8, 35, 280),
          "1T": (512, 8, 64, 512)}
#: Issue 39's targets: (wall s, peak RSS GiB, plan MB).
TARGETS = {"175B": (10, 2, 64), "530B": (30, 4, 256), "1T": (60, 6, 512)}
VOCAB = 51200


class Measure:
    """One compile: wall seconds, peak RSS GiB, plan MB, weft-run --check's
    seconds and peak RSS GiB (every rank loaded and checked), and `limit`
    ("" or what stopped it)."""

    def __init__(self):
        self.wall = self.rss = self.plan = self.check = self.check_rss = None
        self.rank_load = self.rank_rss = None
        self.limit = ""

    def row(self):
        def show(v, fmt):
            return "-" if v is None else format(v, fmt)
        head = f"{show(self.wall, '8.1f')} s {show(self.rss, '7.2f')} GiB"
        if self.plan is None:
            body = " (no plan)"
        else:
            body = (f" {self.plan:9.1f} MB  check "
                    f"{show(self.check, '6.2f')} s "
                    f"{show(self.check_rss, '5.2f')} GiB  one rank's load "
                    f"{show(self.rank_load, '5.2f')} s "
                    f"{show(self.rank_rss, '5.2f')} GiB")
        return head + body + (f"  [{self.limit}]" if self.limit else "")


def export(path, layers, hidden, heads, seq, vocab, batch):
    model = gpt_weights_free.build(layers, hidden, heads, seq, vocab, batch,
                                   0.1, True)
    onnx.save(model, str(path))


def run_capped(cmd, cap_gib, timeout, stdout=False):
    """Runs `cmd` under an address-space cap (RLIMIT_AS) and a time limit;
    returns (wall s, peak RSS GiB, what stopped it or "", stderr, or stdout
    with `stdout`). A failure other than the cap or the limit exits with
    its message."""
    cap = int(cap_gib * 2 ** 30)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if stdout
                            else subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=limit)
    deadline = start + timeout
    stopped = ""
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            proc.send_signal(signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            stopped = f"over the {timeout:.0f} s limit"
            break
        time.sleep(0.05)
    wall = time.perf_counter() - start
    rss = usage.ru_maxrss * 1024 / 2 ** 30  # ru_maxrss: KiB on Linux
    stderr = proc.stderr.read().decode(errors="replace")
    text = proc.stdout.read().decode(errors="replace") if stdout else stderr
    if not stopped and os.waitstatus_to_exitcode(status) != 0:
        # Past RLIMIT_AS: std::bad_alloc, LLVM's "out of memory" abort, or
        # (a tiny cap) the loader failing to map a library.
        if any(sign in stderr.lower() for sign in (
                "bad_alloc", "out of memory", "cannot allocate memory",
                "failed to map segment")) or \
                os.waitstatus_to_exitcode(status) < 0:
            stopped = f"over the {cap_gib:g} GiB cap"
        else:
            sys.exit(f"{cmd[0]} failed: {' '.join(cmd)}\n{stderr.strip()}")
    return wall, rss, stopped, text


def compile_plan(build, model, plan, tensor, stages, microbatches, cap_gib,
                 timeout):
    """Runs weftc under the cap; returns a Measure (plan MB when written),
    with weft-run --check's seconds and RSS under the same cap."""
    m = Measure()
    cmd = [str(build / "bin" / "weftc"), str(model), "--optimizer=adamw",
           f"--tensor-parallel={tensor}", f"--pipeline-parallel={stages}",
           *(["--sequence-parallel"] if tensor > 1 else []),
           "--recompute=selective",
           f"--microbatches={microbatches}", "--precision=bf16",
           "-o", str(plan)]
    m.wall, m.rss, m.limit, _ = run_capped(cmd, cap_gib, timeout)
    if not m.limit:
        m.plan = plan.stat().st_size / 1e6
        check, m.check_rss, stopped, _ = run_capped(
            [str(build / "bin" / "weft-run"), str(plan), "--check"], cap_gib,
            timeout)
        if stopped:
            m.limit = "check " + stopped
        else:
            m.check = check
        # A middle stage's rank, loaded as its process loads it: the
        # seconds weft-run reports for loadPlan (not the process's start).
        rank = tensor * (stages // 2)
        _, m.rank_rss, stopped, out = run_capped(
            [str(build / "bin" / "weft-run"), str(plan), "--check-rank",
             str(rank)], cap_gib, timeout, stdout=True)
        if stopped:
            m.limit = (m.limit + "; " if m.limit else "") + "rank " + stopped
        else:
            m.rank_load = float(out.rsplit("loaded in ", 1)[1].split()[0])
    plan.unlink(missing_ok=True)
    return m


def layouts(build, names, work, cap_gib, timeout):
    results = {}
    print("Korthikanti et al. 2022, Table 3 layouts (weights-free GPT, bf16, "
          "AdamW, selective recompute + SP):")
    for name in names:
        gpus, t, p, batch = TABLE3[name]
        shape = gpt_weights_free.MEGATRON_SHAPES[name]
        model = work / f"gpt-{name}.onnx"
        export(model, shape["layers"], shape["hidden"], shape["heads"],
               shape["seq"], VOCAB, batch)
        m = compile_plan(build, model, work / "plan.json", t, p, batch,
                         cap_gib, timeout)
        wall, rss, size = TARGETS[name]
        print(f"  {name:5s} {gpus} ranks t={t} p={p} M={batch}: {m.row()}")
        print(f"        target: < {wall} s, < {rss} GiB, < {size} MB"
              + ("; one rank's load < 1 s" if name == "175B" else ""))
        results[name] = vars(m)
        model.unlink()
    return results


def growth(build, small, work, cap_gib, timeout, rows=None):
    """Compiles the small GPT at each (M, T, P) of `rows` (default: M 8 to
    64 at T = P = 2, then T and P varied at M = 8); returns the rows'
    figures."""
    layers, hidden, heads, seq, vocab = small
    # T must divide the heads (Megatron's split); P at most the layers.
    rows = rows or ([(m, 2, 2) for m in (8, 16, 32, 64)]
                    + [(8, t, 2) for t in (1, 4, 8) if heads % t == 0]
                    + [(8, 2, p) for p in (1, 4, 8) if p <= layers])
    print(f"Growth on a small GPT ({layers} layers, hidden {hidden}, "
          f"{heads} heads, seq {seq}, vocab {vocab}), against the first "
          f"row:")
    results, base = [], None
    for microbatches, t, p in rows:
        model = work / "small.onnx"
        export(model, layers, hidden, heads, seq, vocab, microbatches)
        m = compile_plan(build, model, work / "plan.json", t, p, microbatches,
                         cap_gib, timeout)
        base = base or m
        ratio = ""
        if m.plan and base.plan:
            ratio = (f"  x{m.wall / base.wall:5.2f} wall, "
                     f"x{m.rss / base.rss:5.2f} RSS, "
                     f"x{m.plan / base.plan:6.2f} plan")
        print(f"  M={microbatches:3d} T={t} P={p}: {m.row()}{ratio}")
        results.append({"M": microbatches, "T": t, "P": p, **vars(m)})
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=pathlib.Path)
    parser.add_argument("--layouts", default="175B,530B,1T")
    parser.add_argument("--growth", action="store_true")
    parser.add_argument("--small", default="8,256,8,128,1024",
                        help="layers,hidden,heads,seq,vocab for --growth")
    parser.add_argument("--cap-gib", type=float, default=16)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        names = [n for n in args.layouts.split(",") if n]
        unknown = [n for n in names if n not in TABLE3]
        if unknown:
            parser.error(f"--layouts: {unknown} not in {list(TABLE3)}")
        if names:
            out["layouts"] = layouts(args.build, names, work, args.cap_gib,
                                     args.timeout)
        if args.growth:
            small = [int(v) for v in args.small.split(",")]
            out["growth"] = growth(args.build, small, work, args.cap_gib,
                                   args.timeout)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
