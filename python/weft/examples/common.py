"""Shared export helper for the example models."""

import json
import os

import torch

from weft.export import export as weft_export


def build_lm(make_model, vocab: int, batch: int, seq: int, seed: int = 0):
    """A language model and a fixed batch: seeds torch with `seed`, builds
    `make_model()`, then draws int64 `tokens` and `targets` [batch, seq] in
    [0, vocab). Returns (model, (tokens, targets))."""
    torch.manual_seed(seed)
    model = make_model()
    tokens = torch.randint(0, vocab, (batch, seq))
    targets = torch.randint(0, vocab, (batch, seq))
    return model, (tokens, targets)


def set_dropout(model: torch.nn.Module, p: float) -> torch.nn.Module:
    """Sets every nn.Dropout of `model` to probability `p`; returns it."""
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = p
    return model


def export(module: torch.nn.Module, inputs: tuple, input_names: list,
           path: str) -> dict:
    """Exports `module(*inputs)` (a scalar loss) through `weft.export`
    (training mode, opset 17, a dynamic batch axis, frozen float buffers
    recorded) and writes `<path>.params.json` with torch's parameter count
    (trainable elements; tied parameters count once). Returns the metadata
    written next to the model."""
    info = weft_export(module, inputs, path, input_names)
    meta = {"model": os.path.basename(path),
            "params": info["params"],
            "inputs": info["inputs"],
            "frozen": info["frozen"]}
    with open(path + ".params.json", "w") as f:
        json.dump(meta, f, indent=1)
    return meta
