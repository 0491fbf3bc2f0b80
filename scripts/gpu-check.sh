#!/usr/bin/env bash
# Runs on a GPU machine (the device tool), from the repository root, with
# gpu-bundle/ carried (scripts/gpu-bundle.sh made it here): the checks of
# the CUDA backend issue 15 asks for, their output in $OUT (or
# gpu-bundle/out):
#   conformance.txt  WeftCudaConformanceTests: every kernel, CPU vs CUDA
#   f32.{cpu,cuda}.jsonl, bf16.cuda.jsonl  4 steps of the gpt example
#   flash.{cpu,cuda}.jsonl  the same in bf16 with --flash-attention
#   summary.txt      the f32 losses side by side, their largest relative
#                    difference, the bf16 (and fused attention) losses and
#                    the GPU memory record
#   bench.{txt,json} bench/gpu_gpt.py: GPT-2 medium, bf16, AdamW: weft-run
#                    (and with fused attention) vs torch eager and
#                    torch.compile from the same weights, MFU, memory
# Not yet timed on a GPU (none has been lent): the checks are small, the
# benchmark runs 12 steps per row and torch.compile's compile is likely
# the longest part. Run it with timeout_s 540; each part writes its output
# as it goes, so a run cut short still brings back what it measured.
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
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

nvidia-smi -L > "$out/device.txt" 2>&1
run "$work/bin/WeftCudaConformanceTests" > "$out/conformance.txt" 2>&1
echo "conformance: exit $?" | tee "$out/summary.txt"
cd "$work/plans"
for device in cpu cuda; do
  run ../bin/weft-run gpt.f32.json --data data --steps 4 --device "$device" \
    --log-json "$out/f32.$device.jsonl" > "$out/f32.$device.txt" 2>&1
  echo "gpt f32 on $device: exit $?" | tee -a "$out/summary.txt"
done
run ../bin/weft-run gpt.bf16.json --data data --steps 4 --device cuda \
  --log-json "$out/bf16.cuda.jsonl" > "$out/bf16.cuda.txt" 2>&1
echo "gpt bf16 on cuda: exit $?" | tee -a "$out/summary.txt"
# Fused attention, bf16: cuDNN's flash attention on the GPU, the CPU's
# blocked kernel beside it.
for device in cpu cuda; do
  run ../bin/weft-run gpt.bf16-flash.json --data data --steps 4 \
    --device "$device" --log-json "$out/flash.$device.jsonl" \
    > "$out/flash.$device.txt" 2>&1
  echo "gpt bf16 --flash-attention on $device: exit $?" |
    tee -a "$out/summary.txt"
done
python3 - "$out" <<'PY' | tee -a "$out/summary.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def log(name):
    path = out / name
    return [json.loads(l) for l in path.read_text().splitlines()] \
        if path.exists() else []
cpu, cuda, bf16 = log("f32.cpu.jsonl"), log("f32.cuda.jsonl"), log("bf16.cuda.jsonl")
for a, b in zip(cpu, cuda):
    print(f"step {a['step']}: f32 cpu {a['loss']:.7f} cuda {b['loss']:.7f}")
if cpu and len(cpu) == len(cuda):
    worst = max(abs(a["loss"] - b["loss"]) for a, b in zip(cpu, cuda))
    scale = max(abs(a["loss"]) for a in cpu)
    print(f"f32 largest |cuda - cpu| / max|cpu|: {worst / scale:.3e} "
          f"(issue's bound 1e-5)")
for r in bf16:
    print(f"step {r['step']}: bf16 cuda {r['loss']:.7f}")
for a, b in zip(log("flash.cpu.jsonl"), log("flash.cuda.jsonl")):
    print(f"step {a['step']}: bf16 flash cpu {a['loss']:.7f} "
          f"cuda {b['loss']:.7f}")
if bf16:
    r = bf16[-1]
    print(f"bf16 memory: arena {r['arena_bytes']}, workspaces "
          f"{r.get('workspace_bytes')}, device in use "
          f"{r.get('device_used_bytes')} bytes; step {r['seconds']:.4f} s")
PY
cd "$repo"
python3 bench/gpu_gpt.py run "$work/gpt2-medium" --device cuda \
  --weft-run "$work/bin/weft-run" --weft-libs "$libs" \
  --json "$out/bench.json" 2>&1 | tee "$out/bench.txt"
