"""HEAD's suite over an older commit, through `python -m benchmarks.run --commits` on a
throw-away git history: the older library's fused rows skip the training modes (it has no
backward) and everything else records values, not failures."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workload.grids import training_grid

ROOT = Path(__file__).resolve().parents[1]

# The library as a commit before its backward kernels had it: the same forward kernels, and
# every op refuses an input that requires grad, in the library's own words of that time.
OLDER_INIT = '''"""fused_mlp before its backward kernels: forward-only."""
import torch

from .activations import ACTIVATIONS, GATED_ACTIVATIONS
from .ops.linear_act import linear_act as _linear_act


def linear_act(x, weight, bias=None, activation="gelu_tanh"):
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias)):
        raise ValueError("fused_mlp ops are forward-only (no backward yet), but an input requires grad")
    return _linear_act(x, weight, bias, activation)
'''

# Only the rows this test is about, from HEAD's own classes: a few processes, not the grid. The
# modules are imported, not the classes: asv takes every benchmark class in a module's namespace
# for one of that module, so an imported LinearAct ran as bench_history.LinearAct too (every
# implementation, torch.compile and max-autotune on the CPU: 70 of the test's 90 s).
HISTORY_BENCHMARKS = '''
from . import bench_ops, bench_training


class HistoryForward(bench_ops.LinearAct):
    params = (bench_ops.LinearAct.params[0], ["fused", "eager"])


class HistoryTraining(bench_training.LinearActTraining):
    params = (bench_training.LinearActTraining.params[0], ["fused", "eager"], ["backward", "full"])
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def _results(folder: Path) -> dict:
    """{(class, impl, mode): value} from the one result file asv wrote."""
    (path,) = [p for p in folder.glob("*.json") if p.name != "machine.json"]
    doc = json.loads(path.read_text())
    found = {}
    for name, row in doc["results"].items():
        cols = dict(zip(doc["result_columns"], row))
        params = [[eval(p) for p in axis] for axis in cols["params"]]  # asv stores repr() strings
        cls = name.split(".")[1]
        combos = [(i, m) for i in params[1] for m in (params[2] if len(params) > 2 else ["forward"])]
        found.update({(cls, impl, mode): value for (impl, mode), value in zip(combos, cols["result"])})
    return found


@pytest.mark.slow  # asv for real: 2 benchmarks, about 25 s
def test_heads_suite_over_an_older_commit_skips_its_missing_backward(tmp_path):
    repo = tmp_path / "history"
    repo.mkdir()
    for part in ("benchmarks", "fused_mlp", "tools/asv_plugins"):  # asv.conf.json names the plugin
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "asv.conf.json", repo)
    (repo / "benchmarks" / "bench_history.py").write_text(HISTORY_BENCHMARKS)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the suite and the library today")
    (repo / "fused_mlp" / "__init__.py").write_text(OLDER_INIT)
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "an older, forward-only library")
    older = _git(repo, "rev-parse", "HEAD")
    _git(repo, "reset", "-q", "--hard", "HEAD~1")  # the checkout's suite is today's; the commit measured is older

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-m", "benchmarks.run", "--machine", "older", "--grid", "tiny",
                           "--commits", older, "-b", r"bench_history\.History.*\.track_latency"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    named = [line for line in done.stdout.splitlines() if "For fused-mlp commit" in line]
    assert len(named) == 1 and f"commit {older[:8]}:" in named[0], named  # asv itself names HEAD's branch
    recorded = _results(repo / "results" / "older")
    assert {cls for cls, _, _ in recorded} == {"HistoryForward", "HistoryTraining"}  # nothing else ran
    assert len(training_grid("tiny")["linear_act"]) == 1
    for mode in ("backward", "full"):
        assert math.isnan(recorded["HistoryTraining", "fused", mode]), recorded  # skipped: no backward
        assert recorded["HistoryTraining", "eager", mode] > 0
    assert recorded["HistoryForward", "fused", "forward"] > 0  # the older library's forward is measured
    assert recorded["HistoryForward", "eager", "forward"] > 0
    # the skip's reason ("fused_mlp at this commit has no backward (...)") is asserted where it is
    # made: tests/test_training.py, TestTrainingMeasuringPass (asv stores a skip as NaN only)
