"""weftc --auto-parallel (issue 41): the search scores every layout of the
gpt example on 2 devices by compiling it, and each row of its table is what
weftc reports for that layout given by hand (the same simulator, the same
memory planner); the table is sorted, --memory-cap prunes it, the plan it
writes is its best row's and trains; --explain places a hand-made layout;
a cap nothing fits and bad flags are one-line errors."""

import json
import os
import re

import pytest

from conftest import run, tool
from weft.layouts import layout_flags, layout_ranks
from weft.oracle import mpirun

SEARCH = ["--auto-parallel", "--devices=2", "--device-model=cpu",
          "--optimizer=adamw", "--search=compile"]
ROW = re.compile(
    r"^\s*(\d+)  (P\d+ T\d+ D\d+ M\d+[^\d].*?)\s+([0-9.]+)\s+([0-9.]+)\s+"
    r"([0-9.]+)\s+([0-9.]+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+"
    r"([0-9.]+)\s+([0-9.]+)  (compute|memory|bubble|tensor comm|data comm)"
    r"\s+(compiled|estimated)$")
SUMMARY = re.compile(r"auto-parallel: (\d+) layouts of 2 devices(?: \(at most "
                     r"\d+ stages: the model repeats a layer \d+ times\))?, "
                     r"global batch 8, on cpu, (\d+) bytes a device: (\d+) "
                     r"fit, (\d+) do not compile")


def rows(text):
    """The table's rows: dicts of the columns."""
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out.append(dict(place=int(m[1]), layout=m[2].strip(),
                            step=float(m[3]), samples=float(m[4]),
                            mfu=float(m[5]), hfu=float(m[6]), peak=int(m[7]),
                            parts=[float(m[i]) for i in range(8, 13)],
                            bound=m[13], how=m[14]))
    return out


# Every figure is printed to 2 decimals: within HALF of its true value.
HALF = 0.005


def assert_samples_per_second(row, batch):
    """samples/s is the global batch over the step: the printed figure lies
    within HALF of batch / t for some true step t within HALF ms of the
    printed step."""
    low = batch * 1e3 / (row["step"] + HALF) - HALF
    high = batch * 1e3 / (row["step"] - HALF) + HALF
    assert low <= row["samples"] <= high, row


@pytest.fixture(scope="module")
def search(models_dir, tmp_path_factory):
    """The whole table (--top larger than the space) and the plan written."""
    plan = tmp_path_factory.mktemp("auto") / "best.json"
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *SEARCH,
                  "--top=10000", "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    return result.stdout, plan


# The estimating search without compiles (--confirm=0): the same table in
# half a second where compiling every layout takes 30, for the tests of
# what the search does with its rows (caps, errors, the global batch).
ESTIMATE = [*SEARCH[:-1], "--search=estimate", "--confirm=0"]


def estimate(models_dir, top):
    """The estimating search's table with --top `top`, and how many
    pipelines it simulated."""
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *ESTIMATE,
                  f"--top={top}"])
    assert result.returncode == 0, result.stderr
    m = re.search(r"\((\d+) pipelines simulated", result.stdout)
    return rows(result.stdout), int(m[1])


@pytest.fixture(scope="module")
def estimated(models_dir):
    """The estimating search's whole table, uncapped, and how many
    pipelines it simulated."""
    return estimate(models_dir, 10000)


def test_the_table_is_every_fitting_layout_fastest_first(search):
    out, _ = search
    total, cap, fit, failed = map(int, SUMMARY.search(out).groups())
    table = rows(out)
    assert len(table) == fit and fit + failed == total and fit > 100
    assert cap == 24 * 2**30  # the cpu model's memory_capacity
    assert [r["place"] for r in table] == list(range(1, fit + 1))
    steps = [r["step"] for r in table]
    assert steps == sorted(steps)
    # Every degree and schedule is searched.
    layouts = [r["layout"] for r in table]
    for part in ("P2 T1 D1", "P1 T2 D1", "P1 T1 D2", "gpipe", "1f1b",
                 "interleavedx2", "zb-h1", "zb-h2", "zb-v", "selective",
                 "full-stage", "full-layer", " sp", "zero3", "flash"):
        assert any(part in layout for layout in layouts), part


FAILURES = re.compile(r"^  (\d+) do not compile: (.*) \(e\.g\. (--.*)\)$",
                      re.M)


def test_every_layout_that_does_not_compile_is_rejected_for_a_reason(
        search):
    """The summary's layouts that do not compile, grouped by reason under
    it, are each a layout the compiler rejects with a message (here: an
    interleaved schedule whose micro-batches are not in groups of P), never
    a compile that made invalid IR: such a weft bug would otherwise pass
    for a rejected layout and silently shrink the search (gpt medium's
    D = 2, M = 4, ZeRO-2 did, until weft-overlap-collectives was fixed)."""
    out, _ = search
    failed = int(SUMMARY.search(out).group(4))
    reasons = FAILURES.findall(out)
    assert "more reasons" not in out  # every reason is listed
    assert failed > 0 and sum(int(n) for n, _, _ in reasons) == failed
    for count, reason, example in reasons:
        assert not reason.startswith("invalid IR"), (reason, example)
        assert "interleaved" in reason and "not a multiple" in reason, reason


def test_stages_hold_whole_layers(search):
    """gpt small repeats its block 4 times, so a pipeline has at most 4
    stages: P = 2 with 3 chunks a rank (6 stages) is not searched, 2 chunks
    (4 stages) is."""
    out, _ = search
    assert ("2 devices (at most 4 stages: the model repeats a layer 4 "
            "times)") in out
    layouts = [r["layout"] for r in rows(out)]
    assert not any("interleavedx3" in layout for layout in layouts)
    assert any("P2 T1 D1 M4 interleavedx2" in layout for layout in layouts)


def test_parts_add_up_to_the_step(search):
    """compute + memory + bubble + tensor + data = the step, each printed
    to 0.01 ms: the six roundings bound the difference by 6 x HALF ms."""
    for r in rows(search[0]):
        assert abs(sum(r["parts"]) - r["step"]) <= 6 * HALF + 1e-9, r
        assert r["bound"] == ["compute", "memory", "bubble", "tensor comm",
                              "data comm"][r["parts"].index(max(r["parts"]))]
        assert_samples_per_second(r, 8)


@pytest.mark.parametrize("pick", ["first", "pipeline", "tensor", "data",
                                  "last"])
def test_a_row_is_what_weftc_reports_for_its_layout(pick, search,
                                                    models_dir):
    """The row's step, MFU and peak are weftc's stage table for the same
    flags: the predicted step and the MFU line printed alike, the peak the
    largest rank's planned arena."""
    table = rows(search[0])
    row = {"first": table[0], "last": table[-1]}.get(pick) or next(
        r for r in table if r["layout"].startswith(
            {"pipeline": "P2", "tensor": "P1 T2", "data": "P1 T1 D2"}[pick]))
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), "-o",
                  "/dev/null", "--device-model=cpu", "--optimizer=adamw",
                  *layout_flags(row["layout"])])
    assert result.returncode == 0, result.stderr
    text = result.stdout
    step = float(re.search(r"predicted step: ([0-9.]+) ms", text).group(1))
    assert step == row["step"]
    mfu = float(re.search(r"predicted MFU ([0-9.]+)%", text).group(1))
    assert mfu == row["mfu"]
    header = next(line for line in text.splitlines()
                  if line.lstrip().startswith("stage"))
    column = header.split().index("peak")
    peaks = [int(line.split()[column]) for line in text.splitlines()
             if re.match(r"^\s+\d+\s+\d+\s+\d+\s+\d+", line)]
    assert peaks and max(peaks) == row["peak"]


def test_the_plan_is_the_best_rows_and_runs(search, models_dir, tmp_path):
    """The plan written is byte for byte the plan weftc writes for the flags
    the search prints as its best, the first row's layout; weft-run runs it
    on its ranks."""
    out, plan = search
    best = rows(out)[0]
    flags = re.search(r"^best: (.*)$", out, re.M).group(1).split()
    assert set(flags) <= set(layout_flags(best["layout"]))
    by_hand = tmp_path / "by_hand.json"
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), "-o",
                  str(by_hand), "--device-model=cpu", "--optimizer=adamw",
                  *flags])
    assert result.returncode == 0, result.stderr
    assert plan.read_bytes() == by_hand.read_bytes()
    log = tmp_path / "log.jsonl"
    result = run(mpirun(layout_ranks(best["layout"])) + [tool("weft-run"), str(plan), "--steps",
                                      "1", "--log-json", str(log)],
                 env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
                 timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(log.read_text().splitlines()) == 1


def test_a_memory_cap_keeps_the_fastest_layout_under_it(estimated,
                                                       models_dir):
    """With a cap at the median peak, the table is exactly the uncapped
    table's rows whose peak fits, in the same order."""
    table, _ = estimated
    cap = sorted(r["peak"] for r in table)[len(table) // 2]
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *ESTIMATE,
                  "--top=10000", f"--memory-cap={cap}"])
    assert result.returncode == 0, result.stderr
    capped = rows(result.stdout)
    expected = [r for r in table if r["peak"] <= cap]
    assert [(r["layout"], r["step"], r["peak"]) for r in capped] == \
        [(r["layout"], r["step"], r["peak"]) for r in expected]


def test_a_cap_nothing_fits_names_the_smallest_peak(estimated, models_dir):
    smallest = min(r["peak"] for r in estimated[0])
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *ESTIMATE,
                  "--memory-cap=1000"])
    assert result.returncode == 1
    error = result.stderr.strip()
    assert len(error.splitlines()) == 1, error
    m = re.fullmatch(r"weftc: --auto-parallel: no layout fits 1000 bytes a "
                     r"device: the smallest peak is (\d+) bytes \((--.*), rank "
                     r"\d+\), most of it ([a-z_]+) \((\d+) bytes\)", error)
    assert m, error
    assert int(m[1]) == smallest
    assert m[3] in ("parameters", "optimizer_state", "kept_activations",
                    "gradients", "temporaries")
    assert 0 < int(m[4]) < smallest


def test_explain_places_a_layout_given_by_hand(search, models_dir):
    """--explain compiles the layout given by hand, even when the search
    estimates: its row is the one compiling every layout printed for it,
    placed among the estimating search's rows."""
    mine = ["--pipeline-parallel=2", "--microbatches=2", "--schedule=gpipe"]
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *SEARCH[:-1],
                  "--search=estimate", "--top=3", "--explain", *mine])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert ("yours: --pipeline-parallel=2 --microbatches=2 --schedule=gpipe "
            "--recompute=none") in out
    table = rows(search[0])
    expected = next(r for r in table if r["layout"] == "P2 T1 D1 M2 gpipe none")
    shown = rows(out)
    assert len(shown) == 4  # the top 3, then yours
    assert {**shown[3], "place": 0} == {**expected, "place": 0}
    assert shown[3]["how"] == "compiled"
    # The ratio of the true steps, each within HALF ms of its printing,
    # printed within HALF.
    ratio = float(re.search(r"([0-9.]+)x the best's step", out).group(1))
    mine, best = expected["step"], shown[0]["step"]
    assert (mine - HALF) / (best + HALF) - HALF <= ratio <= \
        (mine + HALF) / (best - HALF) + HALF


def test_an_estimated_search_compiles_what_it_picks(search, models_dir):
    """--search=estimate profiles each class once (P = D = M = 1) and
    estimates every layout from it; it compiles the most promising ones, and
    the plan's layout is a compiled one. Every compiled row is what the
    compile-every-layout search printed for it, and its best is that
    search's best (T = 2 with SP, 35.13 ms, which the estimate ranks
    ninth: it compiles 10 layouts to find it)."""
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"),
                  *SEARCH[:-1], "--search=estimate", "--top=10000"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    m = re.search(r"estimated from (\d+) one-stage profiles \((\d+) "
                  r"pipelines simulated, the rest bounded\), (\d+) "
                  r"compiled", out)
    assert m and 0 < int(m[1]) < 50 and 0 < int(m[3]) <= 16, out
    table = rows(out)
    compiled = [r for r in table if r["how"] == "compiled"]
    assert len(compiled) == int(m[3])
    # Compiled rows first, then the estimates.
    assert table[:len(compiled)] == compiled
    exact = {r["layout"]: r for r in rows(search[0])}
    for r in compiled:  # all but the place in the table
        assert {**r, "place": 0} == {**exact[r["layout"]], "place": 0}
    best = re.search(r"^best: (.*)$", out, re.M).group(1)
    assert set(best.split()) <= set(layout_flags(table[0]["layout"]))
    assert table[0] == {**rows(search[0])[0], "how": "compiled"}


def test_the_estimate_alone_picks_within_10_percent(search, estimated):
    """With no confirming compile, the estimate's fastest layout compiles
    to within issue 41's 10% of the best of compiling every layout. Each
    class is profiled at micro-batch sizes 1 and 2, so a micro-batch's
    fixed work (weights read once per GEMM, collectives' latency) is not
    multiplied by its size: profiled at size 1 alone, the estimate picked
    D = 2, M = 4, ZeRO-3, 1.27x the best once compiled."""
    compiled = {r["layout"]: r["step"] for r in rows(search[0])}
    table, _ = estimated
    assert compiled[table[0]["layout"]] <= 1.10 * min(compiled.values()), (
        table[0], min(compiled.values()))


def test_pipeline_stages_take_the_partitioners_shares(search, estimated):
    """The estimate gives each pipeline stage the share of the work that
    the partitioner's cut of the model gives it (the end stages hold the
    embedding and the head, and take fewer layers), where it took even
    stages. Over the 161 layouts of 2 stages, estimated / compiled has a
    median within 2% of 1 and at least 60% of them within 5% (the docs'
    figures: 0.996 and 108). With even stages they were 0.976 and 82:
    the stage that holds the head paces a pipeline, and even stages made
    every pipelined layout look faster than it compiles."""
    compiled = {r["layout"]: r["step"] for r in rows(search[0])}
    ratios = sorted(r["step"] / compiled[r["layout"]] for r in estimated[0]
                    if r["layout"].startswith("P2 ") and
                    r["layout"] in compiled)
    assert len(ratios) > 100
    median = ratios[len(ratios) // 2]
    within = sum(abs(x - 1) <= 0.05 for x in ratios)
    assert abs(median - 1) <= 0.02 and within >= 0.6 * len(ratios), (
        median, within, len(ratios))


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_data_parallel_costs_are_the_passs(search, estimated, zero):
    """The estimate counts weft-data-parallel's bucket copies as the pass
    emits them (bucketCopyBytes: under ZeRO-1 and 2 the updated pieces
    packed, the gathered bucket split and assigned into the parameters,
    each micro-batch's gradients packed at stage 2), and ZeRO-3's gathers
    as the step runs them, each before its reader, overlapping the op
    before (exposedGatherSeconds). Over the 21 layouts of D = 2 at each of
    ZeRO 1 to 3, estimated / compiled has a median within 5% of 1.
    Counting the gradients packed and unpacked and the parameters once
    each way, and ZeRO-3's gathers as hidden behind the compute, put
    ZeRO-1's at 0.929, ZeRO-2's at 0.899 and ZeRO-3's at 0.922."""
    compiled = {r["layout"]: r["step"] for r in rows(search[0])}
    ratios = sorted(
        r["step"] / compiled[r["layout"]] for r in estimated[0]
        if r["layout"].startswith("P1 T1 D2 ") and r["layout"] in compiled
        and f" zero{zero}" in r["layout"])
    assert len(ratios) >= 20
    assert abs(ratios[len(ratios) // 2] - 1) <= 0.05, ratios


def test_estimated_parts_are_the_compiled_ones(search, estimated):
    """An estimated row's compute and memory parts split a micro-batch's
    work of b samples as the profiles' line through sizes 1 and 2 splits
    it, the update counted as memory. Over every layout, each part's
    estimated / compiled has a median within 5% of 1. Split at the
    one-sample profile's ratio, update included, they were 0.75 and 1.78
    (5 of 301 compute parts within 10%): the update's memory time, a
    large share of one sample's step, was spread over every micro-batch."""
    compiled = {r["layout"]: r["parts"] for r in rows(search[0])}
    for part in (0, 1):  # compute, memory
        ratios = sorted(r["parts"][part] / compiled[r["layout"]][part]
                        for r in estimated[0]
                        if compiled.get(r["layout"], [0, 0])[part] > 0)
        assert len(ratios) > 250
        assert abs(ratios[len(ratios) // 2] - 1) <= 0.05, (part, ratios)


def test_estimated_peaks_follow_the_compiled_ones(search, estimated):
    """Each estimated peak against its compiled arena (estimatedPeak: the
    most of the step's moments, docs/planner.md). No estimate is more than
    6% above its arena, so the cap never drops a layout that fits by more
    than that: 1.05 at most today, interleaved full recompute by stage.
    Before the moments, one micro-batch on 2 replicas (P1 T1 D2 M1, no
    recompute) was estimated at 1.10-1.16 of its arena, with the whole
    gradients beside the kept activations, where its backward starts with
    few; those are 0.98-0.99 now, and the median 0.89 (0.84 before). The
    lowest is 0.70 (0.45 before: GPipe with full recompute, whose last
    micro-batch keeps every activation, and a recompute's peak, a whole
    stage re-run, that only the two-sample profile showed; 0.64 while the
    compiler recomputed the loss's stage whole under layer granularity)."""
    compiled = {r["layout"]: r["peak"] for r in rows(search[0])}
    ratios = {r["layout"]: r["peak"] / compiled[r["layout"]]
              for r in estimated[0] if r["layout"] in compiled}
    assert len(ratios) > 250
    worst = max(ratios, key=ratios.get)
    assert ratios[worst] <= 1.06, (worst, ratios[worst])
    one = {k: v for k, v in ratios.items()
           if k.startswith("P1 T1 D2 M1 none")}
    assert len(one) == 8 and all(0.95 <= v <= 1.02 for v in one.values()), \
        one
    assert sorted(ratios.values())[len(ratios) // 2] >= 0.86
    lowest = min(ratios, key=ratios.get)
    assert ratios[lowest] >= 0.65, (lowest, ratios[lowest])


def test_confirmation_goes_on_while_no_compiled_layout_fits(
        search, estimated, models_dir):
    """The estimate's peaks are optimistic. Under a cap that the layout
    estimated fastest fits by its estimate but not compiled, --confirm 1
    compiled only that one and wrote the fastest estimate's plan, which
    does not fit. While none fits, the search goes on (up to 4 times
    --confirm) to the first that does. The cap is found from the tables:
    the compiled peak of a candidate, when the candidates estimated to fit
    it and estimated faster (1 to 3 of them) all compile over it."""
    compiled = {r["layout"]: r["peak"] for r in rows(search[0])}
    order = [r for r in estimated[0] if r["layout"] in compiled]
    for target in order[:40]:
        cap = compiled[target["layout"]]
        fitting = [r for r in order if r["peak"] <= cap]
        j = fitting.index(target) if target in fitting else 0
        if 1 <= j <= 3 and all(compiled[r["layout"]] > cap
                               for r in fitting[:j]):
            break
    else:
        pytest.skip("no cap separates the estimate's first candidates")
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"),
                  *SEARCH[:-1], "--search=estimate", "--confirm=1",
                  f"--memory-cap={cap}", "--top=1"])
    assert result.returncode == 0, result.stderr
    (best,) = rows(result.stdout)
    assert best["how"] == "compiled" and best["peak"] <= cap, best
    assert best["layout"] == target["layout"]
    m = re.search(r"(\d+) compiled;", result.stdout)
    assert 1 < int(m[1]) <= 4, result.stdout


def test_bounds_leave_the_top_rows_as_simulating_every_layout(estimated,
                                                              models_dir):
    """Branch and bound: with --top 3 the search simulates only the layouts
    whose bound beats its third-fastest simulation; its three rows are the
    first three of the search that simulates every layout (--top larger
    than the space)."""
    few, simulated_few = estimate(models_dir, 3)
    every, simulated_every = estimated
    assert len(few) == 3 and few == every[:3]
    assert simulated_few < simulated_every


def test_profiles_of_a_few_layers_stand_for_the_whole_model(tmp_path):
    """Layer repetition: on an 8-layer GPT the estimate profiles each class
    on its first 2 and 3 layers and extrapolates to 8. Every row's step is
    the one profiling the whole model gives (--profile-whole-model): the
    step is a sum over identical layers, so equal but for float rounding,
    and each printing within HALF. Peaks are equal too, except under full
    recompute by stage, whose arena (the planner's packing of one whole
    recomputed stage) does not grow by a fixed amount per layer; the docs
    say so."""
    from weft.examples import gpt_weights_free
    import onnx
    model = tmp_path / "gpt8.onnx"
    onnx.save(gpt_weights_free.build(8, 64, 4, 32, 256, 8, 0.1, True),
              str(model))

    def table(*extra):
        result = run([tool("weftc"), str(model), "--auto-parallel",
                      "--devices=4", "--device-model=cpu", "--optimizer=adamw",
                      "--search=estimate", "--confirm=0", "--top=10000",
                      *extra, "-o", "-"])
        assert result.returncode == 0, result.stderr
        assert "(at most 8 stages: the model repeats a layer 8 times)" in \
            result.stdout
        return {r["layout"]: r for r in rows(result.stdout)}
    short, whole = table(), table("--profile-whole-model")
    assert short.keys() == whole.keys() and len(short) > 1000
    for layout, r in short.items():
        assert abs(r["step"] - whole[layout]["step"]) <= 2 * HALF + 1e-9, \
            layout
        if "full-stage" not in layout:
            assert r["peak"] == whole[layout]["peak"], layout


def test_global_batch_replaces_the_models(models_dir, tmp_path):
    """--global-batch 16 lays out 16 samples a step of the batch-8 export:
    the summary says so, micro-batches range over its divisors, and the plan
    trains 16."""
    plan = tmp_path / "plan.json"
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *ESTIMATE,
                  "--global-batch=16", "--top=10000", "-o", str(plan)])
    assert result.returncode == 0, result.stderr
    assert "global batch 16, on cpu" in result.stdout
    table = rows(result.stdout)
    assert any(" M16 " in r["layout"] for r in table)
    for r in table:
        assert_samples_per_second(r, 16)
    assert json.loads(plan.read_text())["global_batch"] == 16


@pytest.mark.parametrize("flags,message", [
    (["--devices=2"], "--devices needs --auto-parallel"),
    (["--top=3"], "--top needs --auto-parallel"),
    (["--profile-whole-model"], "--profile-whole-model needs --auto-parallel"),
    (["--auto-parallel"], "--auto-parallel needs --devices N, N at least 1"),
    (["--auto-parallel", "--devices=0"],
     "--auto-parallel needs --devices N, N at least 1"),
    (["--auto-parallel", "--devices=2", "--top=0"], "--top must be at least 1"),
    (["--auto-parallel", "--devices=2", "--global-batch=0"],
     "--global-batch must be at least 1"),
    (["--auto-parallel", "--devices=4", "--explain",
      "--pipeline-parallel=2"],
     "--explain: the flags' layout runs on 2 devices (P x T x D), --devices "
     "is 4"),
    (["--auto-parallel", "--devices=2", "--device-model=tpu"],
     "--device-model: unknown device model 'tpu'"),
    (["--auto-parallel", "--devices=2", "--search=guess"],
     "--search 'guess': expected auto, compile or estimate"),
    (["--auto-parallel", "--devices=2", "--confirm=-1"],
     "--confirm must be at least 0"),
    (["--search=estimate"], "--search needs --auto-parallel"),
    (["--auto-parallel", "--explain", "--pipeline-parallel=2",
      "--schedule=zb-x"], "--schedule 'zb-x': expected gpipe, 1f1b"),
])
def test_bad_search_flags_are_errors(flags, message, models_dir):
    result = run([tool("weftc"), str(models_dir / "gpt.onnx"), *flags])
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert message in result.stderr


def test_a_model_without_a_loss_is_an_error(tmp_path):
    model = tmp_path / "relu.onnxtxt"
    model.write_text("""<ir_version: 8, opset_import: ["" : 17]>
relu (float[4] x) => (float[4] y) { y = Relu(x) }
""")
    result = run([tool("weftc"), str(model), "--auto-parallel",
                  "--devices=2"])
    assert result.returncode == 1
    assert "--auto-parallel lays out a training step" in result.stderr
