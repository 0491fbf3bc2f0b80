"""Helpers for sweeps over ONNX backend tests: Debian's libonnx-testdata
(ONNX 1.12) and the ONNX 1.23 node tests committed for the operators it
predates (fixtures/onnx_node_tests.py writes them)."""

import pathlib
import re

import onnx

from conftest import run

DATA = pathlib.Path("/usr/share/libonnx-testdata/data")
ONNX123_NODE = pathlib.Path(__file__).parent / "fixtures" / "onnx123" / "node"
FREEZE = re.compile(r"--freeze-input (\S+)=FILE\.pb")


def model_dirs(suites, root=DATA):
    for suite in suites:
        for d in sorted((root / suite).iterdir()):
            if (d / "model.onnx").exists():
                yield d


def graph_io(model_dir):
    """(model, non-initializer input names, output names)."""
    model = onnx.load(str(model_dir / "model.onnx"), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    outputs = [o.name for o in model.graph.output]
    return model, inputs, outputs


def graph_ops(graph):
    """The op types of `graph`'s nodes and of the graphs its nodes hold
    (If's branches, Loop's body)."""
    ops = set()
    for node in graph.node:
        ops.add(node.op_type)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                ops |= graph_ops(attribute.g)
    return ops


def weftc_frozen(weftc, model_dir, graph_inputs, extra_args):
    """Runs weftc on a test model, binding to their test values the inputs
    weftc reports as needed at compile time. Returns (result, frozen names)."""
    frozen = {}
    while True:
        args = [weftc, str(model_dir / "model.onnx"), *extra_args]
        args += [f"--freeze-input={n}={p}" for n, p in frozen.items()]
        result = run(args, timeout=120)
        wanted = [n for n in FREEZE.findall(result.stderr) if n not in frozen]
        if result.returncode == 0 or not wanted:
            return result, set(frozen)
        for name in wanted:
            frozen[name] = (model_dir / "test_data_set_0" /
                            f"input_{graph_inputs.index(name)}.pb")
