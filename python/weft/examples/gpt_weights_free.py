"""Weights-free export of the `gpt` example at any shape.

GPT-3 175B (96 layers, hidden 12288, 96 heads, sequence 2048) has 175e9
parameters: 700 GB in f32, and one traced forward step costs petaFLOPs, so
it cannot go through `torch.onnx.export`. Memory estimates need none of
that: this module writes the same training graph as `weft.examples.gpt`
exports (token + position embeddings, pre-LayerNorm blocks with causal
attention and a 4x GELU MLP, dropout after the attention probabilities, the
attention projection and the MLP, final LayerNorm, LM head tied to the token
embedding, cross-entropy) directly with `onnx.helper`, opset 17.

Every float initializer is declared with its dims and *external* data in a
file that is never written (`EXTERNAL_DATA`), so the model is a few kB at
any size. `weftc` never reads weights, so `weftc --estimate-memory` and
`--emit=summary` work on it; `weft-run` would fail to load the weights.
The small bool/int64 initializers (the causal mask, the positions) are
inline. `python/tests/test_megatron_activation_memory.py` checks that, at a
small shape, weftc plans this graph and torch's export of `gpt.GPT`
identically.

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq];
output `loss` f32 scalar. Parameters (tied head counted once):
    vocab*h + seq*h + layers*(12*h*h + 13*h) + 2*h.

Usage: python3 -m weft.examples.gpt_weights_free OUT.onnx --layers 96
       --hidden 12288 --heads 96 --seq 2048 --vocab 51200 --batch 1
       --shared-mask
"""

import argparse
import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: The file the float initializers point at; it is never written.
EXTERNAL_DATA = "weights-not-written.bin"

#: Megatron-LM's Table 2 rows (Korthikanti et al. 2022): hidden, heads,
#: sequence length, layers.
MEGATRON_SHAPES = {
    "22B": dict(hidden=6144, heads=64, seq=2048, layers=48),
    "175B": dict(hidden=12288, heads=96, seq=2048, layers=96),
    "530B": dict(hidden=20480, heads=128, seq=2048, layers=105),
    "1T": dict(hidden=25600, heads=160, seq=2048, layers=128),
}


class _Graph:
    """Nodes and initializers, with fresh names."""

    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def op(self, op_type, inputs, outputs=1, **attrs):
        names = [self.name(op_type) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, **attrs))
        return names[0] if outputs == 1 else names

    def const(self, value, dtype=np.float32):
        array = np.array(value, dtype=dtype)
        return self.op("Constant", [],
                       value=numpy_helper.from_array(array, self.name("c")))

    def weight(self, name, dims):
        """A float initializer whose data is external and absent."""
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT,
                             dims=dims)
        tensor.data_location = TensorProto.EXTERNAL
        nbytes = 4 * math.prod(dims)
        for key, value in (("location", EXTERNAL_DATA), ("offset", "0"),
                           ("length", str(nbytes))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.initializers.append(tensor)
        return name

    def inline(self, name, array):
        self.initializers.append(numpy_helper.from_array(array, name))
        return name


def _linear(g, x, prefix, n_in, n_out):
    """torch.nn.Linear as exported: x @ W^T + b."""
    w = g.weight(f"{prefix}.weight", [n_out, n_in])
    b = g.weight(f"{prefix}.bias", [n_out])
    return g.op("Add", [b, g.op("MatMul", [x, g.op("Transpose", [w],
                                                     perm=[1, 0])])])


def _layer_norm(g, x, prefix, hidden):
    return g.op("LayerNormalization",
                [x, g.weight(f"{prefix}.weight", [hidden]),
                 g.weight(f"{prefix}.bias", [hidden])],
                axis=-1, epsilon=1e-5)


def _dropout(g, x, p):
    """Training-mode Dropout (output and mask); nothing when p is 0, as in
    torch's export."""
    if not p:
        return x
    y, _mask = g.op("Dropout", [x, g.const(p), g.const(True, np.bool_)],
                    outputs=2)
    return y


def _block(g, x, i, hidden, heads, seq, dropout, future):
    prefix, d = f"blocks.{i}", hidden // heads
    h = _layer_norm(g, x, f"{prefix}.ln1", hidden)
    qkv = _linear(g, h, f"{prefix}.qkv", hidden, 3 * hidden)
    q, k, v = g.op("Split", [qkv, g.const([hidden] * 3, np.int64)],
                   outputs=3, axis=2)
    shape = g.const([-1, seq, heads, d], np.int64)
    q, k, v = (g.op("Reshape", [t, shape]) for t in (q, k, v))
    q = g.op("Transpose", [q], perm=[0, 2, 1, 3])
    v = g.op("Transpose", [v], perm=[0, 2, 1, 3])
    k = g.op("Transpose", [k], perm=[0, 2, 3, 1])
    scores = g.op("Div", [g.op("MatMul", [q, k]), g.const(math.sqrt(d))])
    scores = g.op("Where", [future, g.const(-np.inf), scores])
    probs = _dropout(g, g.op("Softmax", [scores], axis=-1), dropout)
    y = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    y = g.op("Reshape", [y, g.const([-1, seq, hidden], np.int64)])
    x = g.op("Add", [x, _dropout(g, _linear(g, y, f"{prefix}.proj", hidden,
                                            hidden), dropout)])
    h = _linear(g, _layer_norm(g, x, f"{prefix}.ln2", hidden), f"{prefix}.fc",
                hidden, 4 * hidden)
    # F.gelu as torch exports it at opset 17.
    erf = g.op("Erf", [g.op("Div", [h, g.const(math.sqrt(2.0))])])
    h = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, g.const(1.0)])]),
                     g.const(0.5)])
    h = _linear(g, h, f"{prefix}.out", 4 * hidden, hidden)
    return g.op("Add", [x, _dropout(g, h, dropout)])


def build(layers, hidden, heads, seq, vocab, batch, dropout=0.1,
          shared_mask=False):
    """The gpt training graph (forward to the loss) as an ONNX ModelProto.

    Shapes as `weft.examples.gpt.build`; `dropout` is the probability of
    the three dropouts per block (0 leaves them out, as torch's export
    does). Each block holds its own causal mask (seq x seq bool), as in
    torch's export; `shared_mask=True` gives all blocks one, which changes
    only the `constants` bytes and keeps GPT-3 175B at 4 MB instead of
    400 MB. Raises ValueError when `hidden` is not a multiple of `heads`.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    g = _Graph()
    wte = g.weight("wte.weight", [vocab, hidden])
    wpe = g.weight("wpe.weight", [seq, hidden])
    positions = g.inline("positions", np.arange(seq, dtype=np.int64))
    # True above the diagonal: the positions a token must not see (a buffer
    # of each block in gpt.py).
    future = np.triu(np.ones((seq, seq), dtype=np.bool_), 1)
    shared = g.inline("future", future) if shared_mask else None
    x = g.op("Add", [g.op("Gather", [wte, "tokens"]),
                     g.op("Gather", [wpe, positions])])
    for i in range(layers):
        x = _block(g, x, i, hidden, heads, seq, dropout,
                   shared or g.inline(f"blocks.{i}.future", future))
    x = _layer_norm(g, x, "ln_f", hidden)
    logits = g.op("MatMul", [x, g.op("Transpose", [wte], perm=[1, 0])])
    logits = g.op("Reshape", [logits, g.const([-1, vocab], np.int64)])
    targets = g.op("Reshape", ["targets", g.const([-1], np.int64)])
    g.op("SoftmaxCrossEntropyLoss", [logits, targets], ignore_index=-100,
         reduction="mean")
    g.nodes[-1].output[0] = "loss"
    graph = helper.make_graph(
        g.nodes, "gpt",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
         for n in ("tokens", "targets")],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        g.initializers)
    model = helper.make_model(graph, producer_name="weft.examples."
                              "gpt_weights_free",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def megatron(name, batch, layers=None):
    """Table 2's `name` model (MEGATRON_SHAPES: "22B", "175B", "530B",
    "1T") as the papers train it: vocabulary 51200, dropout 0.1, one shared
    causal mask; `batch` sequences, `layers` in place of the table's when
    given. Raises KeyError for an unknown name."""
    shape = MEGATRON_SHAPES[name]
    return build(layers or shape["layers"], shape["hidden"], shape["heads"],
                 shape["seq"], 51200, batch, 0.1, True)


def parameter_count(layers, hidden, seq, vocab, **_):
    """Parameters of the model (tied head counted once), as in gpt.py."""
    return vocab * hidden + seq * hidden + layers * (
        12 * hidden * hidden + 13 * hidden) + 2 * hidden


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--shared-mask", action="store_true",
                        help="one causal mask for all blocks (small file)")
    args = parser.parse_args(argv)
    model = build(args.layers, args.hidden, args.heads, args.seq, args.vocab,
                  args.batch, args.dropout, args.shared_mask)
    onnx.save(model, args.output)
    print(f"{args.output}: {parameter_count(**vars(args)):,} parameters, "
          f"weights not written")


if __name__ == "__main__":
    main()
