"""GELU as users write it, exported by torch, becomes one weft.gelu (erf
form) or weft.gelu_tanh (tanh approximation) in weftc's IR, and the fused
kernels and their gradients train to torch float64 (the oracle of
`weft.oracle`: step-1 loss and one SGD step's change per tensor).

The spellings are those of torch (`F.gelu`, `F.gelu(approximate="tanh")`),
BERT, Hugging Face's `NewGELUActivation` (GPT-2's `gelu_new`), Megatron-LM's
`bias_gelu` and `x * Phi(x)` with Phi divided by 2; lit tests
(`test/Transforms/fuse-gelu.mlir`) cover f16/bf16 constants and what must
not match."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import plan_ranks, run, tool
from weft import oracle
from weft.export import export

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

SPELLINGS = {
    "torch-erf": ("gelu", lambda x: F.gelu(x)),
    "torch-tanh": ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
    "bert": ("gelu", lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))),
    "x-phi": ("gelu", lambda x: x * ((torch.erf(x * (1 / math.sqrt(2))) + 1) / 2)),
    "hf-gelu-new": ("gelu_tanh", lambda x: 0.5 * x * (1.0 + torch.tanh(
        SQRT_2_OVER_PI * (x + 0.044715 * torch.pow(x, 3.0))))),
    "megatron-bias-gelu": ("gelu_tanh", lambda x: x * 0.5 * (1.0 + torch.tanh(
        0.79788456 * x * (1 + 0.044715 * x * x)))),
}


class Mlp(nn.Module):
    def __init__(self, activation):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.out = nn.Linear(32, 10)
        self.activation = activation

    def forward(self, x, labels):
        return F.cross_entropy(self.out(self.activation(self.fc(x))), labels)


def build(spelling):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    batch = (2 * torch.randn(8, 16, generator=g),
             torch.randint(0, 10, (8,), generator=g))
    return Mlp(SPELLINGS[spelling][1]), batch


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_spelling_fuses_and_trains_to_float64(weftc, tmp_path, spelling):
    model, batch = build(spelling)
    path = tmp_path / f"{spelling}.onnx"
    export(model, batch, str(path), ["x", "labels"])
    result = run([weftc, str(path), "--emit=mlir"])
    assert result.returncode == 0, result.stderr
    fused = SPELLINGS[spelling][0]
    ir = result.stdout
    # The tanh form goes on into its Linear layers' GEMMs (cuBLASLt's
    # epilogues; weft-fold-gemm-gelu): the first's, and the second's input
    # gradient.
    if fused == "gelu_tanh":
        fused = "gemm_gelu_tanh"
    assert f"weft.{fused} " in ir and f"weft.{fused}_grad " in ir
    assert "weft.erf" not in ir and "weft.tanh" not in ir
    for other in {"gelu", "gelu_tanh", "gemm_gelu_tanh"} - {fused}:
        assert f"weft.{other} " not in ir
    for m in (1, 2):
        report = oracle.check_sgd_step(
            oracle.Tools(weftc, tool("weft-run")), model, path, batch,
            ["x", "labels"], tmp_path / f"m{m}", micro_batches=m)
        assert report.worst.ratio < oracle.F32_FACTOR, report.summary()


@pytest.mark.parametrize("flags", [[], ["--recompute=full"]])
def test_gpt_tanh_mlp_runs_in_its_gemms(weftc, tmp_path, flags):
    """The gpt example with GPT-2's tanh GELU: each layer's GELU and its
    gradient fold into the MLP's GEMMs (with full recompute, the
    recomputed ones too), and one SGD step matches float64 per tensor."""
    from weft.examples import gpt
    config = dict(gpt.CONFIGS["small"], layers=2)
    model, batch = gpt.build(**config, gelu="tanh")
    path = tmp_path / "gpt-tanh.onnx"
    export(model, batch, str(path), ["tokens", "targets"])
    report = oracle.check_sgd_step(
        oracle.Tools(weftc, tool("weft-run")), model, path, batch,
        ["tokens", "targets"], tmp_path / "step", micro_batches=2,
        flags=flags)
    assert report.worst.ratio < oracle.F32_FACTOR, report.summary()
    ranks = plan_ranks(tmp_path / "step" / "plan.json")
    kernels = [i.get("kernel") for r in ranks for i in r["instructions"]]
    # 2 layers x 2 micro-batches, each one of each; no GELU left alone.
    forward = 8 if flags else 4  # recomputed in the backward too
    assert kernels.count("gemm_gelu_tanh") == forward, kernels
    assert kernels.count("gemm_gelu_tanh_grad") == 4, kernels
    assert "gelu_tanh" not in kernels and "gelu_tanh_grad" not in kernels


def test_tanh_gelu_is_not_erf_gelu(weftc, tmp_path):
    """The oracle can tell the two forms apart: weft's gelu_tanh against a
    float64 reference computed with the erf form fails."""
    model, batch = build("torch-tanh")
    path = tmp_path / "tanh.onnx"
    export(model, batch, str(path), ["x", "labels"])
    model.activation = SPELLINGS["torch-erf"][1]
    with pytest.raises(oracle.OracleError):
        oracle.check_sgd_step(oracle.Tools(weftc, tool("weft-run")), model,
                              path, batch, ["x", "labels"], tmp_path)
