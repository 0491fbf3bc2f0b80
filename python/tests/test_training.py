"""Training on one rank equals PyTorch: 10 steps of AdamW (torch defaults)
and of SGD with momentum on the gpt example, same initial weights, same
batches; per-step losses within 1e-5 relative."""

import json

import pytest
import torch

from conftest import run, tool
from test_forward_loss import write_step
from weft.examples import gpt

STEPS = 10


def batches(config, seed=1):
    generator = torch.Generator().manual_seed(seed)
    shape = (config["batch"], config["seq"])
    return [(torch.randint(0, config["vocab"], shape, generator=generator),
             torch.randint(0, config["vocab"], shape, generator=generator))
            for _ in range(STEPS)]


def torch_losses(make_optimizer, data):
    model, _ = gpt.build(**gpt.CONFIGS["small"])
    model.train()
    optimizer = make_optimizer(model.parameters())
    losses = []
    for tokens, targets in data:
        optimizer.zero_grad()
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
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
    expected = torch_losses(make_optimizer, data)

    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan), *flags])
    assert result.returncode == 0, result.stderr
    for step, (tokens, targets) in enumerate(data):
        write_step(tmp_path / "data", ["tokens", "targets"], [tokens, targets], step)
    log = tmp_path / "log.jsonl"
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--steps", str(STEPS), "--log-json", str(log)])
    assert result.returncode == 0, result.stderr
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
    assert losses == pytest.approx(expected, rel=1e-5)
    assert losses[-1] < losses[0]
