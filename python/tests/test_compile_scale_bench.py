"""bench/compile_scale.py's harness at a tiny shape: each compile's
figures are measured (wall, peak RSS, plan bytes, weft-run --check), the
plan grows neither with M (task bodies: each micro-batch's work written
once, the order as (body, micro-batch) pairs) nor with the tensor and
data-parallel degrees (one program per stage), and a compile over the
memory cap or the time limit is reported as such rather than waited out or
mistaken for a weftc error."""

import importlib.util
import subprocess

from conftest import BUILD, REPO

spec = importlib.util.spec_from_file_location(
    "compile_scale", REPO / "bench" / "compile_scale.py")
compile_scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compile_scale)

SMALL = (2, 64, 4, 32, 256)  # layers, hidden, heads, seq, vocab


def test_growth_rows_are_measured(tmp_path, capsys):
    rows = compile_scale.growth(BUILD, SMALL, tmp_path, cap_gib=8,
                                timeout=120, rows=[(2, 2, 2), (4, 2, 2)])
    for row in rows:
        assert not row["limit"], row
        assert row["wall"] > 0 and row["check"] > 0, row
        assert 0.01 < row["rss"] < 8, row
    assert "M=  4 T=2 P=2" in capsys.readouterr().out


def test_plan_size_does_not_grow_with_micro_batches(tmp_path):
    """Issue 39's size test: M = 8 against M = 64 on a small GPT (T = P = 2,
    selective recompute + SP, bf16, AdamW) writes at most 1.2 times the
    bytes: the bodies are alike for every micro-batch past the pipeline's
    warm-up, and the order, one (body, micro-batch) pair per task instance,
    is what grows. The explicit form (every instruction) grows about 8
    times, so the test can fail."""
    sizes = {}
    for m in (8, 64):
        model = tmp_path / f"gpt-{m}.onnx"
        compile_scale.export(model, *SMALL[:4], SMALL[4], m)
        for form, extra in (("tasks", []), ("explicit", ["--explicit-plan"])):
            plan = tmp_path / f"{form}-{m}.json"
            subprocess.run(
                [str(BUILD / "bin" / "weftc"), str(model), "--optimizer=adamw",
                 "--tensor-parallel=2", "--pipeline-parallel=2",
                 "--sequence-parallel", "--recompute=selective",
                 "--precision=bf16", f"--microbatches={m}", *extra, "-o",
                 str(plan)], capture_output=True, check=True)
            sizes[form, m] = plan.stat().st_size
    assert sizes["tasks", 64] <= 1.2 * sizes["tasks", 8], sizes
    assert sizes["explicit", 64] > 4 * sizes["explicit", 8], sizes


def test_plan_size_does_not_grow_with_tensor_or_data_ranks(tmp_path):
    """One program per pipeline stage, shared by its tensor and data
    ranks: T 2 -> 4 and D 2 -> 4 leave the plan's bytes within 5% (shapes
    and shard counts are the only text that changes; D = 1 -> 2 adds the
    gradients' collectives); version 1 doubled them with each doubling of
    T or D."""
    model = tmp_path / "gpt.onnx"
    compile_scale.export(model, *SMALL[:4], SMALL[4], 8)

    def size(*flags):
        plan = tmp_path / "plan.json"
        subprocess.run([str(BUILD / "bin" / "weftc"), str(model),
                        "--pipeline-parallel=2", "--microbatches=2", *flags,
                        "-o", str(plan)], capture_output=True, check=True)
        return plan.stat().st_size

    t2, t4 = size("--tensor-parallel=2"), size("--tensor-parallel=4")
    d2, d4 = size("--data-parallel=2"), size("--data-parallel=4")
    assert abs(t4 / t2 - 1) < 0.05, (t2, t4)
    assert abs(d4 / d2 - 1) < 0.05, (d2, d4)


def test_limits_are_reported(tmp_path):
    model = tmp_path / "gpt.onnx"
    compile_scale.export(model, *SMALL[:4], SMALL[4], 4)
    capped = compile_scale.compile_plan(BUILD, model, tmp_path / "p.json", 2,
                                        2, 4, cap_gib=0.02, timeout=120)
    assert capped.limit == "over the 0.02 GiB cap" and capped.plan is None
    slow = compile_scale.compile_plan(BUILD, model, tmp_path / "p.json", 2, 2,
                                      4, cap_gib=8, timeout=0.001)
    assert slow.limit == "over the 0 s limit" and slow.plan is None


def test_weftc_times_its_passes_and_steps(tmp_path):
    """`weftc --mlir-timing` times every pass and the steps after the
    pipeline (the report, the memory check, the plan's emission and
    printing): where a compile's time goes as M grows."""
    model = tmp_path / "gpt.onnx"
    compile_scale.export(model, *SMALL[:4], SMALL[4], 4)
    result = subprocess.run(
        [str(BUILD / "bin" / "weftc"), str(model), "--tensor-parallel=2",
         "--pipeline-parallel=2", "--microbatches=4", "--mlir-timing",
         "--mlir-timing-display=list", "-o", str(tmp_path / "plan.json")],
        capture_output=True, text=True, check=True)
    for step in ("weftc: pipeline report", "weftc: plan emission",
                 "weftc: plan printing", "Schedule", "Autodiff"):
        assert step in result.stderr, (step, result.stderr[-2000:])
