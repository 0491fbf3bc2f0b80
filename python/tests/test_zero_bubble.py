"""Interleaved 1F1B and the zero-bubble schedules (issue 40): `--schedule
interleaved` (Narayanan et al. 2021: V model chunks per rank, stage s on
rank s mod P), `zb-h1|zb-h2` (Qi et al. 2024, "Zero Bubble Pipeline
Parallelism": each backward split into B, the input gradient, and W, the
weight gradient, run later in the bubbles) and `zb-v` (two chunks per rank
in a V, with the B/W split).

The oracle is 1F1B on the same stages: a schedule with V chunks per rank on
P ranks runs the V P stages of 1F1B on V P ranks. Each W sums into its
gradient in micro-batch order as 1F1B's backward does, so the losses and
the trained parameters are bit-identical to that 1F1B's on every layout
below (exact equality, not a tolerance: a schedule that ran a W twice,
dropped one, or summed in another order would differ in the last bits at
least). Against 1F1B on P ranks (other stage boundaries) they are equal too,
except under ZeRO-2, which sums some weight gradients in another grouping
when the stage boundaries move (a last-bit difference, 1 ulp of the
parameter, with 1F1B itself on 2 versus 4 stages).

One layout cannot be bit-identical: ZB-V under ZeRO-2. ZeRO-2 reduce-
scatters a bucket per micro-batch only when every member's gradient is a
sum of micro-batch parts, else sums the micro-batches first. Under 1F1B the
last stage holds a copy of the tied embedding (its update cloned there, its
gradient received whole), which puts its bucket in the second mode; under
ZB-V the last stage shares rank 0 with the embedding's own update, so its
bucket is in the first: (a_0 + b_0) + (a_1 + b_1) against (a_0 + a_1) +
(b_0 + b_1), a 1-ulp difference in three weights. Its losses are still
compared exactly, and its parameters by oracles (a) and (b) against torch
float64 (test_zb_v_zero2_sgd_step_equals_float64).

1F1B is held to torch float64 by test_pipeline; one layout per family is
also checked against torch here, directly."""

import json
import os
import re

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import REPO, run, tool
from weft import oracle
from weft.oracle import mpirun

STEPS = 4
SCHEDULES = ["interleaved", "zb-h1", "zb-h2", "zb-v"]
CHUNKS = {"interleaved": 2, "zb-v": 2}  # model chunks per rank (V = 2)


def same_stages_1f1b(schedule, flags, ranks):
    """1F1B's flags and ranks for the stages `schedule` runs on `flags`'s
    pipeline ranks: V P ranks, one stage each."""
    chunks = CHUNKS.get(schedule, 1)
    out = []
    for flag in flags:
        if flag.startswith("--pipeline-parallel="):
            flag = f"--pipeline-parallel={int(flag.split('=')[1]) * chunks}"
        out.append(flag)
    return out, ranks * chunks
CNN_SHAPES = {
    "resnet": ["--input-shape=images=8x3x64x64", "--input-shape=labels=8"],
    "unet": ["--input-shape=images=8x3x64x64",
             "--input-shape=target=8x1x64x64"],
}


def train(weftc, models_dir, tmp_path, model, schedule, flags, ranks,
          steps=STEPS):
    """(per-step losses, {parameter: trained value}) of `model` (a name in
    `models_dir`, or a path) compiled with `flags` under `schedule`, on
    synthetic data (seed 0)."""
    work = tmp_path / f"{schedule}-{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    plan, log, saved = work / "plan.json", work / "log.jsonl", \
        work / "trained.onnx"
    path = model if isinstance(model, os.PathLike) else \
        models_dir / f"{model}.onnx"
    result = run([weftc, str(path), "-o", str(plan),
                  f"--schedule={schedule}", *flags])
    assert result.returncode == 0, result.stderr
    assert json.loads(plan.read_text())["schedule"] == schedule
    result = run(mpirun(ranks) + [
        tool("weft-run"), str(plan), "--steps", str(steps), "--log-json",
        str(log), "--save", str(saved)],
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
    params = {t.name: numpy_helper.to_array(t)
              for t in onnx.load(str(saved)).graph.initializer}
    return losses, params


def assert_same_training(a, b, what):
    (losses_a, params_a), (losses_b, params_b) = a, b
    assert losses_a == losses_b, f"{what}: losses {losses_a} != {losses_b}"
    assert params_a.keys() == params_b.keys()
    differ = [n for n in params_a if not np.array_equal(params_a[n],
                                                        params_b[n])]
    assert not differ, f"{what}: parameters differ: {differ[:8]}"


GPT_LAYOUTS = [
    # (flags, ranks)
    (["--pipeline-parallel=2", "--microbatches=4"], 2),
    (["--pipeline-parallel=2", "--microbatches=8"], 2),
    (["--pipeline-parallel=4", "--microbatches=4"], 4),
    (["--pipeline-parallel=4", "--microbatches=8"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--tensor-parallel=2",
      "--sequence-parallel"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--data-parallel=2",
      "--zero-stage=2"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--recompute=selective"], 2),
    (["--pipeline-parallel=2", "--microbatches=4", "--recompute=full"], 2),
    (["--pipeline-parallel=2", "--microbatches=4", "--precision=bf16",
      "--flash-attention"], 2),
    # GradScaler's overflow verdict and scale: one per rank, its chunks'.
    (["--pipeline-parallel=2", "--microbatches=4", "--precision=f16"], 2),
]


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("flags,ranks", GPT_LAYOUTS,
                         ids=[" ".join(f) for f, _ in GPT_LAYOUTS])
def test_gpt_trains_as_1f1b(flags, ranks, schedule, weftc, models_dir,
                            tmp_path):
    reference = train(weftc, models_dir, tmp_path, "gpt", "1f1b",
                      *same_stages_1f1b(schedule, flags, ranks))
    got = train(weftc, models_dir, tmp_path, "gpt", schedule, flags, ranks)
    if schedule == "zb-v" and "--zero-stage=2" in flags:
        # The module docstring: other sums, checked against torch instead.
        assert got[0] == reference[0]
        return
    assert_same_training(got, reference, f"gpt {schedule} {flags}")


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("stages,m", [(2, 4), (4, 8)])
@pytest.mark.parametrize("model", ["resnet", "unet"])
def test_cnn_trains_as_1f1b(model, stages, m, schedule, weftc, models_dir,
                            tmp_path):
    """Convolutions' weight gradients are W too; batch norm's statistics
    per micro-batch. Two steps (bit-identity does not drift)."""
    flags = [f"--pipeline-parallel={stages}", f"--microbatches={m}",
             *CNN_SHAPES[model]]
    reference = train(weftc, models_dir, tmp_path, model, "1f1b",
                      *same_stages_1f1b(schedule, flags, stages), steps=2)
    got = train(weftc, models_dir, tmp_path, model, schedule, flags, stages,
                steps=2)
    assert_same_training(got, reference, f"{model} {schedule} {flags}")


@pytest.mark.parametrize("schedule", ["interleaved", "zb-v"])
def test_dropout_masks_are_1f1bs(schedule, weftc, models_dir, tmp_path):
    """Dropout masks are keyed by their op's rank in a micro-batch's
    forward: with two chunks per rank (stages 0 and 3 on rank 0 under
    ZB-V) the keys are still those of 1F1B on the same stages, so training
    is bit-identical."""
    import onnx
    from weft.examples import gpt
    from weft.examples.common import export
    model, batch = gpt.build(**gpt.CONFIGS["small"])
    for module in model.modules():
        if isinstance(module, __import__("torch").nn.Dropout):
            module.p = 0.1
    path = tmp_path / "gpt-dropout.onnx"
    export(model, batch, ["tokens", "targets"], str(path))
    assert any(n.op_type == "Dropout" for n in onnx.load(str(path)).graph.node)
    flags = ["--pipeline-parallel=2", "--microbatches=4"]
    reference = train(weftc, models_dir, tmp_path, path, "1f1b",
                      *same_stages_1f1b(schedule, flags, 2))
    got = train(weftc, models_dir, tmp_path, path, schedule, flags, 2)
    assert_same_training(got, reference, f"gpt dropout {schedule}")


@pytest.mark.parametrize("schedule,stages", [("zb-h1", 4), ("interleaved", 4),
                                             ("zb-v", 2)])
def test_gpt_equals_torch_float64(schedule, stages, tmp_path):
    """Directly against torch: gpt's per-step AdamW losses in float64 on
    the micro-batch split (oracle (c)), M = 8."""
    import torch
    from weft.examples import gpt
    model, example = gpt.build(**gpt.CONFIGS["small"])
    generator = torch.Generator().manual_seed(3)
    batches = [tuple(torch.randint(0, gpt.CONFIGS["small"]["vocab"], t.shape,
                                   generator=generator) for t in example)
               for _ in range(STEPS)]
    path = tmp_path / "gpt.onnx"
    from weft.export import export
    export(model, example, str(path), ["tokens", "targets"])
    losses, _ = oracle.weft_train(
        oracle.Tools(tool("weftc"), tool("weft-run")), path, batches,
        ["tokens", "targets"], tmp_path / "run", micro_batches=8,
        stages=stages, schedule=schedule)
    want = oracle.float64_losses(model, batches, 8,
                                 lambda p: torch.optim.AdamW(p, lr=1e-3))
    assert losses == pytest.approx(want, rel=oracle.MULTISTEP_RTOL)


@pytest.mark.parametrize("schedule", ["zb-h2", "zb-v"])
@pytest.mark.parametrize("model", ["resnet", "unet"])
def test_cnn_sgd_step_equals_float64(model, schedule, models_dir, tmp_path):
    """Oracles (a) and (b) on a batch-norm CNN: the step-1 loss and one SGD
    step's parameter change per tensor within 10x torch float32's error."""
    from weft.examples import resnet, unet
    build = {"resnet": resnet.build, "unet": unet.build}[model]
    torch_model, batch = build(batch=8, size=64)
    names = ["images", "labels"] if model == "resnet" else ["images", "target"]
    oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), torch_model,
        models_dir / f"{model}.onnx", batch, names, tmp_path,
        micro_batches=4, stages=2, schedule=schedule, flags=CNN_SHAPES[model])


def test_zb_v_zero2_sgd_step_equals_float64(tmp_path):
    """ZB-V on 2 ranks, D = 2 with ZeRO-2, M = 4: one SGD step's parameter
    change per tensor within 10x torch float32's error (oracles (a), (b))."""
    from weft.examples import gpt
    from weft.export import export
    model, batch = gpt.build(**gpt.CONFIGS["small"])
    path = tmp_path / "gpt.onnx"
    export(model, batch, str(path), ["tokens", "targets"])
    oracle.check_sgd_step(
        oracle.Tools(tool("weftc"), tool("weft-run")), model, path, batch,
        ["tokens", "targets"], tmp_path / "run", micro_batches=4, stages=2,
        schedule="zb-v", data_parallel=2, flags=["--zero-stage=2"])


def kept_activations(weftc, models_dir, schedule, stages, m):
    """Per rank: the most bytes of kept activations at any op of the
    byte-exact memory plan (weftc --estimate-memory)."""
    result = run([weftc, str(models_dir / "gpt.onnx"), "--estimate-memory",
                  f"--schedule={schedule}", f"--pipeline-parallel={stages}",
                  f"--microbatches={m}"])
    assert result.returncode == 0, result.stderr
    return [int(b) for b in re.findall(
        r"kept_activations +(\d+) bytes \(most at any op\)", result.stdout)]


def in_flight(weftc, models_dir, schedule, stages, m):
    """Per rank: the most (chunk, micro-batch) pairs whose forward has begun
    and whose backward (B, and W when split) has not ended, in the order of
    its stage function (weft-schedule's, which the plan runs)."""
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", os.devnull,
                  f"--schedule={schedule}", f"--pipeline-parallel={stages}",
                  f"--microbatches={m}", "--mlir-print-ir-after=weft-schedule"])
    assert result.returncode == 0, result.stderr
    dump = result.stderr.split("IR Dump After Schedule (weft-schedule)")[1]
    peaks = []
    for body in dump.split("func.func @stage")[1:]:
        # Transfers are posted early and waited for late (a gradient's
        # send at the step's end): compute ops only.
        tasks = [(kind, int(mb), int(chunk or 0)) for kind, mb, chunk in
                 re.findall(r"= weft\.(?!irecv|wait_send)\w+ .*"
                            r"#weft\.task<([FBRW]), micro_batch = (\d+)"
                            r"(?:, stage = \d+)?(?:, chunk = (\d+))?>", body)]
        first, last = {}, {}
        for i, (kind, mb, chunk) in enumerate(tasks):
            if kind == "F":
                first.setdefault((chunk, mb), i)
            else:
                last[(chunk, mb)] = i
        events = sorted([(i, 1) for i in first.values()] +
                        [(i, -1) for i in last.values()])
        held = peak = 0
        for _, delta in events:
            held += delta
            peak = max(peak, held)
        peaks.append(peak)
    return peaks


def test_activation_memory_is_the_papers(weftc, models_dir):
    """Qi et al.'s memory per schedule (Table 1 and Section 3; Korthikanti
    et al. for interleaving), P = 4, M = 8, on the plan weft runs:
    micro-batches in flight on rank 0 (1F1B and ZB-H1: P; ZB-H2: 2P - 1;
    interleaved: VP + P - 1 chunks; ZB-V: 2P chunks, P stages' worth), and
    the byte-exact plan's kept activations: ZB-H1's rank 0 exactly 1F1B's,
    ZB-H2's exactly (2P - 1) / P of it (every micro-batch keeps the same
    bytes on a stage), no rank of ZB-H1 above 1F1B's peak."""
    p, m = 4, 8
    flights = {s: in_flight(weftc, models_dir, s, p, m)
               for s in ["1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v"]}
    assert flights["1f1b"][0] == p
    assert flights["zb-h1"][0] == p
    assert flights["zb-h2"][0] == 2 * p - 1
    assert flights["interleaved"][0] == 2 * p + p - 1
    assert flights["zb-v"][0] == 2 * p
    base = kept_activations(weftc, models_dir, "1f1b", p, m)
    h1 = kept_activations(weftc, models_dir, "zb-h1", p, m)
    h2 = kept_activations(weftc, models_dir, "zb-h2", p, m)
    assert h1[0] == base[0] and max(h1) == max(base)
    assert h2[0] * p == base[0] * (2 * p - 1)


def test_three_chunks_per_rank_train_as_1f1b(weftc, models_dir, tmp_path):
    """--virtual-stages 3 (Korthikanti et al. run GPT-3 with three chunks
    per rank): 6 stages on 2 ranks, stage s on rank s mod 2, bit-identical
    to 1F1B on 6 ranks."""
    flags = ["--pipeline-parallel=2", "--microbatches=4"]
    reference = train(weftc, models_dir, tmp_path, "gpt", "1f1b",
                      ["--pipeline-parallel=6", "--microbatches=4"], 6)
    got = train(weftc, models_dir, tmp_path, "gpt", "interleaved",
                [*flags, "--virtual-stages=3"], 2)
    assert_same_training(got, reference, "gpt interleaved V=3")


def test_the_timeline_names_each_chunks_tasks(weftc, models_dir, tmp_path):
    """weftc --timeline under ZB-V: rank 0 runs chunk 0 (stage 0) and chunk
    1 (stage 3); each task is named by kind, chunk and micro-batch ("W1.2":
    chunk 1's weight gradient of micro-batch 2), as the task orders print."""
    timeline = tmp_path / "timeline.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o",
                  str(tmp_path / "plan.json"), "--pipeline-parallel=2",
                  "--microbatches=4", "--schedule=zb-v", "--timeline",
                  str(timeline)])
    assert result.returncode == 0, result.stderr
    assert ("pipeline: 2 stages, 4 micro-batches, schedule zb-v (2 chunks "
            "per rank)") in result.stdout
    events = json.loads(timeline.read_text())["traceEvents"]
    names = {(e["pid"], e["name"]) for e in events if e["tid"] == 0}
    for rank in range(2):
        for kind in "FBW":
            for chunk in range(2):
                for mb in range(4):
                    assert (rank, f"{kind}{chunk}.{mb}") in names


@pytest.mark.parametrize("explicit", [False, True], ids=["tasks", "explicit"])
def test_the_plan_and_trace_name_each_chunk(explicit, weftc, models_dir,
                                            tmp_path):
    """A ZB-V plan (task form and --explicit-plan) matches the plan schema
    (phase `weight`, `chunk` on tasks and instructions); weft-run's
    measured trace names each task as weftc's predicted one does."""
    import jsonschema
    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                  "--pipeline-parallel=2", "--microbatches=4",
                  "--schedule=zb-v", *(["--explicit-plan"] if explicit else [])])
    assert result.returncode == 0, result.stderr
    doc = json.loads(plan.read_text())
    jsonschema.validate(
        doc, json.loads((REPO / "docs" / "plan.schema.json").read_text()))
    entries = doc["programs"][0]["instructions" if explicit else "tasks"]
    assert {e["chunk"] for e in entries} == {0, 1}
    trace = tmp_path / "trace.json"
    result = run(mpirun(2) + [tool("weft-run"), str(plan), "--steps", "1",
                              "--trace", str(trace)],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"}, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    names = {(e["pid"], e["name"]) for e in
             json.loads(trace.read_text())["traceEvents"] if e["tid"] == 0}
    for rank in range(2):
        for kind in "FBW":
            for chunk in range(2):
                assert (rank, f"{kind}{chunk}.3") in names, (rank, kind, chunk)
