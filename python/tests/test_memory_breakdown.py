"""weftc --estimate-memory and --memory-cap (issue 6, first part): each
rank's planned memory by category, and the activation memory each pipeline
schedule implies (Narayanan et al. 2021): under GPipe a stage holds the
activations of all M micro-batches at once, under 1F1B stage s of P holds
P - s."""

import re

import pytest

from conftest import run


def estimate(weftc, model, *flags, field="kept"):
    """Per rank, from `weftc --estimate-memory`: the most kept-activation
    bytes at any op (field "kept") or the planned arena ("arena")."""
    result = run([weftc, str(model), "--estimate-memory", *flags])
    assert result.returncode == 0, result.stderr
    pattern = {"kept": r"kept_activations\s+(\d+) bytes \(most at any op\)",
               "arena": r"arena\s+(\d+) bytes"}[field]
    return [int(v) for v in re.findall(pattern, result.stdout)]


@pytest.mark.parametrize("stages,schedule", [(2, "gpipe"), (2, "1f1b"),
                                             (4, "1f1b"), (4, "gpipe")])
def test_micro_batches_in_flight(stages, schedule, weftc, models_dir):
    m = 8
    pipeline = [f"--pipeline-parallel={stages}", f"--schedule={schedule}"]
    # One micro-batch's activations: the same model at micro-batch size.
    model = models_dir / "gpt.onnx"
    one = estimate(weftc, model, "--input-shape=tokens=1x64",
                   "--input-shape=targets=1x64", *pipeline)
    held = estimate(weftc, model, f"--microbatches={m}", *pipeline)
    assert len(one) == len(held) == stages
    for s in range(stages):
        expected = m if schedule == "gpipe" else stages - s
        # A receive posted one task early keeps one more activation alive for
        # a while (stage 1 of 4 under 1F1B: 3.12 micro-batches).
        assert expected <= held[s] / one[s] < expected + 0.15, (s, held, one)


def test_estimate_memory_prints_each_rank(weftc, models_dir, tmp_path):
    plan = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "--estimate-memory",
                  "--pipeline-parallel=2", "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    for rank in (0, 1):
        assert f"rank {rank}:" in result.stdout
    for category in ("parameters", "optimizer_state", "kept_activations",
                     "gradients", "live at peak", "arena"):
        assert category in result.stdout
    assert not plan.exists() or plan.stat().st_size == 0


def test_memory_cap_fails_with_the_breakdown(weftc, models_dir):
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  "--pipeline-parallel=2", "--memory-cap=1000000"])
    assert result.returncode != 0
    assert "a rank's planned memory exceeds --memory-cap 1000000 bytes" \
        in result.stderr
    assert "rank 0 (exceeds --memory-cap):" in result.stderr
    assert "parameters" in result.stderr
    ok = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
              "--memory-cap=1000000000"])
    assert ok.returncode == 0, ok.stderr


def test_activation_dtype_halves_computed_floats(weftc, models_dir):
    """--activation-dtype=f16 sizes computed float tensors at 2 bytes;
    parameters and optimizer state keep f32, and the 1-byte dropout masks
    and integer tensors keep theirs, so 2 * kept(f16) - kept(f32) is the
    non-float bytes alone: small, and not negative."""
    model = models_dir / "gpt.onnx"

    def categories(*flags):
        result = run([weftc, str(model), "--estimate-memory", *flags])
        assert result.returncode == 0, result.stderr
        return {name: int(v) for name, v in
                re.findall(r"^\s+(\w+)\s+(\d+) bytes$", result.stdout, re.M)}

    f32, f16, bf16 = (categories(*f) for f in (
        [], ["--activation-dtype=f16"], ["--activation-dtype=bf16"]))
    assert f16 == bf16
    assert categories("--activation-dtype=f32") == f32
    for same in ("parameters", "optimizer_state", "inputs", "constants"):
        assert f16[same] == f32[same], same
    masks = 2 * f16["kept_activations"] - f32["kept_activations"]
    assert 0 <= masks < f32["kept_activations"] / 10, (f16, f32)


def test_sent_gradients_do_not_pile_up(weftc, tmp_path):
    """A stage's backward sends its input gradient to the stage before,
    and each send is waited for by the end of the stage's next B
    (weft-schedule): a stage holds at most two sent gradients, whatever M.
    Waited for at the end of the step, every micro-batch's stayed live:
    GPT-3 1T's last stage of 64 held 512 of them (60 GB). So the last
    stage's gradient bytes at its peak are the same at M = 4 and M = 16
    under 1F1B (they grew by 12 sent [64, 256] f32 gradients, 786 kB,
    before). (GPipe's last stage peaks before its first B, so its peak
    cannot show the difference.)"""
    import onnx
    from weft.examples import gpt_weights_free

    def gradients(m):
        path = tmp_path / f"gpt-{m}.onnx"
        onnx.save(gpt_weights_free.build(layers=4, hidden=256, heads=4,
                                         seq=64, vocab=512, batch=m,
                                         dropout=0.1), str(path))
        result = run([weftc, str(path), "--estimate-memory",
                      "--pipeline-parallel=2", f"--microbatches={m}",
                      "--schedule=1f1b"])
        assert result.returncode == 0, result.stderr
        return [int(v) for v in re.findall(r"gradients\s+(\d+) bytes",
                                           result.stdout)]

    four, sixteen = gradients(4), gradients(16)
    assert len(four) == len(sixteen) == 2
    assert sixteen[1] == four[1], (four, sixteen)


@pytest.mark.parametrize("flags,message", [
    (["--estimate-memory", "--activation-dtype=f8"],
     "weftc: --activation-dtype 'f8': expected f32, f16 or bf16"),
    (["-o", "/dev/null", "--activation-dtype=f16"],
     "weftc: --activation-dtype sizes activations for --estimate-memory only"),
])
def test_activation_dtype_errors(weftc, models_dir, flags, message):
    result = run([weftc, str(models_dir / "gpt.onnx"), *flags])
    assert result.returncode != 0
    assert message in result.stderr
