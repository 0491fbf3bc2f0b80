#!/usr/bin/env bash
# Packs what a GPU session's device machine needs to check the CUDA
# backend into gpu-bundle/bundle.tar.xz (git-ignored; under the device
# tool's 64 MiB carry limit): weft-run and WeftCudaConformanceTests built
# here, the shared libraries they load that the device image lacks (MPI,
# OpenBLAS, protobuf, ONNX; not the C library), and the gpt example's
# training plans (f32, bf16) with their model and 4 steps of data, compiled
# here (the device has no weftc), and bench/gpu_gpt.py's GPT-2-medium
# graph and plans. scripts/gpu-check.sh runs them there:
#   device run: carry ["gpu-bundle"], command "bash scripts/gpu-check.sh"
# Usage: scripts/gpu-bundle.sh   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=gpu-bundle
stage="$out/stage"
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib" "$stage/plans"
cp build/bin/weft-run build/bin/WeftCudaConformanceTests "$stage/bin/"
# The libraries ldd resolves, less the C runtime the device has its own of.
for binary in "$stage"/bin/*; do
  ldd "$binary" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done

# The gpt example (2 layers, h 64) and its plans; data for 4 steps.
PYTHONPATH=python /usr/bin/python3 -W ignore - "$stage/plans" <<'PY'
import pathlib, subprocess, sys
import torch
from weft import oracle
from weft.examples import gpt
from weft.examples.common import export
out = pathlib.Path(sys.argv[1])
model, (tokens, targets) = gpt.build(layers=2, hidden=64, heads=4, seq=16,
                                     vocab=128, batch=8, seed=3)
export(model, (tokens, targets), ["tokens", "targets"], str(out / "gpt.onnx"))
g = torch.Generator().manual_seed(4)
for step in range(4):
    batch = [torch.randint(0, 128, tokens.shape, generator=g) for _ in range(2)]
    oracle.write_step(out / "data", ["tokens", "targets"], batch, step)
for precision in ("f32", "bf16"):
    subprocess.run(["build/bin/weftc", str(out / "gpt.onnx"),
                    f"--precision={precision}", "--microbatches=2",
                    "-o", str(out / f"gpt.{precision}.json")], check=True)
# Fused attention (cuDNN's flash attention on the GPU), bf16.
subprocess.run(["build/bin/weftc", str(out / "gpt.onnx"), "--precision=bf16",
                "--flash-attention", "--microbatches=2",
                "-o", str(out / "gpt.bf16-flash.json")], check=True)
PY
# The plans name the model by path: make it the bundle's, relative.
sed -i 's|"path": *"[^"]*gpt.onnx"|"path": "gpt.onnx"|' "$stage"/plans/*.json
# The GPT-2-medium benchmark's graph and plans, without its 1.4 GB of
# weights: bench/gpu_gpt.py run writes them there from torch's own model
# (about 2 min and 11 GB of memory here).
/usr/bin/python3 -W ignore bench/gpu_gpt.py prepare build "$stage/gpt2-medium"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$stage"
du -h "$out/bundle.tar.xz"
