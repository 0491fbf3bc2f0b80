"""weft-fold-loss-grad: a language model's cross-entropy and its gradient run
as one weft.softmax_cross_entropy_and_grad, which writes the gradient over
the logits (Megatron-LM's cross-entropy loss fusion). One SGD step of the
gpt example still matches torch float64 per tensor (`weft.oracle`), on one
rank, on a 2-stage pipeline and with full recompute (where the recomputed
loss computes the gradient); f16's loss-scaled seed folds too."""

import pytest

from conftest import plan_ranks, plan_view, run, tool
from weft import oracle


def kernels_of(plan_path):
    return [i.get("kernel") for r in plan_ranks(plan_path)
            for i in r["instructions"]]


@pytest.mark.parametrize("stages,flags", [(1, []), (2, []),
                                          (1, ["--recompute=full"])],
                         ids=["one-rank", "pipeline", "full-recompute"])
def test_fused_loss_steps_like_float64(weftc, gpt2_layers, tmp_path, stages,
                                       flags):
    model, batch, path = gpt2_layers
    report = oracle.check_sgd_step(
        oracle.Tools(weftc, tool("weft-run")), model, path, batch,
        ["tokens", "targets"], tmp_path / "step", micro_batches=2,
        stages=stages, flags=flags)
    assert report.worst.ratio < oracle.F32_FACTOR, report.summary()
    kernels = kernels_of(tmp_path / "step" / "plan.json")
    # One per micro-batch; no separate gradient kernel. Full recompute
    # keeps the forward's loss (the step's result) and fuses the
    # recomputed one with the gradient.
    assert kernels.count("softmax_cross_entropy_and_grad") == 2, kernels
    assert "softmax_cross_entropy_grad" not in kernels
    assert kernels.count("softmax_cross_entropy") == (2 if flags else 0)


def test_f16_loss_scale_seed_folds(weftc, gpt2_layers, tmp_path):
    """f16's seed is the loss scale, sliced from the loss scaler's state in
    the backward, times each micro-batch's share 1/M: the slice and the mul
    move before the loss, and the fused kernel reads it
    (test_mixed_precision's f16 tests check the training)."""
    _, _, path = gpt2_layers
    plan_path = tmp_path / "f16.json"
    result = run([weftc, str(path), "-o", str(plan_path), "--precision=f16",
                  "--microbatches=2"])
    assert result.returncode == 0, result.stderr
    rank = plan_view(plan_path, 0)["ranks"][0]
    scaler = next(s["buffer"] for s in rank["optimizer_state"]
                  if s["name"] == "loss_scaler")
    view_of = {b["id"]: b.get("view_of", b["id"]) for b in rank["buffers"]}
    made_by = {o: i for i in rank["instructions"] for o in i.get("outputs", [])}
    fused = [i for i in rank["instructions"]
             if i.get("kernel") == "softmax_cross_entropy_and_grad"]
    assert len(fused) == 2
    for loss in fused:
        share = made_by[view_of[loss["inputs"][2]]]
        assert share["kernel"] == "mul" and share["phase"] == "forward"
        seed = made_by[view_of[share["inputs"][0]]]
        assert seed["kernel"] == "slice" and seed["inputs"] == [scaler]
        assert seed["phase"] == "forward"
    kernels = kernels_of(plan_path)
    assert "softmax_cross_entropy_grad" not in kernels
