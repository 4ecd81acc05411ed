"""benchmarks.gpu_check: bad arguments are exit 2 before any work; bf16 is checked first; the JSON
is on disk after every case, so a session cut short keeps what was checked."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_check

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
