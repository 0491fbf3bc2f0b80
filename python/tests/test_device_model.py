"""weftc --device-model (issue 41): the device models shipped in
bench/devices time the partitioner's and the predicted step's ops; an
unknown name, an unreadable file and a file missing a field are one-line
errors naming what is wrong."""

import json
import pathlib
import re

import pytest

from conftest import run

DEVICES = pathlib.Path(__file__).resolve().parents[2] / "bench" / "devices"
FLAGS = ["--pipeline-parallel=2", "--microbatches=4"]


def predicted_ms(weftc, models_dir, *flags):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *FLAGS, *flags])
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    return float(re.search(r"predicted step: ([0-9.]+) ms", text).group(1))


def test_faster_devices_predict_shorter_steps(weftc, models_dir):
    """cpu is the default model; a GPU's step is far shorter than the CPU's,
    and the ordering follows the datasheets (H100 > A100 in every rate;
    H200 is an H100 with faster memory)."""
    default = predicted_ms(weftc, models_dir)
    assert predicted_ms(weftc, models_dir, "--device-model=cpu") == default
    a100 = predicted_ms(weftc, models_dir, "--device-model=a100-sxm4-80gb")
    h100 = predicted_ms(weftc, models_dir, "--device-model=h100-sxm5-80gb")
    h200 = predicted_ms(weftc, models_dir, "--device-model=h200-sxm-141gb")
    assert default > 100 * a100
    assert a100 > h100 >= h200 > 0


def test_a_device_file_is_read_by_path(weftc, models_dir, tmp_path):
    """A copy of the cpu model with everything twice as fast predicts half
    the step (the roofline and the alpha-beta transfers scale alike)."""
    model = json.loads((DEVICES / "cpu.json").read_text())
    for key, entry in model.items():
        if isinstance(entry, dict):
            scale = 0.5 if key.endswith("latency") else 2.0
            entry["value"] = entry["value"] * scale
    path = tmp_path / "fast.json"
    path.write_text(json.dumps(model))
    default = predicted_ms(weftc, models_dir)
    fast = predicted_ms(weftc, models_dir, f"--device-model={path}")
    assert fast == pytest.approx(default / 2, rel=0.02)


@pytest.mark.parametrize("edit,message", [
    (lambda m: m.pop("nic_bandwidth"), "missing field 'nic_bandwidth'"),
    (lambda m: m["memory_bandwidth"].pop("source"),
     "field 'memory_bandwidth' needs a \"source\""),
    (lambda m: m["peak_flops_f32"].update(value=-1),
     "field 'peak_flops_f32' needs a \"value\" above 0"),
])
def test_bad_device_files_are_errors(edit, message, weftc, models_dir,
                                     tmp_path):
    model = json.loads((DEVICES / "a100-sxm4-80gb.json").read_text())
    edit(model)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(model))
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *FLAGS, f"--device-model={path}"])
    assert result.returncode == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_unknown_device_names_the_known_ones(weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *FLAGS, "--device-model=a100"])
    assert result.returncode == 1
    assert ("unknown device model 'a100' (known: a100-sxm4-80gb, cpu, "
            "h100-sxm5-80gb, h200-sxm-141gb" in result.stderr)
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *FLAGS, "--device-model=/no/such.json"])
    assert result.returncode == 1
    assert "cannot read it" in result.stderr
