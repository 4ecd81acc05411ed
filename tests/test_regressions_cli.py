"""python -m dashboard.regressions: output formats, exit codes, bad results reported (no traceback)."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.regressions.cli import main, parse_threshold
from tests.asv_fixtures import SeriesSpec, write_history

REPO = Path(__file__).resolve().parents[1]


def make(tmp_path, steps, n_commits=40, **kw):
    spec = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), steps=steps, run_noise=0.01, **kw)
    quiet = SeriesSpec("bench.Mlp.track_latency", (16, "eager"), ("m", "impl"), run_noise=0.01)
    return write_history(tmp_path / "results", [spec, quiet], n_commits, seed=5)


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_regression_at_newest_commit_fails_the_gate(tmp_path, capsys):
    history = make(tmp_path, steps=((30, 0.2),))
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 1, out
    assert f"commit {history.commits[30][:12]}" in out and "REGRESSION" in out
    assert "bench.Mlp.track_latency(m=16, impl='fused')" in out and "+20" in out
    assert "FAIL" in out and err == ""


def test_fixed_regression_and_improvements_pass(tmp_path, capsys):
    history = make(tmp_path, steps=((15, 0.2), (28, -1 / 6)))
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0, out
    # grouped by commit, newest first: the fix, then the regression it undid
    assert out.index(history.commits[28][:12]) < out.index(history.commits[15][:12])
    assert "not present now" in out and "pass" in out


def test_since_limits_the_report_and_the_gate(tmp_path, capsys):
    history = make(tmp_path, steps=((20, 0.2),))
    assert run(capsys, "--results", str(history.results_dir), "--since", history.commits[10][:10])[0] == 1
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--since", history.commits[25])
    assert code == 0 and "No level changes found." in out


def test_json_and_markdown_formats(tmp_path, capsys):
    history = make(tmp_path, steps=((30, 0.2),))
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["gate"] == {"failed": True, "regressions_present_at_newest": 1}
    (group,) = doc["commits"]
    (finding,) = group["findings"]
    assert group["commit_hash"] == history.commits[30] == finding["commit_hash"]
    assert finding["previous_commit"] == history.commits[29]
    assert finding["direction"] == "regression" and finding["relative_change"] == pytest.approx(0.2, abs=0.03)
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--format", "markdown")
    assert code == 1 and f"### `{history.commits[30][:12]}`" in out
    assert "| regression | `bench.Mlp.track_latency` | m=16, impl='fused' |" in out


def test_reports_say_where_else_an_unpinned_change_could_be():
    import pandas as pd

    from dashboard.data import LoadReport
    from dashboard.regressions import Finding
    from dashboard.regressions.report import render_markdown, render_text

    finding = Finding(
        benchmark="bench.Mlp.track_latency", params="m=16", machine="gpu", env_name="env", unit="seconds",
        commit_hash="c" * 40, previous_commit="b" * 40, commit_date=pd.Timestamp("2026-01-02", tz="UTC"),
        before=1.0, after=1.06, relative_change=0.06, direction="regression", better="lower", kind="step",
        confirmed=True, p_value=1e-5, score=3.0, present_at_newest=True, series_last_commit="d" * 40,
        earliest_commit="a" * 40, latest_commit="e" * 40, plausible_commits=4)
    note = "could be any of 4 commits aaaaaaaa..eeeeeeee"
    assert note in render_text([finding], LoadReport(), "changes", [finding])
    assert note in render_markdown([finding], LoadReport(), "changes", [finding])
    pinned = dataclasses.replace(finding, earliest_commit="c" * 40, latest_commit="c" * 40, plausible_commits=1)
    assert "could be" not in render_text([pinned], LoadReport(), "changes", [pinned])


def test_bad_and_partial_results_are_reported_not_crashed(tmp_path, capsys):
    history = make(tmp_path, steps=())
    machine_dir = history.results_dir / history.machine
    (machine_dir / "deadbeef-broken.json").write_text('{"commit_hash": "dead", "results": {')
    (machine_dir / "notes.json").write_text("[1, 2, 3]")
    code, out, err = run(capsys, "--results", str(history.results_dir), "--format", "markdown")
    assert code == 0
    assert "deadbeef-broken.json: truncated JSON" in err and "notes.json: not an asv result" in err
    assert "Results that could not be used" in out and "deadbeef-broken.json" in out


@pytest.mark.parametrize("args, message", [
    (["--results", "{tmp}/missing"], "does not exist"),
    (["--results", "{results}", "--machine", "other-box"], "no usable asv results for machine 'other-box'"),
    (["--results", "{results}", "--since", "0123456789abcdef"], "--since: commit '0123456789abcdef' is not in"),
])
def test_usage_errors_exit_2_with_a_clear_message(tmp_path, capsys, args, message):
    history = make(tmp_path, steps=(), n_commits=12)
    argv = [a.format(tmp=tmp_path, results=history.results_dir) for a in args]
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_threshold_parsing():
    assert parse_threshold("5%") == pytest.approx(0.05)
    assert parse_threshold("0.1") == pytest.approx(0.1)
    assert parse_threshold("10") == pytest.approx(0.1)


def test_module_entry_point_runs(tmp_path):
    history = make(tmp_path, steps=((30, 0.2),))
    proc = subprocess.run([sys.executable, "-m", "dashboard.regressions", "--results", str(history.results_dir),
                           "--threshold", "5%", "--format", "text"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert history.commits[30][:12] in proc.stdout
    missing = subprocess.run([sys.executable, "-m", "dashboard.regressions", "--results", str(tmp_path / "nope")],
                             cwd=REPO, capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr


def _measurement_tool():
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "measure_regression_detection.py"
    spec = importlib.util.spec_from_file_location("measure_regression_detection", path)
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # dataclasses look their module up there
    spec.loader.exec_module(tool)
    return tool


def test_measurement_scores_both_detectors_by_the_same_interval_rule():
    import numpy as np

    tool = _measurement_tool()
    planted = {"index": 30, "end": 30, "direction": "regression"}
    assert not tool._near(tool.Detection(25, "regression"), planted)  # +-2 commits only
    assert tool._near(tool.Detection(25, "regression", 24, 31), planted)  # its interval covers it
    assert tool._near(tool.Detection(32, "regression", 32, 32), planted)  # never narrower than +-2
    values = np.exp(np.random.default_rng(3).normal(0, 0.02, 60)) * np.r_[np.ones(30), np.full(30, 1.03)]
    (d,) = tool._with_intervals(values, [tool.Detection(28, "regression")])  # asv's steps get one too
    assert d.low <= 28 <= d.high


def test_measurement_tells_misplaced_reports_from_crying_wolf(monkeypatch):
    import numpy as np

    tool = _measurement_tool()
    reports = [tool.Detection(30, "regression"), tool.Detection(24, "regression", 24, 31),
               tool.Detection(50, "regression"), tool.Detection(10, "improvement")]
    monkeypatch.setattr(tool, "DETECTORS", {"fixed": lambda *args: reports})
    monkeypatch.setattr(tool, "MAX_DELAY", 0)
    planted = [{"kind": "step", "index": 30, "end": 30, "direction": "regression", "size": 0.05}]
    job = (np.ones(60), np.ones(60), np.ones(60), None, "lower", planted)
    strict, intervals, margin5 = (tool.score_series(job)[rule.name]["fixed"] for rule in tool.RULES)
    # +-2: the hit at 30; 24 repeats the found change (misplaced); 50 and 10 match nothing
    assert strict["matched"] == {0} and strict["false_alarms"] == 3 and strict["misplaced"] == 1
    assert intervals["false_alarms"] == 3 and intervals["misplaced"] == 1  # 24's interval covers 30 too
    assert margin5["false_alarms"] == 3 and margin5["misplaced"] == 1
    first_wrong = [tool.Detection(26, "regression"), tool.Detection(50, "regression")]  # 4 commits off
    monkeypatch.setattr(tool, "DETECTORS", {"fixed": lambda *args: first_wrong})
    strict, _, margin5 = (tool.score_series(job)[rule.name]["fixed"] for rule in tool.RULES)
    assert strict["matched"] == set() and strict["misplaced"] == 1 and strict["false_alarms"] == 2
    assert margin5["matched"] == {0} and margin5["false_alarms"] == 1 and margin5["misplaced"] == 0


def test_gate_row_counts_the_histories_a_ci_gate_would_fail(monkeypatch):
    import numpy as np

    tool = _measurement_tool()

    def fake(values, *rest):  # a regression from the 20th commit on, gone again after the 40th
        n = len(values)
        return [tool.Detection(19, "regression", present=n <= 40)] if n >= 20 else []

    monkeypatch.setattr(tool, "DETECTORS", {"fake": fake})
    job = (np.ones(60), np.ones(60), np.ones(60), None, "lower", [])
    assert tool.gate_failures(job) == {"fake": (21, 60 - tool.GATE_FROM + 1)}  # histories of 20..40 commits
    assert "428.57 (21 of 49)" in tool.gate_table([tool.gate_failures(job)])


def test_oracle_counts_steps_the_best_split_places_off():
    import numpy as np

    tool = _measurement_tool()
    level = np.r_[np.ones(30), np.full(30, 1.2)]
    planted = [{"kind": "step", "index": 30, "end": 30, "direction": "regression", "size": 0.2}]
    jobs = [(level, None, None, None, "lower", planted),
            (level, None, None, None, "lower", [{**planted[0], "index": 40, "end": 40}])]
    assert tool.oracle_misplaced(jobs) == {0.2: (1, 2)}
