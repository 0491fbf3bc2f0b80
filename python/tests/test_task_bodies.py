"""Task bodies (issue 39; docs/plan-format.md, "Task bodies"): weftc writes
a program's micro-batch work once per distinct task instance and the order
as (body, micro-batch) pairs, over a memory plan whose micro-batch slots
make the micro-batches' buffers alike.

The oracle is the same compile written explicitly (`weftc --explicit-plan`,
every micro-batch's instructions unrolled, the same memory plan): each
rank's view of the task form (weft-run expands the bodies) must be the
explicit plan's instruction for instruction, buffer for buffer (ids may be
renumbered; views of one accumulator's bytes of one type are one buffer),
and training both for three steps on their ranks must give bit-identical
losses and measured peaks. A mutated body or task order is refused at load,
as the loader checks every task instance."""

import json
import os

import pytest

from conftest import run, tool
from weft import plan as weft_plan
from weft.oracle import mpirun

LAYOUTS = {
    # id: (model, weftc flags, ranks)
    "gpt-P2-1f1b-M4": ("gpt", ["--pipeline-parallel=2", "--microbatches=4"],
                       2),
    "gpt-P2-gpipe-M4": ("gpt", ["--pipeline-parallel=2", "--microbatches=4",
                                "--schedule=gpipe"], 2),
    "gpt-T2-SP-selective-bf16-M4": (
        "gpt", ["--tensor-parallel=2", "--sequence-parallel",
                "--recompute=selective", "--precision=bf16",
                "--microbatches=4"], 2),
    "gpt-D2-zero2-M4": ("gpt", ["--data-parallel=2", "--zero-stage=2",
                                "--microbatches=4"], 2),
    "gpt-P2-full-recompute-M4": ("gpt", ["--pipeline-parallel=2",
                                         "--recompute=full",
                                         "--microbatches=4"], 2),
    "resnet-P2-M2": ("resnet", ["--pipeline-parallel=2", "--microbatches=2",
                                "--optimizer=sgd"], 2),
}


def compile_both(weftc, models_dir, tmp_path, model, flags):
    plans = {}
    for form, extra in (("tasks", []), ("explicit", ["--explicit-plan"])):
        path = tmp_path / f"{form}.json"
        result = run([weftc, str(models_dir / f"{model}.onnx"), *flags,
                      *extra, "-o", str(path)])
        assert result.returncode == 0, result.stderr
        plans[form] = path
    return plans


def assert_same_program(tasks, explicit):
    """`tasks` (a rank view of the task form) runs what `explicit` (the
    explicit form's) runs: the same instructions in the same order over
    buffers of the same dtype, shape, offset and kind."""
    assert len(tasks["instructions"]) == len(explicit["instructions"])
    by_id = {b["id"]: b for b in tasks["buffers"]}
    explicit_by_id = {b["id"]: b for b in explicit["buffers"]}
    seen = {}

    def same_buffer(mine, theirs):
        if theirs in seen:
            assert seen[theirs] == mine, (theirs, seen[theirs], mine)
            return
        seen[theirs] = mine
        a, b = by_id[mine], explicit_by_id[theirs]
        for key in ("dtype", "shape", "offset", "bytes"):
            assert a[key] == b[key], (key, a, b)

    for i, (a, b) in enumerate(zip(tasks["instructions"],
                                   explicit["instructions"])):
        for key in set(a) | set(b):
            if key in ("inputs", "outputs"):
                assert len(a[key]) == len(b[key]), (i, a, b)
                for mine, theirs in zip(a[key], b[key]):
                    same_buffer(mine, theirs)
            else:
                assert a.get(key) == b.get(key), (i, key, a, b)
    for key in ("params", "optimizer_state", "state", "inputs", "constants"):
        assert len(tasks[key]) == len(explicit[key]), key
    assert tasks["arena_bytes"] == explicit["arena_bytes"]


def train(plan, ranks, log):
    result = run(mpirun(ranks) + [tool("weft-run"), str(plan), "--steps", "3",
                                  "--log-json", str(log)],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_task_form_runs_what_the_explicit_form_runs(layout, weftc, models_dir,
                                                     tmp_path):
    model, flags, ranks = LAYOUTS[layout]
    plans = compile_both(weftc, models_dir, tmp_path, model, flags)
    written = weft_plan.load(plans["tasks"])
    programs = written["programs"]
    assert any("tasks" in p for p in programs), "no program has task bodies"
    for p in programs:
        if "tasks" in p:
            # Every body is some task's; a program of two or more
            # micro-batches is in the task form even where nothing repeats.
            assert len(p["bodies"]) <= len(p["tasks"])
            assert "instructions" not in p
    # Bodies repeat: fewer bodies than task instances over the plan.
    assert (sum(len(p["bodies"]) for p in programs if "tasks" in p)
            < sum(len(p["tasks"]) for p in programs if "tasks" in p))
    assert plans["tasks"].stat().st_size < plans["explicit"].stat().st_size
    views = {form: weft_plan.view(path, tool("weft-run"))["ranks"]
             for form, path in plans.items()}
    assert len(views["tasks"]) == len(views["explicit"]) == ranks
    for mine, theirs in zip(views["tasks"], views["explicit"]):
        assert_same_program(mine, theirs)
    logs = {form: train(path, ranks, tmp_path / f"{form}.jsonl")
            for form, path in plans.items()}
    for a, b in zip(logs["tasks"], logs["explicit"]):
        assert a["loss"] == b["loss"]
        assert a["rank_peak_bytes"] == b["rank_peak_bytes"]
        assert a["rank_peak_bytes"] == a["rank_arena_bytes"]


def test_mutated_bodies_and_orders_are_refused(weftc, models_dir, tmp_path):
    """The loader checks the expanded instances: a body instruction reading
    a buffer of the wrong shape, and a task order that posts a micro-batch's
    backward receive after its wait, are refused naming the body or the
    order; the unmutated plan loads."""
    model, flags, _ = LAYOUTS["gpt-P2-1f1b-M4"]
    plans = compile_both(weftc, models_dir, tmp_path, model, flags)
    check = [tool("weft-run"), "--check"]
    assert run(check[:1] + [str(plans["tasks"])] + check[1:]).returncode == 0
    plan = weft_plan.load(plans["tasks"])
    program = plan["programs"][0]
    # The first input of a matmul of the most-used body replaced by a
    # program buffer of another shape.
    uses = [0] * len(program["bodies"])
    for task in program["tasks"]:
        uses[task["body"]] += 1
    used = uses.index(max(uses))
    frame = program["frames"][program["micro_batch_frames"][next(
        t["micro_batch"] for t in program["tasks"] if t["body"] == used)]]
    buffers = program["buffers"]

    def shape(i):
        return buffers[i]["shape"] if i < len(buffers) else \
            frame[i - len(buffers)]["shape"]

    inst = next(inst for inst in program["bodies"][used]["instructions"]
                if inst.get("kernel") == "matmul")
    inst["inputs"][0] = next(i for i, b in enumerate(buffers)
                             if b["shape"] != shape(inst["inputs"][0])
                             and b["dtype"] == "f32" and len(b["shape"]) == 2)
    mutated = tmp_path / "body.json"
    weft_plan.save(plan, mutated)
    result = run([tool("weft-run"), str(mutated), "--check"])
    assert result.returncode != 0
    assert "bodies[" in result.stderr and "micro-batch" in result.stderr, \
        result.stderr
    # The first two tasks swapped: stage 0 would wait for what it has not
    # computed, or post its sends out of their order.
    plan = weft_plan.load(plans["tasks"])
    tasks = plan["programs"][1]["tasks"]
    tasks[0], tasks[-1] = tasks[-1], tasks[0]
    weft_plan.save(plan, mutated)
    result = run([tool("weft-run"), str(mutated), "--check"])
    assert result.returncode != 0 and "programs[1]" in result.stderr, \
        result.stderr


def check_rank(plan, rank):
    """`weft-run PLAN --check-rank RANK`: the plan loaded as that rank's
    process loads it."""
    return run([tool("weft-run"), str(plan), "--check-rank", str(rank)])


def test_a_rank_loads_its_program_and_every_ranks_transfers(
        weftc, models_dir, tmp_path):
    """A process loads its rank's program in full and only the transfers of
    the others (loadPlan's onlyRank; the training runs above load that
    way): a mutated body of another rank's program is that rank's to
    refuse, a transfer of another rank that no longer pairs with its peer
    is everyone's; a tensor group whose members run different programs is
    loaded in full."""
    model, flags, _ = LAYOUTS["gpt-P2-1f1b-M4"]
    plans = compile_both(weftc, models_dir, tmp_path, model, flags)
    views = weft_plan.view(plans["tasks"], tool("weft-run"))["ranks"]
    for rank in (0, 1):
        result = check_rank(plans["tasks"], rank)
        assert result.returncode == 0, result.stderr
        assert (f"rank {rank} of 2 rank(s) (every rank's transfers), "
                f"{len(views[rank]['instructions'])} instruction(s)"
                in result.stdout), result.stdout

    # Program 0's most-used matmul reads a buffer of another shape.
    plan = weft_plan.load(plans["tasks"])
    program = plan["programs"][0]
    body = next(b for b in program["bodies"]
                if any(i.get("kernel") == "matmul" for i in b["instructions"]))
    inst = next(i for i in body["instructions"] if i.get("kernel") == "matmul")
    inst["inputs"][0] = next(
        i for i, b in enumerate(program["buffers"])
        if b["dtype"] == "f32" and len(b["shape"]) == 1)
    mutated = tmp_path / "body.json"
    weft_plan.save(plan, mutated)
    result = check_rank(mutated, 0)
    assert result.returncode != 0 and "programs[0].bodies[" in result.stderr, \
        result.stderr
    assert check_rank(mutated, 1).returncode == 0

    # A receive of program 1 whose tag no sender posts.
    plan = weft_plan.load(plans["tasks"])
    program = plan["programs"][1]
    body = next(b for b in program["bodies"]
                if any(i["op"] == "irecv" for i in b["instructions"]))
    tag = next(i["tag"] for i in body["instructions"] if i["op"] == "irecv")
    for inst in body["instructions"]:  # the irecv and its wait_recv
        if inst["op"] in ("irecv", "wait_recv") and inst["tag"] == tag:
            if isinstance(tag, dict):
                inst["tag"] = {**tag, "plus": tag.get("plus", 0) + 10**9}
            else:
                inst["tag"] = tag + 10**9
    weft_plan.save(plan, mutated)
    for rank in (0, 1):
        result = check_rank(mutated, rank)
        assert result.returncode != 0, result.stdout
        # Either end of the broken pair may be named first.
        assert "no irecv of tag 0 on rank 1" in result.stderr or \
            "no isend of tag" in result.stderr, result.stderr

    # Two tensor-parallel ranks on copies of one program: loaded in full.
    model, flags, _ = LAYOUTS["gpt-T2-SP-selective-bf16-M4"]
    plans = compile_both(weftc, models_dir, tmp_path, model, flags)
    result = check_rank(plans["tasks"], 1)
    assert result.returncode == 0 and "rank 1 of 2 rank(s)" in result.stdout, \
        result.stdout + result.stderr
    plan = weft_plan.load(plans["tasks"])
    plan["programs"].append(plan["programs"][0])
    plan["rank_programs"][1] = 1
    weft_plan.save(plan, mutated)
    result = check_rank(mutated, 1)
    assert result.returncode == 0, result.stderr
    assert "weft-run: " in result.stdout and ": 2 rank(s)," in result.stdout, \
        result.stdout
