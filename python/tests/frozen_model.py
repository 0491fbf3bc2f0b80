"""A model with a float buffer (a fixed causal mask added to attention-like
scores), for the frozen-initializer tests: `python3 -m weft.export
frozen_model:build OUT.onnx` exports it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedMixer(nn.Module):
    def __init__(self, seq=6, hidden=8, classes=5):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, classes)
        # A float buffer: ONNX records no requires_grad, so without the
        # frozen metadata it would look like a parameter.
        self.register_buffer(
            "mask", torch.triu(torch.full((seq, seq), -1e4), diagonal=1))

    def forward(self, x, labels):
        scores = x @ self.proj(x).transpose(1, 2) + self.mask
        mixed = F.softmax(scores, dim=-1) @ x
        return F.cross_entropy(self.head(mixed.mean(1)), labels)


def build(batch=4):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    return MaskedMixer(), (torch.randn(batch, 6, 8, generator=generator),
                           torch.randint(0, 5, (batch,), generator=generator))
