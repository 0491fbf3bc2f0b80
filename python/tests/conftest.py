"""Shared fixtures: where the build tree and its tools are."""

import os
import pathlib
import subprocess

import pytest

# One intra-op thread for torch (the float64 references) and for whatever
# the tests start: two pytest workers on CI's two cores, each also running
# weft-run's ranks, left torch's OpenMP pool spinning against them (sys
# time 100 -> 42 s on test_float64_oracle and test_pipeline, 9% faster).
os.environ.setdefault("OMP_NUM_THREADS", "1")
try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # the suites that need torch say so themselves
    pass

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("WEFT_BUILD_DIR", REPO / "build"))


def tool(name: str) -> str:
    path = BUILD / "bin" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build the project first")
    return str(path)


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """Runs a command, capturing text output; never raises on exit status."""
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def plan_view(plan_path, rank=None) -> dict:
    """The plan as its ranks see it (weft.plan.view): ``ranks[r]`` is rank
    r's program with its coordinates filled in, as version 1 wrote it."""
    from weft import plan
    return plan.view(plan_path, tool("weft-run"), rank)


def plan_ranks(plan_path) -> list:
    """Every rank's view: ``plan_view(path)["ranks"]``."""
    return plan_view(plan_path)["ranks"]


@pytest.fixture(scope="session")
def weftc() -> str:
    return tool("weftc")


@pytest.fixture(scope="session")
def models_dir() -> pathlib.Path:
    return BUILD / "models"


@pytest.fixture(scope="module")
def gpt2_layers(tmp_path_factory):
    """The small gpt example with 2 layers, exported: (torch model, its
    batch, the ONNX path)."""
    from weft.examples import gpt
    from weft.export import export
    config = dict(gpt.CONFIGS["small"], layers=2)
    model, batch = gpt.build(**config)
    path = tmp_path_factory.mktemp("gpt") / "gpt.onnx"
    export(model, batch, str(path), ["tokens", "targets"])
    return model, batch, path


# The modules that take longest (--durations of a whole run, its 60
# slowest tests summed per module),
# longest first. pytest-xdist's --dist loadscope hands whole modules to its
# workers in collection order; starting these first keeps a long module
# from being the last one left while the other worker idles.
LONGEST_FIRST = ["test_zero", "test_onnx_node_numerics",
                 "test_float64_oracle", "test_onnx_testdata_import",
                 "test_pipeline", "test_data_parallel", "test_checkpoint",
                 "test_host_overhead_bench", "test_zero_bubble",
                 "test_auto_parallel", "test_calibrate", "test_llama"]


def pytest_collection_modifyitems(items):
    """Orders the modules LONGEST_FIRST, then the rest as collected; a
    module's own tests keep their order."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__,
                                         len(LONGEST_FIRST)))


def pytest_terminal_summary(terminalreporter):
    """Prints each test's `record_property("summary", line)` after the run:
    the sweeps' counts, which scripts/test.sh shows from ctest's log. A
    property travels in the test's report, so this works under pytest-xdist,
    whose workers' own output is not shown."""
    for report in terminalreporter.stats.get("passed", []):
        for key, line in getattr(report, "user_properties", []):
            if key == "summary" and report.when == "call":
                terminalreporter.write_line(line)


def layout_ids(layouts):
    """Test ids of (model, M, weftc flags, T, P, D) layouts, e.g.
    "llama-M2-T2-P1-D1-sequence-parallel"."""
    return ["-".join([f"{f}-M{m}-T{t}-P{p}-D{d}"] +
                     [x.lstrip("-").replace("=", "-") for x in fl])
            for f, m, fl, t, p, d in layouts]
