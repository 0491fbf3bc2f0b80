#!/usr/bin/env bash
# Runs on a GPU machine (the device tool), from the repository root, with
# gpu-bundle/ carried (scripts/gpu-bundle.sh made it here): the checks of
# the CUDA backend issue 15 asks for, their output in $OUT (or
# gpu-bundle/out):
#   conformance.txt  WeftCudaConformanceTests: every kernel, CPU vs CUDA
#   summary.txt      its exit status, then weft.gpu_check's verdicts (PASS
#                    or FAIL with figures): gpt f32 and resnet f32 on the
#                    GPU vs the CPU backend, gpt bf16 (and with fused
#                    attention) vs torch autocast bf16's drift on the same
#                    GPU, device memory vs arena + workspaces
#   gpt.*.{cpu,device-cuda}.{jsonl,txt}, resnet.*  each run's log
#   bench.{txt,json} bench/gpu_gpt.py: GPT-2 medium, bf16, AdamW: weft-run
#                    (and with fused attention) vs torch eager and
#                    torch.compile from the same weights, MFU, memory;
#                    last, the fused-attention plan's step by kernel
#   trace-plan-weft-flash.json  that traced run (bench/trace_kernels.py)
#   timing.txt       seconds from the start to the end of each part
# A dry run of the plumbing on a machine without a GPU (the bundle, its
# libraries, the checks on the CPU; no benchmark):
#   PATH=/usr/bin:$PATH WEFT_GPU_CHECK_DEVICE=cpu WEFT_GPU_CHECK_BENCH=0 \
#     bash scripts/gpu-check.sh
# Not yet timed on a GPU (none has been lent): the checks are small, the
# benchmark runs 12 steps per row and torch.compile's compile is likely
# the longest part. Run it with timeout_s 540; each part writes its output
# as it goes, so a run cut short still brings back what it measured.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
device="${WEFT_GPU_CHECK_DEVICE:-cuda}"
out="$(realpath -m "${OUT:-gpu-bundle/out}")"
mkdir -p "$out"
work=/tmp/weft-gpu
rm -rf "$work" && mkdir -p "$work"
tar -C "$work" -xJf gpu-bundle/bundle.tar.xz
# The bundle's libraries, then the image's CUDA ones (the toolkit's and the
# pip wheels PyTorch uses: cuBLAS, cuDNN, NCCL), for weft's binaries only:
# the device's own libstdc++ and C library stay first for everything else.
wheels=$(python3 - <<'PY' 2>/dev/null
import os, nvidia
print(":".join(os.path.join(p, d, "lib") for p in nvidia.__path__
               for d in sorted(os.listdir(p))
               if os.path.isdir(os.path.join(p, d, "lib"))))
PY
)
libs="$work/lib:$wheels:/usr/local/cuda/lib64"
run() { LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}" "$@"; }

# Each part's wall time, so the first run shows where the device time goes.
part() { echo "$1: ${SECONDS} s since the start" >> "$out/timing.txt"; }

nvidia-smi -L > "$out/device.txt" 2>&1
part unpacked
run timeout 180 "$work/bin/WeftCudaConformanceTests" \
  > "$out/conformance.txt" 2>&1
echo "conformance: exit $?" | tee "$out/summary.txt"
part conformance
PYTHONPATH="$repo/python" python3 -m weft.gpu_check run "$work/plans" \
  "$out" --device "$device" --weft-run "$work/bin/weft-run" \
  --weft-libs "$libs" 2>&1 | tee -a "$out/summary.txt"
part gpu_check
[ "${WEFT_GPU_CHECK_BENCH:-1}" = 0 ] && exit 0
python3 bench/gpu_gpt.py run "$work/gpt2-medium" --device "$device" \
  --weft-run "$work/bin/weft-run" --weft-libs "$libs" \
  --json "$out/bench.json" 2>&1 | tee "$out/bench.txt"
part bench
