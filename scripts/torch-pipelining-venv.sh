#!/bin/bash
# A venv with PyPI's torch 2.6 (torch.distributed.pipelining with
# ScheduleInterleavedZeroBubble and ScheduleZBVZeroBubble) for
# bench/pipeline_schedules.py's comparison. About 5 GB of CUDA wheels come
# with it: kept out of CI's set-up (scripts/install-deps.sh).
# Usage: scripts/torch-pipelining-venv.sh [DIR]   (default .venv-torch)
set -euo pipefail
dir=${1:-.venv-torch}
/usr/bin/python3 -m venv "$dir"
"$dir/bin/pip" install -q "torch==2.6.0" numpy
echo "TORCH_PYTHON=$dir/bin/python python3 bench/pipeline_schedules.py build"
