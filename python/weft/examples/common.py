"""Shared helpers of the example models: building, batches, the command
line, export."""

import argparse
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


def lm_batches(config: dict, steps: int, seed: int = 3) -> list:
    """`steps` batches (tokens, targets) of int64 [config batch, config seq]
    in [0, config vocab), drawn from a generator seeded `seed`."""
    generator = torch.Generator().manual_seed(seed)
    shape = (config["batch"], config["seq"])
    return [(torch.randint(0, config["vocab"], shape, generator=generator),
             torch.randint(0, config["vocab"], shape, generator=generator))
            for _ in range(steps)]


def lm_arguments(doc: str, configs: dict, argv=None, extra=None):
    """The command line of a language-model example: OUT.onnx, --config
    (a key of `configs`), and one integer flag per config key overriding
    it; `extra(parser)` adds the model's own flags. Returns (the parsed
    arguments, the config)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--config", choices=configs, default="small")
    for key in configs["small"]:
        parser.add_argument("--" + key, type=int)
    if extra:
        extra(parser)
    args = parser.parse_args(argv)
    config = dict(configs[args.config])
    config.update({k: v for k, v in vars(args).items()
                   if k in config and v is not None})
    return args, config


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
