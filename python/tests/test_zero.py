"""The sharded optimizer (issue 14): ZeRO stages 1, 2 and 3 over the data
axis (Rajbhandari et al., "ZeRO", SC 2020) train exactly like the
replicated optimizer (stage 0), and --estimate-memory's model states per
rank are the paper's formulas.

`gpt` (4 layers, hidden 128), D in {2, 4}, alone, with P = 2 stages and
with T = 2 tensor-parallel ranks, M = 2 micro-batches per replica: 10
AdamW steps of every stage equal stage 0's losses within 1e-6 (the sums
over replicas and micro-batches are reordered, nothing else); measured
peak = planned arena on every rank; the planned arena shrinks with each
stage that shards something the plan keeps.
"""

import json

import jsonschema
import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import BUILD, run
from weft.examples import gpt
from test_data_parallel import CONFIG, LAYOUTS, compile_plan, data_dir
from test_tensor_parallel import train
from test_weft_run import SCHEMA

__all__ = ["data_dir"]  # the fixture, shared with test_data_parallel

# Each stage's collectives over the data axis (the loss's all-reduce in
# all; stage 1 keeps the default 64 KiB threshold, so LayerNorm weights and
# biases stay replicated and all-reduced).
STAGES = {
    0: ([], {"all_reduce"}),
    1: ([], {"all_reduce", "reduce_scatter", "all_gather"}),
    2: (["--optimizer-shard-threshold=0"],
        {"all_reduce", "reduce_scatter", "all_gather"}),
    3: (["--optimizer-shard-threshold=0"],
        {"all_reduce", "reduce_scatter", "all_gather"}),
    # MindSpore's schedule: parameters gathered at the next step's start.
    "1p": (["--zero-prefetch"],
           {"all_reduce", "reduce_scatter", "all_gather"}),
    "2p": (["--zero-prefetch", "--optimizer-shard-threshold=0"],
           {"all_reduce", "reduce_scatter", "all_gather"}),
}


def valid(path):
    """Checks the plan as written (programs, not the views that
    compile_plan returns) against the schema."""
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def data_ops(plan_json):
    return {i["op"] for r in plan_json["ranks"] for i in r["instructions"]
            if i.get("axis") == "data"}


@pytest.mark.parametrize("data,stages,tensor", LAYOUTS,
                         ids=[f"D{d}-P{p}-T{t}" for d, p, t in LAYOUTS])
def test_zero_stages_equal_stage_0(data, stages, tensor, weftc, data_dir,
                                   tmp_path):
    losses, arenas = {}, {}
    for zero, (flags, ops) in STAGES.items():
        plan = tmp_path / f"zero{zero}.json"
        plan_json = compile_plan(weftc, plan, f"--data-parallel={data}",
                                 f"--pipeline-parallel={stages}",
                                 f"--tensor-parallel={tensor}",
                                 f"--zero-stage={str(zero)[0]}", *flags)
        assert data_ops(plan_json) == ops
        records = train(plan, data * stages * tensor, data_dir,
                        tmp_path / f"zero{zero}.jsonl")
        losses[zero] = [r["loss"] for r in records]
        arenas[zero] = records[-1]["rank_arena_bytes"]
        for r in records:
            assert r["rank_peak_bytes"] == r["rank_arena_bytes"]
    for zero in (1, 2, 3, "1p", "2p"):
        assert losses[zero] == pytest.approx(losses[0], rel=1e-6), zero
    # Stage 1 shards the optimizer state, stage 3 the parameters (stage 2's
    # gradient pieces save only what the accumulation across micro-batches
    # would hold, and cost per-micro-batch buffers: not ordered against 1).
    assert all(a1 < a0 for a0, a1 in zip(arenas[0], arenas[1]))
    assert all(a3 < a2 for a2, a3 in zip(arenas[2], arenas[3]))


GROUP_LAYOUTS = [(4, 1, 1), (4, 2, 1)]


@pytest.mark.parametrize("data,stages,tensor", GROUP_LAYOUTS,
                         ids=[f"D{d}-P{p}-T{t}" for d, p, t in GROUP_LAYOUTS])
def test_zero_groups_equal_stage_0(data, stages, tensor, weftc, data_dir,
                                   tmp_path):
    """--optimizer-shard-size 2 over D = 4 (MindSpore's shard_size, FSDP's
    hybrid sharding): pieces over groups of 2 replicas (data_shard), each
    group's pieces all-reduced across the groups (data_replica); stages 1,
    2, 3 and prefetch train like stage 0 within 1e-6."""
    layout = [f"--data-parallel={data}", f"--pipeline-parallel={stages}",
              f"--tensor-parallel={tensor}"]
    ranks = data * stages * tensor
    plan = tmp_path / "zero0.json"
    compile_plan(weftc, plan, *layout)
    want = [r["loss"] for r in train(plan, ranks, data_dir,
                                     tmp_path / "zero0.jsonl")]
    for zero, flags in ((1, []), (2, []), (3, []), (1, ["--zero-prefetch"])):
        plan = tmp_path / f"zero{zero}.json"
        plan_json = compile_plan(weftc, plan, *layout, f"--zero-stage={zero}",
                                 "--optimizer-shard-size=2",
                                 "--optimizer-shard-threshold=0", *flags)
        valid(plan)
        assert {a["name"]: (a["size"], a["stride"])
                for a in plan_json["mesh"]["sub_axes"]} == {
                    "data_shard": (2, 1), "data_replica": (data // 2, 2)}
        pieces = (rank_plan["optimizer_state"] +
                  (rank_plan["params"] if zero == 3 or flags else [])
                  for rank_plan in plan_json["ranks"])
        for rank, named_list in zip(plan_json["ranks"], pieces):
            for named in named_list:
                assert named["flat_shard"]["count"] == 2
                assert named["flat_shard"]["index"] == \
                    rank["coords"]["data"] % 2
        axes = {(i["op"], i["axis"]) for r in plan_json["ranks"]
                for i in r["instructions"] if "axis" in i}
        assert {("reduce_scatter", "data_shard"), ("all_gather", "data_shard"),
                ("all_reduce", "data_replica")} <= axes
        records = train(plan, ranks, data_dir, tmp_path / f"zero{zero}.jsonl")
        losses = [r["loss"] for r in records]
        assert losses == pytest.approx(want, rel=1e-6), (zero, flags)
        for r in records:
            assert r["rank_peak_bytes"] == r["rank_arena_bytes"]


def test_stage_3_keeps_parameter_pieces(weftc, tmp_path):
    """Stage 3's plan: every parameter (threshold 0) and its optimizer
    state is a flat piece over the data axis, each is all-gathered right
    before each use (per micro-batch, in the forward and again in the
    backward), and each bucket is reduce-scattered per micro-batch but the
    tied embedding's: its gradient is summed per use over the micro-batches
    (weft-accumulate-microbatches), so its bucket of its own is
    reduce-scattered once, after the last."""
    plan_json = compile_plan(weftc, tmp_path / "plan.json",
                             "--data-parallel=2", "--zero-stage=3",
                             "--optimizer-shard-threshold=0")
    valid(tmp_path / "plan.json")
    rank = plan_json["ranks"][1]
    buffers = {b["id"]: b for b in rank["buffers"]}
    for named in rank["params"] + rank["optimizer_state"]:
        piece = named["flat_shard"]
        n = int(np.prod(piece["shape"]))
        assert piece["count"] == 2 and piece["index"] == 1
        assert buffers[named["buffer"]]["shape"] == [(n + 1) // 2]
    gathers = [i for i in rank["instructions"]
               if i["op"] == "all_gather" and i.get("axis") == "data"]
    phases = {(i["phase"], i["micro_batch"]) for i in gathers}
    assert phases == {(p, m) for p in ("forward", "backward")
                      for m in range(2)}
    # Stage 2's reduce-scatter of each bucket per micro-batch.
    scatters = [i for i in rank["instructions"] if i["op"] == "reduce_scatter"]
    per_micro_batch = [sum(i["micro_batch"] == m for i in scatters)
                       for m in range(2)]
    assert per_micro_batch[1] == per_micro_batch[0] + 1
    assert per_micro_batch[0] > 0
    assert len(scatters) == sum(per_micro_batch)


def data_bytes_sent(weftc, tmp_path, zero, *flags):
    """weftc's table: (its data-parallel line, the bytes rank 0 sends over
    the data axis per step)."""
    result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o",
                  str(tmp_path / f"zero{zero}.json"), "--data-parallel=2",
                  f"--zero-stage={zero}", "--optimizer-shard-threshold=0",
                  *flags])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("stage"))
    assert lines[header].split()[11:15] == ["buckets", "data", "bytes",
                                            "sent"]
    line = next(l for l in lines if l.startswith("data parallel:"))
    # stage, ops, params, peak, busy, send, recv, buckets, data bytes sent
    return line, int(lines[header + 1].split()[8])


def test_communication_volume_is_zeros(weftc, tmp_path):
    """Section 7 of the ZeRO paper: stages 1 and 2 send what DDP's
    all-reduce sends (a reduce-scatter and an all-gather, Psi each), stage
    3 1.5x (a gather before the forward and the backward, M = 1; a few
    percent more here: the tied embedding is gathered again for the LM
    head). weftc's table names the stage; ZeRO's gathers over the data
    axis do not make a tensor-parallel table claim sequence parallelism."""
    line, ddp = data_bytes_sent(weftc, tmp_path, 0)
    assert "gradients all-reduced in buckets (DDP)" in line
    for zero in (1, 2):
        line, sent = data_bytes_sent(weftc, tmp_path, zero)
        assert f"ZeRO stage {zero}; gradients reduce-scattered" in line
        assert sent == ddp
    line, sent = data_bytes_sent(weftc, tmp_path, 3)
    assert 1.5 <= sent / ddp < 1.6
    result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o",
                  str(tmp_path / "tp.json"), "--data-parallel=2",
                  "--tensor-parallel=2", "--zero-stage=3"])
    tensor = next(l for l in result.stdout.splitlines()
                  if l.startswith("tensor parallel:"))
    assert "sequence parallel" not in tensor
    assert "all-gathers" not in result.stdout


def test_prefetch_gathers_overlap_the_forward(weftc, tmp_path):
    """--zero-prefetch (MindSpore's level1): the parameters are pieces
    between steps; each bucket's all-gather is posted at the start of the
    forward, in the order the forward reads the buckets, and waited for at
    its first reader, so later buckets arrive while the first layers run;
    none is left after the updates."""
    plan_json = compile_plan(weftc, tmp_path / "plan.json",
                             "--data-parallel=2", "--zero-stage=1",
                             "--zero-prefetch",
                             "--optimizer-shard-threshold=0")
    valid(tmp_path / "plan.json")
    rank = plan_json["ranks"][0]
    assert all("flat_shard" in named for named in rank["params"])
    insts = rank["instructions"]
    gathers = [k for k, i in enumerate(insts)
               if i["op"] == "all_gather" and i["axis"] == "data"]
    assert len(gathers) > 1
    assert {(insts[k]["phase"], insts[k]["micro_batch"])
            for k in gathers} == {("forward", 0)}
    computes = [k for k, i in enumerate(insts) if i["op"] == "compute"
                and i["kernel"] in ("matmul", "gemm", "gather")]
    # Posted before the forward's first parameter reader...
    assert max(gathers) < computes[0]
    waits = {i["tag"]: k for k, i in enumerate(insts)
             if i["op"] == "wait_collective"}
    gather_waits = sorted(waits[insts[k]["tag"]] for k in gathers)
    # ...and the last bucket waited for after some of the forward's GEMMs.
    assert sum(computes[0] < k < gather_waits[-1] for k in computes) > 0
    # Posted in the order they are waited for (the forward's order).
    assert [waits[insts[k]["tag"]] for k in gathers] == gather_waits
    # Buckets are gathered for the forward only: not after the updates.
    updates = [k for k, i in enumerate(insts) if i["phase"] == "optimizer"]
    assert max(gathers) < min(updates)


MODEL_STATE_WORDS = (3, 6, 10, 12)


def model_states(weftc, *flags):
    """Rank 0's (parameters, gradients, state, total, Psi, replicated
    bytes, replicated Psi) from --estimate-memory."""
    result = run([weftc, str(BUILD / "models" / "gpt.onnx"),
                  "--estimate-memory", *flags])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = next(i for i, l in enumerate(lines) if "model states:" in l)
    words = lines[at].replace("(", " ").replace(")", " ").split()
    values = [int(words[i]) for i in MODEL_STATE_WORDS] + [int(words[-1])]
    replicated = (0, 0)
    if at + 1 < len(lines) and "replicated" in lines[at + 1]:
        more = lines[at + 1].replace("(", " ").replace(")", " ").split()
        replicated = (int(more[-5]), int(more[-1]))
    return (*values, *replicated)


# Section 5.1 of the ZeRO paper, float32 AdamW: (params, grads, state) bytes
# per parameter at each stage, N replicas.
# --zero-prefetch keeps the parameters as pieces between steps too
# (MindSpore's level1 and level2).
FORMULAS = {0: lambda n: (4, 4, 8), 1: lambda n: (4, 4, 8 / n),
            2: lambda n: (4, 4 / n, 8 / n), 3: lambda n: (4 / n, 4 / n, 8 / n),
            "1p": lambda n: (4 / n, 4, 8 / n),
            "2p": lambda n: (4 / n, 4 / n, 8 / n)}


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_model_states_over_groups(weftc, zero):
    """ZeRO over groups of S = 2 of D = 4 replicas: the formulas with N =
    S (each rank holds a 1/S piece; the groups hold copies)."""
    params, grads, state, total, psi, _, _ = model_states(
        weftc, "--data-parallel=4", f"--zero-stage={zero}",
        "--optimizer-shard-size=2", "--optimizer-shard-threshold=0")
    want = FORMULAS[zero](2)
    assert (params, grads, state) == tuple(int(k * psi) for k in want)


@pytest.mark.parametrize("data", [2, 4])
@pytest.mark.parametrize("zero", [0, 1, 2, 3, "1p", "2p"])
def test_model_states_are_zeros_formulas(weftc, data, zero):
    """Every parameter sharded (threshold 0): exactly the paper's bytes
    (gpt's tensors all divide by N: no padding)."""
    prefetch = ["--zero-prefetch"] if str(zero).endswith("p") else []
    params, grads, state, total, psi, _, _ = model_states(
        weftc, f"--data-parallel={data}", f"--zero-stage={str(zero)[0]}",
        "--optimizer-shard-threshold=0", *prefetch)
    assert psi == sum(p.numel() for p in gpt.build(**CONFIG)[0].parameters())
    want = FORMULAS[zero](data)
    assert (params, grads, state) == tuple(int(k * psi) for k in want)
    assert total == params + grads + state


def test_threshold_replicates_small_parameters(weftc):
    """With the default 64 KiB threshold the small parameters stay
    replicated at 16 bytes each, listed apart; the rest follow the
    formula."""
    *_, total, psi, rep_bytes, rep_psi = model_states(
        weftc, "--data-parallel=2", "--zero-stage=3")
    model = gpt.build(**CONFIG)[0]
    small = sum(p.numel() for p in model.parameters()
                if p.numel() * 4 < 64 * 1024)
    assert 0 < rep_psi == small < psi
    assert rep_bytes == 16 * rep_psi
    assert total - rep_bytes == 16 * (psi - rep_psi) // 2


def test_stage_3_save_gathers_the_pieces(weftc, data_dir, tmp_path):
    """--save under ZeRO-3 (each rank writes its pieces) equals the saved
    model of stage 0 after the same two plain SGD steps (linear in the
    gradients, so the reordered sums stay at float32 rounding; Adam's
    m / sqrt(v) would amplify them where a gradient is near 0)."""
    saved = {}
    for zero in (0, 3):
        plan = tmp_path / f"z{zero}.json"
        compile_plan(weftc, plan, "--data-parallel=2", f"--zero-stage={zero}",
                     "--optimizer-shard-threshold=0", "--pipeline-parallel=2",
                     "--optimizer=sgd", "--lr=0.1")
        out = tmp_path / f"z{zero}.onnx"
        train(plan, 4, data_dir, tmp_path / f"z{zero}.jsonl", "--save",
              str(out), steps=2)
        saved[zero] = {t.name: numpy_helper.to_array(t)
                       for t in onnx.load(str(out)).graph.initializer}
    assert saved[3].keys() == saved[0].keys()
    for name, want in saved[0].items():
        np.testing.assert_allclose(saved[3][name], want, rtol=1e-5,
                                   atol=1e-7, err_msg=name)


def test_zero_flag_errors(weftc, tmp_path):
    for flags, message in (
            (["--zero-stage=4", "--data-parallel=2"], "expected 0, 1, 2 or 3"),
            (["--zero-stage=3"], "needs --data-parallel of 2 or more"),
            (["--zero-stage=2", "--data-parallel=2",
              "--optimizer-shard-threshold=-1"],
             "--optimizer-shard-threshold must be"),
            (["--zero-stage=3", "--data-parallel=2", "--zero-prefetch"],
             "--zero-prefetch needs --zero-stage 1 or 2"),
            (["--zero-stage=1", "--data-parallel=4",
              "--optimizer-shard-size=3"],
             "--optimizer-shard-size 3: expected 0 or a group of 2 or more "
             "replicas that divides --data-parallel (4)")):
        result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o",
                      str(tmp_path / "p.json"), *flags])
        assert result.returncode != 0
        assert message in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) <= 2
