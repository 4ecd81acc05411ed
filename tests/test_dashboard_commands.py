"""The installed commands (pyproject [project.scripts]) work from any directory, not only from
the checkout's root as python -m dashboard does."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.generic_fixtures import write_generic_history

BIN = Path(sys.executable).parent


def _command(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}: pip install -e . installs it")
    return str(path)


def test_the_gate_command_runs_outside_the_checkout(tmp_path):
    gx = write_generic_history(tmp_path / "results", n_commits=8)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([_command("fused-mlp-gate"), "--results", str(gx.results_dir)], cwd=elsewhere,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr  # nothing regressed in 8 commits
    assert "Gate: pass" in done.stdout and "order of the dates" in done.stdout
    bad = subprocess.run([_command("fused-mlp-gate"), "--results", str(tmp_path / "missing")], cwd=elsewhere,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "error:" in bad.stderr


def test_the_dashboard_command_runs_outside_the_checkout(tmp_path):
    done = subprocess.run([_command("fused-mlp-dashboard"), "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "--results" in done.stdout
    bad = subprocess.run([_command("fused-mlp-dashboard"), "--port", "0"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "is not a TCP port" in bad.stderr
