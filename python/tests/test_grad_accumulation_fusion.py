"""weft-fold-grad-accumulation: with M micro-batches each Linear layer's
weight and bias gradients accumulate into the running sums in their
wgrad_bias, over the sums' bytes (Megatron-LM's
gradient_accumulation_fusion), instead of each micro-batch writing its own
that an add then sums. One SGD step of the gpt example still matches torch
float64 per tensor (`weft.oracle`) on one rank and on a 2-stage pipeline
at M = 4, with data parallelism too; ZeRO stage 2, which reduce-scatters
each micro-batch's gradients, has nothing to fold.

weft-fold-gather-grad-add, in the same steps: the token and position
embeddings' micro-batches 1 to 3 are scattered into the sums of the earlier
ones, in place (the token embedding's sum is added to the tied head's once
per step)."""

import pytest

from conftest import plan_ranks, run, tool
from weft import oracle


def accumulations(plan_path, kernel="wgrad_bias"):
    """Per rank: (plain `kernel` count, accumulating ones), checking that
    each accumulating one writes over its sums (its outputs are the bytes
    of its inputs past the first two)."""
    counts = []
    for rank in plan_ranks(plan_path):
        root = {b["id"]: b.get("view_of", b["id"]) for b in rank["buffers"]}
        plain = accumulating = 0
        for i in rank["instructions"]:
            if i.get("kernel") != kernel:
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
    plan = tmp_path / "step" / "plan.json"
    # Micro-batch 0 writes the sums; 1, 2 and 3 accumulate into them.
    for plain, accumulating in accumulations(plan):
        assert plain > 0 and accumulating == (micro_batches - 1) * plain
    # The ranks holding the embeddings: the token and position embeddings'
    # gradients of micro-batches 1 to 3 scattered into their running sums
    # (the token embedding's use sum, added to the tied head's once per
    # step: weft-accumulate-microbatches sums each use apart).
    scatters = [c for c in accumulations(plan, "gather_grad") if c != (0, 0)]
    assert scatters == [(2, 2 * (micro_batches - 1))] * data_parallel


def test_a_vocabulary_parallel_shard_scatters_into_the_heads(weftc,
                                                            gpt2_layers,
                                                            tmp_path):
    """Tensor parallelism: each rank's shard of the token embedding's
    gradient is scattered into its shard of the tied head's."""
    _, _, path = gpt2_layers
    plan = tmp_path / "tp.json"
    result = run([weftc, str(path), "-o", str(plan),
                  "--tensor-parallel=2"])
    assert result.returncode == 0, result.stderr
    assert accumulations(plan, "vocab_parallel_gather_grad") == [(0, 1)] * 2


def test_zero_stage_2_reduce_scatters_each_micro_batch(weftc, gpt2_layers,
                                                       tmp_path):
    _, _, path = gpt2_layers
    plan = tmp_path / "zero.json"
    result = run([weftc, str(path), "-o", str(plan), "--microbatches=2",
                  "--data-parallel=2", "--zero-stage=2",
                  "--optimizer-shard-threshold=0"])
    assert result.returncode == 0, result.stderr
    for plain, accumulating in accumulations(plan):
        assert plain > 0 and accumulating == 0
