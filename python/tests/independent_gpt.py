"""A GPT layer stack written straight in ONNX, independently of weft's own
exporters (`weft.examples.gpt` through torch, `weft.examples.gpt_weights_free`),
the way another framework would write it: every float in f16 (weights,
constants, activations), Hugging Face GPT-2's layout (separate q, k and v
projections with [in, out] weights and no Transpose, biases added first),
heads split by a Reshape with 0 ("copy this dim"), the query scaled before
QK^T, an additive f16 causal mask, and GELU as the user writes it:

    "erf":  x * (1 + erf(x / sqrt(2))) * 0.5       f16 literals
    "tanh": 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3))))

The f16 literals differ from the true constants by up to 2^-11 relative, so
weftc must compare them within f16's rounding to fuse them. Float weights
are external data that is never written (weftc reads no weights).

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq]; output
`loss` f32 scalar (logits cast to f32 for the cross-entropy).
"""

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F16 = TensorProto.FLOAT16


class Builder:
    def __init__(self):
        self.nodes, self.weights, self.n = [], [], 0

    def fresh(self, hint):
        self.n += 1
        return f"{hint}.{self.n}"

    def node(self, op, inputs, outputs=1, **attrs):
        names = [self.fresh(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names,
                                           name=self.fresh(op), **attrs))
        return names if outputs > 1 else names[0]

    def literal(self, value, dtype=np.float16):
        """A Constant node (an initializer would be a trainable weight)."""
        return self.node("Constant", [], value=numpy_helper.from_array(
            np.array(value, dtype=dtype), self.fresh("value")))

    def param(self, name, dims):
        tensor = TensorProto(name=name, data_type=F16, dims=dims)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "absent.bin"), ("offset", "0"),
                           ("length", str(2 * math.prod(dims)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        self.weights.append(tensor)
        return name


def _dense(b, x, name, n_in, n_out):
    return b.node("Add", [b.param(f"{name}.b", [n_out]),
                          b.node("MatMul", [x, b.param(f"{name}.w",
                                                       [n_in, n_out])])])


def _norm(b, x, name, hidden):
    return b.node("LayerNormalization",
                  [x, b.param(f"{name}.g", [hidden]),
                   b.param(f"{name}.b", [hidden])], axis=-1, epsilon=1e-5)


def _drop(b, x, p):
    return b.node("Dropout", [x, b.literal(p), b.literal(True, np.bool_)],
                  outputs=2)[0]


def _gelu(b, x, form):
    if form == "erf":
        erf = b.node("Erf", [b.node("Div", [x, b.literal(math.sqrt(2))])])
        return b.node("Mul", [b.node("Mul", [x, b.node("Add", [
            b.literal(1.0), erf])]), b.literal(0.5)])
    cube = b.node("Pow", [x, b.literal(3.0)])
    inner = b.node("Mul", [b.literal(math.sqrt(2 / math.pi)), b.node(
        "Add", [x, b.node("Mul", [b.literal(0.044715), cube])])])
    one_plus = b.node("Add", [b.literal(1.0), b.node("Tanh", [inner])])
    return b.node("Mul", [b.node("Mul", [b.literal(0.5), x]), one_plus])


def _layer(b, x, i, hidden, heads, mask, gelu, p):
    d = hidden // heads
    h = _norm(b, x, f"h{i}.ln_1", hidden)
    split = b.literal([0, 0, heads, d], np.int64)
    q, k, v = (b.node("Reshape", [_dense(b, h, f"h{i}.{n}", hidden, hidden),
                                  split]) for n in "qkv")
    q = b.node("Mul", [b.node("Transpose", [q], perm=[0, 2, 1, 3]),
                       b.literal(1 / math.sqrt(d))])
    k = b.node("Transpose", [k], perm=[0, 2, 3, 1])
    v = b.node("Transpose", [v], perm=[0, 2, 1, 3])
    scores = b.node("Add", [b.node("MatMul", [q, k]), mask])
    probs = _drop(b, b.node("Softmax", [scores], axis=-1), p)
    a = b.node("Transpose", [b.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    a = b.node("Reshape", [a, b.literal([0, 0, hidden], np.int64)])
    x = b.node("Add", [x, _drop(b, _dense(b, a, f"h{i}.c_proj", hidden,
                                          hidden), p)])
    m = _gelu(b, _dense(b, _norm(b, x, f"h{i}.ln_2", hidden),
                        f"h{i}.c_fc", hidden, 4 * hidden), gelu)
    return b.node("Add", [x, _drop(b, _dense(b, m, f"h{i}.mlp_proj",
                                             4 * hidden, hidden), p)])


def build(layers, hidden, heads, seq, vocab, batch, gelu="erf", dropout=0.1):
    """The model as an ONNX ModelProto (opset 17); `gelu` is "erf" or
    "tanh"."""
    b = Builder()
    mask = b.literal(np.triu(np.full((seq, seq), -np.inf, np.float16), 1))
    x = b.node("Add", [b.node("Gather", [b.param("wte", [vocab, hidden]),
                                         "tokens"]),
                       b.node("Gather", [b.param("wpe", [seq, hidden]),
                                         b.literal(np.arange(seq), np.int64)])])
    for i in range(layers):
        x = _layer(b, x, i, hidden, heads, mask, gelu, dropout)
    logits = b.node("MatMul", [_norm(b, x, "ln_f", hidden),
                               b.param("lm_head", [hidden, vocab])])
    logits = b.node("Cast", [b.node("Reshape", [
        logits, b.literal([-1, vocab], np.int64)])], to=TensorProto.FLOAT)
    targets = b.node("Reshape", ["targets", b.literal([-1], np.int64)])
    b.nodes.append(helper.make_node("SoftmaxCrossEntropyLoss",
                                    [logits, targets], ["loss"], name="loss"))
    graph = helper.make_graph(
        b.nodes, "independent_gpt",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [batch, seq])
         for n in ("tokens", "targets")],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        b.weights)
    model = helper.make_model(graph, producer_name="independent_gpt",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
