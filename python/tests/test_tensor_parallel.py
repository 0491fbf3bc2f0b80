"""Tensor parallelism (issue 13): Megatron's MLP and attention blocks
sharded over T ranks per stage train exactly like one rank.

`gpt` (4 layers, hidden 128, 4 heads) and an nn.TransformerEncoder LM
(2 layers, hidden 64, 4 heads) for T in {2, 4} x P in {1, 2} x recompute
{none, selective, full}, and Hugging Face's GPT-2 (transformers, 2 layers,
hidden 64) for T = 2 x P in {1, 2} x recompute {none, full}: 10 AdamW
steps (M = 2 micro-batches)
give per-step losses within 1e-5 of torch float64 on the same split
(weft.oracle.MULTISTEP_RTOL) and of the single-rank plan; one SGD step in
float64 changes every parameter as torch float64 does (per tensor, through
--save, which gathers the shards back into whole initializers); the
collectives per layer are the paper's (Korthikanti et al. 2022, Section
3: 2 all-reduces of s*b*h in the forward and 2 in the backward per layer
and micro-batch).
"""

import json
import os
import pathlib
import tempfile

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from conftest import BUILD, plan_view, run, tool
from weft import oracle
from weft.examples import encoder_lm, gpt, hf_gpt2
from weft.examples.common import export, set_dropout
from weft.oracle import mpirun, write_step

STEPS = 10
M = 2
CONFIG = gpt.CONFIGS["small"]
# The two language models: gpt (fused QKV split into three), and an
# nn.TransformerEncoder LM (MultiheadAttention's packed projection cut by
# slices, heads folded into the batch, a Gemm output projection).
MODELS = {"gpt": gpt, "encoder_lm": encoder_lm, "hf_gpt2": hf_gpt2}


def batches(name="gpt"):
    config = MODELS[name].CONFIGS["small"]
    generator = torch.Generator().manual_seed(3)
    shape = (config["batch"], config["seq"])
    return [(torch.randint(0, config["vocab"], shape, generator=generator),
             torch.randint(0, config["vocab"], shape, generator=generator))
            for _ in range(STEPS)]


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    dirs = {}
    for name in MODELS:
        directory = tmp_path_factory.mktemp(f"tp-data-{name}")
        for step, batch in enumerate(batches(name)):
            write_step(directory, ["tokens", "targets"], batch, step)
        dirs[name] = directory
    return dirs


@pytest.fixture(scope="module")
def data_dir(data_dirs):
    return data_dirs["gpt"]


_exported = {}


def model_path(models_dir, name):
    """The built example, or (Hugging Face GPT-2, whose export needs
    transformers from .venv) exported on first use."""
    if name != "hf_gpt2":
        return models_dir / f"{name}.onnx"
    if name not in _exported:
        directory = pathlib.Path(tempfile.mkdtemp(prefix="weft-hf-gpt2-"))
        model, inputs = hf_gpt2.build(**hf_gpt2.CONFIGS["small"])
        export(model, inputs, ["tokens", "targets"],
               str(directory / "hf_gpt2.onnx"))
        _exported[name] = directory / "hf_gpt2.onnx"
    return _exported[name]


def compile_plan(weftc, models_dir, path, *flags, name="gpt"):
    result = run([weftc, str(model_path(models_dir, name)), "-o", str(path),
                  f"--microbatches={M}", *flags])
    assert result.returncode == 0, result.stderr
    return plan_view(path)  # every rank's view


def train(plan, ranks, data_dir, log, *extra, steps=STEPS):
    result = run(mpirun(ranks) + [tool("weft-run"), str(plan), "--data",
                                  str(data_dir), "--steps", str(steps),
                                  "--log-json", str(log), *extra],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
                 timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in log.read_text().splitlines()]


def oracle_models_dir():
    return BUILD / "models"


_reference = {}


def reference_losses(weftc, models_dir, data_dirs, tmp_path, name):
    """(torch float64, single-rank weft) per-step losses of `name`."""
    if name not in _reference:
        module = MODELS[name]
        model, _ = module.build(**module.CONFIGS["small"])
        torch64 = oracle.float64_losses(
            model, batches(name), M, lambda p: torch.optim.AdamW(p, lr=1e-3))
        compile_plan(weftc, models_dir, tmp_path / "one.json", name=name)
        records = train(tmp_path / "one.json", 1, data_dirs[name],
                        tmp_path / "one.jsonl")
        _reference[name] = (torch64, [r["loss"] for r in records])
    return _reference[name]


LAYOUTS = [(name, tensor, stages, recompute)
           for name in ("gpt", "encoder_lm")
           for tensor in (2, 4) for stages in (1, 2)
           for recompute in ("none", "selective", "full")] + [
    ("hf_gpt2", 2, stages, recompute)
    for stages in (1, 2) for recompute in ("none", "full")]


@pytest.mark.parametrize("name,tensor,stages,recompute", LAYOUTS)
def test_tensor_parallel_equals_float64(name, tensor, stages, recompute,
                                        weftc, models_dir, data_dirs,
                                        tmp_path):
    plan = tmp_path / "plan.json"
    plan_json = compile_plan(weftc, models_dir, plan,
                             f"--tensor-parallel={tensor}",
                             f"--pipeline-parallel={stages}",
                             f"--recompute={recompute}", name=name)
    ranks = stages * tensor
    assert len(plan_json["ranks"]) == ranks
    assert {a["name"]: a["size"] for a in plan_json["mesh"]["axes"]} == {
        "pipeline": stages, "data": 1, "tensor": tensor}
    # Every layer's attention and MLP are split: per layer and micro-batch
    # 2 forward all-reduces and 2 backward ones over the group (summed over
    # its stages); the vocabulary adds, per micro-batch, the embedding's g
    # and the loss's maxima and sums in the forward, the head's f in the
    # backward; full recompute re-runs forward ones in the backward.
    layers = MODELS[name].CONFIGS["small"]["layers"]
    phases = [i["phase"] for r in plan_json["ranks"]
              if r["coords"]["tensor"] == 0
              for i in r["instructions"] if i["op"] == "all_reduce"]
    assert phases.count("forward") == (2 * layers + 3) * M
    if recompute == "full":
        assert phases.count("backward") > (2 * layers + 1) * M
    else:
        assert phases.count("backward") == (2 * layers + 1) * M
    records = train(plan, ranks, data_dirs[name], tmp_path / "log.jsonl")
    losses = [r["loss"] for r in records]
    torch64, one = reference_losses(weftc, models_dir, data_dirs, tmp_path,
                                    name)
    assert losses == pytest.approx(one, rel=1e-5)
    assert losses == pytest.approx(torch64, rel=oracle.MULTISTEP_RTOL)
    for r in records:  # measured peak = planned arena on every rank
        assert r["rank_peak_bytes"] == r["rank_arena_bytes"]


@pytest.mark.parametrize("tensor,stages", [(2, 2), (4, 1)])
def test_tensor_parallel_sgd_step_per_tensor(tensor, stages, tmp_path):
    """Oracles (a) and (b): every parameter's change after one SGD step,
    the sharded ones gathered by --save, against torch float64 within the
    bound derived from torch float32's own error. (Oracle (d), gpt exported
    in float64, does not apply: the export rounds the attention scale
    1/sqrt(d) to a float32 constant, 5e-8 away from torch's.)"""
    model, _ = gpt.build(**CONFIG)
    report = oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model,
        oracle_models_dir() / "gpt.onnx", batches()[0],
        ["tokens", "targets"], tmp_path, micro_batches=M, stages=stages,
        tensor_parallel=tensor)
    names = {t.name for t in report.tensors}
    assert "blocks.0.qkv.weight" in names and "blocks.3.out.weight" in names
    print(f"\ngpt T={tensor} P={stages}: {report.summary()}")


def test_save_gathers_the_shards(weftc, models_dir, data_dir, tmp_path):
    """--save after T = 2 training writes whole initializers equal to the
    single-rank run's. Two plain SGD steps (lr 0.1): the change is linear in
    the gradients, so float32 rounding stays at float32 rounding (AdamW's
    normalisation would amplify it for near-zero gradients)."""
    saved = {}
    for tensor in (1, 2):
        plan = tmp_path / f"t{tensor}.json"
        compile_plan(weftc, models_dir, plan, f"--tensor-parallel={tensor}",
                     "--optimizer=sgd", "--lr=0.1")
        out = tmp_path / f"t{tensor}.onnx"
        train(plan, tensor, data_dir, tmp_path / f"t{tensor}.jsonl",
              "--save", str(out), steps=2)
        saved[tensor] = {t.name: numpy_helper.to_array(t)
                         for t in onnx.load(str(out)).graph.initializer}
    original = {t.name: numpy_helper.to_array(t) for t in
                onnx.load(str(models_dir / "gpt.onnx")).graph.initializer}
    assert saved[2].keys() == saved[1].keys()
    for name, whole in saved[1].items():
        assert saved[2][name].shape == whole.shape, name
        np.testing.assert_allclose(saved[2][name], whole, rtol=1e-5,
                                   atol=1e-7, err_msg=name)
        if name.endswith("qkv.weight"):  # trained, not the initial weights
            assert np.abs(whole - original[name]).max() > 1e-4


def test_collectives_per_layer_are_the_papers(weftc, models_dir, tmp_path):
    """Per layer and micro-batch: 2 forward and 2 backward all-reduces of
    s*b*h float32 over the tensor axis (Korthikanti et al. 2022, Section 3),
    the same sequence on both ranks of the group; the vocabulary adds per
    micro-batch the embedding's g and the head's f (s*b*h each) and the
    cross-entropy's row maxima (max, s*b) and denominators and target scores
    (sum, 2 s*b): the logits (s*b*V) are never communicated. Parameters are
    sharded as Megatron does (QKV and fc by output features, proj and out by
    input features, the tied embedding/head by vocabulary rows, LayerNorms
    and the biases after g replicated)."""
    plan = compile_plan(weftc, models_dir, tmp_path / "plan.json",
                        "--tensor-parallel=2")
    s, h, layers = CONFIG["seq"], CONFIG["hidden"], CONFIG["layers"]
    b = CONFIG["batch"] // M
    sequences = []
    for rank in plan["ranks"]:
        buffers = rank["buffers"]
        reduces = [i for i in rank["instructions"] if i["op"] == "all_reduce"]
        assert all(i["axis"] == "tensor" for i in reduces)
        sizes = {}
        for i in reduces:
            key = (i["phase"], i["reduction"],
                   buffers[i["inputs"][0]]["bytes"])
            sizes[key] = sizes.get(key, 0) + 1
        sbh = s * b * h * 4
        assert sizes == {("forward", "sum", sbh): (2 * layers + 1) * M,
                         ("forward", "max", s * b * 4): M,
                         ("forward", "sum", 2 * s * b * 4): M,
                         ("backward", "sum", sbh): (2 * layers + 1) * M}
        sequences.append([(i["tag"], i["name"]) for i in reduces])
        shards = {p["name"]: p["shard"] for p in rank["params"]}
        assert shards["blocks.0.qkv.weight"] == {
            "dim": 0, "blocks": 3, "index": rank["coords"]["tensor"],
            "count": 2}
        assert shards["blocks.0.fc.weight"]["dim"] == 0
        assert shards["blocks.0.proj.weight"]["dim"] == 1
        assert shards["blocks.0.out.weight"]["dim"] == 1
        assert shards["blocks.0.ln1.weight"] is None
        assert shards["blocks.0.out.bias"] is None
        assert shards["wte.weight"] == {  # the tied embedding and head
            "dim": 0, "blocks": 1, "index": rank["coords"]["tensor"],
            "count": 2}
        assert shards["wpe.weight"] is None  # positions: not vocabulary
    assert sequences[0] == sequences[1]
    # weftc's table: per rank and step, the all-reduces and the bytes a
    # rank sends in them (ring: 2 (T - 1) / T of each).
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o",
                  str(tmp_path / "p.json"), f"--microbatches={M}",
                  "--tensor-parallel=2"])
    assert "tensor parallel: 2 ranks per stage" in result.stdout
    (row,) = [line.split() for line in result.stdout.splitlines()
              if line.split()[:1] == ["0"]]
    # The predicted step, then its MFU.
    assert "predicted step:" in result.stdout.splitlines()[-2]
    assert "predicted MFU" in result.stdout.splitlines()[-1]
    assert int(row[-2]) == (4 * layers + 4) * M
    assert int(row[-1]) == M * ((4 * layers + 2) * s * b * h * 4 +
                                3 * s * b * 4) * 2 * (2 - 1) // 2


@pytest.mark.parametrize("sequence", [False, True], ids=["TP", "TP+SP"])
def test_backward_collectives_overlap_the_gradient_gemms(
        weftc, models_dir, tmp_path, sequence):
    """weft-overlap-collectives posts each collective early and waits for
    it late (Megatron's LinearWithGradAccumulationAndAsyncCommunication):
    per layer and micro-batch, the collective of each column-parallel
    linear's input gradient (QKV, fc, and the LM head: 2L + 1), an
    all-reduce, or a reduce-scatter with sequence parallelism, is in
    flight while a GEMM (its weight gradient) runs; with sequence
    parallelism so is the all-gather of each such linear's regathered
    input (the input gradient's GEMM). The forward's collectives feed the
    next op at once: nothing to overlap there."""
    flags = ["--tensor-parallel=2"] + (["--sequence-parallel"]
                                       if sequence else [])
    plan = compile_plan(weftc, models_dir, tmp_path / "plan.json", *flags)
    s, h, layers = CONFIG["seq"], CONFIG["hidden"], CONFIG["layers"]
    b = CONFIG["batch"] // M
    for rank in plan["ranks"]:
        insts, buffers = rank["instructions"], rank["buffers"]
        posts = {i["tag"]: k for k, i in enumerate(insts)
                 if i["op"] in ("all_reduce", "all_gather", "reduce_scatter")}
        overlapped = {}
        for k, inst in enumerate(insts):
            if inst["op"] != "wait_collective":
                continue
            start = posts.pop(inst["tag"])
            post = insts[start]
            gemms = [i for i in insts[start + 1:k]
                     if i.get("kernel") in ("gemm", "matmul", "wgrad_bias")]
            if gemms and post["phase"] == "backward":
                key = (post["op"], buffers[post["inputs"][0]]["bytes"])
                overlapped[key] = overlapped.get(key, 0) + 1
        assert not posts, "every collective is waited for"
        sbh = s * b * h * 4
        expected = ({("reduce_scatter", sbh): (2 * layers + 1) * M,
                     ("all_gather", sbh // 2): (2 * layers + 1) * M}
                    if sequence else
                    {("all_reduce", sbh): (2 * layers + 1) * M})
        assert {k: v for k, v in overlapped.items() if k in expected} == \
            expected


def test_overlap_off_waits_at_once_and_trains_identically(
        weftc, models_dir, data_dirs, tmp_path):
    """--overlap-collectives=false: every wait_collective follows its post
    at once; the overlapped plan only reorders independent ops and
    completes the same collectives later, so 3 AdamW steps give the same
    losses bit for bit."""
    losses = {}
    for overlap in ("true", "false"):
        path = tmp_path / f"plan-{overlap}.json"
        plan = compile_plan(weftc, models_dir, path, "--tensor-parallel=2",
                            f"--overlap-collectives={overlap}")
        insts = plan["ranks"][0]["instructions"]
        waits_at_once = all(
            insts[k + 1]["op"] == "wait_collective"
            and insts[k + 1]["tag"] == inst["tag"]
            for k, inst in enumerate(insts)
            if inst["op"] in ("all_reduce", "all_gather", "reduce_scatter"))
        assert waits_at_once == (overlap == "false")
        records = train(path, 2, data_dirs["gpt"],
                        tmp_path / f"log-{overlap}.jsonl", steps=3)
        losses[overlap] = [r["loss"] for r in records]
    assert losses["true"] == losses["false"]


def test_dropout_masks_do_not_depend_on_the_tensor_axis(weftc, tmp_path):
    """gpt with dropout 0.1 (attention probabilities, sharded by heads, and
    the residual branches, replicated): each rank draws its shard of the
    whole tensor's mask from the same Philox stream, so T = 2 and T = 4 give
    the single rank's losses; with selective recompute the recomputed
    dropout draws them again. (Not against torch: its RNG differs.)"""
    model, inputs = gpt.build(**CONFIG)
    set_dropout(model, 0.1)
    path = tmp_path / "gpt-dropout.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    losses = {}
    for tensor in (1, 2, 4):
        plan = tmp_path / f"t{tensor}.json"
        result = run([weftc, str(path), "-o", str(plan), f"--microbatches={M}",
                      f"--tensor-parallel={tensor}", "--recompute=selective"])
        assert result.returncode == 0, result.stderr
        if tensor > 1:
            shards = [i["attrs"] for i in plan_view(plan, 1)
                      ["ranks"][0]["instructions"]
                      if i.get("kernel") == "dropout" and
                      "shard_index" in i["attrs"]]
            assert shards and all(a["shard_index"] == 1 and
                                  a["shard_count"] == tensor for a in shards)
        records = train(plan, tensor, "synthetic",
                        tmp_path / f"t{tensor}.jsonl", steps=3)
        losses[tensor] = [r["loss"] for r in records]
    assert losses[2] == pytest.approx(losses[1], rel=1e-6)
    assert losses[4] == pytest.approx(losses[1], rel=1e-6)


def test_trace_shows_collectives_on_their_own_track(weftc, models_dir,
                                                   tmp_path):
    """--trace: every all-reduce of a step is a slice on thread 3 of its
    rank (category collective, with the axis and the bytes it reduces),
    from its post to the end of its wait, in the order of the posts; its
    post and wait calls are slices on thread 1 (category
    collective_call)."""
    plan = tmp_path / "plan.json"
    plan_json = compile_plan(weftc, models_dir, plan, "--tensor-parallel=2")
    trace = tmp_path / "trace.json"
    result = run(mpirun(2) + [tool("weft-run"), str(plan), "--data",
                              "synthetic", "--steps", "1", "--trace",
                              str(trace)],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=600)
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    for rank in plan_json["ranks"]:
        buffers = rank["buffers"]
        expected = [("all_reduce", "tensor", buffers[i["inputs"][0]]["bytes"])
                    for i in rank["instructions"] if i["op"] == "all_reduce"]
        mine = sorted((e for e in events if e["pid"] == rank["rank"]),
                      key=lambda e: e["ts"])
        slices = [(e["name"], e["args"]["axis"], e["args"]["bytes"])
                  for e in mine if e["cat"] == "collective"]
        assert slices == expected
        assert all(e["tid"] == 3 for e in mine if e["cat"] == "collective")
        calls = [e for e in mine if e["cat"] == "collective_call"]
        assert sorted(e["name"] for e in calls) == sorted(
            f"{verb} all_reduce" for verb in ("post", "wait")
            for _ in expected)
        assert all(e["tid"] == 1 for e in calls)


def test_tensor_parallel_errors_name_the_flag_or_node(weftc, models_dir,
                                                      tmp_path):
    out = tmp_path / "plan.json"
    gpt_path = str(models_dir / "gpt.onnx")
    # 3 ranks do not divide QKV's 3 x 128 features in 3 blocks.
    result = run([weftc, gpt_path, "-o", str(out), "--tensor-parallel=3"])
    assert result.returncode != 0
    assert "cannot split '/blocks.0/qkv/MatMul'" in result.stderr
    assert "do not split 3 ways" in result.stderr
    result = run([weftc, gpt_path, "-o", str(out), "--tensor-parallel=0"])
    assert result.returncode != 0
    assert "--tensor-parallel must be at least 1" in result.stderr
    result = run([weftc, gpt_path, "-o", str(out),
                  "--tensor-parallel-fallback=maybe"])
    assert result.returncode != 0
    assert "--tensor-parallel-fallback 'maybe'" in result.stderr
    # A tensor-parallel plan started on the wrong number of ranks.
    compile_plan(weftc, models_dir, out, "--tensor-parallel=2")
    result = run([tool("weft-run"), str(out), "--data", "synthetic",
                  "--steps", "1"])
    assert result.returncode != 0
    assert "mpirun -np 2" in result.stderr
