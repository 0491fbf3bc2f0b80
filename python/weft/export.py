"""Export a torch module for weft: training mode, a dynamic batch axis on
every input, float buffers recorded as frozen, parameter names kept.

    weft.export(module, example_inputs, path, input_names) -> dict
    python3 -m weft.export pkg.mod:factory OUT.onnx [--input-names a,b]

`module(*example_inputs)` must return the scalar training loss. The ONNX
model it writes is what `weftc` trains:

- **training mode** (`torch.onnx.TrainingMode.TRAINING`): BatchNormalization
  uses batch statistics and returns its running statistics (weft keeps them
  as state), Dropout nodes stay;
- **a dynamic batch axis** (`dynamic_axes={name: {0: "batch"}}`) on every
  input, so reshapes read the batch from the data and the model compiles at
  any micro-batch size; the example shapes are recorded in the model's
  `metadata_props` under `weft.input_shapes` (`name=DxD,...`), which weftc
  uses for the symbolic dims unless `--input-shape` says otherwise;
- **frozen buffers**: ONNX records no `requires_grad`, so a float buffer
  (`register_buffer("mask", float_tensor)`) exported as an initializer looks
  like a parameter. Every float buffer that is not a normalisation layer's
  running statistic is listed, comma-separated, under `weft.frozen`; weftc
  keeps those initializers constant (no gradient, no optimizer state).

Two exporters, by the torch that runs:

- **torch 2.6 and later**: torch's dynamo exporter (`dynamo=True`, its
  default opset, `dynamic_shapes` with one `batch` dim shared by every
  input), with `optimize=False`: its graph optimisation folds each Linear's
  transposed weight into an anonymous constant (`val_132`), so trained
  weights would not map back to the module; unoptimised, every parameter
  and buffer is an initializer named as in `state_dict()` (prefixed as the
  module names its submodules), and weftc folds the traced mask and rotary
  subgraphs itself. Weights are stored inside the model file;
- **older torch** (Debian 12's 1.13): the TorchScript exporter at opset 17
  with `dynamic_axes`, in `TrainingMode.TRAINING` (BatchNormalization's
  running statistics become outputs weft keeps as state).

Weights that need not travel: `externalize(path, location)` moves every
initializer into one ONNX external data file beside the model (weftc reads
no weights, so it compiles the graph alone), and `write_weights(module,
path)` fills that file in again from a module's state_dict on the machine
that runs the plan (bench/gpu_gpt.py, weft.gpu_check).

Each nn.Embedding's `padding_idx` (a row torch never gives a gradient:
ONNX cannot say so) goes into the model's `weft.padding_idx` metadata as
`table=row`; weftc then zeroes that row's gradient from the lookup, as
torch does (docs/importer.md).

Errors: ValueError when the names and inputs differ in number, or when an
input is a 0-d tensor (no batch axis to make dynamic); write_weights'
ValueError names the initializer it cannot fill.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import pathlib
import sys
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np
import onnx
import torch

FROZEN_KEY = "weft.frozen"
SHAPES_KEY = "weft.input_shapes"
PADDING_KEY = "weft.padding_idx"


def frozen_buffers(module: torch.nn.Module) -> List[str]:
    """Names (state_dict spelling) of `module`'s float buffers that are not
    running statistics of a normalisation layer (those are state weft
    updates, not constants)."""
    stats = set()
    for prefix, sub in module.named_modules():
        if isinstance(sub, torch.nn.modules.batchnorm._NormBase):
            stats.update(f"{prefix}.{n}" if prefix else n
                         for n, _ in sub.named_buffers(recurse=False))
    return [name for name, b in module.named_buffers()
            if b.is_floating_point() and name not in stats]


def padding_rows(module: torch.nn.Module) -> Dict[str, int]:
    """{`name.weight`: padding_idx} of each nn.Embedding with one: torch
    zeroes the gradient of that row from the lookup."""
    return {f"{name}.weight" if name else "weight": sub.padding_idx
            for name, sub in module.named_modules()
            if isinstance(sub, torch.nn.Embedding)
            and sub.padding_idx is not None}


def _has_dynamo_exporter() -> bool:
    """True under torch 2.6 and later (the dynamo exporter with
    `optimize` and `dynamic_shapes`)."""
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 6)


def shape_text(shape) -> str:
    return "x".join(str(int(d)) for d in shape)


def export(module: torch.nn.Module, example_inputs: Sequence[torch.Tensor],
           path: str, input_names: Optional[Sequence[str]] = None,
           opset: Optional[int] = None) -> Dict:
    """Exports `module(*example_inputs)` (a scalar loss) to ONNX at `path`
    for weft (see the module docstring). `input_names` default to the
    parameter names of `module.forward`. `opset`: the dynamo exporter's
    default when None (18 to 20 by torch version); 23 writes
    scaled_dot_product_attention as Attention-23 and RMSNorm as
    RMSNormalization-23. The TorchScript exporter (torch < 2.6) writes
    opset 17 only: another `opset` raises ValueError there. Returns
    {"path", "inputs": {name: shape}, "frozen": [names], "params":
    trainable element count}."""
    example_inputs = tuple(example_inputs)
    if input_names is None:
        input_names = list(inspect.signature(module.forward).parameters)
        input_names = input_names[:len(example_inputs)]
    input_names = list(input_names)
    if len(input_names) != len(example_inputs):
        raise ValueError(f"{len(input_names)} input names for "
                         f"{len(example_inputs)} example inputs")
    for name, t in zip(input_names, example_inputs):
        if t.dim() == 0:
            raise ValueError(f"input '{name}' is a scalar: it has no batch "
                             f"axis to make dynamic")
    if opset is not None and opset != 17 and not _has_dynamo_exporter():
        raise ValueError(f"opset {opset}: torch {torch.__version__}'s "
                         f"TorchScript exporter writes opset 17 for weft")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    module.train()
    if _has_dynamo_exporter():
        batch = torch.export.Dim("batch")
        extra = {} if opset is None else {"opset_version": opset}
        torch.onnx.export(module, example_inputs, path, dynamo=True,
                          optimize=False, external_data=False, **extra,
                          input_names=input_names, output_names=["loss"],
                          dynamic_shapes=[{0: batch}] * len(example_inputs))
    else:
        # do_constant_folding=False keeps torch from merging initializers
        # that merely hold equal values (all LayerNorm weights start as
        # ones), which would hide parameters.
        torch.onnx.export(module, example_inputs, path,
                          input_names=input_names, output_names=["loss"],
                          opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False,
                          dynamic_axes={n: {0: "batch"} for n in input_names})

    model = onnx.load(path)
    initializers = {t.name for t in model.graph.initializer}
    frozen = [n for n in frozen_buffers(module) if n in initializers]
    # A table the export renamed or folded cannot be marked: say so rather
    # than train its padding row.
    padding = padding_rows(module)
    for name in padding:
        if name not in initializers:
            warnings.warn(f"nn.Embedding '{name}' has padding_idx "
                          f"{padding[name]}, but the export has no "
                          f"initializer of that name: weft trains that row",
                          stacklevel=2)
    padding = {n: r for n, r in padding.items() if n in initializers}
    shapes = ",".join(f"{n}={shape_text(t.shape)}"
                      for n, t in zip(input_names, example_inputs))
    entries = [(FROZEN_KEY, ",".join(frozen)), (SHAPES_KEY, shapes)]
    if padding:
        entries.append((PADDING_KEY, ",".join(f"{n}={r}"
                                              for n, r in padding.items())))
    for key, value in entries:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(model, path)
    return {"path": path,
            "inputs": {n: list(t.shape) for n, t in zip(input_names, example_inputs)},
            "frozen": frozen,
            "params": sum(p.numel() for p in module.parameters())}


def externalize(path: str, location: str) -> None:
    """Rewrites the ONNX model at `path` with every initializer's data in
    the one file `location` beside it (ONNX external data: offset and
    length per tensor), so the graph alone can travel without its weights
    and `write_weights` can fill them in elsewhere."""
    model = onnx.load(path)
    onnx.save_model(model, path, save_as_external_data=True,
                    all_tensors_to_one_file=True, location=location,
                    size_threshold=0)


def _np_dtype(data_type):
    """numpy's dtype of an ONNX TensorProto data type (onnx.mapping before
    onnx 1.13, onnx.helper since)."""
    if hasattr(onnx.helper, "tensor_dtype_to_np_dtype"):
        return onnx.helper.tensor_dtype_to_np_dtype(data_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[data_type]


def write_weights(module: torch.nn.Module, path) -> None:
    """Writes the external data files of the ONNX model at `path` from
    `module.state_dict()`: each external initializer is the module's tensor
    of that name, at the offset and length the ONNX records. Raises
    ValueError naming an initializer the module lacks, or whose dtype,
    shape or byte length differs."""
    path = pathlib.Path(path)
    graph = onnx.load(str(path), load_external_data=False).graph
    state = module.state_dict()
    files = {}
    for init in graph.initializer:
        if init.data_location != onnx.TensorProto.EXTERNAL:
            continue
        where = {e.key: e.value for e in init.external_data}
        if init.name not in state:
            raise ValueError(f"initializer '{init.name}' of {path.name} is "
                             "not a tensor of the torch model")
        array = state[init.name].detach().cpu().numpy()
        dtype = _np_dtype(init.data_type)
        data = np.ascontiguousarray(array).tobytes()
        if (array.dtype != dtype or list(array.shape) != list(init.dims)
                or len(data) != int(where["length"])):
            raise ValueError(
                f"initializer '{init.name}' of {path.name} is {dtype} "
                f"{list(init.dims)} ({where['length']} bytes), the torch "
                f"model's {array.dtype} {list(array.shape)}")
        files.setdefault(where["location"], []).append(
            (int(where.get("offset", 0)), data))
    for location, pieces in files.items():
        with open(path.parent / location, "wb") as f:
            for offset, data in pieces:
                f.seek(offset)
                f.write(data)


def load_factory(spec: str):
    """`pkg.mod:factory` -> the callable. Raises ValueError naming what is
    wrong with the spec."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"'{spec}': expected pkg.module:factory")
    module = importlib.import_module(module_name)
    if not hasattr(module, attr):
        raise ValueError(f"'{spec}': module {module_name} has no '{attr}'")
    return getattr(module, attr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m weft.export",
        description="Export a torch module for weft. FACTORY (pkg.mod:fn) "
                    "returns (module, example_inputs); module(*inputs) is "
                    "the loss.")
    parser.add_argument("factory")
    parser.add_argument("output")
    parser.add_argument("--input-names", help="comma-separated (default: "
                        "the names of the module's forward parameters)")
    parser.add_argument("--opset", type=int, help="ONNX opset (torch >= 2.6; "
                        "23 writes Attention-23 and RMSNormalization-23)")
    args = parser.parse_args(argv)
    try:
        module, inputs = load_factory(args.factory)()
    except (ValueError, ImportError) as e:
        print(f"weft.export: {e}", file=sys.stderr)
        return 1
    names = args.input_names.split(",") if args.input_names else None
    try:
        info = export(module, inputs, args.output, names, args.opset)
    except ValueError as e:
        print(f"weft.export: {e}", file=sys.stderr)
        return 1
    print(f"wrote {info['path']}: inputs "
          + ", ".join(f"{n} {shape_text(s)}" for n, s in info["inputs"].items())
          + f"; {info['params']} trainable parameters; frozen: "
          + (", ".join(info["frozen"]) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
