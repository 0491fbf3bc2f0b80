"""The example models import, and weft counts the parameters torch counts."""

import json

import pytest

from conftest import run


@pytest.mark.parametrize("name", ["gpt", "resnet", "unet"])
def test_parameter_count_matches_torch(name, weftc, models_dir):
    model = models_dir / f"{name}.onnx"
    expected = json.loads((models_dir / f"{name}.onnx.params.json").read_text())
    result = run([weftc, str(model), "--emit=summary-json"])
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["params"] == expected["params"]
    # float32 parameters: 4 bytes each.
    assert summary["param_bytes"] == 4 * expected["params"]
    assert summary["flops"] > 0


def test_resnet_batch_norm_statistics_are_state(weftc, models_dir):
    """resnet18 has 20 BatchNorm layers; their running mean and variance
    (2 x channels floats each) are state, not parameters."""
    result = run([weftc, str(models_dir / "resnet.onnx"), "--emit=mlir",
                  "--forward-only"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("weft.state") == 40
    assert result.stdout.count("weft.batch_norm") == 20
    # resnet18 BN channels: 64 x5, 128 x5, 256 x5, 512 x5 (with downsamples).
    summary = json.loads(run([weftc, str(models_dir / "resnet.onnx"),
                              "--emit=summary-json"]).stdout)
    assert summary["state_bytes"] == 2 * 4 * (64 * 5 + 128 * 5 + 256 * 5 + 512 * 5)


def test_gpt_flops_match_formula(weftc, models_dir):
    """Forward FLOPs of the small gpt: 2 x tokens x (weights of every
    matmul) + attention (QK^T and AV), counted as multiply-adds x 2; the
    elementwise/normalisation remainder is bounded above by 5%."""
    meta = json.loads((models_dir / "gpt.onnx.params.json").read_text())
    b, s = meta["inputs"]["tokens"]
    layers, h, vocab = 4, 128, 512
    tokens = b * s
    matmul = 2 * tokens * layers * 12 * h * h + 2 * tokens * h * vocab
    attention = layers * 2 * (2 * b * s * s * h)
    summary = json.loads(run([weftc, str(models_dir / "gpt.onnx"),
                              "--emit=summary-json"]).stdout)
    assert matmul + attention <= summary["flops"] <= 1.05 * (matmul + attention)


def test_missing_external_weights_still_import(weftc, models_dir, tmp_path):
    """weft reads shapes and dtypes only: a model whose float weights live in
    an external data file that does not exist imports with the same parameter
    count. Integer/bool tensors (the causal mask) are constants and are read
    from their external file."""
    import onnx
    from onnx.external_data_helper import set_external_data

    model = onnx.load(str(models_dir / "gpt.onnx"))
    constants = tmp_path / "constants.bin"
    with open(constants, "wb") as f:
        for tensor in model.graph.initializer:
            if tensor.data_type == onnx.TensorProto.FLOAT:
                set_external_data(tensor, "missing-weights.bin")
            elif tensor.HasField("raw_data"):
                set_external_data(tensor, constants.name, offset=f.tell(),
                                  length=len(tensor.raw_data))
                f.write(tensor.raw_data)
            else:
                continue
            tensor.ClearField("raw_data")
            tensor.data_location = onnx.TensorProto.EXTERNAL
    path = tmp_path / "gpt_external.onnx"
    onnx.save_model(model, str(path))
    assert not (tmp_path / "missing-weights.bin").exists()

    expected = json.loads((models_dir / "gpt.onnx.params.json").read_text())
    result = run([weftc, str(path), "--emit=summary-json"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["params"] == expected["params"]

    # A constant whose external file is gone is an error naming the file.
    constants.unlink()
    result = run([weftc, str(path), "--emit=summary-json"])
    assert result.returncode == 1
    assert "constants.bin' cannot be read" in result.stderr
