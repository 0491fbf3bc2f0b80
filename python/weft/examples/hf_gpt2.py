"""Hugging Face GPT-2 (transformers' GPT2LMHeadModel, random initialisation
from a GPT2Config) wrapped so that its forward returns the LM loss.

Its attention and MLP are transformers' own: Conv1D layers (an addmm, a
Gemm in ONNX) with the weight stored [in, out], a fused c_attn split into
Q, K, V, the tanh GELU, the LM head tied to the token embedding. Needs
`transformers` (scripts/install-deps.sh installs it into .venv).

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq].

Usage: python3 -m weft.examples.hf_gpt2 OUT.onnx
"""

import argparse

import torch

from weft.examples.common import build_lm, export

CONFIGS = {
    "small": dict(layers=2, hidden=64, heads=4, seq=32, vocab=128, batch=8),
}


class GPT2Loss(torch.nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab):
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=hidden,
                            n_layer=layers, n_head=heads, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0)
        self.vocab = vocab
        self.gpt2 = GPT2LMHeadModel(config)

    def forward(self, tokens, targets):
        logits = self.gpt2(input_ids=tokens, use_cache=False,
                           return_dict=False)[0]
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, self.vocab), targets.reshape(-1))


def build(layers, hidden, heads, seq, vocab, batch, seed=0):
    """The model and a fixed batch (tokens, targets)."""
    return build_lm(lambda: GPT2Loss(layers, hidden, heads, seq, vocab), vocab,
                    batch, seq, seed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    args = parser.parse_args(argv)
    model, inputs = build(**CONFIGS["small"])
    print(export(model, inputs, ["tokens", "targets"], args.output))


if __name__ == "__main__":
    main()
