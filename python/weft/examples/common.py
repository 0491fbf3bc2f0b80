"""Shared export helper for the example models."""

import json
import os

import torch


def count_parameters(module: torch.nn.Module) -> int:
    """Number of trainable parameter elements (torch's reference count;
    buffers such as batch-norm running statistics are excluded; tied
    parameters count once)."""
    return sum(p.numel() for p in module.parameters())


def export(module: torch.nn.Module, inputs: tuple, input_names: list,
           path: str, training: bool = True) -> dict:
    """Exports `module(*inputs)` (a scalar loss) through `weft.export`
    (training mode, opset 17, a dynamic batch axis, frozen float buffers
    recorded) and writes `<path>.params.json` with torch's parameter count.
    Returns the metadata written next to the model."""
    if not training:
        raise ValueError("the examples are exported for training")
    from weft.export import export as weft_export
    info = weft_export(module, inputs, path, input_names)
    meta = {"model": os.path.basename(path),
            "params": count_parameters(module),
            "inputs": info["inputs"],
            "frozen": info["frozen"]}
    with open(path + ".params.json", "w") as f:
        json.dump(meta, f, indent=1)
    return meta
