"""The CUDA backend (issue 15, in progress): `weft-run --device cuda`.

What exists: device memory, compute/comm/copy streams and events, cuBLASLt
GEMMs, cuDNN convolutions and batch norm, and weft's own kernels for every
other kernel of the CPU's (their math shared with the CPU kernels), in
f32, bf16 and f16; several ranks stage transfers through pinned host
memory; errors name the flag, the kernel, the dtype.

The tests of the device path run twice: on a GPU ("gpu": skipped, with a
message, where none is, as in CI), and on the CUDA emulator ("emulator":
weft-run-cuda-emulator, the same backend with its kernels and its
cuBLASLt, cuDNN and NCCL calls run on the CPU, NCCL over MPI;
runtime/backends/cuda/emulator/Emulator.h), which
checks the backend's code everywhere but not the hardware (nor cuDNN's
fused attention, which it lacks). The error paths run everywhere.
"""

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from conftest import BUILD, plan_view, run, tool
from test_mixed_precision import model_and_batches  # noqa: F401 (fixture)
from test_weft_run import gpt_plan  # noqa: F401 (fixture)
from weft import oracle
from weft.examples.common import export

REPO = pathlib.Path(__file__).resolve().parents[2]


def gpu_count():
    """The GPUs nvidia-smi lists (0 without it)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return len(listed.stdout.splitlines()) if listed.returncode == 0 else 0


def gpu_present():
    return gpu_count() > 0


def cuda_weft_run(where, unrun):
    """The weft-run that runs --device cuda on `where`: "gpu" (skips, saying
    `unrun` was compiled, not run, without one) or "emulator" (skips where
    the build had no CUDA toolkit headers)."""
    if where == "gpu":
        if not gpu_present():
            pytest.skip(f"no GPU on this machine: {unrun} compiled, not run "
                        "(the emulator half ran it on the CPU)")
        return tool("weft-run")
    emulator = BUILD / "bin" / "weft-run-cuda-emulator"
    if not emulator.exists():
        pytest.skip("built without the CUDA toolkit's headers: no emulator")
    return str(emulator)


on_cuda = pytest.mark.parametrize("where", ["gpu", "emulator"])


@pytest.fixture(scope="module")
def plan(gpt_plan):
    return gpt_plan


def test_unknown_device_is_an_error(plan):
    result = run([tool("weft-run"), str(plan), "--device", "tpu"])
    assert result.returncode == 1
    assert "--device: 'tpu' is not cpu or cuda" in result.stderr


def test_cpu_device_is_the_default(plan):
    ran = [run([tool("weft-run"), str(plan), *flags]).stdout
           for flags in ([], ["--device", "cpu"])]
    assert "step 1/1: loss" in ran[0]
    assert ran[0].split("loss")[1].split()[0] == \
        ran[1].split("loss")[1].split()[0]


def test_cuda_without_a_gpu_names_the_flag(plan):
    if gpu_present():
        pytest.skip("a GPU is present: the no-device path is not reachable")
    result = run([tool("weft-run"), str(plan), "--device", "cuda"])
    assert result.returncode == 1
    # Built with CUDA: the runtime finds no device; without: says so.
    assert ("--device cuda: no CUDA device (cudaGetDeviceCount: "
            in result.stderr or
            "--device cuda: this weft-run was built without CUDA"
            in result.stderr), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@on_cuda
def test_cuda_refuses_a_dtype_it_lacks(tmp_path, where):
    """An f64 plan (the CPU runs them) is refused before it runs, in one
    line naming the instruction, the kernel and the dtype."""
    weft_run = cuda_weft_run(where, "the CUDA backend's device path was")
    model = tmp_path / "f64.onnx"
    export(torch.nn.Linear(8, 4).double(), (torch.randn(2, 8).double(),),
           ["x"], str(model))
    plan = tmp_path / "f64.json"
    out = run([tool("weftc"), str(model), "--forward-only", "-o", str(plan)])
    assert out.returncode == 0, out.stderr
    result = run([weft_run, str(plan), "--device", "cuda"])
    assert result.returncode == 1
    assert "(kernel gemm) has an operand of dtype f64; --device cuda " \
        "computes in f32, bf16 and f16" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@on_cuda
def test_cuda_resnet_first_step_equals_the_cpu_backend(models_dir, tmp_path,
                                                       where):
    """resnet18's first training step (cuDNN convolutions and batch norm,
    max pooling, the loss): its loss within 1e-5 of the CPU backend's. Only
    the first step: batch-norm CNNs drift apart in float32 over steps
    (docs/numerics.md), so later losses are no oracle."""
    weft_run = cuda_weft_run(where, "cuDNN convolution, batch norm and the "
                             "pooling kernels were")
    plan = tmp_path / "resnet.json"
    out = run([tool("weftc"), str(models_dir / "resnet.onnx"), "-o",
               str(plan)])
    assert out.returncode == 0, out.stderr
    losses = {}
    for device in ("cpu", "cuda"):
        log = tmp_path / f"{device}.jsonl"
        out = run([weft_run if device == "cuda" else tool("weft-run"),
                   str(plan), "--device", device, "--log-json", str(log)])
        assert out.returncode == 0, out.stderr
        losses[device] = json.loads(log.read_text().splitlines()[0])["loss"]
    assert abs(losses["cuda"] - losses["cpu"]) <= 1e-5 * abs(losses["cpu"])


class Mlp(torch.nn.Module):
    """Kernels the CUDA backend has: matmul, add (a broadcast bias), gelu,
    relu, mul, sub."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 256)
        self.out = torch.nn.Linear(256, 32)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc(x))
        y = torch.relu(self.out(h))
        return y * y - y


@on_cuda
@pytest.mark.parametrize("precision", ["f32", "bf16", "f16"])
def test_cuda_forward_tracks_float64(tmp_path, precision, where):
    """The float64 oracle (docs/numerics.md, form (b)): torch's float64
    forward is the reference, and the GPU's error from it stays within 10x
    the CPU backend's own at the same precision (the same rounding points;
    another GEMM summation order and math library), plus float32's rounding
    of the output, which no backend beats."""
    weft_run = cuda_weft_run(where, "the CUDA kernels (cuBLASLt GEMM, "
                             "elementwise, casts) were")
    torch.manual_seed(0)
    x = torch.randn(16, 64)
    mlp = Mlp()
    model = tmp_path / "mlp.onnx"
    export(mlp, (x,), ["x"], str(model))
    plan = tmp_path / "plan.json"
    out = run([tool("weftc"), str(model), f"--precision={precision}",
               "--forward-only", "-o", str(plan)])
    assert out.returncode == 0, out.stderr
    data = tmp_path / "data" / "step_0"
    data.mkdir(parents=True)
    (data / "x.pb").write_bytes(
        numpy_helper.from_array(x.numpy(), "x").SerializeToString())
    outputs = {}
    for device in ("cpu", "cuda"):
        dump = tmp_path / device
        out = run([weft_run, str(plan), "--data",
                   str(tmp_path / "data"), "--device", device,
                   "--dump-outputs", str(dump)])
        assert out.returncode == 0, out.stderr
        (path,) = (dump / "step_0").glob("*.pb")
        outputs[device] = numpy_helper.to_array(
            onnx.load_tensor(str(path))).astype(np.float64)
    with torch.no_grad():
        ref = mlp.double()(x.double()).numpy()
    cpu, cuda = (np.abs(outputs[d] - ref).max() for d in ("cpu", "cuda"))
    eps32 = np.finfo(np.float32).eps * np.abs(ref).max()
    assert cuda <= 10 * cpu + eps32, (cuda, cpu)


MICRO_BATCHES = 2


@pytest.fixture(scope="module")
def gpt_and_batches(model_and_batches):
    """test_mixed_precision's gpt (2 layers, h 64) and its first 4 steps."""
    model, path, batches = model_and_batches
    return model, path, batches[:4]


def _weft_losses(gpt_and_batches, workdir, device, precision="f32",
                 weft_run=None, run_flags=()):
    _, path, batches = gpt_and_batches
    return np.array(oracle.weft_train(
        oracle.Tools(tool("weftc"), weft_run or tool("weft-run")), path,
        batches,
        ["tokens", "targets"], workdir, micro_batches=MICRO_BATCHES,
        flags=[f"--precision={precision}"],
        run_flags=["--device", device, *run_flags])[0])


@on_cuda
def test_cuda_gpt_training_equals_the_cpu_backend(gpt_and_batches, tmp_path,
                                                  where):
    """Four AdamW steps of the gpt example (embedding gather and its
    scatter-add, layer norm, attention's softmax, gelu, dropout, the
    cross-entropy loss) on the GPU: the CPU backend's losses within 1e-5
    (f32; the issue's bound: summation orders and math libraries differ,
    dropout masks do not)."""
    weft_run = cuda_weft_run(where, "the gpt training step's CUDA kernels "
                             "were")
    cpu = _weft_losses(gpt_and_batches, tmp_path / "cpu", "cpu")
    cuda = _weft_losses(gpt_and_batches, tmp_path / "cuda", "cuda",
                        weft_run=weft_run)
    assert np.abs(cuda - cpu).max() <= 1e-5 * np.abs(cpu).max(), (cuda, cpu)
    # The device holds at least the planned arena and the libraries'
    # workspaces, reported apart (the rest is the allocators' rounding and
    # lazily loaded kernel code, which bench/gpu_gpt.py reports).
    record = json.loads(
        (tmp_path / "cuda" / "log.jsonl").read_text().splitlines()[-1])
    assert record["workspace_bytes"] >= 32 << 20
    assert record["device_used_bytes"] >= \
        record["arena_bytes"] + record["workspace_bytes"], record
    if where == "emulator":  # no lazily loaded code: exactly those bytes,
        # up to cudaMalloc's 256-byte rounding of the arena and the scratch
        assert record["device_used_bytes"] - record["arena_bytes"] - \
            record["workspace_bytes"] < 512, record


def _torch_bf16_drift(gpt_and_batches, where):
    """(torch float64's losses, torch autocast bf16's largest error from
    them) with AdamW, torch on the GPU for "gpu" (skipped without CUDA
    torch), on the CPU for the emulator."""
    device = "cuda" if where == "gpu" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA torch on this machine: torch autocast bf16 on "
                    "the GPU is the oracle")
    model, _, batches = gpt_and_batches

    def adamw(p):
        return torch.optim.AdamW(p, lr=1e-3)
    return oracle.autocast_drift(model, batches, MICRO_BATCHES, adamw, device)


@on_cuda
def test_cuda_bf16_gpt_tracks_torch_autocast(gpt_and_batches, tmp_path,
                                             where):
    """bf16 on the GPU against torch autocast bf16 on the same GPU (on the
    emulator: on the CPU): weft's loss error from torch float64 within 4x
    torch's own bf16 drift from it (test_mixed_precision's bound, measured
    there on the CPU backend)."""
    weft_run = cuda_weft_run(where, "bf16 on the CUDA backend was")
    ref, drift = _torch_bf16_drift(gpt_and_batches, where)
    weft = _weft_losses(gpt_and_batches, tmp_path, "cuda", "bf16",
                        weft_run=weft_run)
    assert np.abs(weft - ref).max() <= 4 * drift, (weft, drift, ref)


@on_cuda
def test_cuda_tf32_gpt_stays_within_torch_bf16_drift(gpt_and_batches, tmp_path,
                                                     where):
    """--allow-tf32: the f32 plan's GEMMs multiply TF32-rounded operands,
    so its losses leave the CPU backend's (f32 ones equal them to the bit
    on the emulator), and its error from torch float64 stays within torch
    autocast bf16's own drift: TF32 rounds only the products' operands,
    to 10 mantissa bits, where bf16 autocast rounds them and the stored
    activations to 7."""
    weft_run = cuda_weft_run(where, "TF32 on the CUDA backend was")
    ref, drift = _torch_bf16_drift(gpt_and_batches, where)
    tf32 = _weft_losses(gpt_and_batches, tmp_path / "tf32", "cuda",
                        weft_run=weft_run, run_flags=["--allow-tf32"])
    cpu = _weft_losses(gpt_and_batches, tmp_path / "cpu", "cpu")
    assert not np.array_equal(tf32, cpu), (tf32, "TF32 did not apply")
    assert np.abs(tf32 - ref).max() <= drift, (tf32, drift, ref)
    record = json.loads(
        (tmp_path / "tf32" / "log.jsonl").read_text().splitlines()[-1])
    assert record["allow_tf32"] is True


def test_allow_tf32_on_the_cpu_names_the_flag(plan):
    result = run([tool("weft-run"), str(plan), "--allow-tf32"])
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        "--allow-tf32 needs --device cuda: TF32 is a tensor-core mode, the "
        "CPU backend computes in f32"), result.stderr


@on_cuda
def test_cuda_trace_times_each_kernel_by_events(plan, tmp_path, where):
    """--trace on the CUDA backend times each instruction by events around
    it (no device synchronisation per instruction): one kernel slice per
    instruction per step, in order, and bench/trace_kernels.py reads the
    step by kernel."""
    weft_run = cuda_weft_run(where, "event timing was")
    trace = tmp_path / "trace.json"
    result = run([weft_run, str(plan), "--device", "cuda", "--steps", "2",
                  "--trace", str(trace)])
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    instructions = plan_view(plan, 0)["ranks"][0]["instructions"]
    kernels = [e for e in events if e["tid"] == 2]
    assert [e["name"] for e in kernels] == \
        [i["kernel"] for i in instructions] * 2
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in kernels)
    table = tmp_path / "kernels.json"
    breakdown = run([sys.executable, str(REPO / "bench" / "trace_kernels.py"),
                     str(trace), "--json", str(table)])
    assert breakdown.returncode == 0, breakdown.stderr
    rows = json.loads(table.read_text())["kernels"]
    assert sum(r["count"] for r in rows) == len(instructions)


@on_cuda
def test_cuda_an_arena_over_the_device_is_an_error(plan, tmp_path, where):
    """A plan whose arena the device cannot hold fails before any step, in
    one line naming the bytes and the device."""
    weft_run = cuda_weft_run(where, "the device arena's allocation was")
    big = json.loads(plan.read_text())
    big["programs"][0]["arena_bytes"] = 1 << 40  # 1 TiB: no GPU has it
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    result = run([weft_run, str(path), "--device", "cuda"])
    assert result.returncode == 1
    assert "cannot allocate an arena of 1099511627776 bytes on cuda:0" in \
        result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cuda_several_ranks_without_a_gpu_name_the_flag(plan):
    """Every rank says so, before touching a device."""
    if gpu_present():
        pytest.skip("a GPU is present: the no-device path is not reachable")
    result = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                  "2", tool("weft-run"), str(plan), "--device", "cuda"])
    assert result.returncode != 0
    assert ("--device cuda: no CUDA device" in result.stderr or
            "--device cuda: this weft-run was built without CUDA"
            in result.stderr), result.stderr


TWO_RANKS = pytest.mark.parametrize("layout", [
    dict(stages=2, micro_batches=2), dict(data_parallel=2),
    dict(data_parallel=2, flags=["--zero-stage=3"]),
    dict(tensor_parallel=2, flags=["--sequence-parallel"])],
    ids=["pipeline", "ddp", "zero3", "tp-sp"])


def _two_rank_losses(gpt_and_batches, workdir, weft_run, layout,
                     cuda_flags=()):
    """{device: losses} of the layout on the CPU and on `weft_run`'s CUDA
    backend (with `cuda_flags`), and the CUDA run's last log record."""
    _, path, batches = gpt_and_batches
    flags = {"cpu": [], "cuda": list(cuda_flags)}
    losses = {device: np.array(oracle.weft_train(
        oracle.Tools(tool("weftc"), runner), path, batches,
        ["tokens", "targets"], workdir / device,
        run_flags=["--device", device, *flags[device]], **layout)[0])
        for device, runner in (("cpu", tool("weft-run")),
                               ("cuda", weft_run))}
    record = json.loads(
        (workdir / "cuda" / "log.jsonl").read_text().splitlines()[-1])
    return losses, record


@on_cuda
@TWO_RANKS
def test_cuda_ranks_sharing_a_gpu_equal_the_cpu_backend(gpt_and_batches,
                                                        tmp_path, layout,
                                                        where):
    """Two ranks staging transfers and collectives through pinned host
    memory and MPI, as ranks sharing one GPU must (NCCL refuses that;
    --stage-transfers forces it on a node of several): the CPU backend's
    losses within 1e-5, as one rank. ZeRO-3 gathers and writes
    back parameter shards; tensor and sequence parallelism run the
    vocabulary-parallel loss and embedding kernels."""
    weft_run = cuda_weft_run(where, "staged GPU transfers were")
    losses, record = _two_rank_losses(gpt_and_batches, tmp_path, weft_run,
                                      layout, ["--stage-transfers"])
    assert record["communicator"] == "staged", record
    assert np.abs(losses["cuda"] - losses["cpu"]).max() <= \
        1e-5 * np.abs(losses["cpu"]).max(), losses


@on_cuda
@TWO_RANKS
def test_cuda_ranks_on_distinct_gpus_equal_the_cpu_backend(
        gpt_and_batches, tmp_path, layout, where, monkeypatch):
    """Two ranks on two GPUs: transfers and collectives on NCCL (a
    communicator per mesh axis split from the world's, a two-rank one per
    send/receive channel, each on its own stream): the CPU backend's
    losses within 1e-5. On the emulator: two emulated GPUs and its NCCL
    over MPI, posted when NCCL would enqueue and completed when waited
    for."""
    weft_run = cuda_weft_run(where, "the NCCL communicator was")
    if where == "gpu" and gpu_count() < 2:
        pytest.skip("fewer than 2 GPUs on this machine: NCCL between "
                    "distinct GPUs was compiled, not run")
    monkeypatch.setenv("WEFT_CUDA_EMULATOR_DEVICES", "2")
    losses, record = _two_rank_losses(gpt_and_batches, tmp_path, weft_run,
                                      layout)
    assert record["communicator"] == "nccl", record
    assert np.abs(losses["cuda"] - losses["cpu"]).max() <= \
        1e-5 * np.abs(losses["cpu"]).max(), losses
