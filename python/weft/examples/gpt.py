"""GPT-2-style decoder language model whose forward returns the LM loss.

Token + learned position embeddings, `layers` pre-LayerNorm blocks (causal
multi-head self-attention, GELU MLP with 4x expansion), final LayerNorm, LM
head tied to the token embedding, cross-entropy over next tokens.

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq].
Parameters (tied head counted once):
    vocab*h + seq*h + layers*(12*h*h + 13*h) + 2*h.

Usage: python3 -m weft.examples.gpt OUT.onnx [--layers 4 --hidden 128 ...]
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from weft.examples.common import build_lm, export, lm_arguments

CONFIGS = {
    "small": dict(layers=4, hidden=128, heads=4, seq=64, vocab=512, batch=8),
    "medium": dict(layers=6, hidden=384, heads=6, seq=256, vocab=4096, batch=8),
}


class Block(nn.Module):
    def __init__(self, hidden, heads, seq, dropout, gelu="erf"):
        super().__init__()
        self.heads = heads
        # "erf" (torch's default GELU) or "tanh" (GPT-2's gelu_new, the
        # form cuBLASLt's GEMM epilogue computes).
        self.gelu = {"erf": "none", "tanh": "tanh"}[gelu]
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.out = nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(dropout)
        # torch >= 2.0's fused F.scaled_dot_product_attention instead of
        # the ops below (flash attention on a GPU): bench/gpu_gpt.py's peer
        # of weft's --flash-attention. Exports never use it.
        self.sdpa = False
        # True above the diagonal: future positions a token must not see.
        # A bool buffer is a constant in the graph, not a parameter.
        self.register_buffer(
            "future", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def attention(self, x):
        _, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        # -1 for the batch keeps it out of the exported graph's constants, so
        # the model also compiles at micro-batch size.
        shape = (-1, s, self.heads, h // self.heads)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.drop.p if self.training else 0.0,
                is_causal=True).transpose(1, 2).reshape(-1, s, h)
            return self.drop(self.proj(y))
        scores = q @ k.transpose(-2, -1) / math.sqrt(h // self.heads)
        scores = scores.masked_fill(self.future[:s, :s], float("-inf"))
        probs = self.drop(F.softmax(scores, dim=-1))
        y = (probs @ v).transpose(1, 2).reshape(-1, s, h)
        return self.drop(self.proj(y))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        h = F.gelu(self.fc(self.ln2(x)), approximate=self.gelu)
        return x + self.drop(self.out(h))


class GPT(nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab, dropout=0.0,
                 gelu="erf"):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(
            Block(hidden, heads, seq, dropout, gelu) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.register_buffer("positions", torch.arange(seq))
        self.apply(self.init_weights)

    @staticmethod
    def init_weights(module):
        """GPT-2's initialisation (Radford et al. 2019; Hugging Face
        GPT2PreTrainedModel._init_weights): linear and embedding weights
        N(0, 0.02), biases 0, LayerNorm (1, 0). With torch's default N(0, 1)
        embedding the tied head's logits are huge and step 1's loss is ~84;
        with this it is ~ln(vocab)."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, tokens, targets):
        s = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(self.positions[:s])
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def build(layers, hidden, heads, seq, vocab, batch, seed=0, gelu="erf"):
    """The model and a fixed batch (tokens, targets); `gelu` "erf" or
    "tanh" (GPT-2's)."""
    return build_lm(
        lambda: GPT(layers, hidden, heads, seq, vocab, gelu=gelu), vocab,
        batch, seq, seed)


def main(argv=None):
    def gelu_flag(parser):
        parser.add_argument("--gelu", choices=["erf", "tanh"], default="erf",
                            help="the MLP's GELU: torch's default or GPT-2's "
                                 "tanh form")
    args, config = lm_arguments(__doc__, CONFIGS, argv, gelu_flag)
    model, inputs = build(**config, gelu=args.gelu)
    print(export(model, inputs, ["tokens", "targets"], args.output))


if __name__ == "__main__":
    main()
