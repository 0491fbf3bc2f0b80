"""Every example model, at every precision and in every layout the suite
trains it in, compiles to a plan that weft-run loads: zero refusals.

weftc holds each op to its kernel's specification twice: the dialect's
verifier after every pass (the KernelContract trait: result types are the
kernel rule's) and plan emission (each instruction through weft-run's own
check, arena offsets included). `weft-run --check` then loads the plan as a
run would. A compile or a load that refuses fails here naming the model,
precision and layout (issue 37).

The ONNX node tests (test_onnx_node_numerics.py, test_onnx_testdata_import)
and the torchvision sweep compile through the same two checks in their own
tests.
"""

import json

import pytest

from conftest import run, tool

MODELS = ["gpt", "encoder_lm", "resnet", "unet"]
TRANSFORMERS = {"gpt", "encoder_lm"}
PRECISIONS = ["f32", "bf16", "f16"]
# (name, weftc flags, transformers only): the layouts the suite trains in.
LAYOUTS = [
    ("single", [], False),
    ("ddp2-zero2", ["--data-parallel=2", "--zero-stage=2"], False),
    ("pp2-1f1b", ["--pipeline-parallel=2", "--microbatches=2"], False),
    ("pp2-gpipe-recompute", ["--pipeline-parallel=2", "--microbatches=2",
                             "--schedule=gpipe", "--recompute=full"], False),
    ("tp2-sp", ["--tensor-parallel=2", "--sequence-parallel"], True),
    ("tp2-dp2-zero3-selective", ["--tensor-parallel=2", "--data-parallel=2",
                                 "--zero-stage=3", "--recompute=selective"],
     True),
]

CASES = [(m, p, name, flags) for m in MODELS for p in PRECISIONS
         for name, flags, only_transformers in LAYOUTS
         if m in TRANSFORMERS or not only_transformers]


@pytest.mark.parametrize("model,precision,layout,flags", CASES,
                         ids=[f"{m}-{p}-{n}" for m, p, n, _ in CASES])
def test_plan_loads(model, precision, layout, flags, weftc, models_dir,
                    tmp_path):
    plan = tmp_path / "plan.json"
    compiled = run([weftc, str(models_dir / f"{model}.onnx"),
                    f"--precision={precision}", *flags, "-o", str(plan)])
    assert compiled.returncode == 0, compiled.stderr
    loaded = run([tool("weft-run"), str(plan), "--check"])
    assert loaded.returncode == 0, loaded.stderr
    assert "loads on --device cpu" in loaded.stdout


def test_check_names_what_it_refuses(tmp_path, weftc, models_dir):
    """--check is the loader's check, not a formality: a plan with one
    layer_norm's axis out of range is refused, naming the kernel."""
    plan = tmp_path / "plan.json"
    assert run([weftc, str(models_dir / "gpt.onnx"), "-o",
                str(plan)]).returncode == 0
    doc = json.loads(plan.read_text())
    program = doc["programs"][0]  # the one rank's
    inst = next(i for i in program["instructions"]
                if i.get("kernel") == "layer_norm")
    inst["attrs"]["axis"] = 99
    plan.write_text(json.dumps(doc))
    loaded = run([tool("weft-run"), str(plan), "--check"])
    assert loaded.returncode == 1
    assert "kernel layer_norm" in loaded.stderr, loaded.stderr
    assert "'axis'" in loaded.stderr, loaded.stderr
