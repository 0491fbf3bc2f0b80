"""Forward loss of the example models: weftc plan -> weft-run equals torch.

Same weights (the exported ONNX initializers) and the same fixed batch
(written as ONNX TensorProto files, the format of --data DIR); the loss must
match torch's forward loss within 1e-5 relative, and the peak bytes the
runtime measures must equal the arena the compiler planned.
"""

import json

import pytest
import torch

from conftest import plan_view, run
from weft.examples import gpt, resnet, unet
from weft.oracle import write_step

BUILDERS = {
    "gpt": lambda: gpt.build(**gpt.CONFIGS["small"]),
    "resnet": resnet.build,
    "unet": unet.build,
}


@pytest.mark.parametrize("name", ["gpt", "resnet", "unet"])
def test_forward_loss_equals_torch(name, weftc, models_dir, tmp_path):
    from conftest import tool

    model, inputs = BUILDERS[name]()
    model.train()  # exported in training mode: batch-norm batch statistics
    with torch.no_grad():
        expected = model(*inputs).item()

    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / f"{name}.onnx"), "--forward-only",
                  "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    input_names = [i["name"] for i in json.loads(plan.read_text())["inputs"]]
    write_step(tmp_path / "data", input_names, inputs)

    log = tmp_path / "log.jsonl"
    result = run([tool("weft-run"), str(plan), "--data", str(tmp_path / "data"),
                  "--log-json", str(log)])
    assert result.returncode == 0, result.stderr
    record = json.loads(log.read_text().splitlines()[0])
    assert record["loss"] == pytest.approx(expected, rel=1e-5)
    assert record["peak_bytes"] == record["arena_bytes"]
    assert record["arena_bytes"] == plan_view(plan, 0)["ranks"][0]["arena_bytes"]
