"""weft's planned activation memory per transformer layer against Megatron-LM
(Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models", 2022, §4.1 and §5, Table 2 without sequence parallelism; with
t-way tensor parallelism, sbh (10 + 24/t + 5as/(ht)), sbh (10 + 24/t) with
selective recompute and 2 sbh with full recompute, per tensor rank; with
sequence parallelism as well, sbh/t (34 + 5as/h), 34 sbh/t and 2 sbh/t).

With 16-bit activations and 1-byte dropout masks, one GPT layer keeps for
the backward
    sbh (34 + 5 as/h)  bytes without recompute,
    34 sbh             with selective recompute (core attention recomputed),
    2 sbh              with full recompute per layer (only the layer input),
for sequence s, micro-batch b, hidden h, heads a. weft's number is the
difference of `weftc --estimate-memory --activation-dtype=f16`'s most
kept-activation bytes between the same model with 3 and with 2 layers (P=1,
M=1), so the embedding, final LayerNorm and loss cancel. It must be within
2% of the formula; weft also counts the LayerNorm mean and inverse standard
deviation (2 sb f16 each per LayerNorm), which Megatron drops as 4sb << sbh.

The large shapes are Megatron's Table 3 rows, built by the weights-free
export (`weft.examples.gpt_weights_free`); the first test checks that weftc
plans that graph exactly as it plans torch's export of `weft.examples.gpt`.
The same check runs on a GPT written by a second, independent ONNX builder
(`independent_gpt`: f16 throughout, Hugging Face GPT-2's layout, GELU in the
erf and the tanh form with f16 literals), so the count does not depend on
the project's own exporter's spelling.
"""

import re

import onnx
import pytest

import independent_gpt
from conftest import run
from weft.examples import gpt, gpt_weights_free
from weft.examples.common import export, set_dropout

POLICIES = {
    "none": [],
    "selective": ["--recompute=selective"],
    "full-layer": ["--recompute=full", "--recompute-granularity=layer"],
}


def megatron_bytes(policy, s, b, h, a):
    """Table 2 (t = 1, no sequence parallelism): bytes per layer, in
    integers: sbh (34 + 5as/h) = 34 sbh + 5 as^2 b."""
    sbh = s * b * h
    return {"none": 34 * sbh + 5 * a * s * s * b, "selective": 34 * sbh,
            "full-layer": 2 * sbh}[policy]


def most_kept(weftc, model, *flags, precision="--activation-dtype=f16"):
    result = run([weftc, str(model), "--estimate-memory", precision, *flags])
    assert result.returncode == 0, result.stderr
    (kept,) = re.findall(r"kept_activations\s+(\d+) bytes \(most at any op\)",
                         result.stdout)
    return int(kept)


def weights_free(tmp_path, layers, **shape):
    path = tmp_path / f"gpt-{layers}-{shape['hidden']}-{shape['batch']}.onnx"
    onnx.save(gpt_weights_free.build(layers=layers, shared_mask=True,
                                     **shape), str(path))
    return path


def test_weights_free_export_plans_like_torch(weftc, tmp_path):
    """At a small shape, the weights-free graph and torch's export of the
    gpt example give byte-identical estimates for every policy, on one rank
    and on two pipeline stages, and the same parameter and FLOP counts."""
    shape = dict(layers=2, hidden=128, heads=4, seq=64, vocab=96, batch=2)
    model, inputs = gpt.build(**shape)
    set_dropout(model, 0.1)
    exported = tmp_path / "torch.onnx"
    export(model, inputs, ["tokens", "targets"], str(exported))
    built = tmp_path / "weights-free.onnx"
    onnx.save(gpt_weights_free.build(**shape), str(built))
    assert built.stat().st_size < exported.stat().st_size / 20

    def output(path, *flags):
        result = run([weftc, str(path), *flags])
        assert result.returncode == 0, result.stderr
        return result.stdout.replace(str(path), "MODEL")

    for flags in POLICIES.values():
        for stages in (["--pipeline-parallel=1"],
                       ["--pipeline-parallel=2", "--microbatches=2"]):
            both = [output(p, "--estimate-memory", *flags, *stages)
                    for p in (exported, built)]
            assert both[0] == both[1], (flags, stages)
    summaries = [output(p, "--emit=summary-json") for p in (exported, built)]
    assert summaries[0] == summaries[1]
    assert f'"params":{gpt_weights_free.parameter_count(**shape)}' in \
        summaries[1].replace(" ", "")


@pytest.mark.parametrize("name,batch", [("small", 1), ("22B", 1), ("22B", 2),
                                        ("175B", 1), ("530B", 1)])
@pytest.mark.parametrize("policy", POLICIES)
def test_per_layer_activations_match_megatron(weftc, tmp_path, name, batch,
                                              policy):
    if name == "small":
        config = dict(hidden=1024, heads=16, seq=512)
    else:
        config = {k: v for k, v in gpt_weights_free.MEGATRON_SHAPES[name]
                  .items() if k != "layers"}
    shape = dict(config, vocab=512, batch=batch)
    per_layer = (most_kept(weftc, weights_free(tmp_path, 3, **shape),
                           *POLICIES[policy])
                 - most_kept(weftc, weights_free(tmp_path, 2, **shape),
                             *POLICIES[policy]))
    expected = megatron_bytes(policy, config["seq"], batch, config["hidden"],
                              config["heads"])
    # What weft adds to the formula is the LayerNorm statistics alone (two
    # LayerNorms, mean and inverse deviation, sb f16 values each); full
    # recompute keeps the layer input alone. The bar, within 2% of
    # Table 2, follows from it.
    stats = 2 * 2 * 2 * config["seq"] * batch
    assert per_layer - expected == (0 if policy == "full-layer" else stats), \
        (per_layer, expected, per_layer / expected)
    assert per_layer - expected <= 0.02 * expected


@pytest.mark.parametrize("name,batch", [("small", 1), ("22B", 1),
                                        ("175B", 1)])
def test_flash_attention_drops_the_quadratic_term(weftc, tmp_path, name,
                                                  batch):
    """--flash-attention keeps no [s, s] tensor: Table 2's 5 as^2 b is gone
    and the layer keeps the selective-recompute count, 34 sbh, plus the
    fused op's own a s b log-sum-exp values. The attention reads and
    writes [b, s, a, d] (weft-fold-attention-transpose), so its output is
    the tensor the projection keeps, as in Megatron-LM's [s, b, a, d]
    layout; with the [b, a, s, d] copies it was 2 sbh more."""
    if name == "small":
        config = dict(hidden=1024, heads=16, seq=512)
    else:
        config = {k: v for k, v in gpt_weights_free.MEGATRON_SHAPES[name]
                  .items() if k != "layers"}
    shape = dict(config, vocab=512, batch=batch)
    per_layer = (most_kept(weftc, weights_free(tmp_path, 3, **shape),
                           "--flash-attention")
                 - most_kept(weftc, weights_free(tmp_path, 2, **shape),
                             "--flash-attention"))
    s, h, a = config["seq"], config["hidden"], config["heads"]
    sbh = s * batch * h
    layer_norm_stats = 2 * 2 * 2 * s * batch
    assert per_layer == 34 * sbh + 2 * a * s * batch + layer_norm_stats
    assert per_layer < megatron_bytes("none", s, batch, h, a) / 2


def megatron_tensor_parallel_bytes(policy, s, b, h, a, t):
    """Table 2, tensor parallel rows: bytes per layer per tensor rank."""
    sbh = s * b * h
    return {"none": 10 * sbh + 24 * sbh // t + 5 * a * s * s * b // t,
            "selective": 10 * sbh + 24 * sbh // t,
            "full-layer": 2 * sbh}[policy]


@pytest.mark.parametrize("name", ["small", "22B", "175B", "530B", "1T"])
@pytest.mark.parametrize("policy", POLICIES)
def test_per_layer_activations_with_tensor_parallelism_match_megatron(
        weftc, tmp_path, name, policy):
    """The Table 3 shapes at t = 8 (the paper's tensor-parallel size; the
    small shape too): the attention's and MLP's activations are sharded
    (24 sbh / t and the 5 as^2 b of core attention / t), the LayerNorms'
    and the blocks' inputs and dropout masks replicated (10 sbh). Attention
    dropout draws each rank's shard of the whole mask."""
    if name == "small":
        config = dict(hidden=1024, heads=16, seq=512)
    else:
        config = {k: v for k, v in gpt_weights_free.MEGATRON_SHAPES[name]
                  .items() if k != "layers"}
    t = 8
    shape = dict(config, vocab=512, batch=1)
    flags = [f"--tensor-parallel={t}", *POLICIES[policy]]
    per_layer = (most_kept(weftc, weights_free(tmp_path, 3, **shape), *flags)
                 - most_kept(weftc, weights_free(tmp_path, 2, **shape),
                             *flags))
    expected = megatron_tensor_parallel_bytes(
        policy, config["seq"], 1, config["hidden"], config["heads"], t)
    # Exactly Table 2 plus the LayerNorm statistics (replicated: each rank
    # normalises the whole sequence), within the 2%.
    stats = 2 * 2 * 2 * config["seq"]
    assert per_layer - expected == (0 if policy == "full-layer" else stats), \
        (per_layer, expected, per_layer / expected)
    assert per_layer - expected <= 0.02 * expected


def megatron_sequence_parallel_bytes(policy, s, b, h, a, t):
    """Table 2, tensor + sequence parallel rows: bytes per layer per tensor
    rank, sbh/t (34 + 5as/h) and 34 sbh/t with selective recompute; with
    full recompute per layer the layer input, a sequence shard: 2 sbh/t
    (Section 5's remark on storing 1/t of it)."""
    sbh = s * b * h
    return {"none": 34 * sbh // t + 5 * a * s * s * b // t,
            "selective": 34 * sbh // t,
            "full-layer": 2 * sbh // t}[policy]


# (dtype flag, bytes of a LayerNorm statistic): 16-bit activations sized
# by --activation-dtype, and --precision bf16's mixed precision.
F16_ACTIVATIONS = ("--activation-dtype=f16", 2)
BF16_MIXED = ("--precision=bf16", 4)


@pytest.mark.parametrize("name", ["small", "22B", "175B", "530B", "1T"])
@pytest.mark.parametrize("policy", POLICIES)
def test_per_layer_activations_with_sequence_parallelism_match_megatron(
        weftc, tmp_path, name, policy):
    """The Table 3 shapes at t = 8 with --sequence-parallel: the LayerNorms'
    inputs and outputs, the residual branches' dropouts and their masks are
    sequence shards too, and the linears' gathered inputs are gathered
    again in the backward instead of kept (Section 4.2.2), so every term is
    divided by t. weft adds the LayerNorm statistics, sharded as well."""
    check_sequence_parallel_layer(weftc, tmp_path, name, policy,
                                  F16_ACTIVATIONS)


@pytest.mark.parametrize("name", ["small", "22B", "1T"])
@pytest.mark.parametrize("policy", ["none", "selective", "full-layer"])
def test_bf16_mixed_precision_keeps_megatron_bytes(weftc, tmp_path, name,
                                                   policy):
    """Under --precision bf16 (f32 LayerNorm statistics, f32 master
    weights), t = 8 with --sequence-parallel keeps Table 2's sbh/t (34 +
    5as/h), 34 sbh/t and 2 sbh/t in 16 bits, as Megatron-LM's bf16 runs do:
    each LayerNorm reads
    the bf16 residual stream (no f32 copy kept) and writes a bf16 shard,
    which is all-gathered in bf16 and gathered again in the backward (an
    f32 output was gathered in f32, cast, and its whole-sequence bf16 cast
    kept: 66 sbh/t a layer). Scalar literals are bf16 literals, not casts
    kept for the recomputed core attention. The softmax writes bf16
    probabilities and the attention dropout runs on them (Megatron-LM's
    fused softmax; autocast's f32 softmax kept 2 as^2 b/t more)."""
    check_sequence_parallel_layer(weftc, tmp_path, name, policy, BF16_MIXED)


def check_sequence_parallel_layer(weftc, tmp_path, name, policy, dtype):
    """One layer's kept bytes at t = 8 with SP under `dtype` (F16_ACTIVATIONS
    or BF16_MIXED) equal Table 2's plus the statistics: 2 LayerNorms x
    (mean, inverse deviation) x s/t rows."""
    if name == "small":
        config = dict(hidden=1024, heads=16, seq=512)
    else:
        config = {k: v for k, v in gpt_weights_free.MEGATRON_SHAPES[name]
                  .items() if k != "layers"}
    t = 8
    shape = dict(config, vocab=512, batch=1)
    flags = [f"--tensor-parallel={t}", "--sequence-parallel",
             *POLICIES[policy]]
    flag, stat_bytes = dtype
    per_layer = (most_kept(weftc, weights_free(tmp_path, 3, **shape), *flags,
                           precision=flag)
                 - most_kept(weftc, weights_free(tmp_path, 2, **shape),
                             *flags, precision=flag))
    expected = megatron_sequence_parallel_bytes(
        policy, config["seq"], 1, config["hidden"], config["heads"], t)
    stats = 2 * 2 * stat_bytes * config["seq"] // t
    assert per_layer - expected == (0 if policy == "full-layer" else stats), \
        (per_layer, expected, per_layer / expected)
    assert per_layer - expected <= 0.02 * expected


def test_gpt3_175b_estimate(weftc, tmp_path):
    """The whole 96-layer GPT-3 175B on 8 pipeline stages with 1F1B and
    selective recompute: every rank's estimate prints, and the first stage
    holds about P = 8 micro-batches of its 12 layers' activations (34 sbh
    each with selective recompute)."""
    config = gpt_weights_free.MEGATRON_SHAPES["175B"]
    path = tmp_path / "gpt3-175b.onnx"
    onnx.save(gpt_weights_free.build(vocab=51200, batch=8, shared_mask=True,
                                     **config), str(path))
    result = run([weftc, str(path), "--estimate-memory",
                  "--activation-dtype=f16", "--pipeline-parallel=8",
                  "--microbatches=8", "--recompute=selective",
                  "--schedule=1f1b"])
    assert result.returncode == 0, result.stderr
    kept = [int(v) for v in re.findall(
        r"kept_activations\s+(\d+) bytes \(most at any op\)", result.stdout)]
    params = [int(v) for v in re.findall(r"parameters\s+(\d+) bytes",
                                         result.stdout)]
    assert len(kept) == len(params) == 8
    # f32 parameters: 175B in all, about 12 layers' worth on each stage.
    assert sum(params) == pytest.approx(4 * 175e9, rel=0.02)
    s, h = config["seq"], config["hidden"]
    one_layer = 34 * s * 1 * h
    assert kept[0] / (8 * 12 * one_layer) == pytest.approx(1, rel=0.1)


@pytest.mark.parametrize("gelu", ["erf", "tanh"])
@pytest.mark.parametrize("policy", POLICIES)
def test_independent_builder_matches_megatron(weftc, tmp_path, gelu, policy):
    """GPT-2 small's layer width (hidden 1024, 16 heads, sequence 512) from
    `independent_gpt`: its GELU chains fuse (f16 literals within f16's
    rounding), so the per-layer bytes equal Megatron's formula plus the
    LayerNorm statistics, as for the project's own export."""
    s, b, h, a = 512, 1, 1024, 16

    def kept(layers):
        path = tmp_path / f"independent-{gelu}-{layers}.onnx"
        onnx.save(independent_gpt.build(layers, h, a, s, vocab=512, batch=b,
                                        gelu=gelu), str(path))
        return most_kept(weftc, path, *POLICIES[policy])

    per_layer = kept(3) - kept(2)
    expected = megatron_bytes(policy, s, b, h, a)
    stats = 2 * 2 * 2 * s * b
    assert per_layer - expected == (0 if policy == "full-layer" else stats), \
        (per_layer, expected, per_layer / expected)
