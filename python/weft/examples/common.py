"""Shared export helper for the example models."""

import json
import os

import torch

from weft.export import export as weft_export


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
