"""The CUDA backend (issue 15, in progress): `weft-run --device cuda`.

What exists: device memory, a copy and a compute stream, and errors that
name the flag. No kernel runs on the GPU yet, so a plan is refused at its
first kernel. Without a GPU (CI, and any session without one) the GPU
tests skip with a message; the error paths run everywhere.
"""

import shutil
import subprocess

import pytest

from conftest import run, tool
from test_weft_run import gpt_plan  # noqa: F401 (fixture)


def gpu_present():
    smi = shutil.which("nvidia-smi")
    return bool(smi) and subprocess.run(
        [smi, "-L"], capture_output=True).returncode == 0


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


def test_cuda_refuses_a_plan_before_running_half_of_it(plan):
    if not gpu_present():
        pytest.skip("no GPU on this machine: the CUDA backend's device path "
                    "was not run")
    result = run([tool("weft-run"), str(plan), "--device", "cuda"])
    assert result.returncode == 1
    assert "kernel" in result.stderr
