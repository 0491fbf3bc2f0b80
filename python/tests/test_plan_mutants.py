"""Mutated plans never crash weft-run (issue 12).

Of 400 mutated plans, 19 once crashed weft-run (a transpose with no inputs
or a perm out of range, gemm and adamw with swapped buffers, a layer norm
writing past the arena's end). The plan loader now checks every compute
instruction against the kernel specification table (KernelSpec.h): a mutant
either runs or is refused with one line naming the instruction and exits 1.
Never a signal, a hang or a page of output.

The mutations are those of that fuzz run, drawn from a fixed seed: operands
swapped, replaced by another buffer or dropped; an attribute set to an edge
value (negative, zero, huge, the wrong kind); a buffer's shape changed with
its byte count kept consistent; outputs exchanged between instructions.
WEFT_PLAN_MUTANTS sets the number per model (default 120).
"""

import collections
import copy
import json
import os
import random

import pytest

from conftest import run, tool

MUTANTS = int(os.environ.get("WEFT_PLAN_MUTANTS", "120"))

DTYPE_SIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
              "i16": 2, "i8": 1, "u8": 1, "u16": 2, "u32": 4, "u64": 8,
              "bool": 1}


def _edge(value, rng):
    """An edge value for an attribute of the kind of `value`."""
    if isinstance(value, bool):
        return rng.choice([not value, 1, "true"])
    if isinstance(value, int):
        return rng.choice([-1, 0, value + 1, value - 1, 2**62, -2**63, 1.5])
    if isinstance(value, float):
        return rng.choice([-1.0, 0.0, 1.0, 1e300, -1e300, "nan"])
    if isinstance(value, str):
        return rng.choice(["", "bogus", 3])
    if isinstance(value, list):
        out = list(value)
        choice = rng.randrange(3)
        if choice == 0 and out:
            out[rng.randrange(len(out))] = rng.choice([-1, 0, 2**62, 7])
        elif choice == 1:
            out.append(rng.choice([0, 1, 2**40]))
        else:
            out = out[:-1]
        return out
    return None


def mutate(plan, rng, kernels=None):
    """One mutation of one compute instruction (or a buffer it uses); with
    `kernels`, of an instruction running one of them. The plans have one
    rank: its program is programs[0]."""
    program = plan["programs"][0]
    buffers = program["buffers"]
    computes = [i for i in program["instructions"] if i["op"] == "compute"]
    inst = rng.choice([i for i in computes
                       if kernels is None or i["kernel"] in kernels])
    kind = rng.randrange(6)
    operands = inst["inputs"] + inst["outputs"]
    if kind == 0 and len(inst["inputs"]) >= 2:
        a, b = rng.sample(range(len(inst["inputs"])), 2)
        inst["inputs"][a], inst["inputs"][b] = inst["inputs"][b], inst["inputs"][a]
        return f"swap inputs {a},{b} of {inst['kernel']}"
    if kind == 1:
        side = rng.choice(["inputs", "outputs"])
        if inst[side]:
            k = rng.randrange(len(inst[side]))
            inst[side][k] = rng.randrange(len(buffers))
            return f"replace {side}[{k}] of {inst['kernel']}"
    if kind == 2:
        side = rng.choice(["inputs", "outputs"])
        if inst[side]:
            inst[side].pop(rng.randrange(len(inst[side])))
            return f"drop one of {side} of {inst['kernel']}"
    if kind == 3 and inst["attrs"]:
        name = rng.choice(sorted(inst["attrs"]))
        inst["attrs"][name] = _edge(inst["attrs"][name], rng)
        return f"attribute {name} of {inst['kernel']}"
    if kind == 4 and operands:
        buf = buffers[rng.choice(operands)]
        if buf["shape"]:
            d = rng.randrange(len(buf["shape"]))
            buf["shape"][d] = max(0, buf["shape"][d] + rng.choice([-1, 1]))
            count = 1
            for s in buf["shape"]:
                count *= s
            buf["bytes"] = count * DTYPE_SIZE[buf["dtype"]]
            return f"reshape buffer {buf['id']} of {inst['kernel']}"
    other = rng.choice(computes)
    inst["outputs"], other["outputs"] = other["outputs"], inst["outputs"]
    return f"exchange outputs of {inst['kernel']} and {other['kernel']}"


@pytest.fixture(scope="module")
def plans(weftc, models_dir, tmp_path_factory):
    """gpt (embedding, attention, layer norm, AdamW), gpt with fused
    attention (attention, attention_grad) and unet (conv, conv_transpose,
    pooling, batch norm, resize, concat), one rank each."""
    workdir = tmp_path_factory.mktemp("mutants")
    out = {}
    for name, flags in [("gpt", []), ("gpt-flash", ["--flash-attention"]),
                        ("unet", ["--optimizer=sgd", "--momentum=0.9"])]:
        path = workdir / f"{name}.json"
        model = models_dir / f"{name.split('-')[0]}.onnx"
        result = run([weftc, str(model), "-o", str(path), *flags])
        assert result.returncode == 0, result.stderr
        out[name] = json.loads(path.read_text())
    return out


# gpt-flash: the mutants hit fused attention's two kernels alone.
@pytest.mark.parametrize("name", ["gpt", "gpt-flash", "unet"])
def test_mutated_plans_run_or_are_refused_in_one_line(plans, name, tmp_path):
    rng = random.Random(12)
    outcomes = collections.Counter()
    kernels = {"attention", "attention_grad"} if name == "gpt-flash" else None
    for n in range(MUTANTS):
        plan = copy.deepcopy(plans[name])
        what = mutate(plan, rng, kernels)
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        result = run([tool("weft-run"), str(path), "--steps", "1",
                      "--timeout", "60"], timeout=120)
        assert result.returncode in (0, 1), \
            f"mutant {n} ({what}) exited {result.returncode}: {result.stderr}"
        if result.returncode == 1:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("weft-run: "), \
                f"mutant {n} ({what}): {result.stderr}"
        outcomes["refused" if result.returncode else "ran"] += 1
    print(f"{name}: {MUTANTS} mutants, {dict(outcomes)}")
    # The loader must refuse most mutants: a checker that accepts
    # everything would pass the exit-code assertion above by luck.
    assert outcomes["refused"] >= MUTANTS // 2
