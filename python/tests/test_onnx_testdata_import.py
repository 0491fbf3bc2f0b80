"""Sweep of Debian's libonnx-testdata: every model whose operators weft
supports must import; every other model must be refused with the list of its
unsupported nodes. Nothing may crash.

Inputs that feed value-dependent operands (Reshape's shape, Slice's starts,
...) are graph inputs in the ONNX node tests; the importer names them and the
sweep binds them to their test values with --freeze-input, as a user would.
"""

import collections
import pathlib
import re

import onnx
import pytest

from conftest import run

DATA = pathlib.Path("/usr/share/libonnx-testdata/data")
SUITES = ["node", "pytorch-converted", "pytorch-operator"]
FREEZE = re.compile(r"--freeze-input (\S+)=FILE\.pb")


def model_dirs():
    for suite in SUITES:
        for d in sorted((DATA / suite).iterdir()):
            if (d / "model.onnx").exists():
                yield d


def import_model(weftc, model_dir, graph_inputs):
    """Imports `model_dir`, freezing the inputs weftc asks for."""
    frozen = {}
    while True:
        args = [weftc, str(model_dir / "model.onnx"), "--emit=summary-json"]
        for name, path in frozen.items():
            args.append(f"--freeze-input={name}={path}")
        result = run(args, timeout=120)
        wanted = [n for n in FREEZE.findall(result.stderr) if n not in frozen]
        if result.returncode == 0 or not wanted:
            return result
        for name in wanted:
            frozen[name] = model_dir / "test_data_set_0" / f"input_{graph_inputs.index(name)}.pb"


@pytest.mark.skipif(not DATA.exists(), reason="libonnx-testdata not installed")
def test_every_supported_model_imports(weftc):
    supported = set(run([weftc, "--list-supported-ops", "-"]).stdout.split())
    assert {"MatMul", "Conv", "SoftmaxCrossEntropyLoss"} <= supported
    counts = collections.Counter()
    failures, variants = [], []
    for model_dir in model_dirs():
        name = f"{model_dir.parent.name}/{model_dir.name}"
        model = onnx.load(str(model_dir / "model.onnx"), load_external_data=False)
        initializers = {t.name for t in model.graph.initializer}
        graph_inputs = [i.name for i in model.graph.input if i.name not in initializers]
        ops = {n.op_type for n in model.graph.node}
        result = import_model(weftc, model_dir, graph_inputs)
        if result.returncode not in (0, 1):
            failures.append(f"{name}: crashed (exit {result.returncode}): {result.stderr[-500:]}")
        elif not ops <= supported:
            counts["skipped: unsupported op"] += 1
            if result.returncode != 1 or "unsupported ONNX node" not in result.stderr:
                failures.append(f"{name}: unsupported ops {sorted(ops - supported)} "
                                f"not reported: {result.stderr[:300]}")
        elif result.returncode == 0:
            counts["imported"] += 1
        elif "unsupported variant" in result.stderr:
            counts["skipped: unsupported variant"] += 1
            variants.append(f"{name}: {result.stderr.strip().splitlines()[0][-120:]}")
        else:
            failures.append(f"{name}: {result.stderr[:500]}")
    print("\nlibonnx-testdata import sweep:", dict(counts))
    for line in variants:
        print("  variant:", line)
    assert not failures, "\n".join(failures)
    # The sweep must have exercised most of the data, not skipped it.
    assert counts["imported"] > 400
