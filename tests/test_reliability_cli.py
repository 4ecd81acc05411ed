"""Issue 26 item 11 (the rest): `python -m benchmarks.profile` and `python -m fused_mlp.aot --json`
answer bad input with a clear message and exit 2, before any work, and write nothing outside the
folder they were given. Issue 31's probe: the aot and gpu_check CLIs with bad arguments, too."""

import pytest
import torch

from benchmarks import gpu_check
from benchmarks import profile as profile_cli
from fused_mlp import aot
from fused_mlp.aot import __main__ as aot_cli


def _exit_code_and_err(capsys, main, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return info.value.code, err


@pytest.fixture
def nothing_profiled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("profiled although the arguments were bad")

    monkeypatch.setattr(profile_cli, "profile_case", refuse)
    monkeypatch.setattr(profile_cli, "save_profile_pass", refuse)


@pytest.mark.parametrize("argv, message", [
    (["--op", "linear", "--M", "4", "--K", "8"], "--op linear needs --K and --N"),
    (["--op", "gated", "--M", "4", "--N", "8"], "--op gated needs --K and --N"),
    (["--op", "narrow", "--M", "4"], "--op narrow needs --widths"),
    (["--op", "narrow", "--M", "4", "--widths", "64xab"], "--widths '64xab': expected integers"),
    (["--op", "linear", "--M", str(10**12), "--K", "768", "--N", "3072"], "needs at least"),
    (["--op", "linear", "--M", "-3", "--K", "8", "--N", "8"], "M=-3"),
    (["--grid", "tiny", "--save", "{tmp}/p", "--machine", "../x"], "--machine '../x'"),
    (["--grid", "tiny", "--save", "{tmp}/p", "--machine", "a/b"], "--machine 'a/b'"),
    (["--grid", "tiny", "--save", "{tmp}/p", "--machine", ".."], "--machine '..'"),
    (["--op", "linear", "--M", "4", "--K", "8", "--N", "8", "--machine", "box"], "needs --grid, --machine and --save"),
    (["--grid", "tiny", "--save", "{tmp}/p", "--machine", "box", "--trace", "{tmp}/t"], "--trace takes no folder"),
    (["--grid", "tiny", "--save", "{tmp}/file/p", "--machine", "box"], "file is not a folder"),
    (["--op", "linear", "--M", "4", "--K", "8", "--N", "8", "--trace", "{tmp}/file"], "file is not a folder"),
    (["--op", "linear", "--M", "4", "--K", "8", "--N", "8", "--trace", "{tmp}/file/t"], "file is not a folder"),
])
def test_profile_refuses_bad_arguments_with_exit_2(tmp_path, capsys, nothing_profiled, argv, message):
    (tmp_path / "file").write_text("in the way")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code, err = _exit_code_and_err(capsys, profile_cli.main, argv)
    assert code == 2 and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing written, above all not ../x


def test_profile_answers_running_out_of_memory_with_exit_2(capsys, monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 96.00 GiB")

    monkeypatch.setattr(profile_cli, "profile_case", out_of_memory)
    code, err = _exit_code_and_err(capsys, profile_cli.main, ["--op", "linear", "--M", "4", "--K", "8", "--N", "8"])
    assert code == 2 and "does not fit in the cpu's memory" in err and "Tried to allocate 96.00 GiB" in err


def test_profile_lets_other_runtime_errors_through(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a real bug")

    monkeypatch.setattr(profile_cli, "profile_case", broken)
    with pytest.raises(RuntimeError, match="a real bug"):
        profile_cli.main(["--op", "linear", "--M", "4", "--K", "8", "--N", "8"])


def test_profile_still_writes_traces_into_a_new_folder(tmp_path, capsys):
    trace_dir = tmp_path / "new" / "traces"
    assert profile_cli.main(["--op", "linear", "--dtype", "fp32", "--M", "8", "--K", "16", "--N", "8",
                             "--activation", "relu", "--impl", "eager", "--trace", str(trace_dir)]) == 0
    assert [p.name for p in trace_dir.iterdir()] == ["linear_act_M=8_K=16_N=8_fp32_relu-eager.json.gz"]
    assert "## eager: 2 CPU ops per call" in capsys.readouterr().out


@pytest.fixture
def nothing_compiled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled although --json cannot be written")

    monkeypatch.setattr(aot_cli, "check", refuse)


@pytest.mark.parametrize("target, message", [
    ("{tmp}/file/out.json", "file is not a folder"),
    ("{tmp}", "is a folder"),
    ("/proc/self/no-such-dir/out.json", "cannot write there"),
])
def test_aot_checks_its_json_target_before_compiling(tmp_path, capsys, nothing_compiled, target, message):
    (tmp_path / "file").write_text("in the way")
    code, err = _exit_code_and_err(capsys, aot_cli.main, ["--json", target.replace("{tmp}", str(tmp_path))])
    assert code == 2 and message in err, err


def test_aot_leaves_no_file_behind_from_its_check(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(aot_cli, "INTERPRETER", False)
    monkeypatch.setattr(aot_cli, "check", lambda *a, **k: [])
    target = tmp_path / "sub" / "out.json"
    assert aot_cli.main(["--json", str(target), "--arch", "sm_90"]) == 0
    assert target.read_text() == "[]"  # written once, after the (here empty) check
    existing = tmp_path / "existing.json"
    existing.write_text("old")
    monkeypatch.setattr(aot_cli, "check", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("no compiler")))
    assert aot_cli.main(["--json", str(existing)]) == 2  # the check failed: the old file stays as it was
    assert existing.read_text() == "old"
    fresh = tmp_path / "fresh.json"
    assert aot_cli.main(["--json", str(fresh)]) == 2
    assert not fresh.exists()


@pytest.mark.parametrize("argv, message", [
    (["--jobs", "0"], "argument --jobs: 0: at least 1 compile process"),
    (["--jobs", "-3"], "argument --jobs: -3: at least 1 compile process"),
    (["--jobs", "x"], "argument --jobs: 'x' is not a whole number"),
    (["--arch", "sm_1"], "argument --arch: invalid choice: 'sm_1'"),
    (["--dtype", "fp64"], "argument --dtype: invalid choice: 'fp64'"),
    (["--activation", "nope"], "argument --activation: invalid choice: 'nope'"),
    (["--full", "--jobs"], "argument --jobs: expected one argument"),
])
def test_aot_refuses_bad_arguments_before_compiling(capsys, monkeypatch, nothing_compiled, argv, message):
    monkeypatch.setattr(aot_cli, "INTERPRETER", False)  # past the interpreter's refusal: the arguments decide
    code, err = _exit_code_and_err(capsys, aot_cli.main, argv)
    assert code == 2 and message in err, err


@pytest.mark.parametrize("kernels, variants, message", [
    (("nosuch",), None, "kernel 'nosuch' is not one of the library's"),
    (("linear_act",), ("nosuch",), "variant 'nosuch' is not one of"),
])
def test_aot_names_an_unknown_kernel_or_variant_before_compiling(kernels, variants, message):
    # plan() runs before any compile; main() answers what it raises with exit 2 (tested above)
    with pytest.raises(ValueError, match=message):
        aot.plan(("sm_90",), ("bf16",), False, False, kernels, None, True, variants)


@pytest.mark.parametrize("argv, message", [
    (["--samples", "0"], "argument --samples: 0 must be at least 1"),
    (["--samples", "x"], "argument --samples: 'x' is not a whole number"),
    (["--out", "{tmp}/file"], "exists and is not a folder"),
    (["--out", "/proc/self/no-such-dir/out"], "cannot make folder"),
    ([], "no CUDA device"),  # the real sizes on a CPU: refused, not hours of interpreting
])
def test_gpu_check_refuses_bad_arguments_before_measuring(tmp_path, capsys, monkeypatch, argv, message):
    (tmp_path / "file").write_text("in the way")
    monkeypatch.setattr(gpu_check, "check_case", lambda *a, **k: pytest.fail("measured with bad arguments"))
    monkeypatch.setattr(gpu_check.torch.cuda, "is_available", lambda: False)
    code, err = _exit_code_and_err(capsys, gpu_check.main, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2 and message in err, err
