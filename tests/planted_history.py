"""A throw-away git history of this project, measured once per test session with real asv runs
(the interpreter, the tiny case): 14 commits, a slower fused launcher planted at the 9th; the
first 6 commits and the 2 newest measured, and the gate's first verdict on them (--base the 6th).
tests/test_bisect.py bisects it, tests/test_rerun_rehearsal.py re-runs what the gate found;
each works on its own copy (``copy_of``).
"""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASE = "linear_act M=64 K=128 N=256 fp32 gelu_tanh bias"  # the tiny grid's case
MACHINE = "cpu-bisect"
N_COMMITS, PLANTED_AT = 14, 8

# The throw-away history's first commit: the fused launcher's cost becomes a fixed CPU time, and
# a runner that got slower between the history's runs and the bisect's is played for real.
# - Fixed cost: the interpreted kernel's own CPU time (~0.4-0.7 s a call) moved with what else
#   the machine ran, by up to 1.6x between two asv runs of one bisect session, so a neutral
#   commit measured halfway between the levels and the search rightly said "not one step". A
#   loop on process_time costs the same CPU time whatever runs beside it; the output is torch's
#   (the suite still checks it against its float64 reference).
# - Drift: with $BISECT_TEST_DRIFT=0.1 every fused call costs 10 % more (CI's shared CPU once
#   drifted ~8 % between the two, and the gate then pinned the step one commit early); unset,
#   nothing changes.
DRIFT = """

# Planted by tests/test_bisect.py: a fused call costs a fixed CPU time, times the machine's
# drift ($BISECT_TEST_DRIFT), at every commit.
import os as _os
import time as _time

_CALL_CPU_SECONDS = 0.15


def _spend_cpu_until(start, seconds):
    while _time.process_time() - start < seconds:
        pass


def linear_act(x, weight, bias=None, activation="gelu_tanh", recompute=False):
    start = _time.process_time()
    z = x @ weight.T
    out = ACTIVATIONS[activation].torch_fn(z if bias is None else z + bias)
    _spend_cpu_until(start, _CALL_CPU_SECONDS * (1 + float(_os.environ.get("BISECT_TEST_DRIFT") or 0)))
    return out
"""
# The regression: 0.6 s more CPU time a call, a step of 5x over the 0.15 s call: the gate calls it
# clear and the bisect places every commit at one level or the other.
PLANT = """

# Planted by tests/test_bisect.py: the fused launcher got slower at this commit.
_planted_linear_act = linear_act


def linear_act(*args, **kwargs):
    _spend_cpu_until(_time.process_time(), 0.6)
    return _planted_linear_act(*args, **kwargs)
"""
BENCHMARK = "bench_ops.LinearAct.track_latency"


def git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def make_history(repo: Path, n: int, planted_at: int) -> list[str]:
    """A copy of this project with n commits: the drift knob first, then neutral ones and one
    that plants the delay."""
    for part in ("fused_mlp", "benchmarks", "dashboard", "tools/asv_plugins"):  # asv.conf.json names the plugin
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("asv.conf.json", "pyproject.toml"):
        shutil.copy(ROOT / part, repo / part)
    (repo / ".gitignore").write_text("results/\n.asv/\n__pycache__/\n")
    git(repo, "init", "-q", "-b", "main")
    init = repo / "fused_mlp" / "__init__.py"
    init.write_text(init.read_text() + DRIFT)
    commits = []
    for i in range(n):
        if i == planted_at:
            init.write_text(init.read_text() + PLANT)
            subject = "slower fused launcher"
        else:
            with open(repo / "NOTES.md", "a") as notes:
                notes.write(f"neutral change {i}\n")
            subject = f"neutral change {i}"
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", subject, date=f"2026-01-{i + 1:02d}T12:00:00+00:00")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return commits




@dataclass
class MeasuredHistory:
    repo: Path
    commits: list
    env: dict
    measured: list  # the commits the history measured
    gate_json: str  # the gate's --format json on them, --base commits[5]: fails at commits[-2]

    def copy_of(self, where: Path) -> "MeasuredHistory":
        """The same repository and results in ``where`` (a test changes its copy only)."""
        shutil.copytree(self.repo, where / "repo", symlinks=True)
        home = where / "home"
        home.mkdir()
        return MeasuredHistory(where / "repo", self.commits, {**self.env, "HOME": str(home)}, self.measured,
                               self.gate_json)

    def py(self, *args, **extra_env):
        return subprocess.run([sys.executable, *args], cwd=self.repo, env={**self.env, **extra_env},
                              capture_output=True, text=True, timeout=600)


def only_fused() -> str:
    from benchmarks import bisect

    return bisect.benchmark_regex(BENCHMARK, f"case='{CASE}', impl='fused'")


@pytest.fixture(scope="session")
def measured_history(tmp_path_factory) -> MeasuredHistory:
    """The history above, measured and gated once (8 asv runs); the tests take copies."""
    tmp = tmp_path_factory.mktemp("planted-history")
    repo = tmp / "repo"
    repo.mkdir()
    commits = make_history(repo, N_COMMITS, planted_at=PLANTED_AT)
    env = {**os.environ, "HOME": str(tmp / "home"), "TRITON_INTERPRET": "1"}
    env.pop("BISECT_TEST_DRIFT", None)
    (tmp / "home").mkdir()
    # Two commits at the new level: with one, a history with slow runs in it (a shared CPU has
    # them) rightly keeps the gate waiting for a second commit (docs/regression-gate.md, the gate's numbers).
    measured = commits[:6] + commits[-2:]
    history = MeasuredHistory(repo, commits, env, measured, "")
    done = history.py("-m", "benchmarks.run", "--machine", MACHINE, "--grid", "tiny", "--commits", " ".join(measured),
                      "-b", only_fused())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    gate = history.py("-m", "regressions", "--results", "results", "--format", "json", "--base", commits[5])
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr[-3000:]
    history.gate_json = gate.stdout
    return history
