"""weft-run --calibrate (issue 41): measures this machine's GEMM rates,
memory bandwidth and, on 2 ranks, its transfers, and writes a device model
that weftc --device-model reads; its GEMM sweep then times the
partitioner's and the simulator's GEMMs."""

import json
import re

from conftest import run, tool
from weft.oracle import mpirun

FIELDS = ["peak_flops_bf16", "peak_flops_f16", "peak_flops_tf32",
          "peak_flops_f32", "peak_flops_f64", "memory_bandwidth",
          "memory_capacity", "devices_per_node", "intra_node_bandwidth",
          "intra_node_latency", "nics_per_node", "nic_bandwidth",
          "inter_node_latency"]


def check_model(path, ranks):
    model = json.loads(path.read_text())
    for field in FIELDS:
        assert model[field]["value"] > 0, field
        assert model[field]["source"], field
    assert model["devices_per_node"]["value"] == ranks
    points = model["gemm_efficiency"]["points"]
    assert len(points) == 27
    assert all(len(p) == 4 and min(p) > 0 for p in points)
    # The peak is the sweep's fastest GEMM, as its source says.
    assert model["peak_flops_f32"]["value"] == max(p[3] for p in points)
    return model


def test_calibrates_one_rank_and_weftc_reads_it(weftc, models_dir, tmp_path):
    out = tmp_path / "cpu.json"
    result = run([tool("weft-run"), "--calibrate", str(out)])
    assert result.returncode == 0, result.stderr
    model = check_model(out, 1)
    assert "not measured" in model["intra_node_bandwidth"]["source"]
    assert "measured by weft-run --calibrate" in model["memory_bandwidth"][
        "source"]
    compiled = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                    "--pipeline-parallel=2", "--microbatches=4",
                    f"--device-model={out}"])
    assert compiled.returncode == 0, compiled.stderr
    step = re.search(r"predicted step: ([0-9.]+) ms",
                     compiled.stdout + compiled.stderr)
    assert step and float(step.group(1)) > 0


def test_two_ranks_measure_their_transfers(tmp_path):
    out = tmp_path / "cpu2.json"
    result = run([*mpirun(2), tool("weft-run"), "--calibrate", str(out)])
    assert result.returncode == 0, result.stderr
    model = check_model(out, 2)
    assert "ping-pong" in model["intra_node_bandwidth"]["source"]
    assert "ping-pong" in model["intra_node_latency"]["source"]


def test_calibrate_takes_no_plan(tmp_path):
    result = run([tool("weft-run"), "plan.json", "--calibrate",
                  str(tmp_path / "x.json")])
    assert result.returncode == 1
    assert "--calibrate measures the machine, not a plan" in result.stderr
