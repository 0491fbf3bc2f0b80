"""Benchmark: one step of an example model, weft vs torch eager.

`forward`: the forward pass (loss). `train`: a training step, forward +
backward + AdamW. Both on one thread (OpenBLAS for both: Debian's torch runs
on libblas.so.3, which scripts/install-deps.sh points at OpenBLAS; torch's
convolutions are its own oneDNN ones), both flushing denormals to zero, same
weights, same batch. Prints the median of 10 timed steps of each and their
ratio. Models: `gpt` (the medium config, the default), `llama` (its
medium config, gpt medium's size: 6 layers, hidden 384, GQA 6/2 heads,
SwiGLU 1024, seq 256, batch 8), `resnet` (ResNet-18 on a batch of 16 64x64
images) and `unet` (8 128x128 images). Further arguments are weftc flags
(e.g. --flash-attention).

Usage: python3 bench/step.py BUILD_DIR forward|train [gpt|llama|resnet|unet]
       [WEFTC_FLAG...]
Against PyPI's current torch: run it with scripts/export-hf-fixtures.sh's
venv, .venv-export/bin/python (gpt and llama; torch 2.15's own BLAS, not
OpenBLAS, runs its matmuls). The first line names torch's version and
OPENBLAS_CORETYPE.
"""

import importlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft.examples import gpt, llama  # noqa: E402
from weft.examples.common import export  # noqa: E402

STEPS = 10


def _example(name):
    return importlib.import_module(f"weft.examples.{name}")

# name -> (build the model and its batch, the inputs' names, a description)
MODELS = {
    "gpt": (lambda: gpt.build(**gpt.CONFIGS["medium"]), ["tokens", "targets"],
            f"gpt medium ({gpt.CONFIGS['medium']})"),
    "llama": (lambda: llama.build(**llama.CONFIGS["medium"]),
              ["tokens", "targets"],
              f"llama medium ({llama.CONFIGS['medium']})"),
    # Imported when asked for: resnet needs torchvision, which a venv with
    # only PyPI's torch (scripts/export-hf-fixtures.sh's) lacks.
    "resnet": (lambda: _example("resnet").build(batch=16, size=64),
               ["images", "labels"], "resnet18 (batch 16, 3x64x64, 10 classes)"),
    "unet": (lambda: _example("unet").build(batch=8, size=128),
             ["images", "target"], "unet (batch 8, 3x128x128, depth 5, base 8)"),
}


def main(build, mode, name, weftc_flags=()):
    torch.set_num_threads(1)
    # weft's CPU backend flushes denormals to zero (FTZ/DAZ, as the XLA and
    # oneDNN CPU backends do); AdamW produces denormals, which slow unflushed
    # float math several-fold. Compare like with like.
    torch.set_flush_denormal(True)
    make, names, description = MODELS[name]
    model, inputs = make()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        onnx_path = tmp / f"{name}.onnx"
        export(model, inputs, names, str(onnx_path))
        plan = tmp / "plan.json"
        flags = ["--forward-only"] if mode == "forward" else []
        flags += list(weftc_flags)
        subprocess.run([str(build / "bin" / "weftc"), str(onnx_path), "-o", str(plan),
                        *flags], check=True)
        for step in range(STEPS + 1):
            step_dir = tmp / "data" / f"step_{step}"
            step_dir.mkdir(parents=True)
            for input_name, tensor in zip(names, inputs):
                proto = numpy_helper.from_array(tensor.numpy(), input_name)
                (step_dir / f"{input_name}.pb").write_bytes(
                    proto.SerializeToString())
        log = tmp / "log.jsonl"
        subprocess.run([str(build / "bin" / "weft-run"), str(plan), "--data",
                        str(tmp / "data"), "--steps", str(STEPS + 1), "--threads", "1",
                        "--log-json", str(log)], check=True, stdout=subprocess.DEVNULL)
        records = [json.loads(line) for line in log.read_text().splitlines()]
        weft_seconds = statistics.median(r["seconds"] for r in records[1:])  # first: warm-up
        weft_loss = records[0]["loss"]

    model.train()  # as exported (gpt's dropout p = 0; resnet's batch norms
    # normalise by the batch's statistics)
    optimizer = torch.optim.AdamW(model.parameters())

    def step():
        if mode == "forward":
            with torch.no_grad():
                return model(*inputs).item()
        optimizer.zero_grad()
        loss = model(*inputs)
        loss.backward()
        optimizer.step()
        return loss.item()

    loss = step()  # warm-up
    times = []
    for _ in range(STEPS):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    torch_seconds = statistics.median(times)

    what = "forward" if mode == "forward" else "training step (fwd+bwd+AdamW)"
    print(f"{description} {what}, 1 thread, median of {STEPS}, torch "
          f"{torch.__version__}, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', 'unset')}"
          + (f", weftc {' '.join(weftc_flags)}" if weftc_flags else ""))
    print(f"  weft-run     {weft_seconds * 1e3:9.1f} ms   first loss {weft_loss:.6f}")
    print(f"  torch eager  {torch_seconds * 1e3:9.1f} ms   first loss {loss:.6f}")
    print(f"  ratio weft / torch = {weft_seconds / torch_seconds:.2f}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "build"),
         sys.argv[2] if len(sys.argv) > 2 else "forward",
         sys.argv[3] if len(sys.argv) > 3 else "gpt", sys.argv[4:])
