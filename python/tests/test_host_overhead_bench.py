"""bench/host_overhead.py end to end at its own shape, two steps: each
record's host and device seconds add up to its wall time, the emulated
device did the GEMMs (cuBLASLt calls) and kernels, the host part is
neither zero nor the whole step, and --json holds the figures the console
prints."""

import importlib.util
import json

import pytest

from conftest import BUILD, REPO

spec = importlib.util.spec_from_file_location(
    "host_overhead", REPO / "bench" / "host_overhead.py")
host_overhead = importlib.util.module_from_spec(spec)
spec.loader.exec_module(host_overhead)

DRIVER = BUILD / "bin" / "weft-bench-host-overhead"


@pytest.fixture(autouse=True)
def needs_the_emulator():
    if not DRIVER.exists():
        pytest.skip("built without the CUDA toolkit's headers: no emulator")


def test_records_split_each_step(tmp_path):
    records = host_overhead.weft_steps(BUILD, tmp_path, steps=1)
    assert [r["step"] for r in records] == [0, 1]
    for r in records:
        assert r["host_seconds"] + r["device_seconds"] == \
            pytest.approx(r["seconds"], rel=1e-6)
        assert 0 < r["host_seconds"] < r["seconds"], r
        assert r["kernel_launches"] > 0, r
        assert r["library_calls"] > 0, r


def test_main_writes_what_it_prints(tmp_path, capsys):
    out = tmp_path / "host.json"
    host_overhead.main([str(BUILD), "--steps", "1", "--json", str(out)])
    result = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert f"{1e3 * result['weft_host_seconds']:.2f} ms" in printed
    assert result["ratio"] == pytest.approx(
        result["weft_host_seconds"] / result["torch_eager_seconds"])
    assert result["instructions"] > 24 * 20  # every layer's, both passes
