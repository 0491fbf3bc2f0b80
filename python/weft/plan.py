"""Reading weft execution plans (docs/plan-format.md, version 2).

A version-2 plan holds one program per role (weftc writes one per pipeline
stage) in ``programs`` and, in ``rank_programs``, the program each rank runs;
what differs between the ranks of a program is a coordinate expression
(``{"coord": AXIS, "times": A, "plus": B}``). A rank's *view* is its program
with the expressions evaluated: the per-rank object of version 1 (``rank``,
``coords``, ``arena_bytes``, ``buffers``, ``params``, ``instructions``, ...).

``view`` asks ``weft-run --view`` for the views, so Python reads exactly what
the loader checks and runs; nothing here re-implements the expansion.
"""

import json
import pathlib
import subprocess


def view(plan_path, weft_run, rank=None) -> dict:
    """The plan with ``ranks`` (every rank's view, or rank ``rank``'s only)
    in place of ``programs``; ``format`` is ``"weft-plan-view"``.

    Raises RuntimeError with weft-run's one-line message when the plan
    cannot be read (not JSON, a missing program, a malformed expression).
    """
    args = [str(weft_run), str(plan_path), "--view"]
    if rank is not None:
        args += ["--view-rank", str(rank)]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip())
    return json.loads(result.stdout)


def rank_view(plan_path, weft_run, rank=0) -> dict:
    """Rank ``rank``'s view alone (buffers, params, instructions, ...)."""
    return view(plan_path, weft_run, rank)["ranks"][0]


def load(plan_path) -> dict:
    """The plan as written (version 2: ``programs``, ``rank_programs``), for
    tests that edit a program and write it back with ``save``."""
    return json.loads(pathlib.Path(plan_path).read_text())


def instructions(program: dict) -> list:
    """The instructions `program` writes, to edit in place: its explicit
    list, or in the task form every body's (docs/plan-format.md, "Task
    bodies"), each written once for all the micro-batches running it."""
    if "instructions" in program:
        return program["instructions"]
    return [inst for body in program["bodies"]
            for inst in body["instructions"]]


def save(plan: dict, plan_path) -> None:
    pathlib.Path(plan_path).write_text(json.dumps(plan))
