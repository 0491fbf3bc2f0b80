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
           path: str, training: bool) -> dict:
    """Exports `module(*inputs)` (a scalar loss) to ONNX opset 17 at `path`
    and writes `<path>.params.json` with torch's parameter count.

    `training=True` exports in training mode (BatchNormalization with batch
    statistics and running-statistic outputs, Dropout nodes kept). It also
    keeps torch from merging initializers that merely hold equal values (all
    LayerNorm weights start as ones), which would hide parameters.
    Returns the metadata written next to the model.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    module.train(training)
    torch.onnx.export(module, inputs, path, input_names=input_names,
                      output_names=["loss"], opset_version=17,
                      training=mode, do_constant_folding=False)
    meta = {"model": os.path.basename(path),
            "params": count_parameters(module),
            "inputs": {n: list(t.shape) for n, t in zip(input_names, inputs)}}
    with open(path + ".params.json", "w") as f:
        json.dump(meta, f, indent=1)
    return meta
