"""What the pipeline benchmarks share: the medium gpt example exported once,
running a plan on 1 or P ranks (1 BLAS thread each) for its log, and the
collectives' time in a measured trace."""

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


def compile_plan(build, model, plan, flags):
    """weftc MODEL -o PLAN FLAGS..."""
    subprocess.run([str(build / "bin" / "weftc"), str(model), "-o",
                    str(plan), *flags], check=True, capture_output=True)


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


def calibrate(build, path):
    """This machine's device model, `weft-run --calibrate` on 2 ranks, at
    PATH (weftc --device-model PATH)."""
    subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
         "OPENBLAS_NUM_THREADS=1", "-np", "2",
         str(build / "bin" / "weft-run"), "--calibrate", str(path)],
        check=True, capture_output=True)
    return path


TRACED = 4  # steps averaged in a trace, after 2 warm-up steps


def traced_collectives(build, plan, directory, axis=None):
    """Traces TRACED + 2 steps of `plan` on 2 ranks (1 thread each) and
    returns per rank the means over steps 2 to 5 of (collectives, seconds
    they were in flight (post to the end of the wait), seconds inside
    their post and wait calls (exposed: compute did not hide it), step
    seconds); `axis`: only the collectives over that mesh axis."""
    trace = pathlib.Path(directory) / "trace.json"
    subprocess.run(
        ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
         "OPENBLAS_NUM_THREADS=1", "-np", "2", str(build / "bin" / "weft-run"),
         str(plan), "--threads", "1", "--steps", str(TRACED + 2), "--trace",
         str(trace)],
        check=True, capture_output=True)
    events = json.loads(trace.read_text())["traceEvents"]

    def mine(e, category):
        return e["cat"] == category and axis in (None, e["args"].get("axis"))

    shares = []
    for rank in (0, 1):
        totals = [0.0, 0.0, 0.0, 0.0]
        for step in range(2, 2 + TRACED):
            step_events = [e for e in events if e["pid"] == rank
                           and e["args"].get("step") == step
                           and e["tid"] in (1, 2, 3)]
            begin = min(e["ts"] for e in step_events)
            end = max(e["ts"] + e["dur"] for e in step_events)
            flights = [e for e in step_events if mine(e, "collective")]
            calls = [e for e in step_events if mine(e, "collective_call")]
            for k, v in enumerate((len(flights),
                                   sum(e["dur"] for e in flights) / 1e6,
                                   sum(e["dur"] for e in calls) / 1e6,
                                   (end - begin) / 1e6)):
                totals[k] += v / TRACED
        shares.append(tuple(totals))
    return shares
