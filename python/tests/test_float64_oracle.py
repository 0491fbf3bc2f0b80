"""The float64 oracle (weft.oracle) on models nobody on the project wrote:
torchvision classifiers exported by weft.export, one plain SGD step at
M in {1, 2, 4} micro-batches and P in {1, 2, 4} pipeline stages, every
parameter change per tensor against torch float64 on the same micro-batch
split, within 10x torch float32's own error (plus the float64 step's own
ambiguity at ReLU/clip/max-pool near-ties, weft.kinks); and weft itself in
float64 against torch float64 within 1e-8 (oracle (d)), which tells the
float32 near-ties from arithmetic errors outright."""

import pytest

from conftest import BUILD, tool
from weft import oracle
from weft.examples import vision
from weft.export import export

LAYOUTS = [(1, 1), (2, 1), (4, 1), (2, 2), (4, 4)]
# P=4 needs a model deep enough to cut in four; vit's 32x32 batch of 8
# splits at M=4 into micro-batches of 2.
DEEP = ("densenet121", "regnet_x")  # near-tie cases below, not the sweep
CASES = [(name, m, p) for name in vision.MODELS if name not in DEEP
         for m, p in LAYOUTS]
# Oracle (d), weft in float64: every model on micro-batches and a pipeline,
# and the layouts where float32 meets near-ties. MobileNetV3 is left out:
# torch's own float64 hardsigmoid backward multiplies by the float32 1/6
# (3e-8 off; weft uses 1/6).
F64_CASES = [(name, 2, 2) for name in vision.MODELS
             if name not in DEEP + ("mobilenet_v3",)] + \
    [("densenet121", 2, 1), ("regnet_x", 1, 1), ("resnext", 4, 1)]

_exported = {}
_references = {}


def exported(name, tmp_path_factory):
    if name not in _exported:
        model, batch = vision.build(name)
        path = tmp_path_factory.mktemp(name) / f"{name}.onnx"
        export(model, batch, str(path))
        _exported[name] = (model, batch, path)
    return _exported[name]


def reference(name, model, batch, m):
    if (name, m) not in _references:
        _references[(name, m)] = oracle.sgd_references(model, batch, m)
    return _references[(name, m)]


@pytest.fixture(scope="module")
def tools():
    return oracle.Tools(tool("weftc"), tool("weft-run"))


@pytest.mark.parametrize("name,m,p", CASES,
                         ids=[f"{n}-M{m}-P{p}" for n, m, p in CASES])
def test_sgd_step_equals_float64(name, m, p, tools, tmp_path,
                                 tmp_path_factory):
    model, batch, path = exported(name, tmp_path_factory)
    report = oracle.check_sgd_step(
        tools, model, path, batch, ["images", "labels"], tmp_path,
        micro_batches=m, stages=p, reference=reference(name, model, batch, m))
    print(f"\n{name} M={m} P={p}: {report.summary()}")


def test_densenet121_near_tie_is_ambiguity_not_error(tools, tmp_path,
                                                      tmp_path_factory):
    """DenseNet-121 at 64x64, M=2: one pre-ReLU value (3e-6 in float64) lies
    inside float32's forward error (4e-5 at that layer), weft's float32
    puts it on the other side of the kink than torch's, and every gradient
    upstream moves by ~1% (800x torch float32's error). The oracle finds the
    undecidable elements, and the float64 step moves as much when they are
    flipped: without that ambiguity term this case fails, with it it
    passes; weft's error stays within what the flip explains. Which side
    float32 lands on depends on the CPU (OpenBLAS picks its GEMM kernels
    per CPU, and their summation order): on the machine this was found on
    weft flips it, on an AMD EPYC it does not, and then no tensor needs the
    term; the undecidable elements are there either way."""
    model, batch, path = exported("densenet121", tmp_path_factory)
    ref = oracle.sgd_references(model, batch, 2)
    report = oracle.check_sgd_step(tools, model, path, batch,
                                   ["images", "labels"], tmp_path,
                                   micro_batches=2, reference=ref)
    assert report.undecidable > 0
    over = [t for t in report.tensors if t.weft > t.bound - t.ambiguity]
    print(f"\ntensors past the float32 bound, within the flip's: "
          f"{len(over)} of {len(report.tensors)}")
    assert all(t.weft <= 2 * t.ambiguity + t.bound - t.ambiguity for t in over)


@pytest.mark.parametrize("name,m,p", F64_CASES,
                         ids=[f"{n}-M{m}-P{p}" for n, m, p in F64_CASES])
def test_float64_weft_equals_torch_float64(name, m, p, tools, tmp_path):
    model, batch = vision.build(name)
    tensors = oracle.check_float64_step(
        tools, model, batch, ["images", "labels"], tmp_path,
        micro_batches=m, stages=p)
    changed = [t for t in tensors if t.reference > t.bound]
    worst = max(changed, key=lambda t: t.weft / t.reference)
    print(f"\n{name} M={m} P={p} float64: worst tensor {worst.name}: "
          f"relative error {worst.weft / worst.reference:.1e}")


def test_regnet_grouped_conv_error_is_a_float32_near_tie(tools, tmp_path,
                                                         tmp_path_factory):
    """RegNetX-400MF (grouped convolutions throughout) at M=1: in float32
    the last block's changes were off by ~500x torch float32's error on
    one CPU, which only the near-tie ambiguity covers (76 kink inputs
    within float32's error); in float64, where no input is that close to a
    kink, weft equals torch to 1e-8 on every tensor (4e-13 measured). The error is float32
    rounding deciding a ReLU, not the grouped convolution."""
    model, batch, path = exported("regnet_x", tmp_path_factory)
    report = oracle.check_sgd_step(tools, model, path, batch,
                                   ["images", "labels"], tmp_path / "f32")
    assert report.undecidable > 0
    # Whether float32 rounding lands past the plain bound depends on the
    # CPU's BLAS kernels (it did on the machine of issue 11, not on every
    # CPU CI may have); where it does, the ambiguity term must cover it.
    oracle.check_float64_step(tools, model, batch, ["images", "labels"],
                              tmp_path / "f64")


# Oracle (d) under the schedules of issue 40: each W (a convolution's
# weight gradient, a batch norm's parameters') run later, two model chunks
# per rank (interleaved: stage s on rank s mod 2; ZB-V: in a V).
SCHEDULE_CASES = [(name, schedule) for name in vision.MODELS
                  if name not in DEEP + ("mobilenet_v3",)
                  for schedule in ("interleaved", "zb-v")]


@pytest.mark.parametrize("name,schedule", SCHEDULE_CASES,
                         ids=[f"{n}-{s}" for n, s in SCHEDULE_CASES])
def test_float64_schedules_equal_torch_float64(name, schedule, tools,
                                               tmp_path):
    model, batch = vision.build(name)
    oracle.check_float64_step(
        tools, model, batch, ["images", "labels"], tmp_path,
        micro_batches=4, stages=2, schedule=schedule)
