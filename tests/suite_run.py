"""Run the project's own asv suite on the CPU (the "tiny" grid) into a temporary results dir.

Shared by tests/test_asv_suite.py and the dashboard tests: ``run_tiny_suite`` runs asv once per
test session (memoised on the base temp dir) and both read the same results.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from asv import util as asv_util

from benchmarks import CHECKOUT_PACKAGES
from workload.grids import OUTCOMES_ENV

ROOT = Path(__file__).resolve().parents[1]
MACHINE = "ci-cpu"
OUTCOMES_DIRNAME = "outcomes"  # beside the results: what the measuring passes filed as reasons
BROKEN_BENCHMARK = '''
from .common import _CaseBenchmark
from .harness import implementations


class BrokenGate(_CaseBenchmark):
    """An implementation that returns a wrong result: the gate must record a failure."""

    params = (["linear_act M=8 K=16 N=32 fp32 relu"], ["eager"])

    def prepared_call(self, case, impl, inputs):
        real = implementations.prepare(case, impl, inputs)
        return lambda: real() * 1.01
'''


def asv_env(tmp: Path, grid_name: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # Triton's compile cache stays the user's (HOME moves for asv's machine file only): the
    # static compile metrics' compiles then serve CI's compile check after the tests, and reruns
    env.setdefault("TRITON_CACHE_DIR", str(Path.home() / ".triton" / "cache"))
    env.update(HOME=str(tmp / "home"), FUSED_MLP_GRID=grid_name)
    return env


def asv_project(tmp: Path, extra_benchmark: str | None = None) -> Path:
    """A copy of asv.conf.json whose repo is this checkout and whose outputs go under tmp, with
    a copy of the suite and of the layers it imports from its own checkout (benchmarks/__init__.py)."""
    conf = asv_util.load_json(ROOT / "asv.conf.json", js_comments=True)
    bench_dir = tmp / "benchmarks"
    shutil.copytree(ROOT / "benchmarks", bench_dir, ignore=shutil.ignore_patterns("__pycache__"))
    for layer in CHECKOUT_PACKAGES:  # beside the suite, as in a checkout: the suite imports them from there
        shutil.copytree(ROOT / layer, tmp / layer, ignore=shutil.ignore_patterns("__pycache__"))
    # asv imports the config's plugins (its environment type) from the config's directory
    shutil.copytree(ROOT / "tools" / "asv_plugins", tmp / "tools" / "asv_plugins",
                    ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    if extra_benchmark:
        (bench_dir / "bench_broken.py").write_text(extra_benchmark)
    conf.update(repo=str(ROOT), benchmark_dir=str(bench_dir), results_dir=str(tmp / "results"),
                env_dir=str(tmp / "env"), html_dir=str(tmp / "html"))
    (tmp / "asv.conf.json").write_text(json.dumps(conf))
    (tmp / "home").mkdir(exist_ok=True)
    return tmp / "asv.conf.json"


def asv(conf: Path, env: dict, *args, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asv", "--config", str(conf), *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


_RUNS: dict = {}


def run_tiny_suite(base_tmp: Path):
    """(completed asv process, the result document, the results dir) of one tiny-grid CPU run
    with a planted failing benchmark; runs once per ``base_tmp`` (the session's temp root)."""
    key = str(base_tmp)
    if key in _RUNS:
        return _RUNS[key]
    tmp = Path(base_tmp) / "asv-tiny-run"
    tmp.mkdir(parents=True, exist_ok=True)
    conf = asv_project(tmp, BROKEN_BENCHMARK)
    env = {**asv_env(tmp, "tiny"), OUTCOMES_ENV: str(tmp / OUTCOMES_DIRNAME)}  # the skip reasons
    machine = subprocess.run([sys.executable, "-m", "benchmarks.harness.environment", "--machine", MACHINE],
                             env=env, capture_output=True, text=True, cwd=ROOT)
    assert machine.returncode == 0, machine.stderr
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    done = asv(conf, env, "run", "-E", "existing:same", "--set-commit-hash", commit,
               "--record-samples", "--machine", MACHINE)
    files = [p for p in (tmp / "results" / MACHINE).glob("*.json") if p.name != "machine.json"]
    assert len(files) == 1, done.stdout + done.stderr
    _RUNS[key] = (done, json.loads(files[0].read_text()), tmp / "results")
    return _RUNS[key]
