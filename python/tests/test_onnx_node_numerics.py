"""Kernel numerics against the ONNX backend node tests: libonnx-testdata
1.12's, and ONNX 1.23's for RMSNormalization, RotaryEmbedding, Attention
and GatherND (committed under fixtures/onnx123).

For every node test weft imports: weftc -> plan -> weft-run with the test's
inputs -> compare every output with the expected one (float: rtol 1e-4,
atol 1e-5; integers and bools: exact). A model weft does not import, or a
dtype the CPU backend does not implement, is skipped and counted; any other
failure, or a wrong number, fails the test.
"""

import collections
import re
import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import plan_view, run, tool
from onnx_testdata import DATA, ONNX123_NODE, graph_io, model_dirs, weftc_frozen

# Expected outputs drawn from numpy's random generator (training-mode dropout
# with ratio > 0) cannot be reproduced by weft's Philox masks.
RANDOM_EXPECTED = re.compile(r"^test_training_dropout(?!_zero_ratio)")


# The expected outputs of the expanded window functions in libonnx-testdata
# 1.12 disagree with their own graphs (an older definition of the
# operators): hann at n = 1 of 10 is 0.5 - 0.5 cos(2 pi / 10) = 0.0954915
# by the graph's own constants (numpy, float32 or float64); the data holds
# 0.09548607. These are held to the graph's formula instead
# (window_reference).
WINDOW_EXPANDED = re.compile(
    r"^test_(blackman|hamming|hann)window(_symmetric)?_expanded$")


def window_reference(model_dir):
    """The expanded window graph's own value in float64: a0 - a1 cos(r)
    + a2 cos(2 r), r = arange(N) tau / (N if periodic else N - 1), with the
    graph's Constant values (A0, A1, A2, Tau, IsPeriodic)."""
    model = onnx.load(str(model_dir / "model.onnx"))
    constants = {}
    for node in model.graph.node:
        if node.op_type == "Constant":
            value = onnx.helper.get_attribute_value(node.attribute[0])
            if isinstance(value, onnx.TensorProto):
                value = numpy_helper.to_array(value)
            constants[node.output[0].rsplit("_", 1)[-1]] = np.float64(value)
    size = int(numpy_helper.to_array(onnx.load_tensor(
        str(model_dir / "test_data_set_0" / "input_0.pb"))))
    periodic = constants["IsPeriodic"] == 1
    r = np.arange(size) * constants["Tau"] / (size if periodic else size - 1)
    return (constants["A0"] - constants["A1"] * np.cos(r)
            + constants["A2"] * np.cos(2 * r))


def load_tensor(path, like=None):
    """The tensor at `path` as numpy, and the ONNX dtype it was stored in.
    bfloat16 becomes float32 (exact), unless `like`, the expected value, is
    uint16: ONNX 1.12's test data holds bfloat16 outputs as raw uint16
    bits, and is compared bit for bit."""
    tensor = onnx.load_tensor(str(path))
    if tensor.data_type == onnx.TensorProto.BFLOAT16:
        bits = np.frombuffer(tensor.raw_data, np.uint16).reshape(tensor.dims)
        if like is not None and like.dtype == np.uint16:
            return bits, tensor.data_type
        return ((bits.astype(np.uint32) << 16).view(np.float32),
                tensor.data_type)
    return numpy_helper.to_array(tensor), tensor.data_type


# Machine epsilon of the 16-bit formats (2^-10, 2^-7). Their outputs are
# compared within SIXTEEN_BIT_ULPS of it, relative and absolute: weft keeps
# a kernel's intermediates in f32 (the matmuls' sums, softmax), where the
# ONNX reference (numpy over ml_dtypes) rounds each op's result to the
# 16-bit type, so the two may differ by a rounding of the output (measured
# on ONNX 1.23's Attention cases: half a unit at 1, 2^-8 in bfloat16 and
# 2^-11 in float16), not by 1e-4.
EPSILON_16 = {onnx.TensorProto.FLOAT16: 2.0 ** -10,
              onnx.TensorProto.BFLOAT16: 2.0 ** -7}
SIXTEEN_BIT_ULPS = 1


def compare(expected, actual, dtype=None):
    """None when equal within tolerance, else a message. `dtype`, the
    ONNX dtype the expected value was stored in, sets the tolerance of a
    16-bit float."""
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return (f"expected {expected.dtype}{list(expected.shape)}, "
                f"got {actual.dtype}{list(actual.shape)}")
    if np.issubdtype(expected.dtype, np.floating):
        tol = SIXTEEN_BIT_ULPS * EPSILON_16.get(dtype, 0)
        ok = np.allclose(actual, expected, rtol=max(tol, 1e-4),
                         atol=max(tol, 1e-5), equal_nan=True)
    else:
        ok = np.array_equal(actual, expected)
    if ok:
        return None
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    return f"max abs diff {np.nanmax(diff) if diff.size else 0}"


@pytest.mark.skipif(not DATA.exists(), reason="libonnx-testdata not installed")
def test_node_tests_match_expected_outputs(weftc, tmp_path, record_property):
    counts, skipped = run_node_tests(weftc, tmp_path, model_dirs(["node"]))
    record_property("summary",
                    f"ONNX node tests through weft-run: {dict(counts)}")
    for line in skipped:
        print("  skipped:", line)
    assert counts["passed"] > 300


def test_onnx_123_node_tests_match_expected_outputs(weftc, tmp_path,
                                                    record_property):
    dirs = list(model_dirs(["."], ONNX123_NODE))
    assert len(dirs) > 100, "fixtures/onnx123/node is missing"
    counts, skipped = run_node_tests(weftc, tmp_path, dirs, every=True)
    record_property("summary",
                    f"ONNX 1.23 node tests through weft-run: {dict(counts)}")
    for line in skipped:
        print("  skipped:", line)
    for op in ("rms_normalization", "rotary_embedding", "attention",
               "gathernd"):
        assert counts[f"passed: {op}"] > 0, op


def test_onnx_123_attention_fused_matches_expected_outputs(weftc, tmp_path):
    """The same Attention-23 cases under --flash-attention: those whose
    attention fuses (a mask becomes the fused op's bias; a fully masked row
    gives 0) must still give the expected outputs; softcap and the
    qk_matmul_output stages stay unfused (measured: 23 of the 50 fuse, 9
    of them with a bias)."""
    dirs = [d for d in model_dirs(["."], ONNX123_NODE)
            if d.name.startswith("test_attention")]
    counts, _ = run_node_tests(weftc, tmp_path, dirs, every=True,
                               flags=["--flash-attention"])
    assert counts["fused"] >= 20, dict(counts)
    assert counts["fused with a bias"] >= 8, dict(counts)

def op_of(name):
    return re.match(r"test_(rms_normalization|rotary_embedding|attention|"
                    r"gathernd)", name).group(1)


def run_node_tests(weftc, tmp_path, dirs, every=False, flags=()):
    """Runs each test model through weftc and weft-run; fails on a wrong
    output or a weft-run error. With `every`, a model that does not import
    fails too (and passes are counted per operator); without, it is
    skipped and counted. `flags` go to weftc; plans with a fused attention
    are counted ("fused", and "fused with a bias"). Returns (counts, skip
    lines)."""
    weft_run = tool("weft-run")
    counts = collections.Counter()
    failures, skipped = [], []
    for model_dir in dirs:
        name = model_dir.name
        if RANDOM_EXPECTED.match(name):
            counts["skipped: random expected output"] += 1
            continue
        _, inputs, outputs = graph_io(model_dir)
        work = tmp_path / name
        work.mkdir()
        plan = work / "plan.json"
        result, frozen = weftc_frozen(weftc, model_dir, inputs,
                                      ["-o", str(plan), *flags])
        if result.returncode != 0:
            if every:
                failures.append(f"{name}: weftc failed: {result.stderr}")
            counts["skipped: not imported"] += 1
            continue
        step = work / "data" / "step_0"
        step.mkdir(parents=True)
        data = model_dir / "test_data_set_0"
        plan_json = plan_view(plan, 0)
        declared = {i["name"]: i["shape"] for i in plan_json["inputs"]}
        fused = [i for i in plan_json["ranks"][0]["instructions"]
                 if i.get("kernel") == "attention"]
        if fused:
            counts["fused"] += 1
            counts["fused with a bias"] += any(
                len(i["inputs"]) == 4 for i in fused)
        contradicting = [
            n for k, n in enumerate(inputs) if n in declared and
            list(onnx.load_tensor(str(data / f"input_{k}.pb")).dims) != declared[n]]
        if contradicting:
            # e.g. test_castlike_FLOAT_to_BFLOAT16_expanded in ONNX 1.12
            counts["skipped: test data contradicts the model's input shape"] += 1
            skipped.append(f"{name}: inputs {contradicting}")
            continue
        for k, input_name in enumerate(inputs):
            if input_name not in frozen:
                shutil.copy(data / f"input_{k}.pb", step / f"{input_name}.pb")
        result = run([weft_run, str(plan), "--data", str(work / "data"),
                      "--dump-outputs", str(work / "out")], timeout=120)
        if result.returncode != 0:
            if "is not supported on the CPU backend" in result.stderr:
                counts["skipped: dtype not on the CPU backend"] += 1
                skipped.append(f"{name}: {result.stderr.strip()[-100:]}")
            else:
                failures.append(f"{name}: weft-run failed: {result.stderr.strip()}")
            continue
        problems = []
        for k, output_name in enumerate(outputs):
            expected, dtype = load_tensor(data / f"output_{k}.pb")
            if WINDOW_EXPANDED.match(name):
                expected = window_reference(model_dir).astype(expected.dtype)
            actual, _ = load_tensor(
                work / "out" / "step_0" / f"{output_name}.pb", expected)
            message = compare(expected, actual, dtype)
            if message:
                problems.append(f"output {output_name}: {message}")
        if problems:
            failures.append(f"{name}: " + "; ".join(problems))
        else:
            counts["passed"] += 1
            if every:
                counts[f"passed: {op_of(name)}"] += 1
        shutil.rmtree(work)
    assert not failures, f"{len(failures)} failed:\n" + "\n".join(failures)
    return counts, skipped
