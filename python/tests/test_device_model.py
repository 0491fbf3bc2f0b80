"""weftc --device-model (issue 41): the device models shipped in
bench/devices time the partitioner's and the predicted step's ops; an
unknown name, an unreadable file and a file missing a field are one-line
errors naming what is wrong; transfers and collectives cross nodes where
their ranks do."""

import json
import pathlib
import re

import pytest

from conftest import run

DEVICES = pathlib.Path(__file__).resolve().parents[2] / "bench" / "devices"
FLAGS = ["--pipeline-parallel=2", "--microbatches=4"]


def predicted_step(weftc, models_dir, layout, *flags):
    """weftc's predicted step (ms) for the gpt example under `layout`."""
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *layout, *flags])
    assert result.returncode == 0, result.stderr
    return float(re.search(r"predicted step: ([0-9.]+) ms",
                           result.stdout + result.stderr).group(1))


def predicted_ms(weftc, models_dir, *flags):
    """The predicted step (ms) of gpt on 2 pipeline stages."""
    return predicted_step(weftc, models_dir, FLAGS, *flags)


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
    the step: every roofline time, latency and transfer halves exactly
    (division by 2 is exact in binary), so only the printing's rounding to
    0.01 ms separates the two figures."""
    model = json.loads((DEVICES / "cpu.json").read_text())
    for key, entry in model.items():
        if isinstance(entry, dict):
            scale = 0.5 if key.endswith("latency") else 2.0
            entry["value"] = entry["value"] * scale
    path = tmp_path / "fast.json"
    path.write_text(json.dumps(model))
    default = predicted_ms(weftc, models_dir)
    fast = predicted_ms(weftc, models_dir, f"--device-model={path}")
    assert abs(fast - default / 2) <= 0.005 + 0.005 / 2


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


def node_model(tmp_path, per_node, nic_bandwidth):
    """The cpu model with `per_node` devices a node and one NIC of
    `nic_bandwidth` bytes/s between nodes."""
    model = json.loads((DEVICES / "cpu.json").read_text())
    model["devices_per_node"]["value"] = per_node
    model["nic_bandwidth"]["value"] = nic_bandwidth
    path = tmp_path / f"node{per_node}-{nic_bandwidth:g}.json"
    path.write_text(json.dumps(model))
    return path


@pytest.mark.parametrize("layout", [
    ["--pipeline-parallel=2", "--microbatches=4"], ["--data-parallel=2"],
    ["--tensor-parallel=2"]])
def test_transfers_and_collectives_cross_nodes_where_ranks_do(
        layout, weftc, models_dir, tmp_path):
    """Two ranks on one node move data over the node's link: a network of
    1 MB/s changes nothing. On nodes of one device each, the same layout's
    transfers (pipeline) or collectives (data, tensor) cross that network,
    and the step takes several times as long."""
    default = predicted_step(weftc, models_dir, layout)
    one_node = predicted_step(
        weftc, models_dir, layout,
        f"--device-model={node_model(tmp_path, 2, 1e6)}")
    two_nodes = predicted_step(
        weftc, models_dir, layout,
        f"--device-model={node_model(tmp_path, 1, 1e6)}")
    assert one_node == default
    assert two_nodes > 2 * default


def test_only_the_axes_that_leave_the_node_slow_down(weftc, models_dir,
                                                      tmp_path):
    """T = 2, D = 2 on nodes of 2: the tensor pairs (adjacent ranks) stay on
    a node, the data pairs (2 apart) cross. A slow network then costs the
    data-parallel all-reduces only: less than on nodes of 1, where both
    cross, and more than on one node of 4."""
    layout = ["--tensor-parallel=2", "--data-parallel=2"]
    steps = [predicted_step(weftc, models_dir, layout,
                            f"--device-model={node_model(tmp_path, n, 1e6)}")
             for n in (4, 2, 1)]
    assert steps[0] < steps[1] < steps[2]


def test_a_data_group_on_several_nodes_reduces_hierarchically(
        weftc, models_dir, tmp_path):
    """D = 4, every device's share of its node's NICs 1 MB/s. On nodes of 1
    each all-reduce is one ring of 4 over the network: 6 steps of a quarter
    of the bucket. On nodes of 2 it is hierarchical (NCCL's two-level
    scheme): a ring of 2 over the node's link, then a ring of 2 across the
    nodes on half the bucket: 2 steps of a quarter, latencies and bytes
    both a third of the flat ring's. The collectives' in-flight time on
    nodes of 2 is that third plus the node-link ring, which takes less than
    the whole collective on one node of 4 (F4), so F1 / F2 lies in
    [3 (1 - F4 / F2), 3], up to the printing's 0.005 ms."""
    def in_flight(per_node):
        path = tmp_path / f"share{per_node}.json"
        model = json.loads((DEVICES / "cpu.json").read_text())
        model["devices_per_node"]["value"] = per_node
        model["nic_bandwidth"]["value"] = 1e6 * per_node
        path.write_text(json.dumps(model))
        result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                      "--data-parallel=4", f"--device-model={path}"])
        assert result.returncode == 0, result.stderr
        return float(re.search(r"\(([0-9.]+) ms in flight\)",
                               result.stdout).group(1))
    f4, f2, f1 = in_flight(4), in_flight(2), in_flight(1)
    assert f4 < f2 < f1
    r = 0.005
    assert 3 * (1 - (f4 + r) / (f2 - r)) <= (f1 + r) / (f2 - r)
    assert (f1 - r) / (f2 + r) <= 3
