#!/usr/bin/env bash
# The main job, as far as weft goes today: export the example models, print
# weftc's summary of each, compile gpt into an execution plan and run its
# forward pass with weft-run on the CPU. Pipeline-parallel training on 2 MPI
# ranks arrives with the pipeline issue and extends this script.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
for model in gpt resnet unet; do
  echo "== $model =="
  build/bin/weftc "build/models/$model.onnx" --emit=summary
  echo
done

out=build/demo
mkdir -p "$out"
echo "== gpt: compile to a plan and run 3 steps (synthetic data, 1 thread) =="
build/bin/weftc build/models/gpt.onnx --forward-only -o "$out/gpt.plan.json"
build/bin/weft-run "$out/gpt.plan.json" --steps 3 --threads 1 \
  --log-json "$out/gpt.log.jsonl" --trace "$out/gpt.trace.json"
echo "log: $out/gpt.log.jsonl  trace (open in ui.perfetto.dev): $out/gpt.trace.json"
