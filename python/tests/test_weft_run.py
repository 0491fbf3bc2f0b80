"""weft-run behaviour: schema-valid plans, the trace, synthetic data, and one
clear line (exit 1) for every kind of bad plan, weight or data file."""

import json

import jsonschema
import pytest

from conftest import REPO, plan_view, run, tool

SCHEMA = json.loads((REPO / "docs" / "plan.schema.json").read_text())


@pytest.fixture(scope="module")
def gpt_plan(weftc, models_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "gpt.json"
    result = run([weftc, str(models_dir / "gpt.onnx"), "-o", str(path)])
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("name", ["gpt", "resnet", "unet"])
def test_example_plans_match_the_schema(name, weftc, models_dir, tmp_path):
    path = tmp_path / "plan.json"
    result = run([weftc, str(models_dir / f"{name}.onnx"), "-o", str(path)])
    assert result.returncode == 0, result.stderr
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_trace_has_one_slice_per_instruction(gpt_plan, tmp_path):
    trace = tmp_path / "trace.json"
    result = run([tool("weft-run"), str(gpt_plan), "--steps", "2",
                  "--trace", str(trace)])
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    instructions = plan_view(gpt_plan, 0)["ranks"][0]["instructions"]
    kernels = [e for e in events if e["tid"] == 2]
    assert len(kernels) == 2 * len(instructions)
    assert [e["name"] for e in kernels[:len(instructions)]] == \
        [i["kernel"] for i in instructions]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    # Thread 0 holds the task slices of weftc --timeline: F0 (forward of
    # micro-batch 0), B0, U (the update), once per step.
    assert [e["name"] for e in events if e["tid"] == 0] == ["F0", "B0", "U"] * 2


def test_synthetic_data_is_a_function_of_the_seed(gpt_plan, tmp_path):
    def losses(seed):
        log = tmp_path / f"log{seed}.jsonl"
        result = run([tool("weft-run"), str(gpt_plan), "--data", "synthetic",
                      "--seed", str(seed), "--steps", "2", "--log-json", str(log)])
        assert result.returncode == 0, result.stderr
        records = [json.loads(line) for line in log.read_text().splitlines()]
        assert [r["step"] for r in records] == [1, 2]
        for r in records:
            assert set(r) >= {"step", "loss", "seconds", "samples_per_s",
                              "arena_bytes", "peak_bytes"}
            assert r["peak_bytes"] == r["arena_bytes"]
        return [r["loss"] for r in records]

    first = losses(7)
    assert first == losses(7)          # same seed: same batches
    assert first != losses(8)          # another seed: other batches
    assert first[0] != first[1]        # each step draws a new batch


def mutate(plan_path, tmp_path, edit):
    plan = json.loads(plan_path.read_text())
    edit(plan)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(plan))
    return path


# The plan has one rank, whose program is programs[0].
def program(plan):
    return plan["programs"][0]


def first_param(plan):
    return program(plan)["params"][0]


def buffer_of(plan, named):
    return program(plan)["buffers"][named["buffer"]]


BAD_PLANS = {
    "unknown version": (lambda p: p.update(version=3),
                        "version: version 3 is not supported"),
    "version 1": (lambda p: p.update(version=1),
                  "version: version 1 is not supported (this weft-run reads "
                  "version 2; compile the model again with this weftc)"),
    "unknown kernel": (lambda p: program(p)["instructions"][0].update(kernel="frobnicate"),
                       "programs[0].instructions[0].kernel: unknown kernel 'frobnicate'"),
    "missing field": (lambda p: program(p).pop("arena_bytes"),
                      "programs[0]: missing field 'arena_bytes'"),
    "buffer past arena": (lambda p: program(p)["buffers"][0].update(offset=1 << 40),
                          "programs[0].buffers[0].offset:"),
    "wrong byte count": (lambda p: program(p)["buffers"][0].update(bytes=3),
                         "programs[0].buffers[0].bytes: 3 bytes, but"),
    "unknown dtype": (lambda p: program(p)["buffers"][0].update(dtype="f8"),
                      "programs[0].buffers[0].dtype: unknown dtype 'f8'"),
    "dangling buffer id": (lambda p: program(p)["instructions"][0]["inputs"].append(99999),
                           "programs[0].instructions[0].inputs[2]: buffer 99999 does not exist"),
    "missing weight": (lambda p: first_param(p).update(name="no.such.weight"),
                       "weight 'no.such.weight': no such initializer"),
    # The first parameter read from an initializer of another shape (a
    # buffer reshaped in the plan is refused earlier, by the kernel table).
    "weight shape mismatch": (
        lambda p: first_param(p).update(name=next(
            q["name"] for q in program(p)["params"]
            if buffer_of(p, q)["shape"] != buffer_of(p, first_param(p))["shape"])),
        "the plan expects [512x128] f32, "),
    "buffer reshaped under its kernel": (
        lambda p: buffer_of(p, first_param(p)).update(
            shape=list(reversed(buffer_of(p, first_param(p))["shape"]))),
        "kernel gather: output 0 is [8x64x128] f32, gather writes "
        "[8x64x512] f32"),
    "missing model file": (lambda p: p["model"].update(path="/nonexistent/model.onnx"),
                           "model.path: cannot read '/nonexistent/model.onnx'"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLANS))
def test_bad_plans_are_rejected_with_the_field_named(case, gpt_plan, tmp_path):
    edit, message = BAD_PLANS[case]
    result = run([tool("weft-run"), str(mutate(gpt_plan, tmp_path, edit))])
    assert result.returncode == 1
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_bad_json_and_data_are_rejected(gpt_plan, tmp_path):
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    result = run([tool("weft-run"), str(garbage)])
    assert result.returncode == 1 and "not valid JSON" in result.stderr

    result = run([tool("weft-run"), str(gpt_plan), "--data", str(tmp_path / "empty")])
    assert result.returncode == 1
    assert "missing" in result.stderr and "step_0/tokens.pb" in result.stderr

    result = run([tool("weft-run"), str(gpt_plan), "--steps", "two"])
    assert result.returncode == 1 and "--steps: 'two'" in result.stderr


def test_missing_external_weight_file_is_named(weftc, models_dir, tmp_path):
    import onnx
    model = onnx.load(str(models_dir / "gpt.onnx"))
    path = tmp_path / "gpt.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)
    plan = tmp_path / "plan.json"
    assert run([weftc, str(path), "-o", str(plan)]).returncode == 0
    (tmp_path / "weights.bin").unlink()
    result = run([tool("weft-run"), str(plan)])
    assert result.returncode == 1
    assert "weights.bin' cannot be read" in result.stderr


def test_trace_flops_are_the_compilers(gpt_plan, weftc, models_dir, tmp_path):
    """Each kernel slice carries the kernel table's FLOPs and bytes; over
    the forward pass they add up to weftc's summary of the model, which
    counts with the compiler's cost model (CostOpInterface)."""
    trace = tmp_path / "trace.json"
    assert run([tool("weft-run"), str(gpt_plan), "--trace",
                str(trace)]).returncode == 0
    kernels = [e for e in json.loads(trace.read_text())["traceEvents"]
               if e["tid"] == 2]
    instructions = plan_view(gpt_plan, 0)["ranks"][0]["instructions"]
    # The fused loss (weft-fold-loss-grad) runs in the forward and computes
    # the loss's gradient too: 6 of its 10 FLOPs per score are the loss's.
    def loss_share(event, instruction):
        flops = event["args"]["flops"]
        fused = instruction.get("kernel") == "softmax_cross_entropy_and_grad"
        return flops * 6 // 10 if fused else flops
    forward = sum(loss_share(e, i) for e, i in zip(kernels, instructions)
                  if i["phase"] == "forward")
    summary = run([weftc, str(models_dir / "gpt.onnx"), "--emit=summary-json"])
    assert forward == json.loads(summary.stdout)["flops"]
    assert all(e["args"]["bytes"] > 0 for e in kernels)
