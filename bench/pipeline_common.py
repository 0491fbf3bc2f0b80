"""What the pipeline benchmarks share: the medium gpt example exported once,
and running a plan on 1 or P ranks (1 BLAS thread each) for its log."""

import json
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from weft.examples import gpt  # noqa: E402
from weft.examples.common import export  # noqa: E402

CONFIG = gpt.CONFIGS["medium"]


def export_gpt_medium(directory):
    """Exports the medium gpt (training mode) to DIRECTORY/gpt_medium.onnx."""
    model, inputs = gpt.build(**CONFIG)
    path = pathlib.Path(directory) / "gpt_medium.onnx"
    export(model, inputs, ["tokens", "targets"], str(path))
    return path


def run_plan(build, plan, ranks, steps, log):
    """Runs `steps` steps of `plan` on `ranks` MPI ranks (weft-run alone for
    one) and returns the --log-json records."""
    command = [str(build / "bin" / "weft-run"), str(plan), "--threads", "1",
               "--steps", str(steps), "--log-json", str(log)]
    if ranks > 1:
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
                   "OPENBLAS_NUM_THREADS=1", "-np", str(ranks)] + command
    subprocess.run(command, check=True, capture_output=True,
                   env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    return [json.loads(line) for line in pathlib.Path(log).read_text()
            .splitlines()]
