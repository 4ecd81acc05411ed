"""benchmarks.gpu_check: bad arguments are exit 2 before any work; bf16 is checked first; the JSON
is on disk after every case, so a session cut short keeps what was checked."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check
from workload.case import Case

ROOT = Path(__file__).resolve().parents[1]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "benchmarks.gpu_check", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args, message", [
    (["--small", "--samples", "0"], "0 must be at least 1"),
    (["--small", "--samples", "many"], "'many' is not a whole number"),
])
def test_bad_sample_counts_are_exit_2(args, message, tmp_path):
    done = cli(*args, "--out", str(tmp_path))
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_an_out_that_is_a_file_is_exit_2(tmp_path):
    a_file = tmp_path / "report.json"
    a_file.write_text("{}")
    done = cli("--small", "--out", str(a_file))
    assert done.returncode == 2 and "exists and is not a folder" in done.stderr and "Traceback" not in done.stderr
    assert a_file.read_text() == "{}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal is for machines without CUDA")
def test_the_real_sizes_are_refused_without_cuda(tmp_path):
    done = cli("--out", str(tmp_path))
    assert done.returncode == 2 and "would take hours" in done.stderr and "--small" in done.stderr
    assert not (tmp_path / "gpu_check.json").exists()


def test_bf16_first_and_the_report_is_written_case_by_case(tmp_path, monkeypatch):
    assert gpu_check.DTYPES[0] == "bf16"
    seen = []

    def check_case(case, device, samples):
        if len(seen) == 2:  # the session's time limit strikes in the third case
            assert json.loads((tmp_path / "gpu_check.json").read_text())["rows"][1]["case"] == seen[1]
            raise KeyboardInterrupt
        seen.append(case.key)
        return {"case": case.key, "rel_error": 0.0, "tolerance": 1e-2, "correct": True, "problems": {},
                "seconds": {"fused": {"median": 1e-3}}}

    monkeypatch.setattr(gpu_check, "check_case", check_case)
    with pytest.raises(KeyboardInterrupt):
        gpu_check.main(["--small", "--samples", "1", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [row["case"] for row in report["rows"]] == seen and report["complete"] is False
    assert all(" bf16 " in key for key in seen)


def test_every_implementation_is_held_to_the_case_bound(monkeypatch):
    """A wrong peer is reported as wrong (the bound applies to all), while fused stays correct."""
    from benchmarks.harness import implementations

    real = implementations.prepare
    monkeypatch.setattr(gpu_check.implementations, "names", lambda op: ["fused", "eager"])
    monkeypatch.setattr(gpu_check.implementations, "prepare", lambda case, impl, inputs: (
        (lambda: real(case, impl, inputs)() * 1.01) if impl == "eager" else real(case, impl, inputs)))
    case = gpu_check.small_cases("fp32")[0]
    row = gpu_check.check_case(case, "cpu", samples=1)
    assert row["correct"] and row["problems"]["fused"] is None
    assert "relative error" in row["problems"]["eager"]
    assert row["tolerance"] > 1e-6


def test_the_fp8_dtypes_come_after_bf16_with_both_ops():
    """W8A8 per token and channel, W8A16 (its decode sizes) and W8A8 per tensor, each through
    linear_act and gated_mlp, right after bf16: their native e4m3 code has run nowhere else."""
    assert gpu_check.DTYPES[:4] == ("bf16", "fp8", "w8a16", "fp8_tensor")
    for dtype in ("fp8", "w8a16", "fp8_tensor"):
        cases = gpu_check.real_cases(dtype)
        assert {c.dtype for c in cases} == {dtype} and {c.op for c in cases} == {"linear_act", "gated_mlp"}
    assert min(c.M for c in gpu_check.real_cases("w8a16")) == 1


W8A8_MISSING = "W8A8 needs FP8 tensor cores (sm_89 or newer); this GPU is sm_80"


def _no_fp8_tensor_cores(monkeypatch):
    """What an A100 answers (the harness's check of the device, for W8A8 only)."""
    monkeypatch.setattr(gpu_check.fp8, "fp8_tensor_cores_missing", lambda device: W8A8_MISSING)


def test_w8a8_is_skipped_with_its_reason_where_the_gpu_has_no_fp8(monkeypatch):
    _no_fp8_tensor_cores(monkeypatch)
    monkeypatch.setattr(gpu_check.implementations, "prepare", lambda *a: pytest.fail("a skipped case ran"))
    for dtype in ("fp8", "fp8_tensor"):
        row = gpu_check.check_case(gpu_check.small_cases(dtype)[0], "cpu", samples=1)
        assert row["skipped"] == W8A8_MISSING and row["correct"] is None and not row["seconds"]
    assert gpu_check.skip_reason(gpu_check.small_cases("w8a16")[0], "cpu") is None  # W8A16 runs on sm_80
    assert gpu_check.skip_reason(gpu_check.small_cases("bf16")[0], "cpu") is None


def _fused_and_eager_only(monkeypatch, wrong_fused=False):
    """Only these two implementations (the interpreter is slow); `wrong_fused` plants a fused
    result 5% off, five times the bf16 output's bound."""
    from benchmarks.harness import implementations

    real = implementations.prepare
    monkeypatch.setattr(gpu_check.implementations, "names", lambda op: ["fused", "eager"])
    monkeypatch.setattr(gpu_check.implementations, "prepare", lambda case, impl, inputs: (
        (lambda: real(case, impl, inputs)() * 1.05) if impl == "fused" and wrong_fused else real(case, impl, inputs)))


@pytest.mark.parametrize("dtype", ["fp8", "w8a16"])
def test_fp8_results_are_judged_against_the_dequantized_reference(dtype, monkeypatch):
    """The fused FP8 kernel passes the float64 reference of its dequantized inputs; 5% off fails."""
    case = gpu_check.small_cases(dtype)[0]
    _fused_and_eager_only(monkeypatch)
    row = gpu_check.check_case(case, "cpu", samples=1)
    assert row["correct"] and row["skipped"] is None and set(row["seconds"]) == {"fused", "eager"}
    assert row["rel_error"] < row["tolerance"] < 0.05
    _fused_and_eager_only(monkeypatch, wrong_fused=True)
    row = gpu_check.check_case(case, "cpu", samples=1)
    assert row["correct"] is False and "relative error" in row["problem"]


def test_a_run_with_skipped_w8a8_passes_shows_why_and_still_fails_on_a_wrong_result(monkeypatch, tmp_path, capsys):
    _no_fp8_tensor_cores(monkeypatch)
    monkeypatch.setattr(gpu_check, "DTYPES", ("fp8", "w8a16"))
    monkeypatch.setattr(gpu_check, "small_cases", lambda dtype: [Case("linear_act", 9, 32, 16, dtype, "relu")])
    for wrong, status in ((False, 0), (True, 1)):
        _fused_and_eager_only(monkeypatch, wrong_fused=wrong)
        assert gpu_check.main(["--small", "--samples", "1", "--out", str(tmp_path)]) == status
        rows = json.loads((tmp_path / "gpu_check.json").read_text())["rows"]
        assert [(r["dtype"], r["skipped"], r["correct"]) for r in rows] == [("fp8", W8A8_MISSING, None),
                                                                             ("w8a16", None, not wrong)]
        assert f"| skipped: {W8A8_MISSING} |" in capsys.readouterr().out
