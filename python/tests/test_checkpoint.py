"""--save / --resume: a resumed run is bit-identical to an uninterrupted one,
the saved model is a valid ONNX model with the trained weights, and a
missing or corrupt checkpoint is a clear error."""

import json

import onnx
from onnx import numpy_helper

from conftest import run, tool
from test_training import batches
from test_forward_loss import write_step
from weft.examples import gpt


def losses(log):
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()]


def test_resume_is_bit_identical(weftc, models_dir, tmp_path):
    plan = tmp_path / "plan.json"
    # Dropout would make the check stronger but the example has p = 0; the
    # Philox mask keys on the global step, which resume preserves.
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan)]).returncode == 0
    for step, batch in enumerate(batches(gpt.CONFIGS["small"])[:6]):
        write_step(tmp_path / "data", ["tokens", "targets"], batch, step)
    weft_run = tool("weft-run")
    data = ["--data", str(tmp_path / "data")]

    full = tmp_path / "full.jsonl"
    result = run([weft_run, str(plan), *data, "--steps", "6", "--log-json", str(full),
                  "--save", str(tmp_path / "full.onnx")])
    assert result.returncode == 0, result.stderr

    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    ckpt = tmp_path / "ckpt.onnx"
    result = run([weft_run, str(plan), *data, "--steps", "3", "--log-json",
                  str(first), "--save", str(ckpt)])
    assert result.returncode == 0, result.stderr
    result = run([weft_run, str(plan), *data, "--steps", "3", "--log-json",
                  str(second), "--resume", str(ckpt), "--save",
                  str(tmp_path / "resumed.onnx")])
    assert result.returncode == 0, result.stderr

    assert losses(first) + losses(second) == losses(full)  # exact equality
    assert [json.loads(l)["step"] for l in second.read_text().splitlines()] == [4, 5, 6]

    trained = onnx.load(str(tmp_path / "full.onnx"))
    resumed = onnx.load(str(tmp_path / "resumed.onnx"))
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(str(models_dir / "gpt.onnx")).graph.initializer}
    onnx.checker.check_model(trained)
    for a, b in zip(trained.graph.initializer, resumed.graph.initializer):
        assert a.raw_data == b.raw_data, a.name
    assert (numpy_helper.to_array(trained.graph.initializer[1]) !=
            initial[trained.graph.initializer[1].name]).any()


def test_missing_or_corrupt_checkpoint_is_an_error(weftc, models_dir, tmp_path):
    plan = tmp_path / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan)]).returncode == 0
    result = run([tool("weft-run"), str(plan), "--resume", str(tmp_path / "none.onnx")])
    assert result.returncode == 1
    assert "cannot read" in result.stderr and "none.onnx" in result.stderr

    ckpt = tmp_path / "ckpt.onnx"
    assert run([tool("weft-run"), str(plan), "--save", str(ckpt)]).returncode == 0
    (tmp_path / "ckpt.onnx.optim").write_bytes(b"\x00garbage\xff" * 10)
    result = run([tool("weft-run"), str(plan), "--resume", str(ckpt)])
    assert result.returncode == 1
    assert "ckpt.onnx.optim" in result.stderr
