#!/usr/bin/env bash
# Packs what a GPU session's device machine needs to check the CUDA
# backend into gpu-bundle/bundle.tar.xz (git-ignored; under the device
# tool's 64 MiB carry limit): weft-run and WeftCudaConformanceTests built
# here, the shared libraries they load that the device image lacks (MPI,
# OpenBLAS, protobuf, ONNX; not the C library), weft.gpu_check's plans
# (the gpt and resnet examples) and bench/gpu_gpt.py's GPT-2-medium graph
# and plans, compiled here (the device has no weftc). scripts/gpu-check.sh
# runs them there:
#   device run: carry ["gpu-bundle"], command "bash scripts/gpu-check.sh"
# Usage: scripts/gpu-bundle.sh   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
out=gpu-bundle
stage="$out/stage"
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib" "$stage/plans"
cp build/bin/weft-run build/bin/WeftCudaConformanceTests "$stage/bin/"
# The libraries ldd resolves, less the C runtime the device has its own of
# (libmvec is glibc's: the CPU kernels need 2.35 or later there).
for binary in "$stage"/bin/*; do
  ldd "$binary" | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libmvec|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done

# weft.gpu_check's plans: the gpt example (f32, bf16, bf16 with fused
# attention) with its weights and data, resnet18 without its weights.
PYTHONPATH=python /usr/bin/python3 -W ignore -m weft.gpu_check prepare \
  build "$stage/plans"
# The GPT-2-medium benchmark's graph and plans, without its 1.4 GB of
# weights: bench/gpu_gpt.py run writes them there from torch's own model
# (about 2 min and 11 GB of memory here).
/usr/bin/python3 -W ignore bench/gpu_gpt.py prepare build "$stage/gpt2-medium"
tar -C "$stage" -cJf "$out/bundle.tar.xz" .
rm -rf "$stage"
du -h "$out/bundle.tar.xz"
