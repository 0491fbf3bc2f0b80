"""Zero-bubble schedules (issue 40; Qi et al. 2024, "Zero Bubble Pipeline
Parallelism"): `--schedule zb-h1|zb-h2` split each backward into B (input
gradient) and W (weight gradient) and run W later, in the bubbles.

The oracle is 1F1B: the same micro-batches, each W summing into its
gradient in micro-batch order as 1F1B's backward does, so the losses and
the trained parameters are bit-identical to 1F1B's on every layout below
(exact equality, not a tolerance: a schedule that ran a W twice, dropped
one, or summed in another order would differ in the last bits at least).
1F1B itself is held to torch float64 by test_pipeline; one layout per model
is also checked against torch here, directly."""

import json
import os

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import run, tool
from weft import oracle
from weft.oracle import mpirun

STEPS = 4
SCHEDULES = ["zb-h1", "zb-h2"]
CNN_SHAPES = {
    "resnet": ["--input-shape=images=8x3x64x64", "--input-shape=labels=8"],
    "unet": ["--input-shape=images=8x3x64x64",
             "--input-shape=target=8x1x64x64"],
}


def train(weftc, models_dir, tmp_path, model, schedule, flags, ranks,
          steps=STEPS):
    """(per-step losses, {parameter: trained value}) of `model` compiled
    with `flags` under `schedule`, on synthetic data (seed 0)."""
    work = tmp_path / f"{schedule}-{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    plan, log, saved = work / "plan.json", work / "log.jsonl", \
        work / "trained.onnx"
    result = run([weftc, str(models_dir / f"{model}.onnx"), "-o", str(plan),
                  f"--schedule={schedule}", *flags])
    assert result.returncode == 0, result.stderr
    assert json.loads(plan.read_text())["schedule"] == schedule
    result = run(mpirun(ranks) + [
        tool("weft-run"), str(plan), "--steps", str(steps), "--log-json",
        str(log), "--save", str(saved)],
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
    params = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(str(saved)).graph.initializer}
    return losses, params


def assert_same_training(a, b, what):
    (losses_a, params_a), (losses_b, params_b) = a, b
    assert losses_a == losses_b, f"{what}: losses {losses_a} != {losses_b}"
    assert params_a.keys() == params_b.keys()
    differ = [n for n in params_a if not np.array_equal(params_a[n],
                                                        params_b[n])]
    assert not differ, f"{what}: parameters differ: {differ[:8]}"


GPT_LAYOUTS = [
    # (flags, ranks)
    (["--pipeline-parallel=2", "--microbatches=4"], 2),
    (["--pipeline-parallel=2", "--microbatches=8"], 2),
    (["--pipeline-parallel=4", "--microbatches=4"], 4),
    (["--pipeline-parallel=4", "--microbatches=8"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--tensor-parallel=2",
      "--sequence-parallel"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--data-parallel=2",
      "--zero-stage=2"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--recompute=selective"], 2),
    (["--pipeline-parallel=2", "--microbatches=4", "--recompute=full"], 2),
    (["--pipeline-parallel=2", "--microbatches=4", "--precision=bf16",
      "--flash-attention"], 2),
]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("flags,ranks", GPT_LAYOUTS,
                         ids=[" ".join(f) for f, _ in GPT_LAYOUTS])
def test_gpt_trains_as_1f1b(flags, ranks, schedule, weftc, models_dir,
                            tmp_path):
    reference = train(weftc, models_dir, tmp_path, "gpt", "1f1b", flags, ranks)
    got = train(weftc, models_dir, tmp_path, "gpt", schedule, flags, ranks)
    assert_same_training(got, reference, f"gpt {schedule} {flags}")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("stages,m", [(2, 4), (4, 8)])
@pytest.mark.parametrize("model", ["resnet", "unet"])
def test_cnn_trains_as_1f1b(model, stages, m, schedule, weftc, models_dir,
                            tmp_path):
    """Convolutions' weight gradients are W too; batch norm's statistics
    per micro-batch. Two steps (bit-identity does not drift)."""
    flags = [f"--pipeline-parallel={stages}", f"--microbatches={m}",
             *CNN_SHAPES[model]]
    reference = train(weftc, models_dir, tmp_path, model, "1f1b", flags,
                      stages, steps=2)
    got = train(weftc, models_dir, tmp_path, model, schedule, flags, stages,
                steps=2)
    assert_same_training(got, reference, f"{model} {schedule} {flags}")


def test_zb_h1_gpt_equals_torch_float64(tmp_path):
    """Directly against torch: gpt's per-step AdamW losses in float64 on
    the micro-batch split (oracle (c)), P = 4, M = 8."""
    import torch
    from weft.examples import gpt
    model, example = gpt.build(**gpt.CONFIGS["small"])
    generator = torch.Generator().manual_seed(3)
    batches = [tuple(torch.randint(0, gpt.CONFIGS["small"]["vocab"], t.shape,
                                   generator=generator) for t in example)
               for _ in range(STEPS)]
    path = tmp_path / "gpt.onnx"
    from weft.export import export
    export(model, example, str(path), ["tokens", "targets"])
    losses, _ = oracle.weft_train(
        oracle.Tools(tool("weftc"), tool("weft-run")), path, batches,
        ["tokens", "targets"], tmp_path / "run", micro_batches=8, stages=4,
        schedule="zb-h1")
    want = oracle.float64_losses(model, batches, 8,
                                 lambda p: torch.optim.AdamW(p, lr=1e-3))
    assert losses == pytest.approx(want, rel=oracle.MULTISTEP_RTOL)


@pytest.mark.parametrize("model", ["resnet", "unet"])
def test_zb_h2_cnn_sgd_step_equals_float64(model, models_dir, tmp_path):
    """Oracles (a) and (b) on a batch-norm CNN: the step-1 loss and one SGD
    step's parameter change per tensor within 10x torch float32's error."""
    from weft.examples import resnet, unet
    build = {"resnet": resnet.build, "unet": unet.build}[model]
    torch_model, batch = build(batch=8, size=64)
    names = ["images", "labels"] if model == "resnet" else ["images", "target"]
    oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), torch_model,
        models_dir / f"{model}.onnx", batch, names, tmp_path,
        micro_batches=4, stages=2, schedule="zb-h2", flags=CNN_SHAPES[model])
