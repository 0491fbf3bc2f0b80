"""weft.gpu_check (what scripts/gpu-check.sh runs on a GPU machine) end to
end on the CPU: `prepare` compiles the bundle's plans and keeps no resnet
weights; `run --device cpu` passes every check, with the bf16 ones against
torch autocast bf16 on the CPU; `run --device cuda --emulator` on
weft-run-cuda-emulator passes every check it can run (the memory check
with it: what the GPU run's path does, without a GPU) and says it skipped
fused attention. The checks can fail: a weft-run whose device-side losses
are off by 5e-3 relative fails all four, and a device-side run that exits
non-zero, or hangs, is named."""

import json
import stat

import pytest

from conftest import BUILD
from weft import gpu_check

CHECKS = ("gpt f32", "resnet f32", "gpt bf16 on", "gpt bf16-flash on")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu_check")
    gpu_check.prepare(BUILD, folder)
    return folder


def check(bundle, out, weft_run, capsys):
    code = gpu_check.main(["run", str(bundle), str(out), "--device", "cpu",
                           "--weft-run", str(weft_run)])
    return code, capsys.readouterr().out.splitlines()


def test_prepare_leaves_the_resnet_weights_to_run(bundle):
    assert not (bundle / "resnet.weights").exists()
    for plan in ("gpt.f32", "gpt.bf16", "gpt.bf16-flash", "resnet.f32"):
        text = json.loads((bundle / f"{plan}.json").read_text())
        assert not text["model"]["path"].startswith("/"), plan


def test_every_check_passes_on_the_cpu(bundle, tmp_path, capsys):
    code, lines = check(bundle, tmp_path, BUILD / "bin" / "weft-run", capsys)
    assert code == 0, lines
    for name in CHECKS:
        assert any(l.startswith("PASS " + name) for l in lines), (name, lines)
    assert (bundle / "resnet.weights").stat().st_size > 40e6


def wrapper(tmp_path, body):
    """A weft-run that runs the real one, then does `body` (bash) to the
    device-side runs (their log's name has 'device-')."""
    script = tmp_path / "weft-run"
    script.write_text(f"""#!/bin/bash
"{BUILD / 'bin' / 'weft-run'}" "$@" || exit
for a in "$@"; do case "$a" in *device-*.jsonl) log="$a";; esac; done
[ -z "$log" ] || {{ {body}; }}
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_device_losses_off_by_5e3_fail_every_check(bundle, tmp_path, capsys):
    scale = ("/usr/bin/python3 -c \"import json,sys; p=sys.argv[1]; "
             "r=[json.loads(l) for l in open(p)]; "
             "[x.update(loss=x['loss']*1.005) for x in r]; "
             "open(p,'w').write(''.join(json.dumps(x)+chr(10) for x in r))\" "
             "\"$log\"")
    code, lines = check(bundle, tmp_path, wrapper(tmp_path, scale), capsys)
    assert code == 1
    for name in CHECKS:
        assert any(l.startswith("FAIL " + name) for l in lines), (name, lines)


def test_a_failed_device_run_is_named(bundle, tmp_path, capsys):
    code, lines = check(bundle, tmp_path,
                        wrapper(tmp_path, "echo lost the GPU >&2; exit 3"),
                        capsys)
    assert code == 1
    assert any(l.startswith("FAIL weft-run gpt.f32.json --device cpu: exit 3")
               and "lost the GPU" in l for l in lines), lines


def test_a_hung_device_run_is_killed_and_named(bundle, tmp_path, capsys,
                                               monkeypatch):
    monkeypatch.setattr(gpu_check, "RUN_TIMEOUT", 2)
    code, lines = check(bundle, tmp_path, wrapper(tmp_path, "sleep 30"),
                        capsys)
    assert code == 1
    assert any(l.startswith("FAIL weft-run gpt.f32.json --device cpu: no "
                            "exit after 2 s (killed)") for l in lines), lines


def test_every_check_but_fused_attention_passes_on_the_emulator(
        bundle, tmp_path, capsys):
    emulator = BUILD / "bin" / "weft-run-cuda-emulator"
    if not emulator.exists():
        pytest.skip("built without the CUDA toolkit's headers: no emulator")
    code = gpu_check.main(["run", str(bundle), str(tmp_path), "--device",
                           "cuda", "--weft-run", str(emulator), "--emulator"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0, lines
    for name in ("gpt f32 cuda vs cpu", "resnet f32 cuda vs cpu",
                 "gpt bf16 on cuda", "memory: device in use"):
        assert any(l.startswith("PASS " + name) for l in lines), (name, lines)
    assert "SKIP gpt bf16-flash: the CUDA emulator has no fused attention" \
        in lines
    assert not any("flash on" in l for l in lines), lines
