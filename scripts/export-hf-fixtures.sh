#!/usr/bin/env bash
# Regenerates python/tests/fixtures/hf (small Llama, Qwen2 and Mistral models
# as today's torch and transformers export them, with torch float64
# references: python/tests/fixtures/hf_models.py) in an optional venv,
# .venv-export, with the pinned PyPI torch and transformers. That torch pulls
# about 5 GB of CUDA wheels, so neither CI nor scripts/install-deps.sh
# installs it: the fixtures are committed, and test_hf_models.py needs
# neither.
# Usage: scripts/export-hf-fixtures.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-export"
pins=(torch==2.15.0 transformers==5.24.0 onnx==1.23.2 onnxscript==0.7.2)
[ -x "$venv/bin/python3" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q "${pins[@]}"
out="$root/python/tests/fixtures/hf"
rm -rf "$out"
"$venv/bin/python3" "$root/python/tests/fixtures/hf_models.py" "$out"
# ONNX 1.23's node tests for the operators libonnx-testdata 1.12 predates
# (test_onnx_node_numerics.py).
"$venv/bin/python3" "$root/python/tests/fixtures/onnx_node_tests.py" \
  "$root/python/tests/fixtures/onnx123/node"
