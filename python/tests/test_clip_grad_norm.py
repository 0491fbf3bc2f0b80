"""`weftc --clip-grad-norm C` (issue 40): torch.nn.utils.clip_grad_norm_
before the update, the norm over every rank's gradients (Megatron-LM's
clip_grad_norm_fp32: each rank's sum of squares, a copy held by several
ranks counted once, all-reduced over the mesh).

Oracle (d) of weft.oracle: the gpt example exported in float64 and trained
one SGD step by weft on each layout, against torch float64 on the same
micro-batch split with clip_grad_norm_, each parameter's change within 1e-8
of torch's relative to its norm. C is a quarter of the step's gradient norm,
so every gradient is scaled by about 1/4: a layout that counted a tensor
shard twice, dropped a stage's gradients from the norm or left a rank's
gradients unclipped is off by far more than 1e-8."""

import copy

import pytest
import torch

from conftest import run, tool
from weft import oracle

BATCH = 8

LAYOUTS = {
    "one rank": dict(),
    "micro-batches": dict(micro_batches=2),
    "pipeline": dict(stages=2, micro_batches=2),
    # The tied embedding and head on rank 0 (stages 0 and 3).
    "zb-v": dict(stages=2, micro_batches=4, schedule="zb-v"),
    "interleaved": dict(stages=2, micro_batches=4, schedule="interleaved"),
    "tensor": dict(tensor_parallel=2),
    "tensor+sp": dict(tensor_parallel=2, flags=["--sequence-parallel"]),
    "data": dict(data_parallel=2),
    "zero-1": dict(data_parallel=2, flags=["--zero-stage=1"]),
    "zero-2": dict(data_parallel=2, micro_batches=2,
                   flags=["--zero-stage=2", "--optimizer-shard-threshold=0"]),
    "zero-3": dict(data_parallel=2,
                   flags=["--zero-stage=3", "--optimizer-shard-threshold=0"]),
    "pipeline+tensor": dict(stages=2, micro_batches=2, tensor_parallel=2),
}


def global_norm(model, batch, micro_batches):
    """torch float64's gradient 2-norm over all parameters for the split."""
    model = copy.deepcopy(model).double()
    oracle.microbatch_step(model, oracle._cast(batch, torch.float64),
                           micro_batches)
    return float(torch.nn.utils.clip_grad_norm_(model.parameters(),
                                                float("inf")))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_clipped_step_equals_torch_float64(layout, gpt2_layers, tmp_path):
    model, batch, _ = gpt2_layers
    spec = dict(LAYOUTS[layout])
    m = spec.get("micro_batches", 1) * spec.get("data_parallel", 1)
    clip = global_norm(model, batch, m) / 4
    oracle.check_float64_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model, batch,
        ["tokens", "targets"], tmp_path, clip=clip, **spec)


def test_a_norm_below_the_bound_leaves_the_step(gpt2_layers, tmp_path):
    """C above the norm: torch's coefficient clamps to 1, the step is the
    unclipped one (on the pipeline, whose stages must agree)."""
    model, batch, _ = gpt2_layers
    clip = global_norm(model, batch, 2) * 4
    oracle.check_float64_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model, batch,
        ["tokens", "targets"], tmp_path, clip=clip, stages=2,
        micro_batches=2)


@pytest.mark.parametrize("flags,message", [
    (["--clip-grad-norm=-1"], "--clip-grad-norm=-1: must be a finite number "
     ">= 0"),
    (["--clip-grad-norm=1", "--precision=f16"],
     "--clip-grad-norm with --precision f16: the gradients are loss-scaled"),
])
def test_bad_clip_flags_are_errors(flags, message, weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *flags])
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
