"""Frozen initializers: weft.export records float buffers in the model's
weft.frozen metadata, weftc keeps them (and any --frozen NAME or glob)
constant: no gradient, no optimizer state, not in the plan's params, saved
unchanged; the trainable rest still equals torch float64."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import frozen_model
from conftest import REPO, plan_view, run, tool
from weft import oracle
from weft.export import export

TESTS = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    model, batch = frozen_model.build()
    path = tmp_path_factory.mktemp("frozen") / "mixer.onnx"
    info = export(model, batch, str(path), ["x", "labels"])
    assert info["frozen"] == ["mask"]
    return path


def plan_params(weftc, path, tmp_path, *flags):
    plan = tmp_path / "plan.json"
    result = run([weftc, str(path), "-o", str(plan), *flags])
    assert result.returncode == 0, result.stderr
    return plan_view(plan, 0)["ranks"][0]


def test_export_records_frozen_buffers_and_example_shapes(model_path):
    meta = {p.key: p.value for p in onnx.load(str(model_path)).metadata_props}
    assert meta["weft.frozen"] == "mask"
    assert meta["weft.input_shapes"] == "x=4x6x8,labels=4"
    dims = onnx.load(str(model_path)).graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"


def test_summary_shows_frozen_apart(weftc, model_path):
    result = run([weftc, str(model_path), "--emit=summary-json"])
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["params"] == 8 * 8 + 8 + 8 * 5 + 5  # proj and head
    assert summary["frozen"] == 36
    text = run([weftc, str(model_path), "--emit=summary"]).stdout
    assert "frozen:       36 (144 bytes, not trained)" in text


def test_frozen_buffer_is_state_and_saved_unchanged(weftc, model_path,
                                                    tmp_path):
    rank = plan_params(weftc, model_path, tmp_path, "--optimizer=sgd")
    assert "mask" not in {p["name"] for p in rank["params"]}
    assert "mask" in {s["name"] for s in rank["state"]}
    model, batch = frozen_model.build()
    report = oracle.check_sgd_step(
        oracle.Tools(weftc, tool("weft-run")), model, model_path, batch,
        ["x", "labels"], tmp_path)
    assert {t.name for t in report.tensors} == {
        "proj.weight", "proj.bias", "head.weight", "head.bias"}
    saved = {t.name: numpy_helper.to_array(t) for t in
             onnx.load(str(tmp_path / "trained.onnx")).graph.initializer}
    assert np.array_equal(saved["mask"], model.mask.numpy())


def test_frozen_flag_takes_names_and_globs(weftc, model_path, tmp_path):
    rank = plan_params(weftc, model_path, tmp_path, "--frozen=head.*")
    params = {p["name"] for p in rank["params"]}
    assert params == {"proj.weight", "proj.bias"}
    assert {"head.weight", "head.bias", "mask"} <= {s["name"] for s in rank["state"]}
    # Without the metadata, the buffer would be trained as a parameter.
    rank = plan_params(weftc, model_path, tmp_path, "--no-frozen-metadata")
    assert "mask" in {p["name"] for p in rank["params"]}


def test_frozen_model_trains_with_frozen_weights_unchanged(weftc, model_path,
                                                           tmp_path):
    rank = plan_params(weftc, model_path, tmp_path, "--frozen=proj.weight",
                       "--optimizer=sgd", "--lr=0.5")
    plan = tmp_path / "plan.json"
    saved = tmp_path / "trained.onnx"
    result = run([tool("weft-run"), str(plan), "--steps", "2", "--save",
                  str(saved)])
    assert result.returncode == 0, result.stderr
    before = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(str(model_path)).graph.initializer}
    after = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(str(saved)).graph.initializer}
    assert np.array_equal(after["proj.weight"], before["proj.weight"])
    assert not np.array_equal(after["head.weight"], before["head.weight"])
    assert not any(o["name"].startswith("proj.weight")
                   for o in rank["optimizer_state"])


@pytest.mark.parametrize("flag,message", [
    ("--frozen=nothing*", "--frozen 'nothing*' matches no float initializer"),
    ("--frozen=[", "--frozen '['"),
])
def test_bad_frozen_patterns_are_errors(weftc, model_path, flag, message):
    result = run([weftc, str(model_path), "--emit=summary", flag])
    assert result.returncode == 1
    assert message in result.stderr
    assert len(result.stderr.splitlines()) <= 3


def test_export_module_cli(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO / "python"), TESTS])}
    out = tmp_path / "m.onnx"
    result = subprocess.run([sys.executable, "-W", "ignore", "-m",
                             "weft.export", "frozen_model:build", str(out)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert "inputs x 4x6x8, labels 4" in result.stdout
    assert "frozen: mask" in result.stdout
    result = subprocess.run([sys.executable, "-m", "weft.export",
                             "frozen_model", str(out)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 1
    assert "expected pkg.module:factory" in result.stderr


@pytest.mark.parametrize("zero", [0, 3])
def test_frozen_weights_under_data_parallel_zero(weftc, model_path, tmp_path,
                                                 zero):
    """Issue 14: a frozen weight stays out of the buckets and ZeRO's pieces
    (state, loaded whole by every replica) and is saved unchanged; the
    trained weights after 2 SGD steps on 2 replicas (ZeRO-3: pieces over
    them) equal the single rank's on the same batch (SGD is linear in the
    gradients: float32 rounding of the reordered sums only)."""
    flags = ["--frozen=proj.weight", "--optimizer=sgd", "--lr=0.5"]
    saved = {}
    for name, extra, ranks in (
            ("one", ["--microbatches=2"], 1),
            ("dp", ["--data-parallel=2", f"--zero-stage={zero}",
                    "--optimizer-shard-threshold=0"], 2)):
        rank = plan_params(weftc, model_path, tmp_path, *flags, *extra)
        assert "proj.weight" in {s["name"] for s in rank["state"]}
        assert all("flat_shard" not in s for s in rank["state"])
        plan = tmp_path / f"{name}.json"
        (tmp_path / "plan.json").rename(plan)
        out = tmp_path / f"{name}.onnx"
        result = run(oracle.mpirun(ranks) + [
            tool("weft-run"), str(plan), "--steps", "2", "--save", str(out)])
        assert result.returncode == 0, result.stderr
        saved[name] = {t.name: numpy_helper.to_array(t)
                       for t in onnx.load(str(out)).graph.initializer}
    before = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(str(model_path)).graph.initializer}
    assert np.array_equal(saved["dp"]["proj.weight"], before["proj.weight"])
    for name, want in saved["one"].items():
        np.testing.assert_allclose(saved["dp"][name], want, rtol=1e-5,
                                   atol=1e-7, err_msg=name)
    assert not np.array_equal(saved["dp"]["head.weight"],
                              before["head.weight"])
