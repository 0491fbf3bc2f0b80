"""weftc --estimate-memory's model_flops and hardware_flops (issue 41): the
matrix products of the compiled step, counted on each rank's program,
equal Korthikanti et al.'s Appendix A formula for the gpt example,
72 B s L h^2 (1 + s/6h + V/12hL), on one rank, over micro-batches and
summed over pipeline ranks; recompute adds exactly the products it re-runs
(selective: each layer's Q K^T; full: every forward product, the LM head's
included, which Megatron's layers-only formula leaves out)."""

import re

import pytest

from conftest import run
from weft.examples import gpt

CONFIG = gpt.CONFIGS["small"]  # build/models/gpt.onnx


def flops(weftc, models_dir, *flags):
    """(model, hardware) FLOPs summed over the ranks' programs."""
    result = run([weftc, str(models_dir / "gpt.onnx"), "--estimate-memory",
                  *flags])
    assert result.returncode == 0, result.stderr
    model = [int(v) for v in re.findall(r"model_flops +(\d+) FLOPs",
                                        result.stdout)]
    hardware = [int(v) for v in re.findall(r"hardware_flops +(\d+) FLOPs",
                                           result.stdout)]
    assert model and len(model) == len(hardware), result.stdout
    return sum(model), sum(hardware)


def shape():
    c = CONFIG
    return c["batch"], c["seq"], c["layers"], c["hidden"], c["vocab"]


def appendix_a():
    """72 B s L h^2 (1 + s/6h + V/12hL), in integers: 72 B s L h^2 +
    12 B s^2 L h + 6 B s h V."""
    b, s, layers, h, v = shape()
    return (72 * b * s * layers * h * h + 12 * b * s * s * layers * h +
            6 * b * s * h * v)


@pytest.mark.parametrize("flags", [[], ["--microbatches=2"],
                                   ["--pipeline-parallel=2",
                                    "--microbatches=4"]])
def test_model_flops_are_appendix_as(flags, weftc, models_dir):
    model, hardware = flops(weftc, models_dir, *flags)
    assert model == appendix_a()
    assert hardware == model


def test_recompute_adds_the_products_it_reruns(weftc, models_dir):
    b, s, layers, h, v = shape()
    model, hardware = flops(weftc, models_dir, "--recompute=selective")
    assert model == appendix_a()
    assert hardware - model == 2 * b * s * s * h * layers  # Q K^T
    model, hardware = flops(weftc, models_dir, "--recompute=full")
    assert model == appendix_a()
    forward = (24 * b * s * layers * h * h + 4 * b * s * s * h * layers +
               2 * b * s * h * v)
    assert hardware - model == forward


@pytest.mark.parametrize("flags,ranks", [
    (["--pipeline-parallel=2", "--microbatches=4"], 2),
    (["--tensor-parallel=2"], 2),
    (["--data-parallel=2"], 2),
    (["--tensor-parallel=2", "--pipeline-parallel=2", "--microbatches=2"], 4),
    (["--pipeline-parallel=2", "--microbatches=4", "--precision=bf16",
      "--device-model=a100-sxm4-80gb"], 2),
])
def test_the_stage_table_gives_the_predicted_mfu(flags, ranks, weftc,
                                                  models_dir):
    """Every rank's FLOPs (a program's times the data and tensor ranks that
    run it) add up to Appendix A's; MFU is model FLOPs / (predicted step x
    ranks x the peak of the step's precision)."""
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", "/dev/null",
                  *flags])
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    step = float(re.search(r"predicted step: ([0-9.]+) ms", text).group(1))
    found = re.search(
        r"predicted MFU ([0-9.]+)%, HFU ([0-9.]+)%: model (\d+), "
        r"hardware (\d+) FLOPs a step on (\d+) ranks, (\S+) peak "
        r"([0-9.e+]+) FLOP/s each \((16-bit|f32)\)", text)
    assert found, text
    mfu, _, model, _, n, device, peak, width = found.groups()
    assert int(n) == ranks
    assert int(model) == appendix_a()
    bf16 = "--precision=bf16" in flags
    assert width == ("16-bit" if bf16 else "f32")
    assert float(peak) == (312e12 if bf16 else 50e9)
    # The step is printed rounded to 0.01 ms and the MFU to 0.1 point: the
    # MFU of every step that rounds to the printed one, rounded, must
    # include the printed MFU.
    def mfu_at(ms):
        return 100 * int(model) / (ms * 1e-3 * ranks * float(peak))
    assert mfu_at(step + 0.005) - 0.05 <= float(mfu) <= \
        mfu_at(step - 0.005) + 0.05


def test_flops_past_int64_print_whole(weftc, tmp_path):
    """A step's FLOPs over all its ranks pass int64's 9.2e18 at GPT-3
    scale: 2 of 530B's layers (h 20480) on 131072 sequences, t = 8, d = 8,
    take 1.8e19. They printed negative (an MFU of -13.7% for Section 6.2's
    530B on 2240 GPUs) and now print as Appendix A's figure, to double
    precision."""
    from weft.examples import gpt_weights_free
    import onnx
    model = tmp_path / "530b-2.onnx"
    onnx.save(gpt_weights_free.megatron("530B", 131072, 2), str(model))
    result = run([weftc, str(model), "-o", "/dev/null", "--optimizer=adamw",
                  "--tensor-parallel=8", "--data-parallel=8",
                  "--microbatches=64", "--precision=bf16",
                  "--device-model=a100-sxm4-80gb"])
    assert result.returncode == 0, result.stderr
    text = result.stdout + result.stderr
    found = re.search(r"predicted MFU ([0-9.]+)%, HFU [0-9.]+%: model (\d+),",
                      text)
    assert found, text
    b, s, layers, h, v = 131072, 2048, 2, 20480, 51200
    expected = (72 * b * s * layers * h * h + 12 * b * s * s * layers * h +
                6 * b * s * h * v)
    assert expected > 2**63
    assert abs(int(found[2]) / expected - 1) < 1e-12
    assert 0 < float(found[1]) < 100
