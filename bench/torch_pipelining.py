"""Benchmark: PyTorch's torch.distributed.pipelining on CPU (gloo) for the
medium gpt example, to compare with weft's figures (bench/pipeline.py).

P = 2 ranks x 1 intra-op thread, M = 8 micro-batches of 1 (global batch 8,
as weft); a step is optimizer.zero_grad, schedule.step, AdamW(lr=1e-3).step.
  gpipe, 1f1b        one stage per rank: [emb, b0-b2] | [b3-b5, ln_f, head]
  interleaved1f1b,   4 stages, stage s on rank s % 2, blocks per stage from
  interleavedzb      --split4 (default 2,2,1,1: [emb,b0,b1] [b2,b3] [b4]
                     [b5,ln_f,head])
  zbv                the same 4 stages in a V: rank 0 runs 0 and 3, rank 1
                     runs 1 and 2
Stages cannot share a parameter, so the LM head (tied to the token
embedding in gpt.py) is untied: it starts as a copy of the embedding.
The loss_fn returns a micro-batch's mean cross-entropy / M, so gradients
are those of the batch mean as in gpt.py (torch sums micro-batch grads).

Per round, each schedule (fresh model) runs 2 warm-up and --steps timed
steps, barrier before and after each, wall time on rank 0; --rounds rounds
so that machine drift hits all alike. Prints median step seconds [min-max],
steps/s, and the losses of steps 1 and 2, which all schedules should share
with an unpipelined run of the untied model (step 1 ~ ln 4096 = 8.32).

Usage: /tmp/venv-torch/bin/python bench/torch_pipelining.py [--steps 8]
           [--rounds 2] [--schedules gpipe,1f1b,...] [--split4 2,2,1,1]
Needs torch >= 2.5 (2.6.0 tested; system torch 1.13 lacks pipelining):
  python3 -m venv --system-site-packages DIR && DIR/bin/pip install torch==2.6.0
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import datetime
import pathlib
import socket
import statistics
import sys
import time
import types

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import pipelining
from torch.distributed.pipelining import schedules as _schedules

PYTHON = pathlib.Path(__file__).resolve().parent.parent / "python"
RANKS, MICROBATCHES, WARMUP = 2, 8, 2
SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
             "interleaved1f1b": "ScheduleInterleaved1F1B",
             "interleavedzb": "ScheduleInterleavedZeroBubble",
             "zbv": "ScheduleZBVZeroBubble"}
_SELF = ([], [])  # this rank's pending sends to / receives from itself


class _AllWorks(list):
    def wait(self):
        for work in self:
            work.wait()
        return True


def _batch_p2p(p2p_ops, desc=None):
    """schedules._batch_p2p made to work on gloo. torch 2.6's keeps only the
    last Work of batch_isend_irecv (NCCL coalesces a batch into one; gloo
    returns one per op), so the other sends go unwaited and 1F1B hangs
    (pytorch issue 132644, fixed as here by PR 152938). And ZBV passes
    activations between a rank's own stages 1 and 2 by P2P to itself, which
    NCCL allows and gloo does not: such ops are paired here in posting
    order, as NCCL pairs them, and copied."""
    me, remote = dist.get_rank(), []
    for op in p2p_ops:
        if op.peer != me:
            remote.append(op)
        else:
            _SELF[op.op is not dist.isend].append(op.tensor)
    while _SELF[0] and _SELF[1]:
        with torch.no_grad():
            _SELF[1].pop(0).copy_(_SELF[0].pop(0))
    works = dist.batch_isend_irecv(remote) if remote else []
    return _AllWorks(works) if p2p_ops else None


if not hasattr(_schedules, "_wait_batch_p2p"):  # torch without PR 152938
    _schedules._batch_p2p = _batch_p2p


def load_gpt():
    """weft/examples/gpt.py. Its `common` imports weft.export, which needs
    onnx; a stub stands in when that fails (nothing here exports)."""
    sys.path.insert(0, str(PYTHON))
    try:
        import weft.export  # noqa: F401
    except ImportError:
        sys.modules["weft.export"] = types.SimpleNamespace(export=None)
    from weft.examples import gpt
    return gpt


class Chunk(nn.Module):
    """Consecutive pieces of gpt.GPT: the embeddings if `first`, `blocks`,
    ln_f and an untied LM head if `last`."""

    def __init__(self, model, blocks, first, last):
        super().__init__()
        self.first, self.last = first, last
        if first:
            self.wte, self.wpe = model.wte, model.wpe
            self.register_buffer("positions", model.positions)
        self.blocks = nn.ModuleList(model.blocks[i] for i in blocks)
        if last:
            self.ln_f = model.ln_f
            vocab, hidden = model.wte.weight.shape
            self.head = nn.Linear(hidden, vocab, bias=False)
            with torch.no_grad():
                self.head.weight.copy_(model.wte.weight)

    def forward(self, x):
        if self.first:
            x = self.wte(x) + self.wpe(self.positions[:x.shape[1]])
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x)) if self.last else x


def build_schedule(name, rank, config, split4):
    """(schedule, this rank's stage modules, has stage 0, has the last)."""
    model, _ = load_gpt().build(**config)
    half = config["layers"] // 2
    if name in ("gpipe", "1f1b"):
        sizes, placement = [half, config["layers"] - half], [0, 1]
    else:
        sizes = split4
        placement = [0, 1, 1, 0] if name == "zbv" else [0, 1, 0, 1]
    n = len(sizes)
    starts = [sum(sizes[:s]) for s in range(n)]
    local = [s for s in range(n) if placement[s] == rank]
    modules = [Chunk(model, range(starts[s], starts[s] + sizes[s]), s == 0,
                     s == n - 1) for s in local]
    stages = [pipelining.PipelineStage(m, s, n, torch.device("cpu"))
              for m, s in zip(modules, local)]

    def loss_fn(logits, targets):
        return F.cross_entropy(logits.flatten(0, 1),
                               targets.flatten()) / MICROBATCHES

    extra = {"stage_index_to_group_rank": dict(enumerate(placement))
             } if name == "zbv" else {}  # the others place stage s on s % P
    schedule = getattr(pipelining, SCHEDULES[name])(
        stages[0] if n == RANKS else stages, MICROBATCHES, loss_fn=loss_fn,
        **extra)
    return schedule, modules, 0 in local, n - 1 in local


def run_schedule(name, rank, config, split4, steps, batch):
    """Rank 0's seconds of the timed steps; the losses of steps 1 and 2."""
    _SELF[0].clear(), _SELF[1].clear()
    schedule, modules, first, last = build_schedule(name, rank, config,
                                                    split4)
    optimizer = torch.optim.AdamW(
        [p for m in modules for p in m.parameters()], lr=1e-3)
    args = batch[:1] if first else ()
    kwargs = {"target": batch[1]} if last else {}
    seconds, first_losses = [], []
    for step in range(WARMUP + steps):
        losses = [] if last else None
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad()
        schedule.step(*args, losses=losses, **kwargs)
        optimizer.step()
        dist.barrier()
        seconds.append(time.perf_counter() - start)
        if step < 2:  # the last stage's rank has the loss, the other adds 0
            value = torch.tensor(sum(losses).item() if last else 0.0,
                                 dtype=torch.float64)
            dist.all_reduce(value)
            first_losses.append(value.item())
    return seconds[WARMUP:], first_losses


def worker(rank, port, args, config, split4):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=RANKS,
                            timeout=datetime.timedelta(seconds=120))
    _, batch = load_gpt().build(**config)
    times = {name: [] for name in args.schedules}
    losses, failed = {}, {}
    for _ in range(args.rounds):
        for name in args.schedules:
            if name in failed:
                continue
            try:
                seconds, first = run_schedule(name, rank, config, split4,
                                              args.steps, batch)
                times[name] += seconds
                losses.setdefault(name, first)
            except Exception as error:  # a hang ends at the gloo timeout
                failed[name] = f"{type(error).__name__}: {error}"[:300]
    if rank == 0:
        for name in args.schedules:
            if name in failed:
                print(f"{name:16s} FAILED ({failed[name]})", flush=True)
                continue
            t = times[name]
            med = statistics.median(t)
            print(f"{name:16s} {med:.3f} s [{min(t):.3f}-{max(t):.3f}]  "
                  f"{1 / med:.2f} steps/s  loss steps 1, 2: "
                  f"{losses[name][0]:.6f}, {losses[name][1]:.6f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--schedules", default=",".join(SCHEDULES))
    parser.add_argument("--split4", default="2,2,1,1",
                        help="blocks of each stage of the 4-stage schedules")
    args = parser.parse_args()
    args.schedules = args.schedules.split(",")
    for name in args.schedules:
        if name not in SCHEDULES:
            parser.error(f"unknown schedule {name}: not in {list(SCHEDULES)}")
        if not hasattr(pipelining, SCHEDULES[name]):
            print(f"note: skipping {name}, absent from this torch")
    args.schedules = [n for n in args.schedules
                      if hasattr(pipelining, SCHEDULES[n])]
    gpt = load_gpt()
    config = dict(gpt.CONFIGS["medium"])
    split4 = [int(v) for v in args.split4.split(",")]
    if len(split4) != 4 or sum(split4) != config["layers"] or min(split4) < 1:
        parser.error(f"--split4: 4 sizes > 0 summing to {config['layers']}")
    half = config["layers"] // 2
    print(f"torch {torch.__version__}, backend gloo, {RANKS} ranks x 1 "
          f"thread; gpt medium {config}; M={MICROBATCHES} micro-batches of "
          f"{config['batch'] // MICROBATCHES}; AdamW lr=1e-3; LM head UNTIED "
          f"from the embedding (a copy); blocks per stage: 2 stages "
          f"{half}+{config['layers'] - half}, 4 stages "
          f"{'+'.join(map(str, split4))} (embeddings in the first, ln_f + "
          f"head in the last); {WARMUP} warm-up + {args.steps} timed steps x "
          f"{args.rounds} rounds", flush=True)
    model, (tokens, targets) = gpt.build(**config)
    whole = Chunk(model, range(config["layers"]), True, True)
    optimizer = torch.optim.AdamW(whole.parameters(), lr=1e-3)
    reference = []
    for _ in range(2):  # unpipelined, untied: the losses of steps 1 and 2
        optimizer.zero_grad()
        loss = F.cross_entropy(whole(tokens).flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        reference.append(loss.item())
    print(f"{'unpipelined':16s} loss steps 1, 2: {reference[0]:.6f}, "
          f"{reference[1]:.6f}", flush=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(port, args, config, split4), nprocs=RANKS)


if __name__ == "__main__":
    main()
