"""Data parallelism (issue 14): D replicas, each on a contiguous 1/D of the
batch, gradients averaged in DDP's buckets, train exactly like one device
on the whole batch.

`gpt` (4 layers, hidden 128) for D in {2, 4}, alone and with P = 2 stages
and with T = 2 tensor-parallel ranks (up to 8 ranks, oversubscribed): 10
AdamW steps (M = 2 micro-batches per replica) give per-step losses within
1e-5 of torch float64 on the same split (the batch in D x M contiguous
micro-batches, weft.oracle.MULTISTEP_RTOL) and of the single-rank plan at
M = D x 2. CNNs with batch norm (statistics per replica, as DDP computes
them) by the float64 oracle: one SGD step's loss and every parameter's
change. The buckets are torch's own (torch.distributed.
_compute_bucket_assignment_by_size on the gradients in ready order).
"""

import numpy as np
import onnx
import pytest
import torch
import torch.distributed as dist
from onnx import numpy_helper

from conftest import BUILD, plan_view, run, tool
from weft import oracle
from weft.examples import gpt, vision
from weft.examples.common import lm_batches
from weft.export import export
from weft.oracle import write_step
from test_tensor_parallel import train  # 10 steps on mpirun, the log

STEPS = 10
M = 2
CONFIG = gpt.CONFIGS["small"]
MiB = 1 << 20


def batches():
    return lm_batches(CONFIG, STEPS)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("dp-data")
    for step, batch in enumerate(batches()):
        write_step(directory, ["tokens", "targets"], batch, step)
    return directory


def compile_plan(weftc, path, *flags, microbatches=M):
    result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o", str(path),
                  f"--microbatches={microbatches}", *flags])
    assert result.returncode == 0, result.stderr
    return plan_view(path)  # every rank's view


_reference = {}


def reference_losses(weftc, data_dir, tmp_path, replicas):
    """(torch float64, single-rank weft) per-step losses on D x M
    micro-batches."""
    if replicas not in _reference:
        model, _ = gpt.build(**CONFIG)
        torch64 = oracle.float64_losses(
            model, batches(), replicas * M,
            lambda p: torch.optim.AdamW(p, lr=1e-3))
        plan = tmp_path / "one.json"
        compile_plan(weftc, plan, microbatches=replicas * M)
        records = train(plan, 1, data_dir, tmp_path / "one.jsonl")
        _reference[replicas] = (torch64, [r["loss"] for r in records])
    return _reference[replicas]


LAYOUTS = [(data, stages, tensor) for data in (2, 4)
           for stages, tensor in ((1, 1), (2, 1), (1, 2))]


@pytest.mark.parametrize("data,stages,tensor", LAYOUTS,
                         ids=[f"D{d}-P{p}-T{t}" for d, p, t in LAYOUTS])
def test_data_parallel_equals_float64(data, stages, tensor, weftc, data_dir,
                                      tmp_path):
    plan = tmp_path / "plan.json"
    plan_json = compile_plan(weftc, plan, f"--data-parallel={data}",
                             f"--pipeline-parallel={stages}",
                             f"--tensor-parallel={tensor}")
    ranks = data * stages * tensor
    assert {a["name"]: a["size"] for a in plan_json["mesh"]["axes"]} == {
        "pipeline": stages, "data": data, "tensor": tensor}
    # The global batch in the plan, each replica reading its rows.
    assert plan_json["inputs"][0]["shape"] == [CONFIG["batch"],
                                               CONFIG["seq"]]
    for rank in plan_json["ranks"]:
        for named in rank["inputs"]:
            assert named["shard"] == {"dim": 0, "blocks": 1, "count": data,
                                      "index": rank["coords"]["data"]}
    records = train(plan, ranks, data_dir, tmp_path / "log.jsonl")
    losses = [r["loss"] for r in records]
    torch64, one = reference_losses(weftc, data_dir, tmp_path, data)
    assert losses == pytest.approx(one, rel=1e-5)
    assert losses == pytest.approx(torch64, rel=oracle.MULTISTEP_RTOL)
    for r in records:  # measured peak = planned arena on every rank
        assert r["rank_peak_bytes"] == r["rank_arena_bytes"]


def ready_order_gradients(model):
    """The gradients in the order they become ready: the reverse of the
    order the forward first uses the parameters (gpt registers them in
    that order; the head is tied to wte, so wte comes last)."""
    return [torch.zeros_like(p) for p in reversed(list(model.parameters()))]


@pytest.mark.parametrize("cap_mb", [25, 0.25])
def test_buckets_are_ddps(weftc, tmp_path, cap_mb):
    """One data-axis all-reduce per bucket, of the sizes DDP's own bucket
    builder gives the same gradients (limits 1 MiB, then the cap), each
    posted in the last micro-batch's backward and all but the last
    waited for only after more backward compute (the reduction overlaps
    the backward); plus one all-reduce of the loss."""
    plan = compile_plan(weftc, tmp_path / "plan.json", "--data-parallel=2",
                        f"--bucket-cap-mb={cap_mb}")
    model, _ = gpt.build(**CONFIG)
    grads = ready_order_gradients(model)
    buckets, _ = dist._compute_bucket_assignment_by_size(
        grads, [min(MiB, int(cap_mb * MiB)), int(cap_mb * MiB)],
        [False] * len(grads))
    expected = [sum(grads[i].numel() * 4 for i in b) for b in buckets]
    assert len(expected) > (1 if cap_mb == 25 else 3)
    for rank in plan["ranks"]:
        insts, buffers = rank["instructions"], rank["buffers"]
        reduces = [(k, i) for k, i in enumerate(insts)
                   if i["op"] == "all_reduce" and i["axis"] == "data"]
        # The loss's (in its forward), the buckets' (in the backward).
        loss = [i for _, i in reduces if i["phase"] == "forward"]
        assert [buffers[i["inputs"][0]]["bytes"] for i in loss] == [4]
        reduces = [(k, i) for k, i in reduces if i["phase"] != "forward"]
        sizes = [buffers[i["inputs"][0]]["bytes"] for _, i in reduces]
        assert sizes == expected
        waits = {i["tag"]: k for k, i in enumerate(insts)
                 if i["op"] == "wait_collective"}
        for n, (k, post) in enumerate(reduces):
            assert post["phase"] == "backward"
            assert post["micro_batch"] == M - 1
            between = [i for i in insts[k + 1:waits[post["tag"]]]
                       if i["op"] == "compute" and i["phase"] == "backward"]
            if n < len(expected) - 1:
                assert between, f"bucket {n} is waited for at once"


def test_weftc_reports_the_buckets(weftc, tmp_path):
    result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o",
                  str(tmp_path / "p.json"), "--data-parallel=2",
                  "--bucket-cap-mb=0.25"])
    assert result.returncode == 0, result.stderr
    assert "data parallel: 2 replicas per stage" in result.stdout
    rank = plan_view(tmp_path / "p.json", 0)["ranks"][0]
    insts, buffers = rank["instructions"], rank["buffers"]
    data = [i for i in insts if i["op"] == "all_reduce" and
            i["axis"] == "data"]
    buckets = [buffers[i["inputs"][0]]["bytes"] for i in data
               if i["phase"] == "backward"]
    # The loss's all-reduce (the mean over replicas) is the other one.
    (loss,) = [buffers[i["inputs"][0]]["bytes"] for i in data
               if i["phase"] != "backward"]
    (row,) = [line.split() for line in result.stdout.splitlines()
              if line.split()[:1] == ["0"]]
    # Ring all-reduce over 2 ranks: each sends 2 (D - 1) / D of a bucket;
    # the column counts every byte sent over the data axis.
    assert int(row[-2]) == len(buckets)
    assert int(row[-1]) == sum(buckets) + loss


def test_predicted_step_overlaps_the_buckets(weftc, tmp_path):
    """weftc simulates the unpipelined rank: with the overlap, part of the
    buckets' all-reduce time is hidden behind the backward; without it all
    of it is exposed."""
    exposed = {}
    for overlap in ("true", "false"):
        result = run([weftc, str(BUILD / "models" / "gpt.onnx"), "-o",
                      str(tmp_path / "p.json"), "--data-parallel=2",
                      "--bucket-cap-mb=0.25",
                      f"--overlap-collectives={overlap}"])
        assert result.returncode == 0, result.stderr
        # The predicted step, then its MFU (the last line).
        words = result.stdout.splitlines()[-2].split()
        assert words[:2] == ["predicted", "step:"], words
        exposed[overlap] = (float(words[5]), float(words[10].strip("(")))
    hidden, in_flight = exposed["true"]
    assert 0 <= hidden < in_flight
    assert exposed["false"] == (in_flight, in_flight)


def test_save_writes_replica_zero(weftc, data_dir, tmp_path):
    """--save after D = 2 training equals the single-rank model trained on
    the same micro-batch split (two plain SGD steps: linear in the
    gradients, so float32 rounding stays at rounding)."""
    saved = {}
    for data in (1, 2):
        plan = tmp_path / f"d{data}.json"
        compile_plan(weftc, plan, f"--data-parallel={data}",
                     "--optimizer=sgd", "--lr=0.1",
                     microbatches=2 * M // data)
        out = tmp_path / f"d{data}.onnx"
        train(plan, data, data_dir, tmp_path / f"d{data}.jsonl",
              "--save", str(out), steps=2)
        saved[data] = {t.name: numpy_helper.to_array(t)
                       for t in onnx.load(str(out)).graph.initializer}
    assert saved[2].keys() == saved[1].keys()
    for name, want in saved[1].items():
        np.testing.assert_allclose(saved[2][name], want, rtol=1e-5,
                                   atol=1e-7, err_msg=name)


# ZeRO cases shard every parameter (threshold 0): stage 3's pieces go
# through --save, which the oracle reads the step's parameters from.
CNN_CASES = [("resnext", 1, 2, 0), ("mobilenet_v2", 2, 2, 0),
             ("resnext", 1, 4, 0), ("resnext", 1, 2, 1),
             ("mobilenet_v2", 2, 2, 2), ("resnext", 2, 4, 3)]


@pytest.mark.parametrize("name,m,data,zero", CNN_CASES,
                         ids=[f"{n}-M{m}-D{d}-ZeRO{z}"
                              for n, m, d, z in CNN_CASES])
def test_cnn_sgd_step_equals_float64(name, m, data, zero, tmp_path):
    """Batch norm sees each replica's statistics (as under DDP): the
    float64 oracle on the D x M micro-batch split, every parameter's change
    within torch float32's own error, and weft in float64 within 1e-8."""
    tools = oracle.Tools(tool("weftc"), tool("weft-run"))
    model, batch = vision.build(name)
    path = tmp_path / f"{name}.onnx"
    export(model, batch, str(path))
    report = oracle.check_sgd_step(
        tools, model, path, batch, ["images", "labels"], tmp_path / "f32",
        micro_batches=m, data_parallel=data,
        flags=[f"--zero-stage={zero}", "--optimizer-shard-threshold=0"])
    print(f"\n{name} M={m} D={data} ZeRO-{zero}: {report.summary()}")
    oracle.check_float64_step(tools, model, batch, ["images", "labels"],
                              tmp_path / "f64", micro_batches=m,
                              data_parallel=data)
