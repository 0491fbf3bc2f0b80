"""Llama-style decoder language model whose forward returns the LM loss.

The block of Llama 2/3, Mistral and Qwen2 (Touvron et al. 2023), spelled in
plain torch so that every exporter, Debian's torch 1.13 included, writes it:

- RMSNorm before attention and MLP: x * rsqrt(mean(x^2) + eps) * weight
  (Zhang & Sennrich 2019), no bias, no mean subtraction;
- rotary position embeddings on q and k (Su et al. 2021) in Hugging Face's
  half-split layout: x * cos + rotate_half(x) * sin, with cos/sin frozen
  buffers over the positions (constants, never trained);
- grouped-query attention (Ainslie et al. 2023): `kv_heads` key/value heads
  each shared by heads / kv_heads query heads (repeat_kv), causal;
- SwiGLU MLP (Shazeer 2020): down(silu(gate(x)) * up(x)), intermediate
  size `ffn`;
- no biases, an untied LM head, cross-entropy over next tokens.

With `gemma` the block is Gemma's instead (Gemma Team 2024): GeGLU with
the tanh GELU, RMSNorm scaled by 1 + w (w starting at 0), the embedding
scaled by sqrt(hidden) and tied to the LM head. With `interleaved` the
rotary embeddings rotate neighbouring pairs (GPT-J's rotate_every_two, the
layout of Meta's original Llama) instead of halves.

Inputs: `tokens` int64 [batch, seq], `targets` int64 [batch, seq].
Parameters, with head dim d = hidden / heads (gemma: one vocab*h fewer,
the head tied):
    2*vocab*h + layers*(h*h*2 + 2*h*kv_heads*d + 3*h*ffn + 2*h) + h.

Usage: python3 -m weft.examples.llama OUT.onnx [--layers 2 --hidden 64 ...]
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from weft.examples.common import build_lm, export, lm_arguments

CONFIGS = {
    # Head dim 16: the attention scale 1/4 is exact in float32, so oracle
    # (d) compares weft in float64 with torch float64 on the same constants.
    "small": dict(layers=2, hidden=128, heads=8, kv_heads=2, ffn=352, seq=64,
                  vocab=512, batch=8),
    # gpt medium's size (bench/): GQA 6/2 heads, SwiGLU at 8/3 * hidden
    # rounded up to a multiple of 32 as Llama does.
    "medium": dict(layers=6, hidden=384, heads=6, kv_heads=2, ffn=1024,
                   seq=256, vocab=4096, batch=8),
}


class RMSNorm(nn.Module):
    """Llama's x * rsqrt(mean(x^2) + eps) * w, or Gemma's (`offset`) with
    1 + w, w starting at 0."""

    def __init__(self, hidden, eps=1e-6, offset=False):
        super().__init__()
        self.eps = eps
        self.offset = offset
        self.weight = nn.Parameter(torch.zeros(hidden) if offset
                                   else torch.ones(hidden))

    def forward(self, x):
        rms = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        scale = 1.0 + self.weight if self.offset else self.weight
        return (x * rms) * scale


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_every_two(x):
    """GPT-J's (and Meta's original Llama's) interleaved layout: the pairs
    (x[2i], x[2i+1]) rotate to (-x[2i+1], x[2i])."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, seq, theta=10000.0,
                 gemma=False, interleaved=False):
        super().__init__()
        self.gemma = gemma
        self.interleaved = interleaved
        if heads % kv_heads:
            raise ValueError(f"heads={heads} is not a multiple of "
                             f"kv_heads={kv_heads}")
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = hidden // heads
        d = self.head_dim
        self.attn_norm = RMSNorm(hidden, offset=gemma)
        self.q = nn.Linear(hidden, heads * d, bias=False)
        self.k = nn.Linear(hidden, kv_heads * d, bias=False)
        self.v = nn.Linear(hidden, kv_heads * d, bias=False)
        self.o = nn.Linear(heads * d, hidden, bias=False)
        self.mlp_norm = RMSNorm(hidden, offset=gemma)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)
        # Rotary angles m * theta^(-2i/d) for position m, duplicated over the
        # two halves (Hugging Face's LlamaRotaryEmbedding): frozen buffers.
        inv_freq = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.outer(torch.arange(seq, dtype=torch.float64), inv_freq)
        # Each angle for its pair: the two halves (rotate_half) or the two
        # neighbours (interleaved).
        angles = (angles.repeat_interleave(2, dim=-1) if interleaved
                  else torch.cat((angles, angles), dim=-1))
        self.register_buffer("cos", angles.cos().float())
        self.register_buffer("sin", angles.sin().float())
        self.register_buffer(
            "future", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))

    def rotary(self, x, s):
        rotate = rotate_every_two if self.interleaved else rotate_half
        return x * self.cos[:s] + rotate(x) * self.sin[:s]

    def repeat_kv(self, x, s):
        """[b, kv_heads, s, d] -> [b, heads, s, d], each kv head repeated
        for its group of query heads (Hugging Face's repeat_kv)."""
        group = self.heads // self.kv_heads
        if group == 1:
            return x
        x = x[:, :, None, :, :].expand(-1, -1, group, -1, -1)
        return x.reshape(-1, self.heads, s, self.head_dim)

    def attention(self, x):
        _, s, h = x.shape
        d = self.head_dim
        # -1 for the batch keeps it out of the exported graph's constants.
        q = self.q(x).reshape(-1, s, self.heads, d).transpose(1, 2)
        k = self.k(x).reshape(-1, s, self.kv_heads, d).transpose(1, 2)
        v = self.v(x).reshape(-1, s, self.kv_heads, d).transpose(1, 2)
        q, k = self.rotary(q, s), self.rotary(k, s)
        k, v = self.repeat_kv(k, s), self.repeat_kv(v, s)
        scores = q @ k.transpose(-2, -1) / d ** 0.5
        scores = scores.masked_fill(self.future[:s, :s], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(-1, s, self.heads * d))

    def forward(self, x):
        x = x + self.attention(self.attn_norm(x))
        h = self.mlp_norm(x)
        gate = (F.gelu(self.gate(h), approximate="tanh") if self.gemma
                else F.silu(self.gate(h)))
        return x + self.down(gate * self.up(h))


class Llama(nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, ffn, seq, vocab,
                 gemma=False, interleaved=False):
        super().__init__()
        self.gemma = gemma
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(
            Block(hidden, heads, kv_heads, ffn, seq, gemma=gemma,
                  interleaved=interleaved)
            for _ in range(layers))
        self.norm = RMSNorm(hidden, offset=gemma)
        # Gemma ties the head to the embedding.
        self.head = None if gemma else nn.Linear(hidden, vocab, bias=False)
        self.apply(self.init_weights)

    @staticmethod
    def init_weights(module):
        """Hugging Face LlamaPreTrainedModel._init_weights: linear and
        embedding weights N(0, 0.02), RMSNorm weights 1."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        if self.gemma:  # Gemma's normaliser: the embedding times sqrt(h)
            x = x * x.shape[-1] ** 0.5
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        logits = (F.linear(x, self.embed.weight) if self.gemma
                  else self.head(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def parameter_count(layers, hidden, heads, kv_heads, ffn, vocab,
                    gemma=False, **_):
    """Trainable elements, the formula in the module docstring."""
    d = hidden // heads
    block = (2 * hidden * hidden + 2 * hidden * kv_heads * d
             + 3 * hidden * ffn + 2 * hidden)
    return (1 if gemma else 2) * vocab * hidden + layers * block + hidden


def build(layers, hidden, heads, kv_heads, ffn, seq, vocab, batch, seed=0,
          gemma=False, interleaved=False):
    """The model and a fixed batch (tokens, targets); `gemma` for Gemma's
    block, `interleaved` for GPT-J's rotary layout (module docstring)."""
    return build_lm(
        lambda: Llama(layers, hidden, heads, kv_heads, ffn, seq, vocab,
                      gemma, interleaved),
        vocab, batch, seq, seed)


def main(argv=None):
    def gemma_flag(parser):
        parser.add_argument("--gemma", action="store_true",
                            help="Gemma's block: GeGLU, RMSNorm with 1 + w, "
                                 "a scaled embedding tied to the head")
        parser.add_argument("--interleaved", action="store_true",
                            help="GPT-J's rotary layout (neighbouring pairs)")
    args, config = lm_arguments(__doc__, CONFIGS, argv, gemma_flag)
    model, inputs = build(**config, gemma=args.gemma,
                          interleaved=args.interleaved)
    print(export(model, inputs, ["tokens", "targets"], args.output))


if __name__ == "__main__":
    main()
