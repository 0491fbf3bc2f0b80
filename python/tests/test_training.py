"""Training on one rank equals PyTorch in float64 (weft.oracle).

gpt (no batch norm, stable in float32): 10 steps of AdamW and of SGD with
momentum give per-step losses within 1e-5 relative of torch float64 from the
same weights on the same batches. resnet and unet (batch norm: torch's own
float32 leaves float64 by up to 1e-2 within three steps, so their multi-step
losses measure the CPU's kernel choice, not weft): the step-1 loss and one
plain SGD step's parameter change per tensor, within 10x torch float32's own
error against float64."""

import json
import math

import pytest
import torch

from conftest import run, tool
from weft.oracle import write_step
from weft import oracle
from weft.examples import gpt, resnet, unet

STEPS = 10


def cnn_batches(build, seed=1):
    """10 batches shaped like `build`'s example batch."""
    generator = torch.Generator().manual_seed(seed)
    _, (images, second) = build()
    out = []
    for _ in range(STEPS):
        x = torch.randn(images.shape, generator=generator)
        if second.dtype == torch.int64:  # class labels
            y = torch.randint(0, 10, second.shape, generator=generator)
        else:                            # a pixel target
            y = torch.rand(second.shape, generator=generator)
        out.append((x, y))
    return out


def batches(config, seed=1):
    generator = torch.Generator().manual_seed(seed)
    shape = (config["batch"], config["seq"])
    return [(torch.randint(0, config["vocab"], shape, generator=generator),
             torch.randint(0, config["vocab"], shape, generator=generator))
            for _ in range(STEPS)]


def torch_losses(make_optimizer, data, build=lambda: gpt.build(**gpt.CONFIGS["small"]),
                 trained=None):
    """Per-step losses of torch training in float64 (oracle (c)); `trained`
    receives the final parameters when given (a dict)."""
    model, _ = build()
    model = model.double()
    model.train()
    optimizer = make_optimizer(model.parameters())
    losses = []
    for tokens, targets in data:
        optimizer.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if trained is not None:
        trained.update({n: p.detach().numpy().copy()
                        for n, p in model.named_parameters()})
    return losses


@pytest.mark.parametrize("flags,make_optimizer", [
    ([], lambda p: torch.optim.AdamW(p)),
    (["--optimizer=adamw", "--lr=0.01", "--weight-decay=0.1", "--betas=0.8,0.99"],
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, betas=(0.8, 0.99))),
    (["--optimizer=sgd", "--lr=0.05", "--momentum=0.9"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    (["--optimizer=sgd", "--lr=0.05", "--momentum=0.9", "--nesterov",
      "--weight-decay=0.01"],
     lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                               weight_decay=0.01)),
], ids=["adamw-defaults", "adamw", "sgd-momentum", "sgd-nesterov"])
def test_gpt_training_losses_equal_torch(flags, make_optimizer, weftc, models_dir,
                                         tmp_path):
    data = batches(gpt.CONFIGS["small"])
    torch_params = {}
    expected = torch_losses(make_optimizer, data, trained=torch_params)

    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan), *flags])
    assert result.returncode == 0, result.stderr
    for step, (tokens, targets) in enumerate(data):
        write_step(tmp_path / "data", ["tokens", "targets"], [tokens, targets], step)
    log = tmp_path / "log.jsonl"
    saved = tmp_path / "trained.onnx"
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--steps", str(STEPS), "--log-json", str(log), "--save", str(saved)])
    assert result.returncode == 0, result.stderr
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
    assert losses == pytest.approx(expected, rel=oracle.MULTISTEP_RTOL)
    # GPT-2's initialisation: step 1 predicts nearly uniformly, ~ln(vocab)
    # (random targets: there is nothing to learn below it).
    assert losses[0] == pytest.approx(math.log(gpt.CONFIGS["small"]["vocab"]),
                                      abs=0.05)
    # Final parameters within 1e-4 (relative to each tensor's largest entry),
    # for SGD. AdamW divides by sqrt(v) + eps: for a gradient that is exactly
    # zero in theory (attention's key bias: softmax is shift-invariant) it
    # turns float32 noise into lr-sized steps of arbitrary sign, in torch as
    # in weft, so AdamW runs are compared through their losses only.
    if "--optimizer=sgd" not in flags:
        return
    import numpy as np
    import onnx
    from onnx import numpy_helper
    trained = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(str(saved)).graph.initializer}
    for name, want in torch_params.items():
        scale = np.max(np.abs(want)) + 1e-12
        assert np.max(np.abs(trained[name] - want)) / scale < 1e-4, name


@pytest.mark.parametrize("name", ["resnet", "unet"])
def test_cnn_sgd_step_equals_float64(name, models_dir, tmp_path):
    """The step-1 loss and every parameter change of one SGD step (training-
    mode batch norm, as torch) against float64, on one rank."""
    build = {"resnet": resnet.build, "unet": unet.build}[name]
    model, batch = build()
    names = {"resnet": ["images", "labels"], "unet": ["images", "target"]}[name]
    report = oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model,
        models_dir / f"{name}.onnx", batch, names, tmp_path)
    print(f"\n{name}: {report.summary()}")


def test_resnet_running_statistics_and_weights_after_training(weftc, models_dir,
                                                              tmp_path):
    """After one SGD step the saved model's weights and batch-norm running
    statistics (torch's update: momentum 0.1, unbiased batch variance, written
    back in place) equal torch's. One step: batch-norm CNNs are judged by
    step 1 (see the module docstring)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    steps = 1
    data = cnn_batches(resnet.build)[:steps]
    model, _ = resnet.build()
    # torch.onnx.export traced the model in training mode, which advanced the
    # running statistics: start torch from the exported ones.
    exported = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
                for t in onnx.load(str(models_dir / "resnet.onnx")).graph.initializer}
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name in exported:
                buffer.copy_(exported[name])
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    for images, labels in data:
        optimizer.zero_grad()
        model(images, labels).backward()
        optimizer.step()

    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / "resnet.onnx"), "-o", str(plan),
                  "--optimizer=sgd", "--lr=1e-3"])
    assert result.returncode == 0, result.stderr
    for step, batch in enumerate(data):
        write_step(tmp_path / "data", ["images", "labels"], batch, step)
    saved = tmp_path / "trained.onnx"
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--steps", str(steps), "--save", str(saved)])
    assert result.returncode == 0, result.stderr

    trained = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(str(saved)).graph.initializer}
    state = model.state_dict()
    checked = 0
    for name, value in state.items():
        if name.endswith("num_batches_tracked") or name not in trained:
            continue
        want = value.numpy()
        # Weights of scale 0.1-1 after an update of 1e-3 x gradient.
        assert np.allclose(trained[name], want, rtol=1e-4, atol=2e-5), name
        checked += 1
    # 62 parameter tensors and 40 running statistics.
    assert checked == 102


@pytest.mark.parametrize("m", [1, 4])
def test_microbatch_accumulation_equals_torch(m, weftc, models_dir, tmp_path):
    """--microbatches M: gpt equals torch float64 on the full batch
    (accumulation is exact up to float summation order). The CNNs, whose
    batch norm sees per-micro-batch statistics, are checked on the same
    split by test_float64_oracle.py and test_pipeline.py."""
    name = "gpt"
    steps = 5
    build = lambda: gpt.build(**gpt.CONFIGS["small"])
    data = batches(gpt.CONFIGS["small"])[:steps]
    expected = torch_losses(lambda p: torch.optim.AdamW(p), data, build)
    flags = []
    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / f"{name}.onnx"), "-o", str(plan),
                  f"--microbatches={m}", *flags])
    assert result.returncode == 0, result.stderr
    plan_json = json.loads(plan.read_text())
    assert plan_json["micro_batches"] == m
    names = [i["name"] for i in plan_json["inputs"]]
    for step, batch in enumerate(data):
        write_step(tmp_path / "data", names, batch, step)
    log = tmp_path / "log.jsonl"
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--steps", str(steps), "--log-json", str(log)])
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["loss"] for r in records] == pytest.approx(expected, rel=1e-5)
    assert all(r["peak_bytes"] == r["arena_bytes"] for r in records)


def test_microbatches_must_divide_the_batch(weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "--microbatches=3",
                  "--emit=mlir"])
    assert result.returncode == 1
    assert "--microbatches 3 does not divide the batch (dim 0 = 8) of input 'tokens'" \
        in result.stderr
