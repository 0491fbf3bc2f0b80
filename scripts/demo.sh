#!/usr/bin/env bash
# The main job: export the example models, print weftc's summary of each,
# compile gpt into a pipelined training plan (AdamW, 2 stages, 8
# micro-batches, 1F1B), show its stage table and predicted timeline, and
# train it for 20 steps on 2 MPI ranks (one CPU core each).
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
echo "== gpt: compile a training step for 2 pipeline stages, 8 micro-batches, 1F1B =="
build/bin/weftc build/models/gpt.onnx --optimizer=adamw --lr=1e-3 \
  --pipeline-parallel=2 --microbatches=8 --schedule=1f1b \
  --timeline-ascii --timeline "$out/gpt.predicted.json" -o "$out/gpt.plan.json"
echo
echo "== gpt: train 20 steps on 2 MPI ranks =="
# mpirun refuses root unless told; the ranks share this machine's cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -x OPENBLAS_NUM_THREADS=1 -np 2 \
  build/bin/weft-run "$out/gpt.plan.json" --steps 20 --threads 1 --seed 1 \
  --log-json "$out/gpt.log.jsonl" --trace "$out/gpt.trace.json" \
  --save "$out/gpt.trained.onnx"
echo "log: $out/gpt.log.jsonl"
echo "timelines (ui.perfetto.dev): predicted $out/gpt.predicted.json, measured $out/gpt.trace.json"
echo "trained model: $out/gpt.trained.onnx (optimizer state: .optim beside it)"
