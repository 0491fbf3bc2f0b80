#!/usr/bin/python3
"""Writes the fuzz seed corpora into test/fuzz/corpus/{import,plan-loader}.

import: every model of the lit tests' ONNX text files (each chunk between
`# -----` lines), as binary protobuf. plan-loader: the plan weftc compiles
from each of those models that it accepts, and a few training plans (SGD
with momentum, AdamW, two pipeline stages). Small inputs mutate fastest.

Usage: scripts/fuzz-seeds.py [BUILD_DIR]   (default: build)
"""

import hashlib
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.parser
from onnx import TensorProto, helper, numpy_helper

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "build")
CORPUS = REPO / "test" / "fuzz" / "corpus"
MAX_BYTES = 64 * 1024


def save(directory, data, suffix):
    """Content-addressed, as libFuzzer names its corpus files."""
    directory.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16] + suffix
    (directory / name).write_bytes(data)


def models():
    for path in sorted((REPO / "test").rglob("*.onnxtxt")):
        for chunk in re.split(r"^#\s*-----.*$", path.read_text(), flags=re.M):
            text = "\n".join(l for l in chunk.splitlines()
                             if not l.lstrip().startswith("#"))
            try:
                yield path.stem, onnx.parser.parse_model(text)
            except Exception:  # error tests hold malformed models on purpose
                continue


def compile_plan(model_path, flags):
    with tempfile.TemporaryDirectory() as tmp:
        plan = pathlib.Path(tmp) / "plan.json"
        result = subprocess.run([str(BUILD / "bin" / "weftc"), str(model_path),
                                 "-o", str(plan), *flags],
                                capture_output=True)
        if result.returncode == 0 and plan.stat().st_size <= MAX_BYTES:
            return plan.read_bytes()
    return None


def _model(nodes, inputs, initializers):
    graph = helper.make_graph(
        nodes, "seed", inputs,
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _token_inputs():
    """int64 tokens and targets [2, 4] of the tiny language models."""
    return [helper.make_tensor_value_info(name, TensorProto.INT64, [2, 4])
            for name in ("tokens", "targets")]


def tiny_lm():
    """Embedding, layer norm, attention-like matmuls, softmax, loss."""
    rng = np.random.default_rng(0)
    w = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Gather", ["emb", "tokens"], ["h"]),
        helper.make_node("LayerNormalization", ["h", "g", "b"], ["n"], axis=-1),
        helper.make_node("MatMul", ["n", "wq"], ["q"]),
        helper.make_node("Transpose", ["n"], ["nt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "nt"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "n"], ["a"]),
        helper.make_node("Add", ["a", "h"], ["r"]),
        helper.make_node("MatMul", ["r", "head"], ["logits"]),
        helper.make_node("Transpose", ["logits"], ["lt"], perm=[0, 2, 1]),
        helper.make_node("SoftmaxCrossEntropyLoss", ["lt", "targets"],
                         ["loss"]),
    ]
    inputs = _token_inputs()
    return _model(nodes, inputs, {"emb": w(11, 8), "g": np.ones(8, np.float32),
                                  "b": np.zeros(8, np.float32), "wq": w(8, 8),
                                  "head": w(8, 11)})


def tiny_mlp_lm():
    """Embedding, a Megatron MLP block (linear, ReLU, linear), a residual,
    a head and the loss: the seed of tensor-parallel plans."""
    rng = np.random.default_rng(2)
    w = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Gather", ["emb", "tokens"], ["h"]),
        helper.make_node("MatMul", ["h", "w1"], ["u"]),
        helper.make_node("Relu", ["u"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["d"]),
        helper.make_node("Add", ["d", "h"], ["r"]),
        helper.make_node("MatMul", ["r", "head"], ["logits"]),
        helper.make_node("Transpose", ["logits"], ["lt"], perm=[0, 2, 1]),
        helper.make_node("SoftmaxCrossEntropyLoss", ["lt", "targets"],
                         ["loss"]),
    ]
    inputs = _token_inputs()
    return _model(nodes, inputs, {"emb": w(11, 8), "w1": w(8, 16),
                                  "w2": w(16, 8), "head": w(8, 11)})


def tiny_cnn():
    """Convolution, batch norm, pooling, a linear head, loss."""
    rng = np.random.default_rng(1)
    w = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Conv", ["x", "k", "kb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"],
                         ["bn", "rm", "rv"],
                         training_mode=1),
        helper.make_node("Relu", ["bn"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fb"], ["logits"], transB=1),
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "y"], ["loss"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, 6, 6]),
              helper.make_tensor_value_info("y", TensorProto.INT64, [2])]
    return _model(nodes, inputs, {
        "k": w(3, 1, 3, 3), "kb": w(3), "s": np.ones(3, np.float32),
        "o": np.zeros(3, np.float32), "m": np.zeros(3, np.float32),
        "v": np.ones(3, np.float32), "fc": w(4, 27), "fb": w(4)})


def main():
    count = {"import": 0, "plan-loader": 0}

    def add_plan(model_path, flags):
        plan = compile_plan(model_path, flags)
        if plan:
            save(CORPUS / "plan-loader", plan, ".json")
            count["plan-loader"] += 1

    with tempfile.TemporaryDirectory() as tmp:
        for stem, model in models():
            data = model.SerializeToString()
            save(CORPUS / "import", data, ".onnx")
            count["import"] += 1
            path = pathlib.Path(tmp) / f"{stem}.onnx"
            path.write_bytes(data)
            add_plan(path, [])
        # Training plans: gradients, optimizer state updated in place, and
        # transfers between two pipeline stages.
        for name, model in [("lm", tiny_lm()), ("cnn", tiny_cnn())]:
            path = pathlib.Path(tmp) / f"{name}.onnx"
            onnx.save(model, str(path))
            for flags in [[], ["--optimizer=sgd", "--momentum=0.9"],
                          ["--pipeline-parallel=2", "--microbatches=2"],
                          ["--recompute=full"],
                          # Data parallelism and ZeRO's pieces.
                          ["--data-parallel=2", "--zero-stage=3",
                           "--optimizer-shard-threshold=0"],
                          ["--data-parallel=2", "--zero-stage=1",
                           "--zero-prefetch",
                           "--optimizer-shard-threshold=0"]]:
                add_plan(path, flags)
        # Tensor-parallel plans: shards, all-reduces, a 2 x 2 mesh.
        path = pathlib.Path(tmp) / "mlp.onnx"
        onnx.save(tiny_mlp_lm(), str(path))
        for flags in [["--tensor-parallel=2"],
                      ["--tensor-parallel=2", "--pipeline-parallel=2",
                       "--microbatches=2"]]:
            add_plan(path, flags)
    print(f"fuzz seeds: {count['import']} models, {count['plan-loader']} plans")


if __name__ == "__main__":
    main()
