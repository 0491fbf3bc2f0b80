"""Numerical oracles: does weft train a model as torch does, in float64?

Parallelism must not change the mathematics, and a test of that must not
pass by luck. The reference is torch in **float64** on the same micro-batch
split (GPipe's semantics: each micro-batch's loss scaled by 1/M, gradients
accumulated, one step; batch normalisation sees each micro-batch's
statistics). Three checks, from the strictest to the most model-dependent:

(a) the step-1 loss, within `LOSS_RTOL` (1e-6) relative of float64;
(b) the parameter change of one plain SGD step, per tensor, against
    float64, within a tolerance derived from torch **float32**'s own error on
    the same step:

        ||dW_weft - dW_64|| <= 10 * ||dW_32 - dW_64||
                               + 1e-4 * ||dW_64|| + eps32 * ||W_1||

                               + ||dW_64(flipped) - dW_64||

    (L2 norms over the tensor; eps32 * ||W_1|| is the float32 rounding of
    the updated tensor itself, which no float32 trainer can beat; the last
    term is the float64 step's own ambiguity: its change when every element
    that lies closer to a ReLU/clip/max-pool kink than torch float32's
    forward error is put on the other side of it, see `weft.kinks`; it is 0
    unless the batch has such near-ties). This checks
    every gradient through the whole system: import, autodiff, micro-batch
    accumulation, pipeline transfers, optimizer, checkpoint writer;
(c) multi-step losses, only for models that are stable in float32 (no batch
    norm: torch's own float32 leaves float64 by up to 1e-2 within three steps
    on batch-norm CNNs), within 1e-5 relative of float64;
(d) weft itself in float64 (the model exported in double): one SGD step's
    change per tensor within `F64_RTOL` (1e-8) of torch float64's, plus
    1e-12 of the tensor's norm (or of the step's largest change). Float64's rounding (1e-16) is far below
    any near-tie a real batch has, so (d) has no ambiguity term: it tells a
    float32 near-tie (b's ambiguity) from an arithmetic bug outright.

Units: losses are the model's (nats for cross-entropy); errors are L2 norms of
parameter changes (the parameter's units); ratios are dimensionless.

Everything here runs the real tools (`weftc`, `weft-run`, `mpirun`) as a
user would, and raises `OracleError` with the offending tensor named when a
check fails.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import pathlib
import subprocess
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import onnx
import torch
from onnx import numpy_helper

from weft import kinks
from weft.export import export

LOSS_RTOL = 1e-6        # (a) step-1 loss, relative
F32_FACTOR = 10.0       # (b) multiple of torch float32's own error allowed
NORM_FLOOR = 1e-4       # (b) fraction of ||dW_64|| always allowed
MULTISTEP_RTOL = 1e-5   # (c) per-step losses, relative
KINK_BAND = 2.0         # (b) undecidable: within 2x torch float32's error
# (d) weft float64 against torch float64, per tensor, relative. The largest
# discrepancy measured is 2.8e-10 (DenseNet-121: 121 layers of batch norm),
# most are below 1e-12; 1e-8 leaves 35x for other CPUs' BLAS summation
# orders, and the errors real bugs give are 1e-4 and up (issue 11's were
# 0.4%-1%).
F64_RTOL = 1e-8
# (d) times max(||W_1||, the largest tensor change of the step): the stored
# weight's rounding, and the noise of changes that are 0 analytically.
F64_FLOOR = 1e-12
F32_EPS = float(np.finfo(np.float32).eps)


class OracleError(AssertionError):
    """A check failed; the message names the model, layout and tensor."""


@dataclasses.dataclass
class TensorError:
    """One parameter's SGD-step error against float64 (L2 norms)."""
    name: str
    weft: float         # ||dW_weft - dW_64||
    torch32: float      # ||dW_32 - dW_64||
    bound: float        # the tolerance of (b)
    reference: float    # ||dW_64||
    ambiguity: float = 0.0  # ||dW_64(flipped) - dW_64||

    @property
    def ratio(self) -> float:
        """weft's error as a multiple of torch float32's (inf when torch
        float32 is exact and weft is not; 0 when both are exact)."""
        if self.weft == 0.0:
            return 0.0
        return self.weft / self.torch32 if self.torch32 > 0 else float("inf")


@dataclasses.dataclass
class SgdStepReport:
    """The result of `check_sgd_step`: step-1 losses and per-tensor errors."""
    loss_weft: float
    loss_64: float
    loss_32: float
    tensors: List[TensorError]
    undecidable: int = 0  # kink-input elements within float32's error

    @property
    def worst(self) -> TensorError:
        """The tensor whose error is the largest multiple of torch
        float32's (tensors torch float32 gets exactly right are ranked by
        their error against the bound instead)."""
        return max(self.tensors, key=lambda t: (
            t.ratio if t.torch32 > 0 else t.weft / t.bound if t.bound else 0))

    def summary(self) -> str:
        w = self.worst
        return (f"loss rel err {abs(self.loss_weft - self.loss_64) / abs(self.loss_64):.1e}; "
                f"worst tensor {w.name}: {w.ratio:.2f}x torch float32's error "
                f"({w.weft:.2e} vs {w.torch32:.2e}, bound {w.bound:.2e}); "
                f"{self.undecidable} undecidable kink inputs")


# ---------------------------------------------------------------- torch side


def split(batch: Sequence[torch.Tensor], m: int) -> List[tuple]:
    """The M micro-batches of `batch`: contiguous chunks along dim 0, as
    weft-accumulate-microbatches (and torch.Tensor.chunk) cut them."""
    return list(zip(*(t.chunk(m) for t in batch)))


def _cast(batch, dtype):
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


def microbatch_step(model: torch.nn.Module, batch: Sequence[torch.Tensor],
                    m: int, autocast: Optional[torch.dtype] = None,
                    device: str = "cpu") -> float:
    """Forward and backward of one step on the micro-batch split (model in
    training mode; `.grad` of every parameter is set), each forward under
    `torch.autocast(device, autocast)` when given (the model and batch on
    `device`). Returns the step's loss: the sum of the 1/M-scaled
    micro-batch losses."""
    model.train()
    model.zero_grad(set_to_none=True)
    total = 0.0
    for chunk in split(batch, m):
        with torch.autocast(device, dtype=autocast or torch.bfloat16,
                            enabled=autocast is not None):
            loss = model(*chunk) / m
        loss.backward()
        total += loss.item()
    return total


def sgd_step(model: torch.nn.Module, batch, m: int, lr: float, dtype,
             mode=None, clip: Optional[float] = None):
    """One plain SGD step of a copy of `model` in `dtype`, forward and
    backward under the context manager `mode` when given (a `weft.kinks`
    TorchFunctionMode), the gradients clipped by
    `torch.nn.utils.clip_grad_norm_(parameters, clip)` when given. Returns
    (loss, {name: parameter change as float64 numpy}); the change is
    measured as W_1 - W_0 in float64 after the update was rounded to
    `dtype`, as a trainer in that precision stores it."""
    model = copy.deepcopy(model).to(dtype)
    before = {n: p.detach().double().clone() for n, p in model.named_parameters()}
    with mode or contextlib.nullcontext():
        loss = microbatch_step(model, _cast(batch, dtype), m)
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    return loss, {n: (p.detach().double() - before[n]).numpy()
                  for n, p in model.named_parameters()}


def load_initializers(model: torch.nn.Module, onnx_path) -> Dict[str, np.ndarray]:
    """Copies the ONNX model's initializers into `model`'s parameters and
    float buffers by name (so torch starts exactly where weft does) and
    returns them. Raises OracleError when a parameter has no initializer."""
    inits = {t.name: numpy_helper.to_array(t)
             for t in onnx.load(str(onnx_path)).graph.initializer}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name not in inits:
                raise OracleError(f"parameter '{name}' has no initializer in "
                                  f"{onnx_path}")
            p.copy_(torch.from_numpy(inits[name].copy()))
        for name, b in model.named_buffers():
            if name in inits and b.is_floating_point():
                b.copy_(torch.from_numpy(inits[name].copy()))
    return inits


# ----------------------------------------------------------------- weft side


def mpirun(ranks: int) -> List[str]:
    """The command prefix that runs `ranks` processes on this machine's
    cores (root allowed, oversubscribed, one BLAS thread each); [] for 1."""
    if ranks == 1:
        return []
    return ["mpirun", "--allow-run-as-root", "--oversubscribe",
            "-x", "OPENBLAS_NUM_THREADS=1", "-np", str(ranks)]


@dataclasses.dataclass
class Tools:
    """Paths of the built tools."""
    weftc: str
    weft_run: str


def _run(args, what):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(args, capture_output=True, text=True, env=env,
                            timeout=900)
    if result.returncode != 0:
        raise OracleError(f"{what} failed ({result.returncode}): "
                          f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result


def write_step(data_dir: pathlib.Path, names, tensors, step: int = 0):
    """Writes one step of inputs as DIR/step_<step>/<name>.pb (the format of
    `weft-run --data DIR`)."""
    step_dir = pathlib.Path(data_dir) / f"step_{step}"
    step_dir.mkdir(parents=True, exist_ok=True)
    for name, tensor in zip(names, tensors):
        proto = numpy_helper.from_array(tensor.numpy(), name)
        (step_dir / f"{name}.pb").write_bytes(proto.SerializeToString())


def weft_train(tools: Tools, onnx_path, batches, input_names, workdir, *,
               micro_batches=1, stages=1, schedule="1f1b",
               flags: Sequence[str] = (), save: bool = False,
               tensor_parallel: int = 1, data_parallel: int = 1,
               run_flags: Sequence[str] = ()):
    """Compiles `onnx_path` for the layout (weftc `flags`), trains
    len(batches) steps (weft-run `run_flags`: --device cuda) on
    stages x data_parallel x tensor_parallel MPI ranks (each data-parallel
    replica on a contiguous 1/data_parallel of the batch, in
    `micro_batches` micro-batches), and returns (per-step losses,
    {name: trained initializer} or None)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    plan = workdir / "plan.json"
    _run([tools.weftc, str(onnx_path), "-o", str(plan),
          f"--microbatches={micro_batches}", f"--pipeline-parallel={stages}",
          f"--schedule={schedule}", f"--tensor-parallel={tensor_parallel}",
          f"--data-parallel={data_parallel}", *flags], "weftc")
    data = workdir / "data"
    for step, batch in enumerate(batches):
        write_step(data, input_names, batch, step)
    log, saved = workdir / "log.jsonl", workdir / "trained.onnx"
    command = mpirun(stages * tensor_parallel * data_parallel) + [
        tools.weft_run, str(plan), "--data", str(data), "--steps",
        str(len(batches)), "--log-json", str(log), *run_flags]
    if save:
        command += ["--save", str(saved)]
    _run(command, "weft-run")
    losses = [json.loads(line)["loss"] for line in log.read_text().splitlines()]
    trained = None
    if save:
        trained = {t.name: numpy_helper.to_array(t)
                   for t in onnx.load(str(saved)).graph.initializer}
    return losses, trained


# ------------------------------------------------------------------- oracles


def check_sgd_step(tools: Tools, model: torch.nn.Module, onnx_path,
                   batch: Sequence[torch.Tensor], input_names: Sequence[str],
                   workdir, *, micro_batches: int = 1, stages: int = 1,
                   schedule: str = "1f1b", lr: float = 0.1,
                   flags: Sequence[str] = (),
                   reference: Optional[tuple] = None,
                   tensor_parallel: int = 1,
                   data_parallel: int = 1) -> SgdStepReport:
    """Oracles (a) and (b): one plain SGD step (lr `lr`) of weft on the layout
    against torch float64 and float32 on the same micro-batch split (with
    data parallelism, the batch in data_parallel x micro_batches
    contiguous micro-batches: each replica's micro-batches in turn).

    `model` is the torch module `onnx_path` was exported from (its forward
    returns the loss); its parameters are reset from the ONNX initializers.
    `reference` may pass a cached `sgd_references(...)` result. Raises
    OracleError naming the first tensor over its bound; returns the report.
    """
    inits = load_initializers(model, onnx_path)
    ref = reference or sgd_references(model, batch,
                                      micro_batches * data_parallel, lr)
    (loss_64, delta_64), (loss_32, delta_32), (ambiguity, undecidable) = ref
    losses, trained = weft_train(
        tools, onnx_path, [batch], input_names, workdir,
        micro_batches=micro_batches, stages=stages, schedule=schedule,
        flags=["--optimizer=sgd", f"--lr={lr}", *flags], save=True,
        tensor_parallel=tensor_parallel, data_parallel=data_parallel)
    layout = (f"M={micro_batches} P={stages} T={tensor_parallel} "
              f"D={data_parallel} {schedule}")

    tensors = []
    for name, want in delta_64.items():
        if name not in trained:
            raise OracleError(f"{layout}: parameter '{name}' is missing from "
                              f"the saved model")
        w1 = trained[name].astype(np.float64)
        got = w1 - inits[name].astype(np.float64)
        err = float(np.linalg.norm(got - want))
        err32 = float(np.linalg.norm(delta_32[name] - want))
        ref_norm = float(np.linalg.norm(want))
        bound = F32_FACTOR * err32 + NORM_FLOOR * ref_norm + \
            F32_EPS * float(np.linalg.norm(w1)) + ambiguity[name]
        tensors.append(TensorError(name, err, err32, bound, ref_norm,
                                   ambiguity[name]))
    report = SgdStepReport(losses[0], loss_64, loss_32, tensors, undecidable)

    loss_tol = max(LOSS_RTOL, F32_FACTOR * abs(loss_32 - loss_64) / abs(loss_64))
    if abs(report.loss_weft - loss_64) > loss_tol * abs(loss_64):
        raise OracleError(f"{layout}: step-1 loss {report.loss_weft!r} against "
                          f"float64 {loss_64!r} (rel. tolerance {loss_tol:.1e})")
    _check_bounds(layout, tensors, "exceed the float32-derived bound",
                  lambda t: f"error {t.weft:.3e} = {t.ratio:.1f}x torch "
                  f"float32's {t.torch32:.3e} (bound {t.bound:.3e}, "
                  f"|dW| {t.reference:.3e})")
    return report


def _check_bounds(layout: str, tensors: List[TensorError], what: str,
                  describe: Callable[[TensorError], str]):
    """Raises OracleError listing (up to 8) tensors over their bound."""
    bad = [t for t in tensors if t.weft > t.bound]
    if bad:
        raise OracleError(
            f"{layout}: {len(bad)} of {len(tensors)} parameter changes "
            f"{what}:\n" + "\n".join(f"  {t.name}: {describe(t)}"
                                      for t in bad[:8]))


def check_float64_step(tools: Tools, model: torch.nn.Module, batch,
                       input_names: Sequence[str], workdir, *,
                       micro_batches: int = 1, stages: int = 1,
                       schedule: str = "1f1b", lr: float = 0.1,
                       tensor_parallel: int = 1,
                       data_parallel: int = 1,
                       flags: Sequence[str] = (),
                       clip: Optional[float] = None) -> List[TensorError]:
    """Oracle (d): `model` exported in float64 (its float inputs too) and
    trained one plain SGD step by weft on the layout (weftc `flags`),
    against torch float64 on the same split (with `clip`, both clip the
    gradients' global norm: weftc --clip-grad-norm, torch's
    clip_grad_norm_). Raises OracleError naming the tensors whose change
    differs by more than F64_RTOL * ||dW_64|| + F64_FLOOR * max(||W_1||,
    max over tensors of ||dW_64||);
    returns every tensor's error (`torch32` holds the bound's relative part
    for the report, `bound` the bound)."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    model = copy.deepcopy(model).double()
    batch = _cast(batch, torch.float64)
    path = workdir / "model-f64.onnx"
    export(model, batch, str(path), list(input_names))
    inits = load_initializers(model, path)
    loss_64, delta_64 = sgd_step(model, batch, micro_batches * data_parallel,
                                 lr, torch.float64, clip=clip)
    if clip is not None:
        flags = [*flags, f"--clip-grad-norm={clip!r}"]
    losses, trained = weft_train(
        tools, path, [batch], input_names, workdir,
        micro_batches=micro_batches, stages=stages, schedule=schedule,
        flags=["--optimizer=sgd", f"--lr={lr}", *flags], save=True,
        tensor_parallel=tensor_parallel, data_parallel=data_parallel)
    layout = (f"float64 M={micro_batches} P={stages} T={tensor_parallel} "
              f"D={data_parallel} {schedule}")
    if abs(losses[0] - loss_64) > F64_RTOL * abs(loss_64):
        raise OracleError(f"{layout}: step-1 loss {losses[0]!r} against "
                          f"torch float64 {loss_64!r}")
    tensors = []
    # A change that is 0 analytically (a bias feeding a batch norm) is
    # rounding noise on both sides, at the scale of the step's changes.
    step_scale = max(float(np.linalg.norm(d)) for d in delta_64.values())
    for name, want in delta_64.items():
        w1 = trained[name].astype(np.float64)
        err = float(np.linalg.norm(w1 - inits[name] - want))
        ref = float(np.linalg.norm(want))
        bound = F64_RTOL * ref + F64_FLOOR * max(
            float(np.linalg.norm(w1)), step_scale)
        tensors.append(TensorError(name, err, F64_RTOL * ref, bound, ref))
    _check_bounds(layout, tensors, "differ from torch float64",
                  lambda t: f"error {t.weft:.3e}, relative "
                  f"{t.weft / max(t.reference, 1e-300):.1e} (bound "
                  f"{t.bound:.3e})")
    return tensors


def sgd_references(model: torch.nn.Module, batch, micro_batches: int,
                   lr: float = 0.1):
    """((loss, changes) in float64, (loss, changes) in float32, (ambiguity
    {name: ||dW_64(flipped) - dW_64||}, undecidable count)) of one plain SGD
    step on the micro-batch split; cache it across layouts with the same
    M."""
    ref64 = sgd_step(model, batch, micro_batches, lr, torch.float64)
    recorder = kinks.Recorder()
    ref32 = sgd_step(model, batch, micro_batches, lr, torch.float32, recorder)
    flipper = kinks.Flipper(recorder.inputs, KINK_BAND)
    _, flipped = sgd_step(model, batch, micro_batches, lr, torch.float64,
                          flipper)
    ambiguity = {n: float(np.linalg.norm(flipped[n] - d))
                 for n, d in ref64[1].items()}
    return ref64, ref32, (ambiguity, flipper.undecidable)


def float64_losses(model: torch.nn.Module, batches, micro_batches: int,
                   make_optimizer: Callable) -> List[float]:
    """Oracle (c)'s reference: per-step losses of torch training in float64
    on the micro-batch split (`make_optimizer(parameters)` builds the
    optimizer)."""
    return training_losses(model, batches, micro_batches, make_optimizer,
                           torch.float64)


def training_losses(model: torch.nn.Module, batches, micro_batches: int,
                    make_optimizer: Callable, dtype: torch.dtype,
                    autocast: Optional[torch.dtype] = None,
                    device: str = "cpu",
                    low_precision_params: bool = False) -> List[float]:
    """Per-step losses (nats for cross-entropy) of torch training a copy of
    `model` in `dtype` on `device` on the micro-batch split; with
    `autocast` (bf16) the forwards run under torch.autocast(device,
    autocast): the drift torch's own mixed precision shows, which bounds
    weft's (test_mixed_precision, test_cuda_backend). With
    `low_precision_params` as well, each step runs on the parameters
    rounded to `autocast` and the optimizer updates the unrounded `dtype`
    masters (Micikevicius et al. 2018, the recipe weft's --precision and
    Megatron-LM follow; autocast alone keeps every parameter in `dtype`,
    so a norm weight's small updates reach the forward there and not in
    16-bit parameters)."""
    model = copy.deepcopy(model).to(dtype).to(device)
    optimizer = make_optimizer(model.parameters())
    losses = []
    for batch in batches:
        batch = [t.to(device) for t in _cast(batch, dtype)]
        masters = []
        if low_precision_params:
            with torch.no_grad():
                for p in model.parameters():
                    masters.append(p.detach().clone())
                    p.copy_(p.to(autocast).to(dtype))
        losses.append(microbatch_step(model, batch, micro_batches, autocast,
                                      device))
        with torch.no_grad():
            for p, master in zip(model.parameters(), masters):
                p.copy_(master)
        optimizer.step()
    return losses


def autocast_drift(model: torch.nn.Module, batches, micro_batches: int,
                   make_optimizer: Callable, device: str = "cpu",
                   low_precision_params: bool = False):
    """The bf16 oracle's reference and bound: (torch float64's per-step
    losses on the CPU as a numpy array, the largest |loss error| of torch
    float32 under torch.autocast(device, bfloat16) from them, with the
    parameters rounded to bf16 for each step when `low_precision_params`:
    training_losses). weft's bf16 error is bounded by a multiple of that
    drift (test_mixed_precision, test_llama, weft.gpu_check)."""
    ref = np.array(training_losses(model, batches, micro_batches,
                                   make_optimizer, torch.float64))
    bf16 = np.array(training_losses(
        model, batches, micro_batches, make_optimizer, torch.float32,
        torch.bfloat16, device=device,
        low_precision_params=low_precision_params))
    return ref, np.abs(bf16 - ref).max()
