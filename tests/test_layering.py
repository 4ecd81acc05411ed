"""The three layers stay apart: the library imports no harness, the harness uses only the
library's public API (so HEAD's suite runs against older commits), and the dashboard and the
gate work with neither torch nor Triton importable."""

import ast
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fused_mlp
from benchmarks.harness.ops import OPS
from benchmarks.harness.workloads import ACTIVATIONS
from tests.suite_run import ROOT, asv, asv_env, asv_project

HARNESS = ROOT / "benchmarks"


def _run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_library_imports_no_harness_and_no_results_stack():
    done = _run_python("import sys, fused_mlp\n"
                       "print(sorted(m for m in ('asv', 'pandas', 'dash', 'plotly', 'benchmarks', 'dashboard')"
                       " if m in sys.modules))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _fused_mlp_uses(tree: ast.AST) -> list[str]:
    """How a module reaches into fused_mlp: its imports of it, and attributes read off it."""
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fused_mlp"):
            uses.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            uses += [f"import {a.name}" for a in node.names if a.name.startswith("fused_mlp")]
    return uses


def test_the_suite_reaches_fused_mlp_through_one_import_only():
    """Everything the suite calls in the library goes through harness/library.py (and the op
    specs' getattr by public name); no module imports from inside fused_mlp."""
    found = {}
    for path in sorted(HARNESS.rglob("*.py")):
        uses = _fused_mlp_uses(ast.parse(path.read_text()))
        if uses:
            found[str(path.relative_to(ROOT))] = uses
    assert found == {"benchmarks/harness/library.py": ["import fused_mlp"]}


def _import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the modules of `package` it imports, at the top or inside a function (a lazy
    import is still a dependency: it only moves the cycle to run time)."""
    def name(path: Path) -> str:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    modules = {name(p): p for p in package.rglob("*.py")}
    graph = {}
    for module, path in modules.items():
        here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") \
                    if node.level else node.module or ""
                named = [base] + [f"{base}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            else:
                continue
            deps |= {n for n in named if n in modules and n != module}
        graph[module] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import loop, as the modules on it (each loop found from its smallest module)."""
    found = []

    def walk(path):
        for nxt in sorted(graph[path[-1]]):
            if nxt == path[0]:
                found.append(path)
            elif nxt not in path and nxt > path[0]:
                walk(path + [nxt])

    for start in sorted(graph):
        walk([start])
    return found


def test_the_harness_imports_point_one_way():
    """A Case is plain data and the op registry looks specs up: workloads.py imports no op, the
    op specs compute with numerics.py, and tensors.py builds inputs from the registry. No module
    of the suite imports, even lazily, a module that imports it back."""
    graph = _import_graph(HARNESS)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]  # the check can fail
    assert _cycles(graph) == []
    assert graph["benchmarks.harness.workloads"] == set()
    assert "benchmarks.harness.ops" in graph["benchmarks.harness.tensors"]
    assert "benchmarks.harness.workloads" in graph["benchmarks.harness.ops.linear_act"]


def test_the_dashboard_imports_point_one_way():
    """No dashboard module imports, even lazily inside a function, a module that imports it back
    (detection and model did: what both need is loaded_table, below them)."""
    graph = _import_graph(ROOT / "dashboard")
    assert _cycles(graph) == []
    assert graph["dashboard.loaded_table"] & {"dashboard.model", "dashboard.detection"} == set()


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
from dashboard.model import ResultsStore
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
assert roofline.update(data, MAIN_MACHINE, MAIN_ENV, commits[-1], None, None, None, None, None)["data"]
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


OLDER_LIBRARY_INIT = '''"""fused_mlp as an older commit had it: no gated_mlp yet, no pack-once API."""
from .ops.gated_up import gated_up
from .ops.linear_act import linear_act
from .ops.narrow_mlp import narrow_mlp
'''


@pytest.mark.slow
def test_heads_suite_runs_against_an_older_library(tmp_path):
    """asv runs HEAD's suite against each commit's library. Against a library that lacks an op
    (gated_mlp) and the pack-once API, the suite skips what is missing (NaN) and records values,
    not failures, for everything else: fused under Triton's CPU interpreter, eager, compile."""
    older = tmp_path / "older"
    shutil.copytree(ROOT / "fused_mlp", older / "fused_mlp", ignore=shutil.ignore_patterns("__pycache__"))
    (older / "fused_mlp" / "__init__.py").write_text(OLDER_LIBRARY_INIT)
    conf = asv_project(tmp_path)
    # fused, eager and compile's latency: what this test asks (max-autotune's CPU autotuning and the
    # peers' skips would only add minutes to CI)
    bench = r"bench_ops\..*\.track_latency\(.*'(fused|eager|compile)'\)$"
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
        for impl in ("eager", "compile") + (() if op == "GatedMLP" else ("fused",)):
            assert values[impl] is not None and values[impl] > 0, (op, impl, values)
        selected = {impl: v for impl, v in values.items() if impl in ("fused", "eager", "compile")}
        assert all(v is not None for v in selected.values()), (op, values)  # nothing failed


def test_the_dashboard_extra_installs_no_torch():
    """pip install ".[dashboard]" must not pull torch or triton (nor the extra that has them)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    dashboard = " ".join(project["optional-dependencies"]["dashboard"]).lower()
    assert "torch" not in dashboard and "triton" not in dashboard and "fused-mlp[" not in dashboard
