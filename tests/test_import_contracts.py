"""The layers as import-linter contracts (pyproject.toml's [tool.importlinter]): the repository
keeps every one, and each one breaks when an import it forbids is planted in a copy."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.suite_run import ROOT

PACKAGES = ("fused_mlp", "workload", "asv_results", "regressions", "dashboard", "benchmarks")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACTS = len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    # grimp's cache is a folder of its own in cwd: the checkout's stays untouched
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)})


def test_the_repository_keeps_every_contract():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert CONTRACTS == 13 and f"Contracts: {CONTRACTS} kept, 0 broken." in done.stdout


# (module, the import planted at its end, the contract that must then break)
PLANTED = [
    ("workload/case.py", "import regressions.direction", "One direction"),
    ("asv_results/units.py", "import torch", "need neither torch, Triton nor the library"),
    ("regressions/direction.py", "import dash", "run without Dash"),
    ("fused_mlp/_validate.py", "import pandas", "The library imports nothing"),
    ("benchmarks/common.py", "from fused_mlp.ops import linear_act", "through benchmarks.harness.library only"),
    ("regressions/gate_view.py", "import regressions.gate_records", "No import loop"),  # gate_records imports gate_view
    ("dashboard/data/metrics.py", "import dashboard.synthetic.asv_history", "The dashboard in layers"),  # no loop
    ("dashboard/figures/style.py", "from dashboard.figures import ticks", "figures over their style"),  # one layer
]


@pytest.mark.parametrize("module, planted, contract", PLANTED, ids=[p[2] for p in PLANTED])
def test_a_planted_import_breaks_its_contract(tmp_path, module, planted, contract):
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "assets"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with open(tmp_path / module, "a") as f:
        f.write(f"\n{planted}\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-2000:]
    words = " ".join(done.stdout.split())  # it wraps long contract names
    assert f"Contracts: {CONTRACTS - 1} kept, 1 broken." in words, words[-3000:]
    assert contract in words.split("Broken contracts")[1], words[-3000:]
