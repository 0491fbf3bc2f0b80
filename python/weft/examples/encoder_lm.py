"""A causal language model built from torch.nn.TransformerEncoder, whose
forward returns the LM loss.

Token embedding + learned positions, `layers` pre-LayerNorm
nn.TransformerEncoderLayer blocks (nn.MultiheadAttention with its packed
in-projection, ReLU MLP of width 4h, a causal mask), an untied LM head,
cross-entropy over next tokens. The export shows torch's own attention
graph (packed QKV cut by slices, heads folded into the batch, the output
projection a Gemm), which tensor parallelism must find structurally.

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq].

Usage: python3 -m weft.examples.encoder_lm OUT.onnx [--layers 2 ...]
"""

import argparse

import torch
import torch.nn as nn

from weft.examples.common import build_lm, export

CONFIGS = {
    "small": dict(layers=2, hidden=64, heads=4, seq=32, vocab=128, batch=8),
}


class EncoderLM(nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, hidden)
        self.positions = nn.Parameter(torch.randn(seq, hidden) * 0.02)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden,
                                           dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(hidden, vocab)
        # -inf above the diagonal: a frozen float buffer, not a parameter.
        self.register_buffer(
            "causal", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.positions
        x = self.encoder(x, mask=self.causal)
        return nn.functional.cross_entropy(
            self.head(x).reshape(-1, self.vocab), targets.reshape(-1))


def build(layers, hidden, heads, seq, vocab, batch, seed=0):
    """The model and a fixed batch (tokens, targets)."""
    return build_lm(lambda: EncoderLM(layers, hidden, heads, seq, vocab), vocab,
                    batch, seq, seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    for key, value in CONFIGS["small"].items():
        parser.add_argument("--" + key, type=int, default=value)
    args = vars(parser.parse_args(argv))
    model, inputs = build(**{k: v for k, v in args.items() if k != "output"})
    print(export(model, inputs, ["tokens", "targets"], args["output"]))


if __name__ == "__main__":
    main()
