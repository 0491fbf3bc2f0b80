"""Sweep of Debian's libonnx-testdata: every model whose operators weft
supports must import; every other model must be refused with the list of its
unsupported nodes. Nothing may crash.

Inputs that feed value-dependent operands (Reshape's shape, Slice's starts,
...) are graph inputs in the ONNX node tests; the importer names them and the
sweep binds them to their test values with --freeze-input, as a user would.
"""

import collections

import pytest

from conftest import run
from onnx_testdata import DATA, graph_io, graph_ops, model_dirs, weftc_frozen

SUITES = ["node", "pytorch-converted", "pytorch-operator"]


@pytest.mark.skipif(not DATA.exists(), reason="libonnx-testdata not installed")
def test_every_supported_model_imports(weftc, record_property):
    supported = set(run([weftc, "--list-supported-ops", "-"]).stdout.split())
    assert {"MatMul", "Conv", "SoftmaxCrossEntropyLoss"} <= supported
    counts = collections.Counter()
    failures, variants = [], []
    for model_dir in model_dirs(SUITES):
        name = f"{model_dir.parent.name}/{model_dir.name}"
        model, graph_inputs, _ = graph_io(model_dir)
        ops = graph_ops(model.graph)
        result, _ = weftc_frozen(weftc, model_dir, graph_inputs,
                                 ["--emit=summary-json"])
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
    record_property("summary",
                    f"libonnx-testdata import sweep: {dict(counts)}")
    for line in variants:
        print("  variant:", line)
    assert not failures, "\n".join(failures)
    # The sweep must have exercised most of the data, not skipped it.
    assert counts["imported"] > 400
