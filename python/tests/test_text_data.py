"""`weft-run --data text:FILE`: byte-level language-model windows of a text
file, as scripts/demo.sh trains on (the C++ loader's windows are unit-tested
in test/unit/runtime/TextDataTest.cpp).

- The validation split (the file's last --holdout fraction, tiled in order)
  through a forward-only plan gives torch float64's loss on the same
  windows, computed here from the file's bytes.
- A pipelined run (2 ranks: tokens on the first stage, targets on the last)
  draws the same training windows on every rank: its losses equal the
  single-rank run's.
- Bad flags and files fail with one line naming the flag."""

import json
import math

import numpy as np
import pytest
import torch

from conftest import run, tool
from weft import oracle
from weft.examples import gpt
from weft.examples.common import export

SHAPE = dict(layers=2, hidden=32, heads=2, seq=16, vocab=256, batch=4)


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    """(model, onnx path, text path): a byte-level gpt and ~8 kB of text."""
    workdir = tmp_path_factory.mktemp("text")
    model, inputs = gpt.build(**SHAPE)
    path = workdir / "gpt-bytes.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    text = workdir / "text.txt"
    rng = np.random.default_rng(0)
    words = ["pipeline", "stage", "micro-batch", "bubble", "recompute",
             "tensor", "parallel", "gradient", "the", "of", "a", "and"]
    text.write_text(" ".join(rng.choice(words, 1200)))
    return model, path, text


def losses(result, steps):
    assert result.returncode == 0, result.stderr
    values = [float(line.split()[3]) for line in result.stdout.splitlines()
              if line.startswith("step ")]
    assert len(values) == steps
    (mean,) = [float(line.split()[-1]) for line in result.stdout.splitlines()
               if line.startswith("mean loss")]
    assert mean == pytest.approx(sum(values) / steps, rel=1e-6)
    return values


def validation_windows(text, steps, holdout=0.1):
    """The validation batches as the loader tiles them: row r of step i
    starts at ((i B + r) S) mod (split bytes - S)."""
    data = np.frombuffer(text.read_bytes(), np.uint8).astype(np.int64)
    split = data[len(data) - round(holdout * len(data)):]
    b, s = SHAPE["batch"], SHAPE["seq"]
    for step in range(steps):
        starts = [((step * b + r) * s) % (len(split) - s) for r in range(b)]
        window = np.stack([split[p:p + s + 1] for p in starts])
        yield torch.from_numpy(window[:, :-1]), torch.from_numpy(window[:, 1:])


def test_validation_loss_is_torch_float64_on_the_held_out_windows(
        weftc, lm, tmp_path):
    model, path, text = lm
    plan = tmp_path / "validate.json"
    result = run([weftc, str(path), "--forward-only", "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    steps = 3
    got = losses(run([tool("weft-run"), str(plan), "--data", f"text:{text}",
                      "--split", "val", "--steps", str(steps)]), steps)
    oracle.load_initializers(model, path)
    for value, batch in zip(got, validation_windows(text, steps)):
        with torch.no_grad():
            want = float(model.double()(*batch))
            f32 = float(model.float()(*batch))
        tolerance = max(oracle.LOSS_RTOL,
                        oracle.F32_FACTOR * abs(f32 - want) / want)
        assert abs(value - want) <= tolerance * want, (value, want)
        # Untrained, each byte is about equally likely: ln 256.
        assert abs(want - math.log(256)) < 0.1


def test_pipelined_ranks_read_the_same_windows(weftc, lm, tmp_path):
    _, path, text = lm
    runs = {}
    for stages in (1, 2):
        plan = tmp_path / f"plan{stages}.json"
        result = run([weftc, str(path), "-o", str(plan), "--optimizer=adamw",
                      "--lr=3e-3", f"--pipeline-parallel={stages}",
                      "--microbatches=2"])
        assert result.returncode == 0, result.stderr
        log = tmp_path / f"log{stages}.jsonl"
        result = run(oracle.mpirun(stages) + [
            tool("weft-run"), str(plan), "--data", f"text:{text}", "--seed",
            "3", "--steps", "6", "--log-json", str(log)])
        assert result.returncode == 0, result.stderr
        runs[stages] = [json.loads(line)["loss"]
                        for line in log.read_text().splitlines()]
    assert runs[2] == pytest.approx(runs[1], rel=oracle.MULTISTEP_RTOL)
    # Training lowers the loss from ln 256 within 6 steps.
    assert runs[1][-1] < runs[1][0] - 0.5


@pytest.mark.parametrize("flags,message", [
    (["--split", "test"], "--split: 'test' is not train or val"),
    (["--holdout", "half"], "--holdout: 'half' is not a number"),
    (["--holdout", "1.5"], "--holdout: 1.500000 is not a fraction in (0, 1)"),
    (["--text-inputs", "tokens"],
     "--text-inputs: 'tokens' is not TOKENS,TARGETS (two input names)"),
    (["--text-inputs", "ids,labels"], "--data text: the plan has no input 'ids'"),
])
def test_bad_text_flags_are_named(weftc, lm, tmp_path, flags, message):
    _, path, text = lm
    plan = tmp_path / "plan.json"
    assert run([weftc, str(path), "-o", str(plan)]).returncode == 0
    result = run([tool("weft-run"), str(plan), "--data", f"text:{text}",
                  *flags])
    assert result.returncode == 1
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_text_for_a_smaller_vocabulary_is_refused(weftc, models_dir, lm,
                                                  tmp_path):
    """The example gpt's vocabulary is 512 tokens: fine. A vocabulary below
    256 cannot hold bytes; the missing file is named."""
    _, _, text = lm
    model, inputs = gpt.build(**dict(SHAPE, vocab=100))
    path = tmp_path / "gpt-100.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    plan = tmp_path / "plan.json"
    assert run([weftc, str(path), "-o", str(plan)]).returncode == 0
    result = run([tool("weft-run"), str(plan), "--data", f"text:{text}"])
    assert result.returncode == 1
    assert "input 'tokens' takes values below 100; byte tokens need a " \
           "vocabulary of at least 256" in result.stderr, result.stderr
    result = run([tool("weft-run"), str(plan), "--data",
                  f"text:{tmp_path / 'missing.txt'}"])
    assert result.returncode == 1
    assert f"--data text: cannot read '{tmp_path / 'missing.txt'}'" in \
        result.stderr
