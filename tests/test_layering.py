"""What the import contracts (pyproject.toml's [tool.importlinter], tests/test_import_contracts.py)
cannot say: the suite looks up only the library's public names, HEAD's suite runs against an older
library, and the dashboard and the gate work, not only import, with neither torch nor Triton."""

import math
import shutil
import subprocess
import sys

import pytest

import fused_mlp
from benchmarks.harness.ops import OPS
from workload.case import ACTIVATIONS
from tests.suite_run import ROOT, asv, asv_env, asv_project


def _run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_what_the_suite_looks_up_is_public():
    public = set(fused_mlp.__all__)
    assert set(OPS) <= public
    assert {"pack_layers", "narrow_mlp_packed"} <= public  # narrow_mlp's pack-once path
    assert set(ACTIVATIONS) == set(fused_mlp.ACTIVATIONS)  # the harness's names are the library's


WITHOUT_TORCH = '''
import sys


class NotInstalled:  # as if torch, triton and the library were not installed at all
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "triton", "fused_mlp"):
            raise ModuleNotFoundError(f"No module named {name!r}")


sys.meta_path.insert(0, NotInstalled())

from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture

fx = write_dashboard_fixture(sys.argv[1])
from dashboard.app import create_app, render_page
from dashboard.store.model import ResultsStore
from dashboard.pages import compare, discover_pages, overview, regressions, roofline, trends
from regressions.cli import main as gate

app = create_app(fx.results_dir, detect_in_background=False)
client = app.server.test_client()
assert client.get("/").status_code == 200 and client.get("/_dash-layout").status_code == 200
store = ResultsStore(fx.results_dir, detect_in_background=False)
pages = discover_pages()
for page in pages:
    assert "Could not build" not in str(render_page(store, pages, page.path, "")), page.path
data = store.get()
commits = data.run(MAIN_MACHINE, MAIN_ENV).commits["commit_hash"].tolist()
headline, panels, _, _ = overview.update(data, MAIN_MACHINE, MAIN_ENV, commits[-1], None, None, None, None, None, None)
assert panels and "geomean" in str(panels)
trend = trends.update(data, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "tflops", None, "commit", [], None)
assert trend["data"]
assert roofline.update(data, MAIN_MACHINE, MAIN_ENV, commits[-1])["data"]
rows, _, _ = compare.update(data, MAIN_MACHINE, MAIN_ENV, commits[0], commits[-1], "latency", "1.1", [],
                            None, None, None, None, None)
assert rows
regressions.inbox(data, store.findings(), None, "regression", [])
# The newest commit introduced nothing (the planted regression is older and still open): pass.
code = gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE])
assert code == 0, code
# Judged from the commit before the planted regression, the gate fails on it.
before = fx.main.commits[fx.main.commits.index(fx.regression_commit) - 1]
code = gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE, "--base", before])
assert code == 1, code
loaded = sorted(m for m in ("torch", "triton", "fused_mlp") if m in sys.modules)
print("loaded:", loaded)
'''


def test_dashboard_and_gate_work_without_torch_or_triton(tmp_path):
    done = _run_python(WITHOUT_TORCH, str(tmp_path / "results"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "loaded: []" in done.stdout


# What a measured commit's environment may also hold: its own copies of the layers below the suite
# (or none, before they were packages). HEAD's suite must import HEAD's, never these.
STALE_LAYER = '''raise ImportError("this is the measured commit's copy, not the suite's checkout's")
'''

OLDER_LIBRARY_INIT = '''"""fused_mlp as an older commit had it: no gated_mlp yet, no pack-once API."""
from .ops.gated_up import gated_up
from .ops.linear_act import linear_act
from .ops.narrow_mlp import narrow_mlp
'''


@pytest.mark.slow
def test_heads_suite_runs_against_an_older_library(tmp_path):
    """asv runs HEAD's suite against each commit's library. Against a library that lacks an op
    (gated_mlp) and the pack-once API, the suite skips what is missing (NaN) and records values,
    not failures, for everything else: fused under Triton's CPU interpreter, and eager. The
    measured commit's own copies of workload, asv_results and regressions, first on the path,
    are not what the suite imports (benchmarks/__init__.py)."""
    older = tmp_path / "older"
    shutil.copytree(ROOT / "fused_mlp", older / "fused_mlp", ignore=shutil.ignore_patterns("__pycache__"))
    (older / "fused_mlp" / "__init__.py").write_text(OLDER_LIBRARY_INIT)
    for layer in ("workload", "asv_results", "regressions"):
        (older / layer).mkdir()
        (older / layer / "__init__.py").write_text(STALE_LAYER)
    conf = asv_project(tmp_path)
    # fused and eager's latency: what this test asks. The torch peers never touch the library,
    # so eager stands for them (torch.compile on the CPU cost CI ~40 s here, max-autotune minutes)
    bench = r"bench_ops\..*\.track_latency\(.*'(fused|eager)'\)$"
    env = {**asv_env(tmp_path, "tiny"), "TRITON_INTERPRET": "1", "ASV_PYTHONPATH": str(older), "FUSED_MLP_BENCH": bench}
    machine = subprocess.run([sys.executable, "-m", "benchmarks.harness.environment", "--machine", "older"],
                             env=env, capture_output=True, text=True, cwd=ROOT)
    assert machine.returncode == 0, machine.stderr
    done = asv(conf, env, "run", "-E", "existing:same", "--set-commit-hash", "HEAD", "--record-samples",
               "--machine", "older", "-b", bench)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (result,) = [p for p in (tmp_path / "results" / "older").glob("*.json") if p.name != "machine.json"]
    import json

    doc = json.loads(result.read_text())
    recorded = {}
    for name, row in doc["results"].items():
        cols = dict(zip(doc["result_columns"], row))
        impls = [eval(p) for p in cols["params"][1]]  # asv stores repr() strings
        recorded[name.split(".")[1]] = dict(zip(impls, cols["result"]))
    assert set(recorded) == {"LinearAct", "GatedMLP", "NarrowMLP"}
    assert math.isnan(recorded["GatedMLP"]["fused"])  # the older library has no gated_mlp: skipped
    for op, values in recorded.items():
        for impl in ("eager",) + (() if op == "GatedMLP" else ("fused",)):
            assert values[impl] is not None and values[impl] > 0, (op, impl, values)
        selected = {impl: v for impl, v in values.items() if impl in ("fused", "eager")}
        assert all(v is not None for v in selected.values()), (op, values)  # nothing failed


def test_the_dashboard_extra_installs_no_torch():
    """pip install ".[dashboard]" must not pull torch or triton (nor the extra that has them)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    dashboard = " ".join(project["optional-dependencies"]["dashboard"]).lower()
    assert "torch" not in dashboard and "triton" not in dashboard and "fused-mlp[" not in dashboard
