"""weft-fold-grad-accumulation: with M micro-batches each Linear layer's
weight and bias gradients accumulate into the running sums in their
wgrad_bias, over the sums' bytes (Megatron-LM's
gradient_accumulation_fusion), instead of each micro-batch writing its own
that an add then sums. One SGD step of the gpt example still matches torch
float64 per tensor (`weft.oracle`) on one rank and on a 2-stage pipeline
at M = 4, with data parallelism too; ZeRO stage 2, which reduce-scatters
each micro-batch's gradients, has nothing to fold."""

import json

import pytest

from conftest import run, tool
from weft import oracle


def wgrads(plan_path):
    """Per rank: (plain wgrad_bias count, accumulating ones), checking that
    each accumulating one writes over its sums (outputs 0, 1 are the bytes
    of inputs 2, 3)."""
    counts = []
    for rank in json.loads(plan_path.read_text())["ranks"]:
        root = {b["id"]: b.get("view_of", b["id"]) for b in rank["buffers"]}
        plain = accumulating = 0
        for i in rank["instructions"]:
            if i.get("kernel") != "wgrad_bias":
                continue
            if len(i["inputs"]) == 2:
                plain += 1
                continue
            accumulating += 1
            assert [root[b] for b in i["outputs"]] == \
                [root[b] for b in i["inputs"][2:]], i
        counts.append((plain, accumulating))
    return counts


@pytest.mark.parametrize("stages,data_parallel", [(1, 1), (2, 1), (1, 2)],
                         ids=["one-rank", "pipeline", "data-parallel"])
def test_accumulated_gradients_step_like_float64(weftc, gpt2_layers, tmp_path,
                                                 stages, data_parallel):
    model, batch, path = gpt2_layers
    micro_batches = 4
    report = oracle.check_sgd_step(
        oracle.Tools(weftc, tool("weft-run")), model, path, batch,
        ["tokens", "targets"], tmp_path / "step",
        micro_batches=micro_batches, stages=stages,
        data_parallel=data_parallel)
    assert report.worst.ratio < oracle.F32_FACTOR, report.summary()
    # Micro-batch 0 writes the sums; 1, 2 and 3 accumulate into them.
    for plain, accumulating in wgrads(tmp_path / "step" / "plan.json"):
        assert plain > 0 and accumulating == (micro_batches - 1) * plain


def test_zero_stage_2_reduce_scatters_each_micro_batch(weftc, gpt2_layers,
                                                       tmp_path):
    _, _, path = gpt2_layers
    plan = tmp_path / "zero.json"
    result = run([weftc, str(path), "-o", str(plan), "--microbatches=2",
                  "--data-parallel=2", "--zero-stage=2",
                  "--optimizer-shard-threshold=0"])
    assert result.returncode == 0, result.stderr
    for plain, accumulating in wgrads(plan):
        assert plain > 0 and accumulating == 0
