"""Activation recompute (issue 6, full policy): `weftc --recompute=full`
checkpoints each stage's forward per micro-batch and recomputes it in the
backward. The result is bit-identical to no recompute (same kernels on the
same inputs; dropout masks keyed by the original op's rng_id), on one rank
and on pipelines of 2 and 4 stages under both schedules, and GPipe keeps the
activations of one micro-batch instead of M."""

import json

import onnx
import pytest

from conftest import plan_ranks, run, tool
from test_memory_breakdown import estimate
from weft.oracle import mpirun
from weft.examples import gpt, gpt_weights_free
from weft.examples.common import export


@pytest.fixture(scope="module")
def gpt_dropout(tmp_path_factory):
    """The small gpt with dropout 0.1 after attention and MLP."""
    path = tmp_path_factory.mktemp("gpt-dropout") / "gpt.onnx"
    model, inputs = gpt.build(**gpt.CONFIGS["small"])
    for module in model.modules():
        if isinstance(module, __import__("torch").nn.Dropout):
            module.p = 0.1
    export(model, inputs, ["tokens", "targets"], str(path))
    import onnx
    assert any(n.op_type == "Dropout" for n in onnx.load(str(path)).graph.node)
    return path


def train(weftc, model, tmp_path, tag, recompute, stages, schedule):
    plan = tmp_path / f"{tag}.json"
    policy, _, granularity = recompute.partition("-")
    result = run([weftc, str(model), "-o", str(plan), "--microbatches=4",
                  f"--pipeline-parallel={stages}", f"--schedule={schedule}",
                  f"--recompute={policy}",
                  f"--recompute-granularity={granularity or 'stage'}"])
    assert result.returncode == 0, result.stderr
    log = tmp_path / f"{tag}.jsonl"
    command = [tool("weft-run"), str(plan), "--steps", "4", "--seed", "5",
               "--log-json", str(log)]
    result = run(mpirun(stages) + command)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return [r["loss"] for r in records], records


@pytest.mark.parametrize("policy", ["full", "full-layer", "selective"])
@pytest.mark.parametrize("stages,schedule", [(1, "1f1b"), (2, "gpipe"),
                                             (2, "1f1b"), (4, "gpipe"),
                                             (4, "1f1b")])
def test_recompute_is_bit_identical(stages, schedule, policy, weftc,
                                    gpt_dropout, tmp_path):
    plain, _ = train(weftc, gpt_dropout, tmp_path, "none", "none", stages,
                     schedule)
    again, records = train(weftc, gpt_dropout, tmp_path, policy, policy,
                           stages, schedule)
    assert again == plain
    # Recompute really happened: dropout kernels run twice per micro-batch.
    ranks = plan_ranks(tmp_path / f"{policy}.json")
    dropouts = sum(i.get("kernel") == "dropout" for r in ranks
                   for i in r["instructions"])
    baseline = plan_ranks(tmp_path / "none.json")
    assert dropouts > sum(i.get("kernel") == "dropout"
                          for r in baseline for i in r["instructions"])
    # The runtime's measured peak is the planned one, with recompute too.
    assert all(r["rank_peak_bytes"] == r["rank_arena_bytes"]
               for r in records) if stages > 1 else \
        all(r["peak_bytes"] == r["arena_bytes"] for r in records)


def test_gpipe_recompute_keeps_one_micro_batch(weftc, models_dir):
    """GPipe with 8 micro-batches keeps 8 micro-batches' activations per
    stage; with full recompute, the last one's (it is not recomputed) plus,
    for the other seven, each stage's checkpoint: its received inputs, and
    on stage 0 the activation it sent, held until that micro-batch's
    backward completes the send."""
    model = str(models_dir / "gpt.onnx")
    flags = [model, "--pipeline-parallel=2", "--microbatches=8",
             "--schedule=gpipe"]
    one = estimate(weftc, model, "--input-shape=tokens=1x64",
               "--input-shape=targets=1x64", "--pipeline-parallel=2")
    none = estimate(weftc, *flags)
    full = estimate(weftc, *flags, "--recompute=full")
    for s in range(2):
        assert none[s] / one[s] == pytest.approx(8, abs=0.05)
        assert one[s] <= full[s] < 2 * one[s], (s, one, full)
        assert full[s] < none[s] / 4, (s, none, full)


@pytest.mark.parametrize("layout", [
    ["--pipeline-parallel=2", "--microbatches=8", "--schedule=1f1b"],
    ["--microbatches=2"]])
def test_layer_granularity_recomputes_one_block_at_a_time(weftc, tmp_path,
                                                           layout):
    """Full recompute per layer keeps only each block's input (more than
    stage granularity, which keeps nothing of a recomputed micro-batch) but
    rematerializes one block at a time: a smaller arena than per stage, on
    every stage whose activations outweigh its parameters and optimizer
    state (4 layers, h = 64, s = 256). The stage that computes the loss
    recomputed its whole forward at once with micro-batches (its targets'
    slice, read only by the loss, kept the blocks from being cut apart):
    its arena was the same by layer as by stage."""
    model = tmp_path / "gpt.onnx"
    onnx.save(gpt_weights_free.build(layers=4, hidden=64, heads=4, seq=256,
                                     vocab=64, batch=8), str(model))
    flags = [model, *layout, "--recompute=full"]

    def arenas(*extra):
        return estimate(weftc, *flags, *extra, field="arena")

    stage, layer = arenas(), arenas("--recompute-granularity=layer")
    assert len(stage) == len(layer) >= 1
    for s in range(len(stage)):
        assert layer[s] < 0.8 * stage[s], (s, layer, stage)
    assert estimate(weftc, *flags, "--recompute-granularity=layer")[0] > \
        estimate(weftc, *flags)[0]


def test_selective_keeps_less_than_none_more_than_full(weftc, models_dir):
    model = str(models_dir / "gpt.onnx")
    flags = [model, "--pipeline-parallel=2", "--microbatches=8",
             "--schedule=1f1b"]
    none, selective, full = (estimate(weftc, *flags, f"--recompute={p}")
                             for p in ("none", "selective", "full"))
    for s in range(2):
        assert full[s] < selective[s] < none[s]


def recomputed_kinds(weftc, model, *flags):
    result = run([weftc, str(model), "--recompute=selective", *flags])
    assert result.returncode == 0, result.stderr
    return sorted({line.split("= ")[1].split(" ")[0]
                   for line in result.stdout.splitlines()
                   if "#weft.task<R" in line and "= " in line})


def test_selective_matches_core_attention_of_gpt(weftc, gpt_dropout):
    """gpt: QK^T, / sqrt(d), where(causal mask), softmax, dropout (the
    middle three one weft.scale_mask_softmax once the region is cut)."""
    assert recomputed_kinds(weftc, gpt_dropout) == [
        "weft.dropout", "weft.matmul", "weft.scale_mask_softmax"]


def test_selective_matches_torch_multihead_attention(weftc, tmp_path):
    """torch.nn.MultiheadAttention's export (the q scaling stays outside the
    core; QK^T, + mask, softmax, dropout are recomputed)."""
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = torch.nn.MultiheadAttention(16, 2, dropout=0.1,
                                                         batch_first=True)
            self.head = torch.nn.Linear(16, 4)

        def forward(self, x, mask, y):
            out, _ = self.attention(x, x, x, attn_mask=mask,
                                    need_weights=False)
            return torch.nn.functional.cross_entropy(
                self.head(out).reshape(-1, 4), y.reshape(-1))

    torch.manual_seed(0)
    x = torch.randn(2, 8, 16)
    mask = torch.triu(torch.full((8, 8), float("-inf")), diagonal=1)
    y = torch.randint(0, 4, (2, 8))
    path = tmp_path / "mha.onnx"
    export(Model(), (x, mask, y), ["x", "mask", "y"], str(path))
    kinds = recomputed_kinds(weftc, path)
    assert "weft.softmax" in kinds and "weft.matmul" in kinds, kinds
    assert "weft.dropout" in kinds, kinds


def test_unknown_recompute_granularity(weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  "--recompute=full", "--recompute-granularity=block"])
    assert result.returncode != 0
    assert "--recompute-granularity 'block': expected stage or layer" \
        in result.stderr


def test_unknown_recompute_policy(weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  "--recompute=selective-ish"])
    assert result.returncode != 0
    assert "--recompute 'selective-ish': expected none, full or selective" \
        in result.stderr


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_selective_matches_core_attention_under_16_bit(precision, weftc,
                                                        gpt_dropout):
    """--precision bf16|f16 computes the scores, the probabilities and their
    dropout in 16 bits (the softmax's kernel computes in f32, without casts
    around it): the whole of core attention is recomputed, as in f32."""
    kinds = recomputed_kinds(weftc, gpt_dropout, f"--precision={precision}")
    assert kinds == ["weft.dropout", "weft.matmul", "weft.scale_mask_softmax"]


def test_selective_under_bf16_saves_the_softmax_and_trains_alike(
        weftc, models_dir, tmp_path):
    """gpt (no dropout), bf16: selective recompute drops each layer's bf16
    softmax output (2 a s^2 b bytes a layer, Korthikanti et al. 2022's
    Table 2 term without dropout), and keeps
    nothing for the recomputed region that it did not keep before (the
    bf16 mask fill value is a literal, not a cast computed every step and
    kept: 2 bytes a layer before), re-runs Q K^T
    (2 b s^2 h a layer more hardware FLOPs) and trains bit-identical to no
    recompute."""
    c = gpt.CONFIGS["small"]
    a, s, b, h, layers = (c["heads"], c["seq"], c["batch"], c["hidden"],
                          c["layers"])

    def report(policy):
        result = run([weftc, str(models_dir / "gpt.onnx"), "--estimate-memory",
                      "--precision=bf16", f"--recompute={policy}"])
        assert result.returncode == 0, result.stderr
        number = lambda key: int(result.stdout.split(key)[1].split()[0])
        return number("kept_activations"), number("model_flops"), number(
            "hardware_flops")

    (kept, model, hardware), (kept_sel, model_sel, hardware_sel) = (
        report("none"), report("selective"))
    assert kept - kept_sel == 2 * a * s * s * b * layers
    assert model_sel == model == hardware
    assert hardware_sel - model == 2 * b * s * s * h * layers
    losses = {}
    for policy in ("none", "selective"):
        plan, log = tmp_path / f"{policy}.json", tmp_path / f"{policy}.jsonl"
        result = run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                      "--precision=bf16", f"--recompute={policy}",
                      "--microbatches=2"])
        assert result.returncode == 0, result.stderr
        result = run([tool("weft-run"), str(plan), "--steps", "3",
                      "--log-json", str(log)])
        assert result.returncode == 0, result.stderr
        losses[policy] = [json.loads(line)["loss"]
                          for line in log.read_text().splitlines()]
    assert losses["selective"] == losses["none"]
