#!/usr/bin/env bash
# The main job. Today: export the example models (gpt, resnet, unet) and print
# weftc's summary of each. Planning and training on 2 CPU ranks arrive with
# the plan/runtime issues and extend this script.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh
for model in gpt resnet unet; do
  echo "== $model =="
  build/bin/weftc "build/models/$model.onnx" --emit=summary
  echo
done
