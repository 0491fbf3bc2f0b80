"""Pipeline parallelism (issue 5): a plan compiled for P stages and run as P
MPI ranks trains exactly like one rank.

For gpt, resnet and unet, P in {2, 4}, schedule in {gpipe, 1f1b} and M in
{1, 4, 8} micro-batches, against torch float64 on the same micro-batch split
(GPipe's semantics: each micro-batch's loss scaled by 1/M, gradients
accumulated, one step; batch normalization sees per-micro-batch statistics),
by weft.oracle: gpt's 10 AdamW steps give per-step losses within 1e-5 of
float64 and of the single-rank plan; the batch-norm CNNs (chaotic in float32
after a few steps) give the step-1 loss and one SGD step's parameter change
per tensor within 10x torch float32's own error. The CNNs run at batch 8 (so
M = 8 divides it)."""

import json
import os

import pytest
import torch

from conftest import plan_ranks, run, tool
from weft.oracle import write_step
from weft import oracle
from weft.oracle import mpirun
from weft.examples import gpt, resnet, unet

STEPS = 10
BATCH = 8

MODELS = {
    # name: (torch builder at batch 8, weftc flags, input shapes)
    "gpt": (lambda: gpt.build(**gpt.CONFIGS["small"]), [], {}),
    "resnet": (lambda: resnet.build(batch=BATCH, size=64), [],
               {"images": [BATCH, 3, 64, 64], "labels": [BATCH]}),
    "unet": (lambda: unet.build(batch=BATCH, size=64), [],
             {"images": [BATCH, 3, 64, 64], "target": [BATCH, 1, 64, 64]}),
}


def batches(name):
    """10 batches for `name`, seeded, in the model's input order."""
    generator = torch.Generator().manual_seed(1)
    _, example = MODELS[name][0]()
    out = []
    for _ in range(STEPS):
        step = []
        for t in example:
            if t.dtype == torch.int64:
                high = gpt.CONFIGS["small"]["vocab"] if name == "gpt" else 10
                step.append(torch.randint(0, high, t.shape, generator=generator))
            elif name == "unet" and t.shape[1] == 1:  # the pixel target
                step.append(torch.rand(t.shape, generator=generator))
            else:
                step.append(torch.randn(t.shape, generator=generator))
        out.append(tuple(step))
    return out


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory, models_dir):
    """Per model: a directory of 10 steps of inputs (by input name)."""
    dirs = {}
    for name in MODELS:
        directory = tmp_path_factory.mktemp(f"data-{name}")
        names = ["tokens", "targets"] if name == "gpt" else \
            list(MODELS[name][2])
        for step, batch in enumerate(batches(name)):
            write_step(directory, names, batch, step)
        dirs[name] = directory
    return dirs


def compile_plan(weftc, models_dir, name, path, m, stages=1, schedule="1f1b"):
    _, flags, shapes = MODELS[name]
    shape_flags = [f"--input-shape={k}={'x'.join(map(str, v))}"
                   for k, v in shapes.items()]
    result = run([weftc, str(models_dir / f"{name}.onnx"), "-o", str(path),
                  f"--microbatches={m}", f"--pipeline-parallel={stages}",
                  f"--schedule={schedule}", *shape_flags, *flags])
    assert result.returncode == 0, result.stderr
    return result


def train(plan, ranks, data_dir, log):
    command = [tool("weft-run"), str(plan), "--data", str(data_dir),
               "--steps", str(STEPS), "--log-json", str(log)]
    result = run(mpirun(ranks) + command,
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
                 timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return [json.loads(line) for line in log.read_text().splitlines()], result


_single_rank = {}
_torch = {}
_sgd_references = {}


def single_rank_losses(weftc, models_dir, data_dirs, tmp_path, name, m):
    if (name, m) not in _single_rank:
        plan = tmp_path / "single.json"
        compile_plan(weftc, models_dir, name, plan, m)
        records, _ = train(plan, 1, data_dirs[name], tmp_path / "single.jsonl")
        _single_rank[(name, m)] = [r["loss"] for r in records]
    return _single_rank[(name, m)]


def torch_losses(name, m):
    """Oracle (c): gpt's per-step AdamW losses in float64 on the split."""
    if (name, m) not in _torch:
        model, _ = MODELS[name][0]()
        _torch[(name, m)] = oracle.float64_losses(
            model, batches(name), m, lambda p: torch.optim.AdamW(p, lr=1e-3))
    return _torch[(name, m)]


@pytest.mark.parametrize("m", [1, 4, 8])
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("stages", [2, 4])
def test_pipelined_gpt_equals_one_rank_and_float64(
        stages, schedule, m, weftc, models_dir, data_dirs, tmp_path):
    name = "gpt"
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, name, plan, m, stages, schedule)
    plan_json = json.loads(plan.read_text())
    # One program per stage, rank r running stage r's.
    assert len(plan_json["programs"]) == stages
    assert plan_json["rank_programs"] == list(range(stages))
    assert len(plan_ranks(plan)) == stages
    assert plan_json["schedule"] == schedule
    records, _ = train(plan, stages, data_dirs[name], tmp_path / "log.jsonl")
    losses = [r["loss"] for r in records]
    assert losses == pytest.approx(
        single_rank_losses(weftc, models_dir, data_dirs, tmp_path, name, m),
        rel=1e-5)
    assert losses == pytest.approx(torch_losses(name, m),
                                   rel=oracle.MULTISTEP_RTOL)
    # Memory per rank: measured peak = planned arena, reported per rank.
    for r in records:
        assert len(r["rank_peak_bytes"]) == stages
        assert r["rank_peak_bytes"] == r["rank_arena_bytes"]
        assert r["peak_bytes"] == max(r["rank_peak_bytes"])


@pytest.mark.parametrize("m", [1, 4, 8])
@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("stages", [2, 4])
@pytest.mark.parametrize("name", ["resnet", "unet"])
def test_pipelined_cnn_sgd_step_equals_float64(name, stages, schedule, m,
                                               models_dir, tmp_path):
    build, _, shapes = MODELS[name]
    model, _ = build()
    batch = batches(name)[0]
    if (name, m) not in _sgd_references:
        _sgd_references[(name, m)] = oracle.sgd_references(model, batch, m)
    shape_flags = [f"--input-shape={k}={'x'.join(map(str, v))}"
                   for k, v in shapes.items()]
    report = oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model,
        models_dir / f"{name}.onnx", batch, list(shapes), tmp_path,
        micro_batches=m, stages=stages, schedule=schedule, flags=shape_flags,
        reference=_sgd_references[(name, m)])
    print(f"\n{name} P={stages} {schedule} M={m}: {report.summary()}")


@pytest.mark.parametrize("name,stages,schedule", [("resnet", 4, "1f1b"),
                                                  ("unet", 2, "gpipe")])
def test_pipelined_cnn_float64_step_equals_torch(name, stages, schedule,
                                                 tmp_path):
    """Oracle (d) at M=8: weft in float64 on the pipeline against torch
    float64 within 1e-8 per tensor. unet at M=8 meets a float32 near-tie
    (356x torch float32's error, within the ambiguity); in float64 it
    matches to rounding."""
    build, _, shapes = MODELS[name]
    model, _ = build()
    oracle.check_float64_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model,
        batches(name)[0], list(shapes), tmp_path, micro_batches=8,
        stages=stages, schedule=schedule)


def test_weftc_prints_the_stage_table_and_timeline(weftc, models_dir, tmp_path):
    timeline = tmp_path / "timeline.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o",
                  str(tmp_path / "plan.json"), "--pipeline-parallel=2",
                  "--microbatches=8", "--schedule=gpipe", "--timeline-ascii",
                  "--timeline", str(timeline)])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "pipeline: 2 stages, 8 micro-batches, schedule gpipe" in out
    assert "stage    ops       params" in out
    # The GPipe bubble of P=2, M=8 is 1/9 for uniform stages.
    assert "(uniform stages: 0.111)" in out
    gantt = [line for line in out.splitlines() if line.startswith("stage 0 ")]
    assert len(gantt) == 1 and "|F0" in gantt[0] and "|B7" in gantt[0]
    events = json.loads(timeline.read_text())["traceEvents"]
    names = {(e["pid"], e["name"]) for e in events if e["tid"] == 0}
    for rank in range(2):
        for i in range(8):
            assert (rank, f"F{i}") in names and (rank, f"B{i}") in names
    assert any(e["cat"] == "transfer" for e in events)


def test_measured_trace_has_the_predicted_format(weftc, models_dir, tmp_path):
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, "gpt", plan, 4, 2, "1f1b")
    trace = tmp_path / "trace.json"
    result = run(mpirun(2) + [tool("weft-run"), str(plan), "--steps", "1",
                              "--trace", str(trace)])
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    tasks = [(e["pid"], e["name"]) for e in events if e["tid"] == 0]
    # Stage 1 of 2 under 1F1B: no warm-up, F0 B0 F1 B1 ... then U.
    assert [n for p, n in tasks if p == 1] == \
        ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3", "U"]
    assert [n for p, n in tasks if p == 0][:2] == ["F0", "F1"]


def test_wrong_process_count_is_a_clear_error(weftc, models_dir, tmp_path):
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, "gpt", plan, 2, 2)
    result = run([tool("weft-run"), str(plan)])
    assert result.returncode == 1
    assert "the plan has 2 rank(s), this run has 1 process(es); start it " \
           "with mpirun -np 2" in result.stderr


def test_a_failing_rank_stops_every_rank(weftc, models_dir, tmp_path):
    """Rank 1 (the last stage) reads the targets; a missing file fails it,
    and rank 0, waiting on rank 1's gradient, must not hang. Rank 0 reads
    only the tokens it uses, so it never opens the missing file itself."""
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, "gpt", plan, 2, 2)
    data = tmp_path / "data"
    config = gpt.CONFIGS["small"]
    tokens = torch.zeros(config["batch"], config["seq"], dtype=torch.int64)
    write_step(data, ["tokens"], [tokens])
    result = run(mpirun(2) + [tool("weft-run"), str(plan), "--data", str(data)],
                 timeout=120)
    assert result.returncode != 0
    assert "weft-run: rank 1: " in result.stderr
    assert "targets.pb" in result.stderr
    assert "weft-run: rank 0: --data" not in result.stderr


@pytest.mark.parametrize("flags,message", [
    (["--pipeline-parallel=0"], "--pipeline-parallel must be at least 1"),
    (["--pipeline-parallel=2", "--schedule=zb"],
     "--schedule 'zb': expected gpipe, 1f1b, interleaved, zb-h1, zb-h2 or "
     "zb-v"),
    (["--pipeline-parallel=2", "--schedule=interleaved", "--microbatches=3"],
     "--schedule interleaved: the interleaved schedule runs micro-batches in "
     "groups of the pipeline's 2 ranks: 3 micro-batches is not a multiple "
     "of 2"),
    (["--pipeline-parallel=2", "--schedule=interleaved", "--microbatches=4",
      "--virtual-stages=1"],
     "--virtual-stages 1: the interleaved schedule runs 2 or more model "
     "chunks per rank"),
    (["--balance=3,4"], "--balance needs --pipeline-parallel of 2 or more"),
    (["--pipeline-parallel=2", "--balance=1,2"],
     "weft-partition-pipeline: balance sums to 3 ops"),
    (["--pipeline-parallel=2", "--forward-only"],
     "--pipeline-parallel needs a training step"),
])
def test_bad_pipeline_flags_are_errors(flags, message, weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *flags])
    assert result.returncode != 0
    assert message in result.stderr


def test_unet_skips_go_directly_to_their_stage(weftc, models_dir, tmp_path):
    """torchgpipe's portals: on 4 stages, the encoder's skip activations go
    from stage 0 straight to the decoder stage that concatenates them."""
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, "unet", plan, 1, 4)
    ranks = plan_ranks(plan)
    peers = {i["peer"] for i in ranks[0]["instructions"] if i["op"] == "isend"}
    assert max(peers) >= 2, peers
    # Each direct send has its receive on that stage, from stage 0.
    for peer in peers:
        recvs = [i for i in ranks[peer]["instructions"]
                 if i["op"] == "irecv" and i["peer"] == 0]
        assert recvs


@pytest.mark.parametrize("name,stages,schedule", [
    ("gpt", 2, "1f1b"), ("gpt", 4, "gpipe"), ("unet", 4, "1f1b")])
def test_each_channel_is_posted_in_one_order(weftc, models_dir, tmp_path,
                                             name, stages, schedule):
    """NCCL matches a pair of ranks' sends and receives by order: the n-th
    isend from rank a to rank b is b's n-th irecv from a. gpt's two
    activations per micro-batch were received in the reverse order of
    their sends (consumer order) before weft-schedule posted a task's
    receives in tag order; unet adds skips that bypass stages."""
    plan = tmp_path / "plan.json"
    compile_plan(weftc, models_dir, name, plan, 4, stages, schedule)
    ranks = plan_ranks(plan)
    checked = 0
    for sender in ranks:
        for peer in {i["peer"] for i in sender["instructions"]
                     if i["op"] == "isend"}:
            sent = [i["tag"] for i in sender["instructions"]
                    if i["op"] == "isend" and i["peer"] == peer]
            received = [i["tag"] for i in ranks[peer]["instructions"]
                        if i["op"] == "irecv" and i["peer"] == sender["rank"]]
            assert sent == received, (sender["rank"], peer)
            checked += len(sent) > 1
    assert checked >= 2 * (stages - 1)


def test_synthetic_data_is_the_same_on_every_layout(weftc, models_dir,
                                                    tmp_path):
    """Synthetic batches are keyed by input name, so a pipelined plan (which
    lists its inputs in stage order) trains on the single-rank batches."""
    single, piped = tmp_path / "single.json", tmp_path / "piped.json"
    compile_plan(weftc, models_dir, "gpt", single, 2)
    compile_plan(weftc, models_dir, "gpt", piped, 2, 2)

    def losses(plan, ranks, log):
        command = [tool("weft-run"), str(plan), "--data", "synthetic",
                   "--seed", "3", "--steps", "3", "--log-json", str(log)]
        result = run(mpirun(ranks) + command)
        assert result.returncode == 0, result.stderr
        return [json.loads(line)["loss"] for line in log.read_text().splitlines()]

    assert losses(piped, 2, tmp_path / "b.jsonl") == pytest.approx(
        losses(single, 1, tmp_path / "a.jsonl"), rel=1e-6)
