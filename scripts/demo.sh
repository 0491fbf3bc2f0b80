#!/usr/bin/env bash
# The main job: train the gpt example as a byte-level language model on real
# text (the licence texts every Debian system has in /usr/share/common-licenses,
# ~237 kB of English, the last 10% held out for validation) on 2 MPI ranks:
# 2 pipeline stages, 4 micro-batches, 1F1B, AdamW, one CPU core each. Prints
# the validation loss before and after training (ln 256 = 5.55 untrained).
# Usage: scripts/demo.sh [STEPS] (default 600, about 3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${1:-600}"

scripts/install-deps.sh
scripts/build.sh

out=build/demo
mkdir -p "$out"
text="$out/licenses.txt"
find /usr/share/common-licenses -type f -print0 | LC_ALL=C sort -z |
  xargs -0 cat > "$text"
echo "== data: $text, $(wc -c < "$text") bytes (last 10% held out for validation) =="

echo "== model: gpt, byte-level (vocab 256), 4 layers, hidden 128, sequence 128, batch 16 =="
PYTHONPATH=python /usr/bin/python3 -W ignore -m weft.examples.gpt "$out/gpt-bytes.onnx" \
  --vocab 256 --seq 128 --batch 16 --layers 4 --hidden 128 --heads 4 > /dev/null
build/bin/weftc "$out/gpt-bytes.onnx" --emit=summary
echo

echo "== compile a training step: 2 pipeline stages, 4 micro-batches, 1F1B, AdamW =="
build/bin/weftc "$out/gpt-bytes.onnx" --optimizer=adamw --lr=3e-3 \
  --pipeline-parallel=2 --microbatches=4 --schedule=1f1b \
  --timeline-ascii --timeline "$out/gpt.predicted.json" -o "$out/gpt.plan.json"
echo

# Validation: a forward-only plan of the model on the held-out split; 10
# steps of 16 x 128 bytes read the whole split in order.
validate() {
  build/bin/weftc "$1" --forward-only -o "$out/validate.plan.json"
  build/bin/weft-run "$out/validate.plan.json" --data "text:$text" --split val \
    --steps 10 | tail -1 | sed 's/^mean loss over 10 steps/validation loss/'
}
echo "== before training =="
validate "$out/gpt-bytes.onnx"
echo

echo "== train $steps steps on 2 MPI ranks =="
# mpirun refuses root unless told; the ranks share this machine's cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -x OPENBLAS_NUM_THREADS=1 -np 2 \
  build/bin/weft-run "$out/gpt.plan.json" --data "text:$text" --steps "$steps" \
  --threads 1 --seed 1 --log-json "$out/gpt.log.jsonl" \
  --trace "$out/gpt.trace.json" --save "$out/gpt.trained.onnx" \
  --checkpoint "$out/gpt.checkpoint" --save-every 100 |
  awk -v every=$((steps / 12 > 0 ? steps / 12 : 1)) \
    '/^step/ { split($2, s, "/"); if (s[1] != 1 && s[1] % every) next }
     { print; fflush() }'
echo

echo "== after training =="
validate "$out/gpt.trained.onnx"
echo
echo "log: $out/gpt.log.jsonl (every step's loss)"
echo "timelines (ui.perfetto.dev): predicted $out/gpt.predicted.json, measured $out/gpt.trace.json"
echo "trained model: $out/gpt.trained.onnx; checkpoint (resume with --resume): $out/gpt.checkpoint"
