"""weft-autodiff against torch autograd: `weftc --gradients` compiles loss and
parameter gradients, weft-run evaluates them on a fixed batch, and every
gradient must match torch's `.grad`: max error relative to the largest
gradient entry <= 1e-5 for gpt, 1e-4 for the CNNs (float32; 20 batch-norm
backward reductions in a row reorder sums differently from torch)."""

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import run, tool
from test_forward_loss import BUILDERS
from weft.oracle import write_step


TOLERANCE = {"gpt": 1e-5, "resnet": 1e-4, "unet": 1e-4}


@pytest.mark.parametrize("name", ["gpt", "resnet", "unet"])
def test_parameter_gradients_equal_torch(name, weftc, models_dir, tmp_path):
    model, inputs = BUILDERS[name]()
    model.train()
    loss = model(*inputs)
    loss.backward()

    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / f"{name}.onnx"), "--gradients",
                  "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    outputs = [o["name"] for o in json.loads(plan.read_text())["outputs"]]
    params = dict(model.named_parameters())
    assert sorted(outputs[1:]) == sorted(f"{p}.grad" for p in params)

    write_step(tmp_path / "data", ["tokens", "targets"] if name == "gpt"
               else [i["name"] for i in json.loads(plan.read_text())["inputs"]],
               inputs)
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--dump-outputs", str(tmp_path / "out"), "--log-json",
                  str(tmp_path / "log.jsonl")])
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "log.jsonl").read_text())
    assert record["loss"] == pytest.approx(loss.item(), rel=1e-5)
    assert record["peak_bytes"] == record["arena_bytes"]
    for pname, param in params.items():
        got = numpy_helper.to_array(onnx.load_tensor(
            str(tmp_path / "out" / "step_0" / f"{pname}.grad.pb")))
        want = param.grad.numpy()
        scale = np.max(np.abs(want)) + 1e-12
        assert np.max(np.abs(got - want)) / scale <= TOLERANCE[name], pname
