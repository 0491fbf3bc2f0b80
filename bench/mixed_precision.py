"""Measurement: how far weft's bf16 and f16 training is from float64,
against torch autocast bf16 (CPU) on the same steps.

For each seed: the test's small gpt (2 layers, hidden 64, 4 heads, seq 16,
vocab 128, batch 8 in 2 micro-batches), 6 AdamW steps (lr 1e-3) on random
tokens; torch in float64 (the reference), torch float32 under
`torch.autocast("cpu", torch.bfloat16)`, and weft at --precision f32, bf16,
bf16 with --fp32-residual-connection and f16 (loss-scaled). Prints, per
seed, the largest loss error of each against float64 and weft's 16-bit
errors as multiples of torch autocast bf16's (the bound
test_mixed_precision.py asserts is 4x). Units: the loss is in nats.

Usage: `ninja -C build bench-mixed-precision`, or from the repository root
    .venv/bin/python3 -W ignore bench/mixed_precision.py build [SEEDS...]
"""

import pathlib
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from weft import oracle  # noqa: E402
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402

CONFIG = dict(layers=2, hidden=64, heads=4, seq=16, vocab=128, batch=8)
MICRO_BATCHES, STEPS = 2, 6


def torch_losses(model, batches, dtype, autocast):
    return np.array(oracle.training_losses(
        model, batches, MICRO_BATCHES,
        lambda p: torch.optim.AdamW(p, lr=1e-3), dtype,
        torch.bfloat16 if autocast else None))


def main():
    build = pathlib.Path(sys.argv[1])
    seeds = [int(s) for s in sys.argv[2:]] or [0, 1, 2, 3, 5]
    tools = oracle.Tools(str(build / "bin" / "weftc"),
                         str(build / "bin" / "weft-run"))
    runs = {"f32": ["--precision=f32"], "bf16": ["--precision=bf16"],
            "bf16+res32": ["--precision=bf16", "--fp32-residual-connection"],
            "f16": ["--precision=f16"]}
    print("seed  torch-bf16 " + "".join(f"{k:>12}" for k in runs) +
          "".join(f"{k + '/torch':>17}" for k in list(runs)[1:]))
    for seed in seeds:
        model, (tokens, targets) = gpt.build(**CONFIG, seed=seed)
        g = torch.Generator().manual_seed(seed + 1)
        batches = [tuple(torch.randint(0, CONFIG["vocab"], tokens.shape,
                                       generator=g) for _ in range(2))
                   for _ in range(STEPS)]
        ref = torch_losses(model, batches, torch.float64, False)
        drift = np.abs(torch_losses(model, batches, torch.float32, True)
                       - ref).max()
        with tempfile.TemporaryDirectory() as work:
            path = pathlib.Path(work) / "gpt.onnx"
            export(model, (tokens, targets), ["tokens", "targets"], str(path))
            err = {}
            for name, flags in runs.items():
                losses, _ = oracle.weft_train(
                    tools, path, batches, ["tokens", "targets"],
                    pathlib.Path(work) / name.replace("+", "_"),
                    micro_batches=MICRO_BATCHES, flags=flags)
                err[name] = np.abs(np.array(losses) - ref).max()
        print(f"{seed:4d}  {drift:.3e} " +
              "".join(f"{err[k]:12.3e}" for k in runs) +
              "".join(f"{err[k] / drift:17.2f}" for k in list(runs)[1:]))


if __name__ == "__main__":
    main()
