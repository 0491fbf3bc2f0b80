"""Checkpoints (`--checkpoint DIR`, `--resume DIR`, runtime/Checkpoint.h) and
the trained-model export (`--save OUT.onnx`):

- a resumed run is bit-identical to an uninterrupted one, on one rank and
  on a 2-stage pipeline; `--save-every`/`--keep` keep the newest K;
- a checkpoint is one unit: killed (SIGKILL or SIGTERM) at any point of a
  run that saves every step, the last complete checkpoint always resumes
  bit-identically and no partial state is ever accepted;
- a missing, corrupt or mismatched checkpoint is refused naming what
  differs; the export is a valid ONNX model with the trained weights."""

import json
import os
import random
import signal
import subprocess
import time

import onnx
import pytest
from onnx import numpy_helper

from conftest import run, tool
from weft.oracle import write_step
from test_training import batches
from weft import oracle
from weft.examples import gpt

#: Kills per layout in the kill test; the issue's acceptance run used 50
#: (WEFT_CHECKPOINT_KILLS=50).
KILLS = int(os.environ.get("WEFT_CHECKPOINT_KILLS", "12"))


def losses(log):
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def gpt_setup(weftc, models_dir, tmp_path_factory):
    """(plan, data flags) for the gpt example on one rank, 8 steps of data."""
    workdir = tmp_path_factory.mktemp("ckpt")
    plan = workdir / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o",
                str(plan)]).returncode == 0
    for step, batch in enumerate(batches(gpt.CONFIGS["small"])[:8]):
        write_step(workdir / "data", ["tokens", "targets"], batch, step)
    return plan, ["--data", str(workdir / "data")]


def weft_run(plan, *flags, ranks=1):
    return run(oracle.mpirun(ranks) + [tool("weft-run"), str(plan), *flags])


def test_resume_is_bit_identical(gpt_setup, models_dir, tmp_path):
    plan, data = gpt_setup
    full = tmp_path / "full.jsonl"
    result = weft_run(plan, *data, "--steps", "6", "--log-json", str(full),
                      "--save", str(tmp_path / "full.onnx"))
    assert result.returncode == 0, result.stderr

    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    ckpt = tmp_path / "ckpt"
    result = weft_run(plan, *data, "--steps", "3", "--log-json", str(first),
                      "--checkpoint", str(ckpt))
    assert result.returncode == 0, result.stderr
    assert (ckpt / "latest").read_text() == "step_00000003\n"
    result = weft_run(plan, *data, "--steps", "3", "--log-json", str(second),
                      "--resume", str(ckpt), "--save",
                      str(tmp_path / "resumed.onnx"))
    assert result.returncode == 0, result.stderr

    assert losses(first) + losses(second) == losses(full)  # exact equality
    assert [json.loads(l)["step"] for l in second.read_text().splitlines()] \
        == [4, 5, 6]

    trained = onnx.load(str(tmp_path / "full.onnx"))
    resumed = onnx.load(str(tmp_path / "resumed.onnx"))
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(str(models_dir / "gpt.onnx")).graph.initializer}
    onnx.checker.check_model(trained)
    for a, b in zip(trained.graph.initializer, resumed.graph.initializer):
        assert a.raw_data == b.raw_data, a.name
    assert (numpy_helper.to_array(trained.graph.initializer[1]) !=
            initial[trained.graph.initializer[1].name]).any()


def test_save_every_keeps_the_newest(gpt_setup, tmp_path):
    plan, data = gpt_setup
    ckpt = tmp_path / "ckpt"
    (ckpt / "step_00000002").mkdir(parents=True)  # an interrupted save
    result = weft_run(plan, *data, "--steps", "5", "--checkpoint", str(ckpt),
                      "--save-every", "2", "--keep", "2")
    assert result.returncode == 0, result.stderr
    # Saved after steps 2, 4 and 5 (the last); the newest two stay.
    assert sorted(p.name for p in ckpt.iterdir()) == \
        ["latest", "step_00000004", "step_00000005"]
    manifest = json.loads((ckpt / "step_00000005" / "manifest.json").read_text())
    assert manifest["format"] == "weft-checkpoint" and manifest["step"] == 5
    assert [s["file"] for s in manifest["shards"]] == ["rank_0.onnx"]
    # A step directory can be resumed directly.
    result = weft_run(plan, *data, "--steps", "1", "--resume",
                      str(ckpt / "step_00000004"))
    assert result.returncode == 0, result.stderr
    assert "step 5/5" in result.stdout


def test_pipelined_checkpoint_resumes_bit_identically(weftc, models_dir,
                                                      tmp_path):
    """Each of 2 ranks writes its own shard; 2 + 2 steps equal 4 steps."""
    plan = tmp_path / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                "--pipeline-parallel=2", "--microbatches=4"]).returncode == 0

    def run_losses(extra, steps, log):
        result = weft_run(plan, "--steps", str(steps), "--log-json", str(log),
                          *extra, ranks=2)
        assert result.returncode == 0, result.stderr
        return losses(log)

    straight = run_losses([], 4, tmp_path / "a.jsonl")
    ckpt = tmp_path / "ckpt"
    first = run_losses(["--checkpoint", str(ckpt)], 2, tmp_path / "b.jsonl")
    assert sorted(p.name for p in (ckpt / "step_00000002").iterdir()) == \
        ["manifest.json", "rank_0.onnx", "rank_1.onnx"]
    second = run_losses(["--resume", str(ckpt)], 2, tmp_path / "c.jsonl")
    assert first + second == straight


def corrupt(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_bad_checkpoints_are_refused_naming_what_differs(gpt_setup, weftc,
                                                         models_dir, tmp_path):
    plan, data = gpt_setup

    def refused(ckpt, message, *flags, plan_path=plan):
        result = weft_run(plan_path, *data, "--resume", str(ckpt), *flags)
        assert result.returncode == 1
        assert message in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1

    refused(tmp_path / "none", "no complete checkpoint")
    ckpt = tmp_path / "ckpt"
    assert weft_run(plan, *data, "--checkpoint", str(ckpt)).returncode == 0
    step = ckpt / "step_00000001"

    refused(ckpt, "the checkpoint's --seed is 0, this run's is 7",
            "--seed", "7")
    other = tmp_path / "other.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(other),
                "--lr=0.5"]).returncode == 0
    refused(ckpt, "the checkpoint's plan (sha256) is", plan_path=other)

    corrupt(step / "rank_0.onnx")
    refused(ckpt, "is not the shard the manifest lists (size or sha256 "
            "differs)")
    (step / "manifest.json").write_text("{}")
    refused(ckpt, "has no 'format'")
    (step / "manifest.json").unlink()
    refused(ckpt, "no complete checkpoint")


def test_save_every_needs_a_directory(gpt_setup):
    plan, data = gpt_setup
    result = weft_run(plan, *data, "--save-every", "2")
    assert result.returncode == 1
    assert "--save-every needs --checkpoint DIR" in result.stderr
    result = weft_run(plan, *data, "--checkpoint", "c", "--keep", "0")
    assert result.returncode == 1
    assert "--keep: 0 would delete every checkpoint" in result.stderr


@pytest.mark.parametrize("ranks", [1, 2])
def test_killed_saves_never_lose_the_last_checkpoint(weftc, models_dir,
                                                     tmp_path, ranks):
    """KILLS runs that save every step are killed (SIGKILL or SIGTERM, at
    random times, so within saves as often as between them). After each,
    --resume either continues from the last complete checkpoint with
    exactly the uninterrupted run's next loss, or (killed before the first
    save completed) says there is none; no partial state is accepted."""
    plan = tmp_path / "plan.json"
    flags = ["--pipeline-parallel=2", "--microbatches=2"] if ranks == 2 else []
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o", str(plan),
                *flags]).returncode == 0
    reference = tmp_path / "reference.jsonl"
    # Killed runs train at most 40 steps; a resume adds one.
    assert weft_run(plan, "--steps", "41", "--log-json", str(reference),
                    ranks=ranks).returncode == 0
    want = losses(reference)
    rng = random.Random(12)
    ckpt = tmp_path / "ckpt"
    resumed = inside_save = 0
    for kill in range(KILLS):
        job = subprocess.Popen(
            oracle.mpirun(ranks) + [tool("weft-run"), str(plan), "--steps",
                                    "40", "--checkpoint", str(ckpt),
                                    "--save-every", "1", "--keep", "2"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.5))
        job.send_signal(rng.choice([signal.SIGKILL, signal.SIGTERM]))
        job.wait(timeout=60)
        if ranks > 1:  # mpirun's children, if a SIGKILL left any
            subprocess.run(["pkill", "-9", "-f", f"weft-run {plan}"])
        # Evidence that the kill landed inside a save: a temporary file or
        # a step directory without its manifest.
        inside_save += any(
            p.suffix == ".tmp" or (p.is_dir() and not (p / "manifest.json")
                                   .exists())
            for p in list(ckpt.glob("*")) + list(ckpt.glob("*/*")))
        log = tmp_path / f"resume{kill}.jsonl"
        result = weft_run(plan, "--steps", "1", "--resume", str(ckpt),
                          "--log-json", str(log), ranks=ranks)
        if result.returncode != 0:
            assert "no complete checkpoint" in result.stderr, result.stderr
            continue
        (record,) = [json.loads(l) for l in log.read_text().splitlines()]
        assert record["loss"] == want[record["step"] - 1], (kill, record)
        resumed += 1
    print(f"\n{ranks} rank(s): {KILLS} kills, {inside_save} inside a save, "
          f"{resumed} resumed bit-identically")
    assert resumed >= KILLS // 2
