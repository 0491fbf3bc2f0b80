"""Unlucky and hostile runs (issue 12): a non-finite loss stops the run
naming the step, output paths are checked before step 1, weftc never leaves
a partial or deleted -o file, external data cannot leave its directory,
bad optimizer values and empty batches are refused, and a stopped rank ends
the job (the watchdog) instead of hanging it. Each fails with one line
naming the problem and a non-zero exit."""

import json
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import run, tool
from weft import oracle


def nan_model(path):
    """loss = mean(log(x * w)) with x uniform in [-1, 1) (synthetic data):
    the log of negative numbers, NaN at step 1."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["xw"]),
         helper.make_node("Log", ["xw"], ["l"]),
         helper.make_node("ReduceMean", ["l"], ["loss"], keepdims=0)],
        "nan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(np.ones(3, np.float32), "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def nan_plan(weftc, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("nan")
    plan = workdir / "plan.json"
    result = run([weftc, str(nan_model(workdir / "nan.onnx")), "-o", str(plan),
                  "--optimizer=sgd"])
    assert result.returncode == 0, result.stderr
    return plan


def test_nan_loss_stops_naming_the_step(nan_plan, tmp_path):
    log = tmp_path / "log.jsonl"
    result = run([tool("weft-run"), str(nan_plan), "--steps", "3",
                  "--log-json", str(log), "--save", str(tmp_path / "t.onnx")])
    assert result.returncode == 1
    assert result.stderr.strip() == ("weft-run: step 1: the loss is nan; "
                                     "stopping (--on-nan=continue trains on)")
    # Logged explicitly (JSON has no NaN), and nothing was saved.
    assert [json.loads(l)["loss"] for l in log.read_text().splitlines()] == \
        ["nan"]
    assert not (tmp_path / "t.onnx").exists()


def test_nan_loss_can_train_on(nan_plan, tmp_path):
    log = tmp_path / "log.jsonl"
    result = run([tool("weft-run"), str(nan_plan), "--steps", "2",
                  "--on-nan", "continue", "--log-json", str(log)])
    assert result.returncode == 0, result.stderr
    assert [json.loads(l)["loss"] for l in log.read_text().splitlines()] == \
        ["nan", "nan"]
    result = run([tool("weft-run"), str(nan_plan), "--on-nan", "skip"])
    assert result.returncode == 1
    assert "--on-nan: 'skip' is not stop or continue" in result.stderr
    result = run([tool("weft-run"), str(nan_plan), "--timeout", "-1"])
    assert result.returncode == 1
    assert "--timeout: '-1' is not a number of seconds >= 0" in result.stderr


@pytest.mark.parametrize("flag", ["--save", "--trace", "--log-json"])
def test_output_paths_are_checked_before_step_1(flag, nan_plan, tmp_path):
    bad = tmp_path / "no-such-dir" / "out"
    result = run([tool("weft-run"), str(nan_plan), "--steps", "5",
                  "--on-nan", "continue", flag, str(bad)])
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"weft-run: {flag}: cannot write '{bad}': '{bad.parent}' is not a "
        f"directory")
    assert "step 1" not in result.stdout
    result = run([tool("weft-run"), str(nan_plan), "--on-nan", "continue",
                  flag, str(tmp_path)])
    assert result.returncode == 1
    assert f"{flag}: cannot write '{tmp_path}': it is a directory" in \
        result.stderr


def test_weftc_output_is_replaced_whole_or_not_at_all(weftc, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text("the previous plan")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model")
    result = run([weftc, str(garbage), "-o", str(plan)])
    assert result.returncode == 1
    assert plan.read_text() == "the previous plan"
    result = run([weftc, str(nan_model(tmp_path / "nan.onnx")), "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    assert json.loads(plan.read_text())["format"] == "weft-plan"
    assert [p.name for p in tmp_path.iterdir() if "plan" in p.name] == \
        ["plan.json"]  # no temporary left behind


def external_input(data_dir, location, length=48):
    """step_0/x.pb of the nan model's input, its data external at
    `location`."""
    step = data_dir / "step_0"
    step.mkdir(parents=True)
    tensor = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[4, 3])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"),
                       ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    (step / "x.pb").write_bytes(tensor.SerializeToString())


@pytest.mark.parametrize("location,message", [
    ("../../../../etc/passwd", "is not a path inside"),
    ("/etc/passwd", "is not a path inside"),
])
def test_external_data_cannot_leave_its_directory(nan_plan, tmp_path,
                                                   location, message):
    data = tmp_path / "data"
    external_input(data, location)
    result = run([tool("weft-run"), str(nan_plan), "--data", str(data),
                  "--on-nan", "continue"])
    assert result.returncode == 1
    assert f"external data location '{location}' {message} '{data}'" in \
        result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_external_data_length_must_fit_the_tensor(nan_plan, tmp_path):
    data = tmp_path / "data"
    external_input(data, "x.bin", length=8)
    (data / "x.bin").write_bytes(np.ones(12, np.float32).tobytes())
    result = run([tool("weft-run"), str(nan_plan), "--data", str(data),
                  "--on-nan", "continue"])
    assert result.returncode == 1
    assert "external data length 8 bytes, the tensor needs 48" in \
        result.stderr, result.stderr


def test_invalid_utf8_node_name_is_written_replaced(weftc, tmp_path):
    """ONNX (proto2) names are bytes; the plan is JSON (UTF-8). A name with
    an invalid sequence is written with U+FFFD, not an abort."""
    path = nan_model(tmp_path / "model.onnx")
    model = onnx.load(str(path))
    model.graph.node[1].name = "log_NAME"
    blob = model.SerializeToString().replace(b"log_NAME", b"log_\xff\xfeME")
    path.write_bytes(blob)
    plan = tmp_path / "plan.json"
    result = run([weftc, str(path), "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    assert "log_\ufffd\ufffdME" in plan.read_text(encoding="utf-8")
    result = run([weftc, str(path), "--emit=summary-json"])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("flag,message", [
    ("--lr=nan", "--lr=nan: must be a finite number > 0"),
    ("--lr=0", "--lr=0: must be a finite number > 0"),
    ("--weight-decay=-0.5", "--weight-decay=-0.5: must be a finite number >= 0"),
    ("--momentum=-1", "--momentum=-1: must be a finite number >= 0"),
    ("--eps=inf", "--eps=inf: must be a finite number >= 0"),
    ("--betas=0.9,1.5", "--betas=1.5: must be in [0, 1)"),
])
def test_bad_optimizer_values_are_refused(weftc, tmp_path, flag, message):
    """torch.optim's ranges; before, --weight-decay=-0.5 silently became
    0.01 and --lr=nan wrote "lr": null."""
    result = run([weftc, str(nan_model(tmp_path / "m.onnx")), "-o",
                  str(tmp_path / "plan.json"), flag])
    assert result.returncode == 1
    assert result.stderr.strip() == f"weftc: {message}"
    assert not (tmp_path / "plan.json").exists()


def test_empty_batch_cannot_train(weftc, tmp_path):
    """A batch of 0 trained to NaN with exit 0."""
    model = nan_model(tmp_path / "m.onnx")
    result = run([weftc, str(model), "--input-shape=x=0x3", "-o",
                  str(tmp_path / "plan.json")])
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "weftc: input 'x' is tensor<0x3xf32>, empty: a training step needs "
        "a non-empty batch")


def _rank_pid(rank, plan):
    """The pid of MPI rank `rank` (from its environment) of the weft-run
    job running `plan` (not another test's, when pytest runs in parallel)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
            env = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        args = cmdline.split(b"\0")
        if args[0].endswith(b"weft-run") and str(plan).encode() in args and \
                f"OMPI_COMM_WORLD_RANK={rank}\0".encode() in env:
            return int(pid)
    raise AssertionError(f"no weft-run process of rank {rank}")


def test_stopped_rank_ends_the_job_naming_the_transfer(weftc, models_dir,
                                                       tmp_path):
    """The watchdog: rank 0 of a 2-stage pipeline is stopped (SIGSTOP)
    mid-run; rank 1, waiting on its activations, ends the job after
    --timeout seconds naming the transfer and the peer. Before, the job
    hung forever."""
    plan = tmp_path / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                "--pipeline-parallel=2", "--microbatches=2"]).returncode == 0
    job = subprocess.Popen(
        oracle.mpirun(2) + [tool("weft-run"), str(plan), "--steps", "100000",
                            "--timeout", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not job.stdout.readline().startswith("step 2/"):
            assert job.poll() is None, job.stderr.read()
        stopped = _rank_pid(0, plan)
        os.kill(stopped, signal.SIGSTOP)
        start = time.monotonic()
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode != 0
    assert time.monotonic() - start < 30
    assert re.search(r"weft-run: rank 1: .*transfer \d+ \(receive of \d+ "
                     r"bytes from rank 0\) has not completed after 2 s "
                     r"\(--timeout\)", stderr), stderr


def test_plan_refuses_a_changed_model(weftc, tmp_path):
    """The plan records the model's SHA-256; weights of another file with
    the same names would load and train silently."""
    model = nan_model(tmp_path / "m.onnx")
    plan = tmp_path / "plan.json"
    assert run([weftc, str(model), "-o", str(plan)]).returncode == 0
    changed = onnx.load(str(model))
    changed.graph.initializer[0].CopyFrom(
        numpy_helper.from_array(np.full(3, 2, np.float32), "w"))
    onnx.save(changed, str(model))
    result = run([tool("weft-run"), str(plan), "--on-nan", "continue"])
    assert result.returncode == 1
    assert re.fullmatch(
        rf"weft-run: {re.escape(str(plan))}: model\.sha256: "
        rf"'{re.escape(str(model))}' is not the model the plan was compiled "
        r"from \(sha256 [0-9a-f]{12}\.\.\., the plan's [0-9a-f]{12}\.\.\.\); "
        r"recompile the plan with weftc", result.stderr.strip()), result.stderr


@pytest.fixture(scope="module")
def pipelined_plan(weftc, models_dir, tmp_path_factory):
    """The gpt example on 2 stages (1F1B, 4 micro-batches), as JSON, every
    instruction written out (--explicit-plan: the edits below move single
    transfers; test_task_bodies mutates task bodies and orders)."""
    path = tmp_path_factory.mktemp("order") / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(path),
                "--pipeline-parallel=2", "--microbatches=4",
                "--explicit-plan"]).returncode == 0
    return json.loads(path.read_text())


def _program(plan, rank):
    """Rank `rank`'s program: on a pipeline alone, each stage's is its own,
    so editing it edits that rank only."""
    return plan["programs"][plan["rank_programs"][rank]]


def _first(instructions, op):
    return next(i for i, inst in enumerate(instructions) if inst["op"] == op)


def _drop_first_wait_recv(plan):
    insts = _program(plan, 1)["instructions"]
    del insts[_first(insts, "wait_recv")]


def _drop_every_wait_send(plan):
    insts = _program(plan, 0)["instructions"]
    insts[:] = [i for i in insts if i["op"] != "wait_send"]


def _receive_gradient_first(plan):
    """Rank 0 waits for stage 1's first gradient before sending it any
    activation: each rank waits on the other."""
    insts = _program(plan, 0)["instructions"]
    recv = _first(insts, "irecv")
    tag = insts[recv]["tag"]
    wait = next(i for i, inst in enumerate(insts)
                if inst["op"] == "wait_recv" and inst["tag"] == tag)
    moved = [insts[recv], insts[wait]]
    insts[:] = moved + [x for i, x in enumerate(insts) if i not in (recv, wait)]


def _receive_activations_swapped(plan):
    """Stage 1 posts its first two receives (the activations stage 0 sends
    first, of micro-batches 0 and 1) in the other order: MPI matches by
    tag, NCCL by order."""
    insts = _program(plan, 1)["instructions"]
    first, second = [i for i, inst in enumerate(insts)
                     if inst["op"] == "irecv"][:2]
    insts.insert(first, insts.pop(second))


@pytest.mark.parametrize("edit,pattern", [
    (_receive_activations_swapped,
     r"programs\[0\]\.instructions\[\d+\]\.tag: tag \d+ is rank 0's send "
     r"#0 to rank 1, whose receive #0 from it is tag \d+: a pair of ranks "
     r"must post its transfers in one order at both ends"),
    (_drop_first_wait_recv,
     r"programs\[1\]\.instructions\[\d+\] \(\w+ .*\): reads buffer \d+ "
     r"while the receive of tag \d+ into its bytes is in flight "
     r"\(no wait_recv before\)"),
    (_drop_every_wait_send,
     r"programs\[0\].*(writes buffer \d+ while the send of tag \d+ owns its "
     r"bytes|the transfer of tag \d+ is never waited for)"),
    (_receive_gradient_first,
     r"the ranks would deadlock, each waiting on another: "
     r"programs\[0\]\.instructions\[1\] \(wait_recv tag \d+\); "
     r"programs\[1\]\.instructions\[\d+\] \(wait_recv tag \d+\)"),
])
def test_plans_that_would_misread_or_hang_are_refused(pipelined_plan, tmp_path,
                                                      edit, pattern):
    """A missing wait_recv once read data before it arrived; a plan that
    would deadlock hung forever; a channel posted in two orders would swap
    tensors on NCCL. The loader refuses each before any rank runs (the same
    message on every rank; one line)."""
    plan = json.loads(json.dumps(pipelined_plan))
    edit(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = run([tool("weft-run"), str(path)])
    assert result.returncode == 1
    assert re.search(pattern, result.stderr), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_read_before_write_is_refused(nan_plan, tmp_path):
    """Instructions in the wrong order (a mutated or hand-edited plan) ran
    to a wrong loss; a read of a buffer nothing wrote yet is refused."""
    plan = json.loads(nan_plan.read_text())
    plan["programs"][0]["instructions"].reverse()
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = run([tool("weft-run"), str(path)])
    assert result.returncode == 1
    assert re.search(r"programs\[0\]\.instructions\[0\] \(\w+ .*\): reads "
                     r"buffer \d+ before anything writes it", result.stderr), \
        result.stderr
