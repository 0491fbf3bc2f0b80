"""Resuming a checkpoint in another layout (`weft-run --resume DIR
--reshard`, issue 14): a checkpoint's manifest describes each shard's
piece of every tensor (tensor-parallel slice, ZeRO's flat piece), so a run
of another plan of the same model assembles the whole tensors and takes
its own pieces.

Oracle: `gpt`, AdamW, the same global batch in the same D x M
micro-batches. 2 steps in layout A, checkpointed, then 2 steps in layout B
resumed from it, give the losses of 4 steps in layout A: the first two
exactly (the same run), the last two within 1e-5 (two layouts of one
step differ by float32 summation order only, as test_data_parallel
checks). The control shows the oracle can fail: B started from A's
parameters alone (its --save, without Adam's moments) misses by far more.
"""

import json

import pytest

from conftest import BUILD, run, tool
from test_data_parallel import data_dir  # noqa: F401 (fixture)
from test_tensor_parallel import train

THRESHOLD = "--optimizer-shard-threshold=0"  # every parameter sharded
# (layout A, its ranks, layout B, its ranks); the micro-batch counts keep
# D x M = 4 micro-batches of the global batch.
CASES = {
    "D2-ZeRO2-to-one-rank": (
        ["--data-parallel=2", "--zero-stage=2", THRESHOLD,
         "--microbatches=2"], 2,
        ["--microbatches=4"], 1),
    "one-rank-to-D2-T2-ZeRO3": (
        ["--microbatches=4"], 1,
        ["--data-parallel=2", "--tensor-parallel=2", "--zero-stage=3",
         THRESHOLD, "--microbatches=2"], 4),
    "D2-ZeRO1-prefetch-to-P2": (
        ["--data-parallel=2", "--zero-stage=1", "--zero-prefetch",
         THRESHOLD, "--microbatches=2"], 2,
        ["--pipeline-parallel=2", "--microbatches=4"], 2),
    "D4-ZeRO2-groups-of-2-to-D2-ZeRO3": (
        ["--data-parallel=4", "--zero-stage=2", "--optimizer-shard-size=2",
         THRESHOLD, "--microbatches=1"], 4,
        ["--data-parallel=2", "--zero-stage=3", THRESHOLD,
         "--microbatches=2"], 2),
    "P2-T2-to-D4-ZeRO1": (
        ["--pipeline-parallel=2", "--tensor-parallel=2", "--microbatches=4"],
        4,
        ["--data-parallel=4", "--zero-stage=1", THRESHOLD,
         "--microbatches=1"], 4),
}


def compile_plan(weftc, path, flags, model=BUILD / "models" / "gpt.onnx"):
    result = run([weftc, str(model), "-o", str(path), *flags])
    assert result.returncode == 0, result.stderr
    return path


def losses(records):
    return [r["loss"] for r in records]


@pytest.mark.parametrize("case", CASES)
def test_resumes_in_another_layout(case, weftc, data_dir,  # noqa: F811
                                   tmp_path):
    flags_a, ranks_a, flags_b, ranks_b = CASES[case]
    plan_a = compile_plan(weftc, tmp_path / "a.json", flags_a)
    plan_b = compile_plan(weftc, tmp_path / "b.json", flags_b)
    straight = train(plan_a, ranks_a, data_dir, tmp_path / "straight.jsonl",
                     steps=4)
    ckpt = tmp_path / "ckpt"
    first = train(plan_a, ranks_a, data_dir, tmp_path / "first.jsonl",
                  "--checkpoint", str(ckpt), steps=2)
    manifest = json.loads(
        (ckpt / "step_00000002" / "manifest.json").read_text())
    assert manifest["version"] == 2
    assert len(manifest["shards"]) == ranks_a
    second = train(plan_b, ranks_b, data_dir, tmp_path / "second.jsonl",
                   "--resume", str(ckpt), "--reshard", steps=2)
    assert [r["step"] for r in second] == [3, 4]
    assert losses(first) == losses(straight)[:2]
    assert losses(second) == pytest.approx(losses(straight)[2:], rel=1e-5)
    for r in second:  # measured peak = planned arena after the reshard
        assert r["rank_peak_bytes"] == r["rank_arena_bytes"]


def test_parameters_alone_miss_the_oracle(weftc, data_dir,  # noqa: F811
                                          tmp_path):
    """The control: layout B started from A's step-2 parameters (--save)
    with fresh AdamW moments misses step 3 and 4 by more than 100x the
    tolerance, so the oracle above sees a lost optimizer state."""
    flags_a, ranks_a, flags_b, ranks_b = CASES["one-rank-to-D2-T2-ZeRO3"]
    plan_a = compile_plan(weftc, tmp_path / "a.json", flags_a)
    straight = train(plan_a, ranks_a, data_dir, tmp_path / "straight.jsonl",
                     steps=4)
    saved = tmp_path / "saved.onnx"
    train(plan_a, ranks_a, data_dir, tmp_path / "first.jsonl", "--save",
          str(saved), steps=2)
    plan_b = compile_plan(weftc, tmp_path / "b.json", flags_b, model=saved)
    # Steps 3 and 4's data: the run starts at step 0, so it reads a copy
    # of the data directory shifted by two steps.
    shifted = tmp_path / "shifted"
    shifted.mkdir()
    for step in (2, 3):
        (shifted / f"step_{step - 2}").symlink_to(data_dir / f"step_{step}")
    fresh = train(plan_b, ranks_b, shifted, tmp_path / "fresh.jsonl",
                  steps=2)
    # Step 3's loss comes before any update, so it matches; step 4 follows
    # an update without the moments.
    assert losses(fresh)[0] == pytest.approx(losses(straight)[2], rel=1e-5)
    assert abs(losses(fresh)[1] / losses(straight)[3] - 1) > 1e-3


def weft_run(*args, ranks=1):
    return run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                str(ranks), tool("weft-run"), *map(str, args)])


def test_reshard_errors(weftc, data_dir, tmp_path):  # noqa: F811
    one = compile_plan(weftc, tmp_path / "one.json", ["--microbatches=4"])
    two = compile_plan(weftc, tmp_path / "two.json",
                       ["--data-parallel=2", "--microbatches=2"])
    ckpt = tmp_path / "ckpt"
    assert weft_run(one, "--data", data_dir, "--checkpoint",
                    ckpt).returncode == 0

    def refused(message, *args, ranks=1):
        result = weft_run(*args, ranks=ranks)
        assert result.returncode != 0
        assert message in result.stderr, result.stderr

    refused("--reshard needs --resume DIR", one, "--reshard")
    # Another plan without --reshard: refused, naming the flag.
    refused("; --reshard loads it into this plan's layout", two, "--data",
            data_dir, "--resume", ckpt, ranks=2)
    # A checkpoint of format 1 does not describe its pieces.
    manifest_path = ckpt / "step_00000001" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    old = json.loads(json.dumps(manifest))
    old["version"] = 1
    for shard in old["shards"]:
        del shard["tensors"]
    manifest_path.write_text(json.dumps(old))
    refused("(a checkpoint of format version 1): it can only be resumed by "
            "the plan that wrote it", two, "--data", data_dir, "--resume",
            ckpt, "--reshard", ranks=2)
    # A piece of another shape than this plan's tensor.
    bad = json.loads(json.dumps(manifest))
    bad["shards"][0]["tensors"]["wte.weight"]["shape"] = [1, 1]
    manifest_path.write_text(json.dumps(bad))
    refused("rank 0's shard: 'wte.weight' is [1x1] f32, this plan's is", two,
            "--data", data_dir, "--resume", ckpt, "--reshard", ranks=2)
