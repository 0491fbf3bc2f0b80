"""bench/plan_traffic.py: per-kernel counts and bytes read from a plan."""
import importlib.util
import json
import pathlib

import pytest

from conftest import plan_view, run, tool

REPO = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "plan_traffic", REPO / "bench" / "plan_traffic.py")
plan_traffic = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plan_traffic)

# Rank views, as `weft-run --view` writes them (the file main reads as is).
PLAN = {"format": "weft-plan-view", "ranks": [{
    "rank": 0, "arena_bytes": 4096,
    "buffers": [{"id": 0, "bytes": 100}, {"id": 1, "bytes": 40},
                {"id": 2, "bytes": 7}],
    "instructions": [
        {"kernel": "gemm", "inputs": [0, 1], "outputs": [2]},
        {"kernel": "cast", "inputs": [2], "outputs": [1]},
        {"kernel": "cast", "inputs": [1], "outputs": [2]},
        {"op": "send", "inputs": [2], "outputs": []},
        # A packed attention names its q, k, v buffer three times: one read.
        {"kernel": "attention", "inputs": [0, 0, 0], "outputs": [1, 2]}]}]}


def test_counts_and_bytes_per_kernel(tmp_path, capsys):
    assert plan_traffic.traffic(PLAN) == {
        "gemm": (1, 147), "cast": (2, 94), "send": (1, 7),
        "attention": (1, 147)}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN))
    out = tmp_path / "traffic.json"
    assert plan_traffic.main([str(path), "--json", str(out)]) == 0
    # The GEMM is compute-bound: the rest is the memory-bound traffic.
    assert json.loads(out.read_text())["memory_bound_bytes"] == 94 + 7
    assert "instructions: 5 (4 on a GPU, where a run of AdamW or SGD " \
        "updates launches as one); arena 4096 bytes" in capsys.readouterr().out


@pytest.mark.parametrize("kernel", ["adamw", "sgd"])
def test_a_run_of_updates_is_one_launch(kernel):
    """The CUDA backend's multi-tensor AdamW and SGD: each run of
    consecutive updates is one launch; a run broken by another kernel is
    two."""
    update = {"kernel": kernel, "inputs": [0], "outputs": [0]}
    plan = json.loads(json.dumps(PLAN))
    plan["ranks"][0]["instructions"] += [update, update, update,
                                         {"kernel": "cast", "inputs": [2],
                                          "outputs": [1]}, update]
    # gemm, cast, cast, attention; then the update x3, cast, the update.
    assert plan_traffic.launches(plan) == 4 + 1 + 1 + 1


def test_an_accumulating_gather_grad_touches_the_named_rows():
    """A gather_grad scattering into a table in place reads and writes
    only the rows its indices name (at most min(rows, indices) of them);
    a plain one's table is its fill, counted whole."""
    table = {"id": 2, "bytes": 50 * 8, "shape": [50, 4], "dtype": "f16"}
    plan = {"ranks": [{"rank": 0, "arena_bytes": 0, "buffers": [
        {"id": 0, "bytes": 6 * 8, "shape": [2, 3, 4]},
        {"id": 1, "bytes": 6 * 8, "shape": [2, 3]}, table,
        {"id": 3, "bytes": 400, "shape": [50, 4], "view_of": 2}],
        "instructions": [
            {"kernel": "gather_grad", "attrs": {"axis": 0},
             "inputs": [0, 1, 2], "outputs": [3]},
            {"kernel": "gather_grad", "attrs": {"axis": 0},
             "inputs": [0, 1], "outputs": [2]}]}]}
    # dY and the indices, 6 rows of 8 bytes read and written; then dY, the
    # indices and the whole table.
    assert plan_traffic.traffic(plan) == {
        "gather_grad": (2, (48 + 48 + 2 * 6 * 8) + (48 + 48 + 400))}
    table["shape"], table["bytes"] = [4, 4], 4 * 8
    plan["ranks"][0]["buffers"][3].update(shape=[4, 4], bytes=32)
    assert plan_traffic.traffic(plan)["gather_grad"][1] == \
        (48 + 48 + 2 * 32) + (48 + 48 + 32)


@pytest.mark.parametrize("kernel", ["adamw", "sgd"])
def test_an_update_with_a_master_reads_the_master(kernel):
    """With an f32 master the 16-bit parameter is written, not read: it
    counts once; without one it is read and written (the update's output,
    a view of it, counts apart)."""
    plan = {"ranks": [{"rank": 0, "arena_bytes": 0,
                       "optimizer_state": [{"name": "w.master", "buffer": 2},
                                           {"name": "w.exp_avg",
                                            "buffer": 3}],
                       "buffers": [{"id": i, "bytes": n} for i, n in
                                   [(0, 2), (1, 2), (2, 4), (3, 4),
                                    (4, 2), (5, 4)]],
                       "instructions": [
                           {"kernel": kernel, "inputs": [0, 1, 3, 2],
                            "outputs": [4, 5]},
                           {"kernel": kernel, "inputs": [0, 1, 3],
                            "outputs": [4, 5]}]}]}
    # grad 2, state 4, master 4, new parameter 2, new state 4; then the
    # parameter 2, grad 2, state 4, new parameter 2, new state 4.
    assert plan_traffic.traffic(plan) == {kernel: (2, 16 + 14)}


def test_a_missing_rank_is_named():
    with pytest.raises(SystemExit, match="the plan has no rank 3"):
        plan_traffic.traffic(PLAN, rank=3)


def test_a_plan_is_read_through_weft_run(weftc, models_dir, tmp_path):
    """A compiled plan (programs shared by ranks) is read as its rank's
    view: the rows of that view; a rank it does not have is named."""
    plan = tmp_path / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                "--tensor-parallel=2"]).returncode == 0
    out = tmp_path / "traffic.json"
    assert plan_traffic.main([str(plan), "--rank", "1", "--json", str(out),
                              "--weft-run", tool("weft-run")]) == 0
    rows = plan_traffic.traffic(plan_view(plan, 1), rank=1)
    assert json.loads(out.read_text())["kernels"] == {
        k: {"count": c, "bytes": b} for k, (c, b) in rows.items()}
    with pytest.raises(SystemExit, match="rank 2"):
        plan_traffic.main([str(plan), "--rank", "2",
                           "--weft-run", tool("weft-run")])
