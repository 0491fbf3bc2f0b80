"""bench/trace_kernels.py: a step's kernel time by kernel, from a trace."""
import importlib.util
import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "trace_kernels", REPO / "bench" / "trace_kernels.py")
trace_kernels = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace_kernels)


def event(name, step, dur, pid=0, cat="kernel", nbytes=0, flops=0):
    return {"cat": cat, "name": name, "pid": pid, "dur": dur, "ph": "X",
            "ts": 0, "args": {"step": step, "bytes": nbytes, "flops": flops}}


TRACE = {"traceEvents": [
    event("gemm", 0, 900.0, flops=9e9),
    event("gemm", 1, 300.0, nbytes=100, flops=6e9),
    event("gemm", 1, 100.0, nbytes=300, flops=2e9),
    event("add", 1, 100.0, nbytes=4e8),
    event("add", 1, 5000.0, pid=1),
    event("send", 1, 7000.0, cat="transfer")]}


def test_the_last_step_by_kernel(tmp_path, capsys):
    step, rows = trace_kernels.breakdown(TRACE)
    assert step == 1
    # Step 1 of rank 0: no other rank's kernel, no transfer.
    assert rows == [
        dict(kernel="gemm", count=2, seconds=400e-6, bytes=400, flops=8e9),
        dict(kernel="add", count=1, seconds=100e-6, bytes=4e8, flops=0)]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    out = tmp_path / "kernels.json"
    assert trace_kernels.main([str(path), "--top", "1", "--json",
                               str(out)]) == 0
    text = capsys.readouterr().out
    # 8e9 FLOPs in 0.4 ms: 20 TFLOP/s; 4e8 bytes in 0.1 ms: 4000 GB/s.
    assert "gemm" in text and "80.0%" in text and "20.0 TFLOP/s" in text
    assert "1 other kernels" in text and "20.0%" in text
    assert "kernel time 0.500 ms in 3 instructions" in text
    assert json.loads(out.read_text())["kernels"][1]["kernel"] == "add"
    assert "4000.0 GB/s" in "\n".join(trace_kernels.lines(rows))


def test_a_chosen_step_and_rank():
    assert trace_kernels.breakdown(TRACE, step=0)[1][0]["count"] == 1
    assert trace_kernels.breakdown(TRACE, rank=1)[1][0]["seconds"] == 5e-3


def test_a_missing_rank_or_step_is_named():
    with pytest.raises(SystemExit, match="no kernels of rank 2$"):
        trace_kernels.breakdown(TRACE, rank=2)
    with pytest.raises(SystemExit, match="no kernels of rank 0 in step 5 "
                       r"\(steps 0 to 1\)"):
        trace_kernels.breakdown(TRACE, step=5)
