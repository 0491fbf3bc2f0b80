"""Fused core attention (`weftc --flash-attention`, issue 15): weft.attention
computes softmax(q k^T / sqrt(d), causal) [dropout] v without keeping the
[s, s] scores and probabilities, and its gradient recomputes them from one
log-sum-exp per query row (FlashAttention, Dao et al. 2022).

Oracles, none of which the unfused path's results decide:
- one SGD step of the gpt example against torch float64 (step-1 loss and
  every parameter change within torch float32's own error, oracles (a) and
  (b) of `weft.oracle`), and the model in float64 within 1e-8 of torch
  float64 (oracle (d)), which any error in the recomputed softmax, its
  statistics or the five products of the backward exceeds by orders;
- with dropout, fused and unfused plans draw the same mask bits (the fused
  op takes the dropout's rng_id slot): their losses agree to float32's
  rounding over three steps, on one rank, under tensor parallelism and
  under full recompute; a fused plan whose rng_ids are shifted by one does
  not (a control that the comparison can fail);
- the plan keeps no [s, s] activation: Megatron's per-layer count
  (Korthikanti et al. 2022, Table 2) loses its 5 a s^2 b term.
"""

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from conftest import plan_ranks, plan_view, run, tool
from weft import oracle
from weft.examples import gpt
from weft.examples.common import export, set_dropout

CONFIG = dict(layers=2, hidden=64, heads=4, seq=32, vocab=96, batch=4)
NAMES = ["tokens", "targets"]


@pytest.fixture(scope="module")
def tools():
    return oracle.Tools(tool("weftc"), tool("weft-run"))


def exported(tmp_path_factory, dropout):
    model, batch = gpt.build(**CONFIG, seed=2)
    set_dropout(model, dropout)
    path = tmp_path_factory.mktemp(f"flash-{dropout}") / "gpt.onnx"
    export(model, batch, NAMES, str(path))
    return model, batch, path


@pytest.fixture(scope="module")
def gpt_plain(tmp_path_factory):
    return exported(tmp_path_factory, 0.0)


@pytest.fixture(scope="module")
def gpt_dropout(tmp_path_factory):
    return exported(tmp_path_factory, 0.1)


def kernels(plan_path):
    return [i.get("kernel") for r in plan_ranks(plan_path)
            for i in r["instructions"]]


def test_plan_runs_attention_kernels_only(tools, gpt_dropout, tmp_path):
    _, _, path = gpt_dropout
    plan = tmp_path / "plan.json"
    result = run([tools.weftc, str(path), "-o", str(plan),
                  "--flash-attention"])
    assert result.returncode == 0, result.stderr
    # Every core attention fused: no warning, one forward and one backward
    # kernel per layer, no softmax; the remaining dropouts are the
    # residual branches' (two per layer).
    assert "not fused" not in result.stderr
    ks = kernels(plan)
    assert ks.count("attention") == ks.count("attention_grad") == \
        CONFIG["layers"]
    assert "softmax" not in ks and "softmax_grad" not in ks
    assert ks.count("dropout") == 2 * CONFIG["layers"]


def test_sgd_step_equals_float64(tools, gpt_plain, tmp_path):
    model, batch, path = gpt_plain
    report = oracle.check_sgd_step(tools, model, path, batch, NAMES,
                                   tmp_path, micro_batches=2,
                                   flags=["--flash-attention"])
    print(f"\nflash attention: {report.summary()}")


def test_hugging_face_gpt2_fuses_and_steps_like_float64(tools, tmp_path):
    """transformers' GPT-2 writes its attention its own way: identity
    casts around the softmax, the scale computed as 0 + pow(d, 0.5), the
    mask where(past, scores, finfo.min) from a [1, 1, s, s] buffer. Every
    layer fuses, and one SGD step's parameter change matches float64
    within torch float32's own error."""
    pytest.importorskip("transformers")
    from weft.examples import hf_gpt2
    config = hf_gpt2.CONFIGS["small"]
    model, batch = hf_gpt2.build(**config)
    path = tmp_path / "hf_gpt2.onnx"
    export(model, batch, NAMES, str(path))
    report = oracle.check_sgd_step(tools, model, path, batch, NAMES,
                                   tmp_path / "step", micro_batches=2,
                                   flags=["--flash-attention"])
    ks = kernels(tmp_path / "step" / "plan.json")
    assert ks.count("attention") == 2 * config["layers"], ks  # 2 micro-batches
    assert "softmax" not in ks and "pow" not in ks
    # Its Conv1D layers (x W, W [in, out]): weight and bias gradients in
    # one transposed wgrad_bias each (weft-fold-bias-grad), 4 per layer.
    assert ks.count("wgrad_bias") == 2 * 4 * config["layers"], ks
    print(f"\nHugging Face GPT-2, flash attention: {report.summary()}")


class CausalSelfAttention(torch.nn.Module):
    """Projections around causal core attention, a squared-error loss: no
    LayerNorm, whose f32 statistics (LayerNormalization-17's stash_type)
    keep the gpt example ~3e-8 from float64 whatever attention does."""

    def __init__(self, hidden=32, heads=4, seq=16, context=None,
                 merged_heads=False, separate=False):
        super().__init__()
        self.heads = heads
        # q, k, v as [B H, S, D] (rank 3, as torch's MultiheadAttention):
        # the attention keeps its [.., S, D] layout, which the [B, S, H, D]
        # fold (weft-fold-attention-transpose) otherwise replaces.
        self.merged_heads = merged_heads
        # q, k, v from three projections: no packed [B, S, 3 H D] tensor
        # for weft-fold-attention-split, so the layout stays "bshd".
        self.separate = separate
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        context = context or seq
        self.register_buffer("future", torch.triu(
            torch.ones(context, context, dtype=torch.bool), 1))

    def forward(self, x, target):
        _, s, h = x.shape
        if self.separate:
            w, b = self.qkv.weight.split(h), self.qkv.bias.split(h)
            q, k, v = (F.linear(x, *wb) for wb in zip(w, b))
        else:
            q, k, v = self.qkv(x).split(h, dim=2)
        shape = (-1, s, self.heads, h // self.heads)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        if self.merged_heads:
            q, k, v = (t.reshape(-1, s, h // self.heads) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
        scores = scores.masked_fill(self.future[:s, :s], float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        if self.merged_heads:
            y = y.reshape(-1, self.heads, s, h // self.heads)
        y = y.transpose(1, 2)
        return ((self.proj(y.reshape(-1, s, h)) - target) ** 2).mean()


@pytest.mark.parametrize("seq,context,layout", [
    (16, None, "bs3hd"), (150, None, "bs3hd"), (260, 300, "bs3hd"),
    (150, None, None), (150, None, "bshd")],
    ids=["one-block", "three-blocks", "mask-view", "merged-heads",
         "separate-qkv"])
def test_float64_step_equals_torch_float64(tools, tmp_path, seq, context,
                                           layout):
    """One block of query rows, and three (the CPU kernel blocks 64 rows; a
    causal block's GEMMs stop at its last row's keys). mask-view: the mask
    is the top-left 260 x 260 of a 300 x 300 buffer, too large for the
    importer to fold (kMaxFoldElements), so the pass reads it through the
    slices. The attention reads the QKV projection's packed [B, S, 3 H D]
    (layout "bs3hd": rows 3 H D apart, from each part's offset), except
    merged-heads' ([B H, S, D]) and separate-qkv's (three projections'
    [B, S, H, D], layout "bshd")."""
    torch.manual_seed(3)
    model = CausalSelfAttention(seq=seq, context=context,
                                merged_heads=layout is None,
                                separate=layout == "bshd")
    batch = (torch.randn(4, seq, 32), torch.randn(4, seq, 32))
    tensors = oracle.check_float64_step(tools, model, batch, ["x", "target"],
                                        tmp_path, micro_batches=2,
                                        flags=["--flash-attention"])
    ranks = plan_ranks(tmp_path / "plan.json")
    fused = [i for r in ranks for i in r["instructions"]
             if i.get("kernel", "").startswith("attention")]
    assert {i["kernel"] for i in fused} == {"attention", "attention_grad"}
    assert all(i["attrs"].get("layout") == layout for i in fused), fused
    ks = [i.get("kernel") for r in ranks for i in r["instructions"]]
    assert "softmax" not in ks
    assert ("transpose" in ks) == (layout is None), ks
    # Packed: q, k, v are not split out, nor their gradients concatenated
    # (the others split the projection, or its weight).
    assert ("split" in ks) == (layout != "bs3hd"), ks
    assert ("concat" in ks) == (layout != "bs3hd"), ks
    worst = max(t.weft / max(t.reference, 1e-300) for t in tensors)
    print(f"\nflash attention float64: worst relative error {worst:.1e}")


def losses(tools, path, batches, workdir, flags, **layout):
    return np.array(oracle.weft_train(tools, path, batches, NAMES, workdir,
                                      flags=flags, **layout)[0])


def batches_of(batch, steps=3):
    return [batch] * steps


@pytest.mark.parametrize("layout,flags", [
    (dict(micro_batches=2), []),
    (dict(tensor_parallel=2), []),
    (dict(tensor_parallel=2), ["--sequence-parallel"]),
    (dict(stages=2, micro_batches=2), []),
], ids=["M2", "T2", "T2-SP", "P2"])
def test_dropout_masks_are_the_unfused_ones(tools, gpt_dropout, tmp_path,
                                            layout, flags):
    _, batch, path = gpt_dropout
    batches = batches_of(batch)
    plain = losses(tools, path, batches, tmp_path / "plain", flags,
                   **layout)
    fused = losses(tools, path, batches, tmp_path / "fused",
                   [*flags, "--flash-attention"], **layout)
    # The same masks: float32 rounding apart (a mask that differs in one
    # probability of 10^5 moves the loss by more).
    assert np.abs(fused - plain).max() <= \
        oracle.MULTISTEP_RTOL * np.abs(plain).max(), (fused, plain)


def test_shifted_masks_are_told_apart(tools, gpt_dropout, tmp_path):
    """The control: the same fused plan with each attention's rng_id moved
    to another dropout's slot trains to other losses."""
    _, batch, path = gpt_dropout
    plan = tmp_path / "plan.json"
    result = run([tools.weftc, str(path), "-o", str(plan),
                  "--flash-attention"])
    assert result.returncode == 0, result.stderr
    data = tmp_path / "data"
    for step, b in enumerate(batches_of(batch)):
        oracle.write_step(data, NAMES, b, step)

    def train(plan_path, tag):
        log = tmp_path / f"{tag}.jsonl"
        result = run([tools.weft_run, str(plan_path), "--data", str(data),
                      "--steps", "3", "--log-json", str(log)])
        assert result.returncode == 0, result.stderr
        return np.array([json.loads(line)["loss"]
                         for line in log.read_text().splitlines()])

    good = train(plan, "good")
    shifted = json.loads(plan.read_text())
    for inst in shifted["programs"][0]["instructions"]:
        if inst.get("kernel") in ("attention", "attention_grad"):
            inst["attrs"]["rng_id"] += 1000
    bad_plan = tmp_path / "shifted.json"
    bad_plan.write_text(json.dumps(shifted))
    bad = train(bad_plan, "bad")
    assert np.abs(bad - good).max() > \
        10 * oracle.MULTISTEP_RTOL * np.abs(good).max(), (bad, good)


@pytest.mark.parametrize("recompute", ["full", "selective"])
def test_recompute_is_bit_identical(tools, gpt_dropout, tmp_path, recompute):
    """Full recompute clones the fused op (its rng_id kept): the same
    losses bit for bit. Selective recompute finds no core attention left
    to recompute: the same plan."""
    _, batch, path = gpt_dropout
    batches = batches_of(batch)
    fused = losses(tools, path, batches, tmp_path / "fused",
                   ["--flash-attention"], micro_batches=2)
    again = losses(tools, path, batches, tmp_path / recompute,
                   ["--flash-attention", f"--recompute={recompute}"],
                   micro_batches=2)
    assert list(again) == list(fused)
    ks = kernels(tmp_path / recompute / "plan.json")
    expected = 2 if recompute == "full" else 1
    assert ks.count("attention") == expected * 2 * CONFIG["layers"]


def test_bf16_statistics_stay_f32(tools, gpt_plain, tmp_path):
    """Mixed precision: q, k, v and the output bf16 (autocast's
    scaled_dot_product_attention), the log-sum-exp f32; the step trains."""
    _, batch, path = gpt_plain
    plan = tmp_path / "plan.json"
    result = run([tools.weftc, str(path), "-o", str(plan),
                  "--flash-attention", "--precision=bf16"])
    assert result.returncode == 0, result.stderr
    rank = plan_view(plan, 0)["ranks"][0]
    dtype = {b["id"]: b["dtype"] for b in rank["buffers"]}
    calls = [i for i in rank["instructions"] if i.get("kernel") == "attention"]
    assert calls
    for call in calls:
        assert [dtype[b] for b in call["inputs"]] == ["bf16"] * 3
        assert [dtype[b] for b in call["outputs"]] == ["bf16", "f32"]
    trained = losses(tools, path, batches_of(batch, 2), tmp_path / "run",
                     ["--flash-attention", "--precision=bf16"])
    assert np.all(np.isfinite(trained))
