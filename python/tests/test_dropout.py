"""Training-mode dropout: masks from the counter-based RNG (Philox4x32-10,
docs/plan-format.md) are a pure function of the seed and step; the kept
fraction is 1 - p and kept values are scaled by 1 / (1 - p); the backward
pass uses the same mask."""

import json

import numpy as np
import pytest
import onnx
import torch
from onnx import numpy_helper

from conftest import run, tool

N, P = 4096, 0.25


class DropoutModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(N))
        self.drop = torch.nn.Dropout(P)

    def forward(self, x):
        return self.drop(x * self.w).sum()


def compile_model(weftc, tmp_path):
    path = tmp_path / "dropout.onnx"
    torch.onnx.export(DropoutModel(), (torch.ones(N),), str(path),
                      input_names=["x"], output_names=["loss"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    plan = tmp_path / "plan.json"
    result = run([weftc, str(path), "--gradients", "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    data = tmp_path / "data"
    for step in range(2):
        (data / f"step_{step}").mkdir(parents=True)
        (data / f"step_{step}" / "x.pb").write_bytes(
            numpy_helper.from_array(np.ones(N, np.float32), "x").SerializeToString())
    return plan, data


def gradients(plan, data, seed, out):
    result = run([tool("weft-run"), str(plan), "--data", str(data), "--steps", "2",
                  "--seed", str(seed), "--dump-outputs", str(out)])
    assert result.returncode == 0, result.stderr
    return [numpy_helper.to_array(onnx.load_tensor(str(out / f"step_{s}" / "w.grad.pb")))
            for s in range(2)], [
        float(numpy_helper.to_array(onnx.load_tensor(str(out / f"step_{s}" / "loss.pb"))))
        for s in range(2)]


def test_dropout_masks_are_deterministic_and_scaled(weftc, tmp_path):
    plan, data = compile_model(weftc, tmp_path)
    (g0, g1), (l0, l1) = gradients(plan, data, 7, tmp_path / "a")
    (h0, _), _ = gradients(plan, data, 7, tmp_path / "b")
    (k0, _), _ = gradients(plan, data, 8, tmp_path / "c")

    # d loss / d w = mask / (1 - p): every entry is 0 or 1 / (1 - p).
    scale = 1 / (1 - P)
    assert set(np.unique(g0)) <= {0.0, np.float32(scale)}
    kept = np.mean(g0 != 0)
    assert abs(kept - (1 - P)) < 5 * np.sqrt(P * (1 - P) / N)
    # The forward used the same mask: loss = sum(x * w * mask / (1 - p)).
    assert l0 == pytest.approx(float(g0.sum()), rel=1e-6)
    assert l1 == pytest.approx(float(g1.sum()), rel=1e-6)
    # Same seed and step: same mask; another step or seed: another mask.
    assert np.array_equal(g0, h0)
    assert not np.array_equal(g0, g1)
    assert not np.array_equal(g0, k0)
