"""Schedule debugging from IR dumps (issue 40): every weft pass name works
with MLIR's `--mlir-print-ir-after` and `--mlir-print-ir-before` in weftc,
as it does in weft-opt (`weftc MODEL --pipeline-parallel 2
--mlir-print-ir-after=weft-schedule` used to fail with "Cannot find option
named 'weft-schedule'"). The names are weft-opt's own list, so a pass added
later is covered."""

import re

import pytest

from conftest import REPO, run, tool

MODEL = REPO / "test" / "Transforms" / "plan-pipeline.onnxtxt"
FLAGS = ["--pipeline-parallel=2", "--microbatches=2", "--optimizer=sgd"]
#: Passes weftc runs for FLAGS, by the name the dump prints beside them.
RUN_BY_WEFTC = {"weft-autodiff": "Autodiff",
                "weft-accumulate-microbatches": "AccumulateMicrobatches",
                "weft-insert-send-recv": "InsertSendRecv",
                "weft-schedule": "Schedule",
                "weft-simulate-pipeline": "SimulatePipeline"}


def weft_pass_names():
    help_text = run([tool("weft-opt"), "--help"]).stdout
    names = set(re.findall(r"^\s+--(weft-[a-z0-9-]+)\b", help_text, re.M))
    names.discard("weft-plan-pipeline")  # a pipeline, not a pass
    return sorted(names)


def test_weft_opt_lists_the_passes_weftc_runs():
    names = weft_pass_names()
    assert len(names) > 20, names
    assert set(RUN_BY_WEFTC) <= set(names)


@pytest.mark.parametrize("name", weft_pass_names())
def test_every_pass_name_selects_an_ir_dump(name, weftc, tmp_path):
    result = run([weftc, str(MODEL), *FLAGS,
                  f"--mlir-print-ir-after={name}",
                  f"--mlir-print-ir-before={name}",
                  "-o", str(tmp_path / "plan.json")])
    assert result.returncode == 0, result.stderr
    assert "Cannot find option" not in result.stderr
    if name in RUN_BY_WEFTC:
        for when in ("Before", "After"):
            assert (f"IR Dump {when} {RUN_BY_WEFTC[name]} ({name})"
                    in result.stderr), result.stderr[:2000]


def test_a_dump_after_the_schedule_shows_each_stage(weftc, tmp_path):
    result = run([weftc, str(MODEL), *FLAGS,
                  "--mlir-print-ir-after=weft-schedule",
                  "-o", str(tmp_path / "plan.json")])
    assert result.returncode == 0, result.stderr
    dump = result.stderr.split("IR Dump After Schedule (weft-schedule)")[1]
    assert "func.func @stage0" in dump and "func.func @stage1" in dump
    assert 'weft.schedule = "1f1b"' in dump


def test_an_unknown_pass_name_is_refused_in_one_line(weftc, tmp_path):
    result = run([weftc, str(MODEL), *FLAGS,
                  "--mlir-print-ir-after=weft-no-such-pass",
                  "-o", str(tmp_path / "plan.json")])
    assert result.returncode != 0
    assert "weft-no-such-pass" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
