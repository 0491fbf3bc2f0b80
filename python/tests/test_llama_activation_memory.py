"""The Llama block's planned activation memory per layer (issue 38), in
Korthikanti et al.'s form (2022, Section 4.1 and Table 2), held exactly.

With 16-bit activations, sequence s, micro-batch b, hidden h, a query
heads of d = h/a, g kv heads (kv = s b g d), SwiGLU width f, and t-way
tensor parallelism, one layer of `weft.examples.llama` keeps for the
backward, per tensor rank (docs/memory.md):

    none       8sbh + 8sbh/t + 6sbf/t + 2as²b/t       + 4sb + 4sd
    selective  8sbh + 10sbh/t + 6sbf/t                + 4sb + 4sd
    flash      8sbh + 6sbh/t + 4kv/t + 6sbf/t + 2asb/t + 4sb + 4sd
    full       2sbh  (per layer: its input)

and with --sequence-parallel the 8sbh (the two RMSNorms' inputs and
outputs) and 4sb (their inverse rms) become 8sbh/t and 4sb/t. weft's
number is the difference of `weftc --estimate-memory --activation-dtype=f16`'s
most kept-activation bytes between the model with 3 and with 2 layers, so
the embedding, final norm, head and loss cancel (the differences are
additive: 2->3 equals 3->4).
"""

import pytest

from test_megatron_activation_memory import most_kept
from weft.examples import llama
from weft.examples.common import export

# A Llama-like shape, head dim 64 with 6 heads over 2 kv heads, and
# multi-head attention (g = a).
SHAPES = {
    "gqa-8-2": dict(hidden=256, heads=8, kv_heads=2, ffn=704, seq=128,
                    batch=2),
    "gqa-6-2": dict(hidden=384, heads=6, kv_heads=2, ffn=1024, seq=128,
                    batch=2),
    "mha-8": dict(hidden=512, heads=8, kv_heads=8, ffn=1408, seq=96,
                  batch=2),
}
POLICIES = {
    "none": [],
    "selective": ["--recompute=selective"],
    "flash": ["--flash-attention"],
    "full": ["--recompute=full", "--recompute-granularity=layer"],
}
LAYOUTS = [(policy, 1, False) for policy in POLICIES] + [
    (policy, 2, False) for policy in ("none", "selective", "flash")] + [
    (policy, 2, True) for policy in ("none", "selective")]


def llama_bytes(policy, t, sp, s, b, h, a, g, f):
    """The formula of the module docstring, in bytes."""
    d = h // a
    sbh, sbf, kv, sb, sd = s * b * h, s * b * f, s * b * g * d, s * b, s * d
    if policy == "full":
        return 2 * sbh
    norms = 8 * sbh // t if sp else 8 * sbh
    stats = 4 * sb // t if sp else 4 * sb
    common = norms + stats + 4 * sd + 6 * sbf // t
    return common + {"none": 8 * sbh // t + 2 * a * s * s * b // t,
                     "selective": 10 * sbh // t,
                     "flash": 6 * sbh // t + 4 * kv // t
                     + 2 * a * s * b // t}[policy]


_models = {}


def model(shape_name, layers, directory):
    key = (shape_name, layers)
    if key not in _models:
        m, inputs = llama.build(layers=layers, vocab=512,
                                **SHAPES[shape_name])
        path = directory / f"llama-{shape_name}-{layers}.onnx"
        export(m, inputs, ["tokens", "targets"], str(path))
        _models[key] = path
    return _models[key]


@pytest.mark.parametrize("shape_name", SHAPES)
def test_per_layer_activations_match_the_formula(weftc, tmp_path_factory,
                                                 shape_name):
    directory = tmp_path_factory.mktemp("llama-memory")
    shape = SHAPES[shape_name]
    paths = [model(shape_name, layers, directory) for layers in (2, 3)]
    for policy, t, sp in LAYOUTS:
        flags = POLICIES[policy] + ([f"--tensor-parallel={t}"] if t > 1
                                    else []) + (["--sequence-parallel"]
                                                if sp else [])
        per_layer = most_kept(weftc, paths[1], *flags) - \
            most_kept(weftc, paths[0], *flags)
        expected = llama_bytes(policy, t, sp, shape["seq"], shape["batch"],
                               shape["hidden"], shape["heads"],
                               shape["kv_heads"], shape["ffn"])
        assert per_layer == expected, (policy, t, sp, per_layer, expected)
