"""Transfers and collectives staged through host buffers
(`weft-run --stage-transfers`, StagedCommunicator.cpp): the path the CUDA
backend takes over MPI, run on the CPU backend so it is tested without a
GPU. Staging copies bytes and changes no arithmetic, so every layout's
losses and trained weights must equal the direct path's bit for bit:
pipeline sends and receives, data-parallel all-reduce, ZeRO's
reduce-scatter and all-gather, tensor and sequence parallelism's
collectives (parts strided in the whole), f16's overflow maximum, and
pipeline transfers in flight beside data-parallel collectives.
"""

import numpy as np
import pytest

from conftest import tool
from test_mixed_precision import model_and_batches  # noqa: F401 (fixture)
from weft import oracle

LAYOUTS = {
    "pipeline": dict(stages=2, micro_batches=2),
    "ddp": dict(data_parallel=2),
    "zero-3": dict(data_parallel=2, flags=[
        "--zero-stage=3", "--optimizer-shard-threshold=0"]),
    "tensor-sequence": dict(tensor_parallel=2,
                            flags=["--sequence-parallel"]),
    "f16-pipeline": dict(stages=2, micro_batches=2,
                         flags=["--precision=f16"]),
    # Transfers and collectives in flight together: their tags count from
    # 0 each, so the staging keeps them apart.
    "pipeline-ddp": dict(stages=2, micro_batches=2, data_parallel=2),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_staged_transfers_change_nothing(model_and_batches, tmp_path,
                                         layout):
    _, path, batches = model_and_batches
    tools = oracle.Tools(tool("weftc"), tool("weft-run"))
    runs = {}
    for staged in (False, True):
        kwargs = dict(LAYOUTS[layout])
        runs[staged] = oracle.weft_train(
            tools, path, batches[:2], ["tokens", "targets"],
            tmp_path / str(staged), save=True,
            run_flags=["--stage-transfers"] if staged else [], **kwargs)
    (direct, direct_weights), (staged, staged_weights) = runs[False], \
        runs[True]
    assert staged == direct
    assert staged_weights.keys() == direct_weights.keys()
    for name, value in direct_weights.items():
        np.testing.assert_array_equal(staged_weights[name], value,
                                      err_msg=name)
