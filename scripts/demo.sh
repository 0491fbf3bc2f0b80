#!/usr/bin/env bash
# The main job: train the gpt example as a byte-level language model on real
# text (the licence texts every Debian system has in /usr/share/common-licenses,
# ~237 kB of English, the last 10% held out for validation) on 2 MPI ranks:
# 2 pipeline stages, 4 micro-batches, 1F1B, AdamW, one CPU core each. Prints
# the validation loss before and after training (ln 256 = 5.55 untrained).
# --model llama trains the Llama-style example instead (RMSNorm, rotary
# embeddings, grouped-query attention 4/2 heads, SwiGLU; weft.examples.llama)
# at the same size, on the same text and layout.
# Usage: scripts/demo.sh [--model gpt|llama] [STEPS] (default 600, about 3
# minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
model=gpt
if [ "${1:-}" = "--model" ]; then
  model="${2:?--model needs gpt or llama}"
  shift 2
fi
case "$model" in
  gpt) shape="--layers 4 --hidden 128 --heads 4"
       what="4 layers, hidden 128, 4 heads" ;;
  llama) shape="--layers 4 --hidden 128 --heads 4 --kv_heads 2 --ffn 352"
         what="4 layers, hidden 128, GQA 4/2 heads, SwiGLU 352" ;;
  *) echo "scripts/demo.sh: --model '$model': expected gpt or llama" >&2
     exit 2 ;;
esac
steps="${1:-600}"

scripts/install-deps.sh
scripts/build.sh

out=build/demo
mkdir -p "$out"
text="$out/licenses.txt"
find /usr/share/common-licenses -type f -print0 | LC_ALL=C sort -z |
  xargs -0 cat > "$text"
echo "== data: $text, $(wc -c < "$text") bytes (last 10% held out for validation) =="

echo "== model: $model, byte-level (vocab 256), $what, sequence 128, batch 16 =="
# shellcheck disable=SC2086 # $shape is several flags
PYTHONPATH=python /usr/bin/python3 -W ignore -m weft.examples.$model \
  "$out/$model-bytes.onnx" --vocab 256 --seq 128 --batch 16 $shape > /dev/null
build/bin/weftc "$out/$model-bytes.onnx" --emit=summary
echo

echo "== compile a training step: 2 pipeline stages, 4 micro-batches, 1F1B, AdamW =="
build/bin/weftc "$out/$model-bytes.onnx" --optimizer=adamw --lr=3e-3 \
  --pipeline-parallel=2 --microbatches=4 --schedule=1f1b \
  --timeline-ascii --timeline "$out/$model.predicted.json" -o "$out/$model.plan.json"
echo

# Validation: a forward-only plan of the model on the held-out split; 10
# steps of 16 x 128 bytes read the whole split in order.
validate() {
  build/bin/weftc "$1" --forward-only -o "$out/validate.plan.json"
  build/bin/weft-run "$out/validate.plan.json" --data "text:$text" --split val \
    --steps 10 | tail -1 | sed 's/^mean loss over 10 steps/validation loss/'
}
echo "== before training =="
validate "$out/$model-bytes.onnx"
echo

echo "== train $steps steps on 2 MPI ranks =="
# mpirun refuses root unless told; the ranks share this machine's cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -x OPENBLAS_NUM_THREADS=1 -np 2 \
  build/bin/weft-run "$out/$model.plan.json" --data "text:$text" --steps "$steps" \
  --threads 1 --seed 1 --log-json "$out/$model.log.jsonl" \
  --trace "$out/$model.trace.json" --save "$out/$model.trained.onnx" \
  --checkpoint "$out/$model.checkpoint" --save-every 100 |
  awk -v every=$((steps / 12 > 0 ? steps / 12 : 1)) \
    '/^step/ { split($2, s, "/"); if (s[1] != 1 && s[1] % every) next }
     { print; fflush() }'
echo

echo "== after training =="
validate "$out/$model.trained.onnx"
echo
echo "log: $out/$model.log.jsonl (every step's loss)"
echo "timelines (ui.perfetto.dev): predicted $out/$model.predicted.json, measured $out/$model.trace.json"
echo "trained model: $out/$model.trained.onnx; checkpoint (resume with --resume): $out/$model.checkpoint"
