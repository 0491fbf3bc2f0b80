"""bench/gpu_gpt.py's two halves on the CPU, at a tiny shape: `prepare`
keeps no weights, `run` writes the torch model's own into the file the ONNX
names and the batch as weft-run's data, so weft's step-1 loss equals
torch's from the same weights. A wrong name, offset or batch moves the loss
far beyond the bound (1e-5 relative, f32 on both sides; measured ~2e-7).
Also: the mismatch errors of weft.export.write_weights, and that the flash
plan fuses attention."""

import collections
import importlib.util
import json

import pytest
import torch

from conftest import BUILD, REPO, plan_view

spec = importlib.util.spec_from_file_location(
    "gpu_gpt", REPO / "bench" / "gpu_gpt.py")
gpu_gpt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_gpt)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu_gpt")
    gpu_gpt.prepare(BUILD, folder, "tiny", "f32", batch=4)
    return folder


def test_prepare_keeps_the_graph_not_the_weights(prepared):
    assert (prepared / "model.onnx").exists()
    assert not (prepared / "model.weights").exists()
    meta = json.loads((prepared / "bench.json").read_text())
    for name, plan in meta["plans"].items():
        text = json.loads((prepared / plan).read_text())
        assert text["model"]["path"] == "model.onnx"
        rank = plan_view(prepared / plan, 0)["ranks"][0]
        kernels = collections.Counter(
            i["kernel"] for i in rank["instructions"])
        # --flash-attention: one fused attention per layer, forward and
        # backward; the exported attention has none.
        fused = 2 if name == "weft flash" else 0
        assert kernels["attention"] == fused, name
        assert kernels["attention_grad"] == fused, name


def test_run_trains_weft_and_torch_from_the_same_weights(prepared, tmp_path):
    result = tmp_path / "result.json"
    code = gpu_gpt.main(["run", str(prepared), "--device", "cpu",
                         "--weft-run", str(BUILD / "bin" / "weft-run"),
                         "--steps", "1", "--warmup", "1", "--no-compile",
                         "--json", str(result)])
    assert code == 0
    rows = {r["name"]: r for r in json.loads(result.read_text())["rows"]}
    assert {"weft", "weft flash", "torch eager"} <= set(rows)
    torch_loss = rows["torch eager"]["loss"]
    for name in ("weft", "weft flash"):
        assert rows[name]["loss"] == pytest.approx(torch_loss, rel=1e-5), name
        assert rows[name]["arena"] > 0
        assert rows[name]["seconds"] > 0
    # The traced run's last step by kernel: every instruction of the plan
    # once (the trace is beside --json), the GEMMs among them.
    kernels = {k["kernel"]: k for k in rows["weft flash"]["kernels"]}
    plan = plan_view(prepared / gpu_gpt.plan_file("weft flash"),
                     0)["ranks"][0]["instructions"]
    assert sum(k["count"] for k in kernels.values()) == \
        sum(1 for i in plan if "kernel" in i)
    assert kernels["gemm"]["seconds"] > 0 and kernels["gemm"]["flops"] > 0
    assert (tmp_path / "trace-plan-weft-flash.json").exists()


def test_write_weights_names_the_initializer_it_cannot_fill(prepared,
                                                            capsys):
    model, _ = gpu_gpt.gpt.build(**gpu_gpt.SHAPES["tiny"], batch=4,
                                 seed=gpu_gpt.SEED)
    state = model.state_dict()
    del state["wpe.weight"]
    missing = torch.nn.Module()
    missing.state_dict = lambda: state
    with pytest.raises(ValueError,
                       match="initializer 'wpe.weight' of model.onnx is "
                             "not a tensor of the torch model"):
        gpu_gpt.write_weights(missing, prepared / "model.onnx")
    state = model.state_dict()
    state["wpe.weight"] = state["wpe.weight"][:-1]
    with pytest.raises(ValueError,
                       match=r"initializer 'wpe.weight' of model.onnx is "
                             r"float32 \[32, 64\] \(8192 bytes\), the torch "
                             r"model's float32 \[31, 64\]"):
        gpu_gpt.write_weights(missing, prepared / "model.onnx")
