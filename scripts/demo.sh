#!/usr/bin/env bash
# The main job, as far as weft goes today: export the example models, print
# weftc's summary of each, compile gpt into a training plan (AdamW) and train
# it with weft-run on one CPU rank. Pipeline-parallel training on 2 MPI ranks
# arrives with the pipeline issue and extends this script.
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
echo "== gpt: compile a training step (AdamW, lr 1e-3) and train 8 steps =="
build/bin/weftc build/models/gpt.onnx --optimizer=adamw --lr=1e-3 -o "$out/gpt.plan.json"
build/bin/weft-run "$out/gpt.plan.json" --steps 8 --threads 1 --seed 1 \
  --log-json "$out/gpt.log.jsonl" --trace "$out/gpt.trace.json" \
  --save "$out/gpt.trained.onnx"
echo "log: $out/gpt.log.jsonl  trace (ui.perfetto.dev): $out/gpt.trace.json"
echo "trained model: $out/gpt.trained.onnx (optimizer state: .optim beside it)"
