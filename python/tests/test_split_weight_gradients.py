"""The B/W split of the backward (issue 40; Qi et al. 2024, "Zero Bubble
Pipeline Parallelism", Section 2): `weftc --split-weight-gradients` marks
the backward ops that only weight gradients need as W (`#weft.task<W>`).
GPipe and 1F1B run each W in its micro-batch's backward task, so every pass
after weft-autodiff must treat W as backward work: the plan is byte for byte
the plan without the split, on every layout below (a pass that told B from
W would change which values are recomputed, received early or kept)."""

import re

import pytest

from conftest import run

LAYOUTS = [
    ["--pipeline-parallel=2", "--microbatches=4", "--recompute=selective",
     "--tensor-parallel=2", "--sequence-parallel"],
    ["--pipeline-parallel=2", "--microbatches=2", "--data-parallel=2",
     "--zero-stage=2"],
    ["--pipeline-parallel=2", "--microbatches=4", "--recompute=full",
     "--schedule=gpipe"],
    ["--pipeline-parallel=2", "--microbatches=4", "--tensor-parallel=2",
     "--precision=bf16", "--flash-attention"],
]


@pytest.mark.parametrize("flags", LAYOUTS, ids=lambda f: " ".join(f))
def test_split_plan_is_the_unsplit_plan(flags, weftc, models_dir, tmp_path):
    plans = []
    for split in ([], ["--split-weight-gradients"]):
        out = tmp_path / f"plan{len(plans)}.json"
        result = run([weftc, str(models_dir / "gpt.onnx"), *flags, *split,
                      "-o", str(out)])
        assert result.returncode == 0, result.stderr
        plans.append(out.read_bytes())
    assert plans[0] == plans[1]


def test_weight_gradients_are_w(weftc, models_dir, tmp_path):
    result = run([weftc, str(models_dir / "gpt.onnx"),
                  "--split-weight-gradients", "-o", str(tmp_path / "p.json"),
                  "--mlir-print-ir-after=weft-autodiff"])
    assert result.returncode == 0, result.stderr
    kinds = {}
    for line in result.stderr.splitlines():
        m = re.search(r"= (weft\.\w+) .*#weft\.task<([BW])", line)
        if m:
            kinds.setdefault(m.group(2), set()).add(m.group(1))
    # Each linear's dW = x^T dY is a W gemm and its bias's sum W; its
    # dX = dY W^T a B gemm; the embeddings' scatter-adds W.
    assert {"weft.gemm", "weft.reduce_sum", "weft.gather_grad"} <= kinds["W"]
    assert "weft.gemm" in kinds["B"], kinds
    # Only weight-gradient work is W (the tied embedding's two gradients
    # are summed by an add); ops with an input gradient, as LayerNorm's
    # and the loss's, are B.
    assert kinds["W"] <= {"weft.gemm", "weft.reduce_sum", "weft.reshape",
                          "weft.gather_grad", "weft.add"}, kinds
    assert {"weft.layer_norm_grad",
            "weft.softmax_cross_entropy_grad"} <= kinds["B"], kinds
