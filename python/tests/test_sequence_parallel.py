"""Sequence parallelism (issue 13, --sequence-parallel): Megatron's
LayerNorm/dropout/residual region on 1/T of the sequence trains exactly
like one rank.

Korthikanti et al. 2022, Section 4.2.2: between tensor parallelism's g and
f each rank keeps s/T of the sequence; g becomes a reduce-scatter and f an
all-gather (conjugate: the backward swaps them), the linears' gathered
inputs are gathered again in the backward instead of kept. The same oracles
as test_tensor_parallel.py: 10 AdamW steps (M = 2) equal torch float64
within 1e-5 and the single-rank plan, for gpt and the nn.TransformerEncoder
LM at T in {2, 4} x P in {1, 2} x recompute {none, selective, full}, and
Hugging Face's GPT-2 at T = 2; one SGD step per tensor against float64;
the collectives per layer are the paper's.
"""

import json
import os

import pytest

from conftest import plan_view, run, tool
from test_tensor_parallel import (  # noqa: F401 (data_dirs: a fixture)
    M, MODELS, batches, compile_plan, data_dirs, oracle_models_dir,
    reference_losses, train)
from weft import oracle
from weft.examples import gpt
from weft.examples.common import export, set_dropout
from weft.oracle import mpirun

SP = "--sequence-parallel"

LAYOUTS = [(name, tensor, stages, recompute)
           for name in ("gpt", "encoder_lm")
           for tensor in (2, 4) for stages in (1, 2)
           for recompute in ("none", "selective", "full")] + [
    ("hf_gpt2", 2, stages, "selective") for stages in (1, 2)]


def collectives(rank, op):
    """(phase, recomputed, whole-tensor bytes) of each `op` instruction."""
    buffers = rank["buffers"]
    out = []
    for i in rank["instructions"]:
        if i["op"] != op:
            continue
        # The whole tensor: an all-gather's output, a reduce-scatter's input.
        whole = buffers[i["outputs" if op == "all_gather" else "inputs"][0]]
        out.append((i["phase"], whole["bytes"]))
    return out


@pytest.mark.parametrize("name,tensor,stages,recompute", LAYOUTS)
def test_sequence_parallel_equals_float64(name, tensor, stages, recompute,
                                          weftc, models_dir, data_dirs,
                                          tmp_path):
    plan = tmp_path / "plan.json"
    plan_json = compile_plan(weftc, models_dir, plan, SP,
                             f"--tensor-parallel={tensor}",
                             f"--pipeline-parallel={stages}",
                             f"--recompute={recompute}", name=name)
    ranks = stages * tensor
    assert len(plan_json["ranks"]) == ranks
    # Per layer and micro-batch, summed over the group's stages: g's 2
    # reduce-scatters and f's 2 all-gathers forward; their adjoints (2
    # all-gathers, 2 reduce-scatters) and the 2 re-gathers backward; the
    # vocabulary adds the embedding's reduce-scatter and the head's
    # all-gather (and their adjoints). Full recompute re-runs the forward's.
    layers = MODELS[name].CONFIGS["small"]["layers"]
    group = [r for r in plan_json["ranks"] if r["coords"]["tensor"] == 0]
    scatters = [p for r in group for p, _ in collectives(r, "reduce_scatter")]
    gathers = [p for r in group for p, _ in collectives(r, "all_gather")]
    if name == "hf_gpt2":
        # GPT-2's Conv1D works on [b s, h] rows: a sequence shard of them is
        # b blocks, which the region does not take, so each layer's g stays
        # an all-reduce whose result each rank slices (the embedding's is a
        # reduce-scatter, the LayerNorms still run on s/T).
        reduces = [i for r in group for i in r["instructions"]
                   if i["op"] == "all_reduce" and i["phase"] == "forward"]
        assert len(reduces) == (2 * layers + 2) * M
        assert scatters.count("forward") == M
        scatters = []
    else:
        assert scatters.count("forward") == (2 * layers + 1) * M
    assert gathers.count("forward") == (2 * layers + 1) * M
    if name != "hf_gpt2":
        if recompute != "full":
            assert scatters.count("backward") == (2 * layers + 1) * M
        assert scatters.count("backward") >= (2 * layers + 1) * M
        assert gathers.count("backward") >= (4 * layers + 2) * M
    records = train(plan, ranks, data_dirs[name], tmp_path / "log.jsonl")
    losses = [r["loss"] for r in records]
    torch64, one = reference_losses(weftc, models_dir, data_dirs, tmp_path,
                                    name)
    assert losses == pytest.approx(one, rel=1e-5)
    assert losses == pytest.approx(torch64, rel=oracle.MULTISTEP_RTOL)
    for r in records:  # measured peak = planned arena on every rank
        assert r["rank_peak_bytes"] == r["rank_arena_bytes"]


@pytest.mark.parametrize("tensor,stages", [(2, 2), (4, 1)])
def test_sequence_parallel_sgd_step_per_tensor(tensor, stages, tmp_path):
    """One SGD step's change of every parameter (shards gathered by --save)
    against torch float64, within the bound derived from torch float32's
    own error: the LayerNorm weights and the biases after g, whose
    gradients are sums over the ranks' sequence shards, included."""
    model, _ = gpt.build(**gpt.CONFIGS["small"])
    report = oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model,
        oracle_models_dir() / "gpt.onnx", batches()[0],
        ["tokens", "targets"], tmp_path, micro_batches=M, stages=stages,
        flags=[SP], tensor_parallel=tensor)
    names = {t.name for t in report.tensors}
    assert {"blocks.0.ln1.weight", "blocks.3.out.bias", "wpe.weight",
            "ln_f.bias"} <= names
    print(f"\ngpt SP T={tensor} P={stages}: {report.summary()}")


def test_collectives_per_layer_are_the_papers(weftc, models_dir, tmp_path):
    """Per layer and micro-batch, 4 all-gathers and 4 reduce-scatters of
    s*b*h float32 (the whole tensor) over the tensor axis, forward and
    backward together (Korthikanti et al. 2022, Section 4.2.2), plus the
    backward's 2 re-gathers of the linears' inputs (and the LM head's
    input, once per micro-batch); the all-reduces left
    are the loss's (maxima, sums) and the gradients of the parameters the
    region broadcasts along the sequence (per layer 2 LayerNorms' weights
    and biases and the 2 biases after g, the final LayerNorm's weight and
    bias: Megatron's all-reduce of sequence-parallel
    parameters' gradients). The same sequence on every rank of the group;
    weftc's table reports the counts and the bytes a rank sends (ring:
    (T - 1) / T of each whole tensor, twice for an all-reduce)."""
    config = gpt.CONFIGS["small"]
    s, h, layers, vocab = (config["seq"], config["hidden"], config["layers"],
                           config["vocab"])
    b = config["batch"] // M
    sbh = s * b * h * 4
    plan = compile_plan(weftc, models_dir, tmp_path / "plan.json", SP,
                        "--tensor-parallel=2")
    sequences = []
    for rank in plan["ranks"]:
        def tally(op):
            counts = {}
            for key in collectives(rank, op):
                counts[key] = counts.get(key, 0) + 1
            return counts
        # Per micro-batch: 2 per layer and the vocabulary's one each way,
        # the 2 per layer and the head's re-gathered in the backward; the
        # position embedding's slice is gathered back for its gradient.
        assert tally("reduce_scatter") == {
            ("forward", sbh): (2 * layers + 1) * M,
            ("backward", sbh): (2 * layers + 1) * M}
        assert tally("all_gather") == {
            ("forward", sbh): (2 * layers + 1) * M,
            ("backward", sbh): (4 * layers + 2) * M,
            ("backward", s * h * 4): M}
        reduces = [(i["phase"], i["reduction"],
                    rank["buffers"][i["inputs"][0]]["bytes"])
                   for i in rank["instructions"] if i["op"] == "all_reduce"]
        assert sorted(set(reduces)) == [("backward", "sum", h * 4),
                                        ("forward", "max", s * b * 4),
                                        ("forward", "sum", 2 * s * b * 4)]
        assert reduces.count(("backward", "sum", h * 4)) == (6 * layers + 2) * M
        assert all(i["axis"] == "tensor" for i in rank["instructions"]
                   if i["op"] in ("all_gather", "reduce_scatter"))
        sequences.append([(i["op"], i["tag"]) for i in rank["instructions"]
                          if "tag" in i and "axis" in i])
    assert sequences[0] == sequences[1]
    assert vocab * h * 4 not in [
        b for r in plan["ranks"] for _, b in collectives(r, "all_gather")]
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o",
                  str(tmp_path / "p.json"), f"--microbatches={M}",
                  "--tensor-parallel=2", SP])
    assert result.returncode == 0, result.stderr
    assert "sequence parallel" in result.stdout
    (row,) = [line.split() for line in result.stdout.splitlines()
              if line.split()[:1] == ["0"]]
    reduces, reduce_sent, gathers, gather_sent, scatters, scatter_sent = \
        map(int, row[-6:])
    assert reduces == (2 + 6 * layers + 2) * M
    assert reduce_sent == M * 2 * ((6 * layers + 2) * h * 4 + 3 * s * b * 4) // 2
    assert gathers == (6 * layers + 4) * M
    assert gather_sent == M * ((6 * layers + 3) * sbh + s * h * 4) // 2
    assert scatters == (4 * layers + 2) * M
    assert scatter_sent == M * (4 * layers + 2) * sbh // 2


def expect_region_dropout_shards(plan, layers):
    """The region's dropouts ([b, s, h], after g, 2 per layer and
    micro-batch) draw their rank's part of the sequence: shard dim 1, one
    block, the rank's tensor coordinate. (The collectives' test's gpt has
    no dropout: its ratio-0 dropouts are not imported.)"""
    for rank in plan["ranks"]:
        shards = [i["attrs"] for i in rank["instructions"]
                  if i.get("kernel") == "dropout" and
                  len(rank["buffers"][i["inputs"][0]]["shape"]) == 3 and
                  i["attrs"].get("shard_dim") == 1 and
                  i["attrs"]["shard_blocks"] == 1]
        assert len(shards) == (2 * layers) * M
        assert all(a["shard_index"] == rank["coords"]["tensor"]
                   for a in shards)


def test_dropout_masks_do_not_depend_on_the_tensor_axis(weftc, tmp_path):
    """gpt with dropout 0.1 everywhere: the region's dropouts (residual
    branches) draw each rank's part of the sequence of the whole mask, the
    attention's its heads, so T = 2 and T = 4 with sequence parallelism give
    the single rank's losses, with selective recompute re-drawing the
    recomputed ones. (Not against torch: its RNG differs.)"""
    config = gpt.CONFIGS["small"]
    model, inputs = gpt.build(**config)
    set_dropout(model, 0.1)
    path = tmp_path / "gpt-dropout.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    losses = {}
    for tensor in (1, 2, 4):
        flags = [f"--tensor-parallel={tensor}"] + ([SP] if tensor > 1 else [])
        plan = tmp_path / f"t{tensor}.json"
        result = run([weftc, str(path), "-o", str(plan), f"--microbatches={M}",
                      "--recompute=selective", *flags])
        assert result.returncode == 0, result.stderr
        if tensor > 1:
            expect_region_dropout_shards(plan_view(plan),
                                         config["layers"])
        records = train(plan, tensor, "synthetic",
                        tmp_path / f"t{tensor}.jsonl", steps=3)
        losses[tensor] = [r["loss"] for r in records]
    assert losses[2] == pytest.approx(losses[1], rel=1e-6)
    assert losses[4] == pytest.approx(losses[1], rel=1e-6)


def test_trace_shows_every_collective_kind(weftc, models_dir, tmp_path):
    """--trace: each all-gather, reduce-scatter and all-reduce of a step is
    a slice on thread 3 of its rank, in plan order, with its axis."""
    plan = tmp_path / "plan.json"
    plan_json = compile_plan(weftc, models_dir, plan, SP,
                             "--tensor-parallel=2")
    trace = tmp_path / "trace.json"
    result = run(mpirun(2) + [tool("weft-run"), str(plan), "--data",
                              "synthetic", "--steps", "1", "--trace",
                              str(trace)],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=600)
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    for rank in plan_json["ranks"]:
        expected = [(i["op"], "tensor") for i in rank["instructions"]
                    if i["op"] in ("all_reduce", "all_gather",
                                   "reduce_scatter")]
        slices = [(e["name"], e["args"]["axis"])
                  for e in sorted(events, key=lambda e: e["ts"])
                  if e["pid"] == rank["rank"] and e["cat"] == "collective"]
        assert slices == expected
        assert {"all_gather", "reduce_scatter"} <= {n for n, _ in slices}
        assert all(e["tid"] == 3 for e in events
                   if e["pid"] == rank["rank"] and e["cat"] == "collective")


def test_sequence_parallel_errors_name_the_flag_or_node(weftc, models_dir,
                                                        tmp_path):
    out = tmp_path / "plan.json"
    gpt_path = str(models_dir / "gpt.onnx")
    result = run([weftc, gpt_path, "-o", str(out), SP])
    assert result.returncode != 0
    assert "--sequence-parallel needs --tensor-parallel of 2 or more" in \
        result.stderr
    # 4 ranks do not divide a sequence of 6 (heads and features they do).
    model, inputs = gpt.build(layers=1, hidden=32, heads=4, seq=6, vocab=16,
                              batch=2)
    path = tmp_path / "seq6.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    result = run([weftc, str(path), "-o", str(out), "--tensor-parallel=4", SP])
    assert result.returncode != 0
    assert "holds the sequence in a dimension of 6, which 4 tensor ranks " \
        "do not divide" in result.stderr
    assert len(result.stderr) < 600


def test_pipeline_cuts_send_the_residual_shard(weftc, tmp_path):
    """P = 2 with T = 2 and SP on a 4-layer GPT (bf16): every activation a
    stage sends is the residual stream's sequence shard [b, s/T, h]; the
    only other transfer is the tied embedding's gradient term [V/T, h].
    weft-partition-pipeline cuts only where one activation is live, as
    Megatron-LM assigns whole layers; the bottleneck alone cut inside a
    block after its all-gather, sending the whole [b, s, h] sequence (and,
    with it, a transposed QKV weight) every micro-batch."""
    import re

    import onnx
    from weft.examples import gpt_weights_free
    path = tmp_path / "gpt.onnx"
    onnx.save(gpt_weights_free.build(layers=4, hidden=256, heads=4, seq=64,
                                     vocab=512, batch=4, dropout=0.1,
                                     shared_mask=True), str(path))
    mlir = tmp_path / "step.mlir"
    result = run([weftc, str(path), "--precision=bf16", "--tensor-parallel=2",
                  "--sequence-parallel", "--pipeline-parallel=2",
                  "--microbatches=4", "--recompute=selective",
                  "--emit=mlir", "-o", str(mlir)])
    assert result.returncode == 0, result.stderr
    sent = re.findall(r"weft\.isend %\S+ \{[^}]*\} : (tensor<[^>]*>)",
                      mlir.read_text())
    # 4 micro-batches' activations forward and their gradients back.
    assert sorted(set(sent)) == ["tensor<1x32x256xbf16>",
                                 "tensor<256x256xbf16>"], sent
    assert sent.count("tensor<1x32x256xbf16>") == 8
