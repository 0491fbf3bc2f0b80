"""transformers 4.30 (the last release on Debian's torch 1.13) through the
TorchScript exporter at opset 17, as weft.export writes it there: what the
issue found refused, now compiled and trained against torch float64.

- LlamaForCausalLM: its rotary cache is guarded by "if seq_len >
  self.max_seq_len_cached", traced as `If` nodes on shapes (Less, Max,
  Equal on Shape values): the condition is known at compile time and the
  branch taken is imported in place;
- OPTForCausalLM: its learned positions are `cumsum(attention_mask) *
  attention_mask - 1` on a mask of ones made inside the model: CumSum (a
  weft op with CPU and CUDA kernels and a gradient) folds with the rest;
- BertForMaskedLM: its additive attention mask, built from a mask of ones
  made inside the model, folds to zeros, and `--flash-attention` fuses its
  bidirectional attention with the mask gone (it hides nothing);
- GPTNeoXForCausalLM: its rotary tables are repeated (Tile: a broadcast)
  and gathered by position ids (GatherElements, a weft op with CPU and
  CUDA kernels and a gradient), on constants: both fold.

Each wrapped as `module(idx, targets) -> cross-entropy`; 3 AdamW steps
equal torch float64 on the
same micro-batch split within 1e-5 (weft.oracle.MULTISTEP_RTOL) on one
rank, at M = 2, and under T = 2 (Llama, OPT, GPT-NeoX: its fused qkv
projection is head-interleaved, [heads, (q, k, v), head dim], so a
column split by heads is contiguous; its baddbmm's splat of zeros is
split as a splat), P = 2 and D = 2 with ZeRO-3.

In float64 (the model exported in float64), one SGD step of GPT-NeoX and
BERT equals torch float64's per tensor within 1e-8 (oracle (d)), fused
and tensor-parallel too (LayerNorm's statistics are f64 beside f64: in
f32 they put the gradients 3e-8 off).

With transformers' default padding token (Llama 0, OPT 1) the embedding
row torch never gives a gradient (nn.Embedding's padding_idx) reaches
weftc through weft.export's `weft.padding_idx` metadata, and training on
batches that hold that token equals float64 (the row takes weight decay
only, as in torch), also with the table vocab-parallel (T = 2) and under
ZeRO-3.
"""

import onnx
import pytest
import torch

from conftest import layout_ids, plan_view, run, tool
from weft import oracle
from weft.examples.causal_lm import CausalLMLoss, PaddedLMLoss
from weft.export import export

transformers = pytest.importorskip("transformers")

VOCAB, SEQ, BATCH, STEPS = 128, 16, 4, 3
NAMES = ["idx", "targets"]


def build(family, padding=False):
    """The model; with `padding`, transformers' default pad_token_id,
    which becomes the embedding's padding_idx."""
    torch.manual_seed(0)
    common = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=64)
    if not padding:
        common["pad_token_id"] = None
    if family == "llama":
        model = transformers.LlamaForCausalLM(
            transformers.LlamaConfig(intermediate_size=96, **common))
    elif family == "bert":
        # Bidirectional: the prediction of every position (no shift).
        model = transformers.BertForMaskedLM(transformers.BertConfig(
            intermediate_size=64, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, **common))
    elif family == "neox":
        model = transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(
            intermediate_size=96, hidden_dropout=0.0, attention_dropout=0.0,
            **common))
    else:
        model = transformers.OPTForCausalLM(transformers.OPTConfig(
            ffn_dim=96, word_embed_proj_dim=32, dropout=0.0,
            attention_dropout=0.0, **common))
    return CausalLMLoss(model).train()


def batches(pad=None):
    """STEPS (idx, targets) batches; with `pad`, the first 3 tokens of
    every sequence are that token (left padding)."""
    g = torch.Generator().manual_seed(1)
    out = [(torch.randint(0, VOCAB, (BATCH, SEQ), generator=g),
            torch.randint(0, VOCAB, (BATCH, SEQ), generator=g))
           for _ in range(STEPS)]
    if pad is not None:
        for idx, _ in out:
            idx[:, :3] = pad
    return out


@pytest.fixture(scope="module")
def tools():
    return oracle.Tools(tool("weftc"), tool("weft-run"))


_exports, _references = {}, {}


def exported(family, directory):
    if family not in _exports:
        path = directory / f"{family}.onnx"
        export(build(family), batches()[0], str(path), NAMES)
        _exports[family] = path
    return _exports[family]


def float64_losses(family, m):
    if (family, m) not in _references:
        _references[family, m] = oracle.float64_losses(
            build(family), batches(), m,
            lambda p: torch.optim.AdamW(p, lr=1e-3))
    return _references[family, m]


# (family, M, weftc flags, T, P, D)
LAYOUTS = [
    ("llama", 1, (), 1, 1, 1),
    ("llama", 2, (), 2, 1, 1),
    ("llama", 2, (), 1, 2, 1),
    ("opt", 1, (), 1, 1, 1),
    ("opt", 2, (), 2, 1, 1),
    ("opt", 1, ("--zero-stage=3",), 1, 1, 2),
    ("bert", 1, (), 1, 1, 1),
    ("bert", 2, ("--flash-attention",), 1, 1, 1),
    ("neox", 1, (), 1, 1, 1),
    ("neox", 2, (), 1, 2, 1),
    ("neox", 2, (), 2, 1, 1),
    ("neox", 2, ("--sequence-parallel",), 2, 1, 1),
]


def test_bert_attention_fuses_without_its_zero_mask(weftc, tmp_path_factory,
                                                   tmp_path):
    model = exported("bert", tmp_path_factory.mktemp("export"))
    plan = tmp_path / "plan.json"
    result = run([weftc, str(model), "--flash-attention", "-o", str(plan)])
    assert result.returncode == 0 and "not fused" not in result.stderr, \
        result.stderr
    kernels = [i.get("kernel") for i in
               plan_view(plan, 0)["ranks"][0]["instructions"]]
    assert kernels.count("attention") == 2


@pytest.mark.parametrize("family,m,flags,tensor,stages,data", LAYOUTS,
                         ids=layout_ids(LAYOUTS))
def test_adamw_steps_equal_float64(family, m, flags, tensor, stages, data,
                                   tools, tmp_path_factory, tmp_path):
    model = exported(family, tmp_path_factory.mktemp("export"))
    losses, _ = oracle.weft_train(
        tools, model, batches(), NAMES, tmp_path, micro_batches=m,
        stages=stages, tensor_parallel=tensor, data_parallel=data,
        flags=flags)
    assert losses == pytest.approx(float64_losses(family, m * data),
                                   rel=oracle.MULTISTEP_RTOL)


# (family, M, weftc flags, T, P, D) with transformers' padding token.
PADDED = [("llama", 1, (), 1, 1, 1),
          ("llama", 2, ("--sequence-parallel",), 2, 1, 1),
          ("opt", 2, (), 2, 1, 1),
          ("opt", 1, ("--zero-stage=3",), 1, 1, 2)]
PAD_TOKEN = {"llama": 0, "opt": 1}


@pytest.mark.parametrize("family,m,flags,tensor,stages,data", PADDED,
                         ids=layout_ids(PADDED))
def test_padding_idx_row_gets_no_gradient(family, m, flags, tensor, stages,
                                          data, tools, weftc, tmp_path):
    module = build(family, padding=True)
    table = next(n for n, sub in module.named_modules()
                 if isinstance(sub, torch.nn.Embedding)
                 and sub.padding_idx is not None) + ".weight"
    pad = PAD_TOKEN[family]
    data_batches = batches(pad)
    path = tmp_path / f"{family}.onnx"
    export(module, data_batches[0], str(path), NAMES)
    metadata = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert metadata["weft.padding_idx"] == f"{table}={pad}"
    ir = run([weftc, str(path), "--emit=mlir", "--forward-only"]).stdout
    assert f"weft.padding_idx = {pad} : i64" in ir
    losses, _ = oracle.weft_train(
        tools, path, data_batches, NAMES, tmp_path, micro_batches=m,
        stages=stages, tensor_parallel=tensor, data_parallel=data,
        flags=flags)
    want = oracle.float64_losses(build(family, padding=True), data_batches,
                                 m * data,
                                 lambda p: torch.optim.AdamW(p, lr=1e-3))
    assert losses == pytest.approx(want, rel=oracle.MULTISTEP_RTOL)


# (family, M, weftc flags, T, P, D) with the attention mask an input.
MASKED = [("bert", 2, (), 1, 1, 1),
          ("bert", 2, ("--flash-attention",), 1, 1, 1),
          ("bert", 2, ("--flash-attention",), 2, 1, 1),
          ("llama", 2, ("--flash-attention",), 1, 1, 1),
          ("llama", 1, ("--flash-attention", "--sequence-parallel"), 2, 1, 2)]


def masked_batches():
    """batches() with a [B, S] attention mask: sequence b has its last 2 b
    positions padded (0), sequence 0 none."""
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    for b in range(BATCH):
        mask[b, SEQ - 2 * b:] = 0
    return [(idx, mask, targets) for idx, targets in batches()]


@pytest.mark.parametrize("family,m,flags,tensor,stages,data", MASKED,
                         ids=layout_ids(MASKED))
def test_padding_mask_input_fuses_and_equals_float64(
        family, m, flags, tensor, stages, data, tools, weftc, tmp_path):
    """An attention mask given as an input (padding): its additive form is
    computed at run time, so --flash-attention takes it as the fused op's
    bias (BERT: [B, 1, 1, S]; Llama: with the causal mask, [B, 1, S, S]);
    3 AdamW steps equal float64 fused and unfused, with tensor and data
    parallelism."""
    module = PaddedLMLoss(build(family).m)
    names = ["idx", "mask", "targets"]
    data_batches = masked_batches()
    path = tmp_path / f"{family}.onnx"
    export(module, data_batches[0], str(path), names)
    if "--flash-attention" in flags:
        plan = tmp_path / "fused.json"
        result = run([weftc, str(path), "--flash-attention", "-o", str(plan)])
        assert result.returncode == 0, result.stderr
        fused = [i for i in plan_view(plan, 0)["ranks"][0]
                 ["instructions"] if i.get("kernel") == "attention"]
        assert len(fused) == 2 and all(len(i["inputs"]) == 4 for i in fused)
    losses, _ = oracle.weft_train(
        tools, path, data_batches, names, tmp_path, micro_batches=m,
        stages=stages, tensor_parallel=tensor, data_parallel=data,
        flags=flags)
    want = oracle.float64_losses(PaddedLMLoss(build(family).m), data_batches,
                                 m * data,
                                 lambda p: torch.optim.AdamW(p, lr=1e-3))
    assert losses == pytest.approx(want, rel=oracle.MULTISTEP_RTOL)


# (family, M, weftc flags, T, P, D) for oracle (d). Not Llama and OPT:
# transformers 4.30 clamps their scores with torch.tensor(finfo.min), a
# tensor of the default dtype, so their float64 TorchScript export holds
# Max(double, float), which ONNX's checker rejects.
FLOAT64 = [("neox", 1, (), 1, 1, 1),
           ("neox", 2, ("--sequence-parallel",), 2, 1, 1),
           ("neox", 2, (), 1, 2, 1),
           ("bert", 1, (), 1, 1, 1),
           ("bert", 2, ("--flash-attention",), 2, 1, 1)]


@pytest.mark.parametrize("family,m,flags,tensor,stages,data", FLOAT64,
                         ids=layout_ids(FLOAT64))
def test_float64_sgd_step_equals_torch_float64(family, m, flags, tensor,
                                               stages, data, tools,
                                               tmp_path):
    """Oracle (d): the model exported in float64 and one SGD step by weft,
    per tensor within weft.oracle.F64_RTOL (1e-8) of torch float64's."""
    oracle.check_float64_step(tools, build(family), batches()[0], NAMES,
                              tmp_path, micro_batches=m, stages=stages,
                              tensor_parallel=tensor, data_parallel=data,
                              flags=flags)
