"""pyproject's filterwarnings: a warning attributed to the project's own code fails the test that
raised it; a named third-party one does not. Checked by running pytest, under the repo's own
config, on a test file whose functions warn from modules named like ours and like others'
(warnings attributes a warning to the `__name__` of the frame that warned)."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILTERS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["filterwarnings"]
OURS = next(f for f in FILTERS if f.startswith("error:")).split(":")[3]

PROBES = '''
import warnings

import pytest


def warner(module, message, category):
    """A function whose warnings are attributed to `module`, as if defined there."""
    scope = {"__name__": module, "warnings": warnings}
    exec(compile("def warn(m, c):\\n    warnings.warn(m, c)", module.replace(".", "/") + ".py", "exec"), scope)
    return lambda: scope["warn"](message, category)


@pytest.mark.parametrize("module", MODULES)
def test_probe(module):
    warner(module, MESSAGE, CATEGORY)()
'''


def _outcomes(tmp_path, modules, message="a warning", category="UserWarning") -> dict:
    test = tmp_path / "test_probes.py"
    test.write_text(f"MODULES, MESSAGE, CATEGORY = {modules!r}, {message!r}, {category}\n" + PROBES)
    done = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
                           "-p", "no:xdist", "-p", "no:randomly", "-rA", "-q", str(test)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    outcomes = {m: o for o, m in re.findall(r"^(PASSED|FAILED) \S+::test_probe\[(.+?)\]", done.stdout, re.M)}
    assert sorted(outcomes) == sorted(modules), done.stdout[-3000:] + done.stderr[-3000:]
    failed_by_the_warning = len(re.findall(rf"^E\s+{category}: {re.escape(message)}$", done.stdout, re.M))
    assert failed_by_the_warning == list(outcomes.values()).count("FAILED"), done.stdout[-3000:]  # no other failure
    return outcomes


def test_a_warning_from_our_code_fails_the_test(tmp_path):
    ours = ["fused_mlp.ops.linear_act", "benchmarks.run", "asv_results.data", "dashboard", "tools.measure",
            "tests.suite_fixtures", "asv_results.table", "regressions.gate", "workload.cases", "workloads"]
    assert _outcomes(tmp_path, ours) == {m: "FAILED" for m in ours}


def test_a_warning_from_another_package_is_reported_not_failed(tmp_path):
    others = ["numpy.core", "dashboardx", "dash.dash_table", "my_tools", "pandas.tests"]
    assert _outcomes(tmp_path, others) == {m: "PASSED" for m in others}


def test_a_named_third_party_warning_is_ignored_even_at_our_call_site(tmp_path):
    """Dash's DataTable notice is raised where our page imports it: the named filter wins."""
    modules = ["dashboard.pages.kernels", "selenium.webdriver"]
    outcomes = _outcomes(tmp_path, modules, "The dash_table.DataTable will be removed", "DeprecationWarning")
    assert outcomes == {m: "PASSED" for m in modules}


def test_every_top_level_package_of_the_repo_is_ours_in_the_filter():
    """A folder of Python modules at the top (tools/ and tests/ have no __init__.py) or a module."""
    packages = sorted({p.parent.name for p in ROOT.glob("*/*.py")} | {p.stem for p in ROOT.glob("*.py")})
    assert {"fused_mlp", "benchmarks", "dashboard", "tools", "tests"} <= set(packages)
    assert [p for p in packages if not re.match(OURS, p)] == []
