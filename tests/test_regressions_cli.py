"""python -m regressions: output formats, exit codes, bad results reported (no traceback)."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from regressions.cli import main, parse_threshold
from tests.asv_fixtures import SeriesSpec, write_history

REPO = Path(__file__).resolve().parents[1]


def make(tmp_path, steps, n_commits=40, **kw):
    spec = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), steps=steps, run_noise=0.01, **kw)
    quiet = SeriesSpec("bench.Mlp.track_latency", (16, "eager"), ("m", "impl"), run_noise=0.01)
    return write_history(tmp_path / "results", [spec, quiet], n_commits, seed=5, n_samples=15)


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def accept(history, **entry):
    path = history.results_dir / "accepted.json"
    doc = json.loads(path.read_text()) if path.exists() else {"version": 1, "accepted": []}
    doc["accepted"].append({"who": "alice", "why": "a known trade-off", **entry})
    path.write_text(json.dumps(doc))


def fail_from(history, index, benchmark="bench.Mlp.track_latency", params=(16, "fused")):
    """Make one series fail (asv's null) at every commit from ``index`` on."""
    for commit in history.commits[index:]:
        path = history.results_dir / history.machine / f"{commit[:8]}-{history.env_name}.json"
        doc = json.loads(path.read_text())
        row = doc["results"][benchmark]
        grid = [[eval(v) for v in values] for values in row[1]]
        combos = [(m, i) for m in grid[0] for i in grid[1]]
        row[0][combos.index(params)] = None
        path.write_text(json.dumps(doc))


def test_a_clear_regression_at_the_newest_commit_fails_at_once(tmp_path, capsys):
    history = make(tmp_path, steps=((39, 0.2),))
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 1, out
    gate_section = out[:out.index("History:")]
    assert "REGRESSION (fails the gate)" in gate_section and history.commits[39][:12] in gate_section
    assert "bench.Mlp.track_latency(m=16, impl='fused')" in gate_section and "+20" in gate_section
    assert "µs -> " in gate_section and "p<1e-6" in out and "p=0 " not in out and " unit" not in out
    assert out.rstrip().endswith("Gate: FAIL: 1 regression(s)") and err == ""


def test_an_older_regression_fails_only_the_commits_that_brought_it(tmp_path, capsys):
    history = make(tmp_path, steps=((30, 0.2),))
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0, out  # judged: the newest commit, which brought nothing
    assert "Still open from before the judged commits" in out and history.commits[30][:8] in out
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--base", history.commits[28])
    assert code == 1 and "at the judged commits" in out  # commits 29..39 include the step
    # as CI saw it at the step's own commit: A..B judges the history as it stood at B
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--base",
                       f"{history.commits[29][:10]}..{history.commits[30][:10]}")
    assert code == 1, out
    code, _, _ = run(capsys, "--results", str(history.results_dir), "--base",
                     f"{history.commits[30][:10]}..{history.commits[31][:10]}")
    assert code == 0  # the commit after it passes: the step was judged when it came
    accept(history, benchmark="bench.Mlp.track_latency", params="m=16, impl='fused'", commit=history.commits[30])
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0 and "Still open" not in out  # accepted: closed


def test_fixed_regression_and_improvements_pass(tmp_path, capsys):
    history = make(tmp_path, steps=((15, 0.2), (28, -1 / 6)))
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--base", history.commits[10])
    assert code == 0, out
    # grouped by commit, newest first: the fix, then the regression it undid
    assert out.index(history.commits[28][:12]) < out.index(history.commits[15][:12])
    assert "not present now" in out and "Gate: pass" in out


def test_an_accepted_regression_passes_and_says_who_accepted_it(tmp_path, capsys):
    history = make(tmp_path, steps=((39, 0.2),))
    accept(history, benchmark="bench.Mlp.track_latency", params="m=16, impl='eager'", commit=history.commits[39][:8])
    assert run(capsys, "--results", str(history.results_dir))[0] == 1  # another series: not accepted
    accept(history, benchmark="bench.Mlp.track_latency", params="m=16, impl='fused'", commit=history.commits[38][:10])
    assert run(capsys, "--results", str(history.results_dir))[0] == 1  # another commit: not accepted
    accept(history, benchmark="bench.Mlp.track_latency", commit=history.commits[39][:10])  # every params
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0, out
    assert "ACCEPTED (accepted in accepted.json)" in out and "accepted by alice: a known trade-off" in out
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--format", "json")
    (item,) = json.loads(out)["gate"]["items"]
    assert item["category"] == "accepted" and item["accepted"]["who"] == "alice"


@pytest.mark.parametrize("content, message", [
    ("{", "truncated JSON"),
    ('{"version": 1, "accepted": [{"benchmark": "b"', "truncated JSON"),
    ("accepted:\n  - benchmark: b\n", "not JSON"),  # YAML where JSON belongs
    ("hello", "not JSON"),
    ('{"accepted": [{"benchmark": "b", "commit": "abcdef1", "who": "x"}]}', "entry 1: 'why' must be"),
    ('{"accepted": [{"benchmark": "b", "commit": "HEAD", "who": "x", "why": "y"}]}', "is not a commit hash"),
    ('{"accepted": [{"benchmark": "b", "commit": "abcdef1", "who": "x", "why": "y", "by": "z"}]}', "unknown key"),
    ('[1]', "expected an object with an 'accepted' list"),
])
def test_an_unusable_accepted_file_cannot_be_judged(tmp_path, capsys, content, message):
    history = make(tmp_path, steps=(), n_commits=12)
    (history.results_dir / "accepted.json").write_text(content)
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 2 and message in err and "Traceback" not in err and out == ""


def test_a_suspected_change_fails_only_with_strict(tmp_path, capsys):
    spec = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), steps=((40, 0.12),), run_noise=0.03)
    history = write_history(tmp_path / "results", [spec], 41, seed=9, n_samples=15)
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0 and "SUSPECTED (fails only with --strict)" in out, out
    assert out.rstrip().endswith("(1 suspected; --strict would fail)")
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--strict")
    assert code == 1 and out.rstrip().endswith("FAIL: 1 suspected (--strict)")
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--strict", "--base", history.commits[-1])
    assert code == 0 and "no commits after the base" in out  # nothing new to judge


def test_a_benchmark_that_starts_failing_fails_the_gate_once(tmp_path, capsys):
    history = make(tmp_path, steps=())
    fail_from(history, 37)
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--base", history.commits[36])
    assert code == 1, out
    assert "FAILING     bench.Mlp.track_latency(m=16, impl='fused')  started failing (was ok)" in out
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 0 and "failing for 3 commits" in out  # judged when it started
    accept(history, benchmark="bench.Mlp.track_latency", params="m=16, impl='fused'", commit=history.commits[37])
    assert run(capsys, "--results", str(history.results_dir), "--base", history.commits[36])[0] == 0


def test_sub_metrics_are_listed_under_their_parent(tmp_path, capsys):
    specs = [SeriesSpec(name, (16,), ("m",), steps=((39, 0.2),), run_noise=0.01)
             for name in ("bench.M.track_step", "bench.M.track_step.forward", "bench.M.track_step.forward.solve")]
    history = write_history(tmp_path / "results", specs, 40, seed=5, n_samples=15)
    code, out, _ = run(capsys, "--results", str(history.results_dir))
    assert code == 1 and out.rstrip().endswith("FAIL: 1 regression(s), 2 sub-metric(s) with them")
    history_lines = out[out.index("History:"):].splitlines()
    step = next(i for i, line in enumerate(history_lines) if "bench.M.track_step(m=16)" in line)
    assert "└ REGRESSION  bench.M.track_step.forward(m=16)" in history_lines[step + 1]
    assert history_lines[step + 2].startswith("      └ REGRESSION  bench.M.track_step.forward.solve(m=16)")


def test_since_limits_the_listed_history_not_the_gate(tmp_path, capsys):
    history = make(tmp_path, steps=((20, 0.2), (39, 0.2)))
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--since", history.commits[25])
    assert code == 1
    listed = out[out.index("History:"):]
    assert history.commits[39][:12] in listed and history.commits[20][:12] not in listed


def test_json_and_markdown_formats(tmp_path, capsys):
    history = make(tmp_path, steps=((39, 0.2),))
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["gate"]["failed"] and doc["gate"]["verdict"] == "FAIL: 1 regression(s)"
    (failing,) = doc["gate"]["failing"]
    assert failing["category"] == "regression" and failing["change"]["commit_hash"] == history.commits[39]
    (group,) = doc["commits"]
    (finding,) = group["changes"]
    assert group["commit_hash"] == history.commits[39] == finding["commit_hash"]
    assert finding["previous_commit"] == history.commits[38] and finding["clear"] and not finding["confirmed"]
    assert finding["direction"] == "regression" and finding["relative_change"] == pytest.approx(0.2, abs=0.03)
    code, out, _ = run(capsys, "--results", str(history.results_dir), "--format", "markdown")
    assert code == 1 and f"### `{history.commits[39][:12]}`" in out and "**Gate: FAIL: 1 regression(s)**" in out
    assert "| regression | `bench.Mlp.track_latency` | m=16, impl='fused' |" in out


def test_reports_say_where_else_an_unpinned_change_could_be():
    import pandas as pd

    from asv_results.data import LoadReport
    from regressions import Finding
    from regressions.gate import GateVerdict
    from regressions.report import render_markdown, render_text

    finding = Finding(
        benchmark="bench.Mlp.track_latency", params="m=16", machine="gpu", env_name="env", unit="seconds",
        commit_hash="c" * 40, previous_commit="b" * 40, commit_date=pd.Timestamp("2026-01-02", tz="UTC"),
        before=1.0, after=1.06, relative_change=0.06, direction="regression", better="lower", kind="step",
        confirmed=True, p_value=1e-5, score=3.0, present_at_newest=True, series_last_commit="d" * 40,
        earliest_commit="a" * 40, latest_commit="e" * 40, plausible_commits=4)
    note = "could be any of 4 commits aaaaaaaa..eeeeeeee"
    verdict = GateVerdict([])
    assert note in render_text([finding], [], verdict, LoadReport(), "changes")
    assert note in render_markdown([finding], [], verdict, LoadReport(), "changes")
    pinned = dataclasses.replace(finding, earliest_commit="c" * 40, latest_commit="c" * 40, plausible_commits=1)
    assert "could be" not in render_text([pinned], [], verdict, LoadReport(), "changes")


def test_a_crash_inside_the_gate_exits_2_never_1(tmp_path, capsys, monkeypatch):
    history = make(tmp_path, steps=((39, 0.2),))

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr("regressions.judgement.find_changes", broken)
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 2 and "internal error, the gate could not judge (KeyError: 'boom')" in err


def test_bad_and_partial_results_are_reported_not_crashed(tmp_path, capsys):
    history = make(tmp_path, steps=())
    machine_dir = history.results_dir / history.machine
    early = history.dates_ms[0] - 1000  # dated before the judged commit: a warning, not a reason to stop
    (machine_dir / "deadbeef-broken.json").write_text('{"commit_hash": "dead", "date": %d, "results": {' % early)
    (machine_dir / "notes.json").write_text("[1, 2, 3]")
    code, out, err = run(capsys, "--results", str(history.results_dir), "--format", "markdown")
    assert code == 0
    assert "deadbeef-broken.json: truncated JSON" in err and "notes.json: not an asv result" in err
    assert "Results that could not be used" in out and "deadbeef-broken.json" in out


@pytest.mark.parametrize("args, message", [
    (["--results", "{tmp}/missing"], "does not exist"),
    (["--results", "{results}", "--machine", "other-box"], "no usable asv results for machine 'other-box'"),
    (["--results", "{results}", "--since", "0123456789abcdef"], "--since: commit '0123456789abcdef' is not in"),
    (["--results", "{results}", "--base", "0123456789abcdef"], "--base: commit '0123456789abcdef' is not in"),
    (["--results", "{results}", "--base", "..{first}"], "name the base commit"),
    (["--results", "{results}", "--base", "{last}..{first}"], "is older than"),
])
def test_usage_errors_exit_2_with_a_clear_message(tmp_path, capsys, args, message):
    history = make(tmp_path, steps=(), n_commits=12)
    argv = [a.format(tmp=tmp_path, results=history.results_dir, first=history.commits[0][:10],
                     last=history.commits[-1][:10]) for a in args]
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_threshold_parsing():
    assert parse_threshold("5%") == pytest.approx(0.05)
    assert parse_threshold("0.1") == pytest.approx(0.1)
    assert parse_threshold("10") == pytest.approx(0.1)


def test_module_entry_point_runs(tmp_path):
    history = make(tmp_path, steps=((39, 0.2),))
    proc = subprocess.run([sys.executable, "-m", "regressions", "--results", str(history.results_dir),
                           "--threshold", "5%", "--format", "text"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert history.commits[39][:12] in proc.stdout
    missing = subprocess.run([sys.executable, "-m", "regressions", "--results", str(tmp_path / "nope")],
                             cwd=REPO, capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr


def _measurement_tool():
    from tests.tool_modules import load_tool

    return load_tool("measure_regression_detection")


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


def test_gate_measurement_counts_delays_and_false_failures():
    from tools import gate_measurement as gm

    label_of = {("b", "case=0"): ("regression", 0.2), ("b", "case=1"): ("regression", 0.2),
                ("b", "case=2"): ("regression", 0.1), ("b", "case=3"): ("noise", 0.0)}
    prefixes = range(gm.GATE_FROM, gm.N_COMMITS + 1)
    failing = {n: {g: set() for g in gm.GATES} for n in prefixes}
    failing[gm.STEP_AT + 1]["ours"].add(("b", "case=0"))  # at the step's own commit
    failing[gm.STEP_AT + 3]["ours"].add(("b", "case=1"))  # two commits later
    failing[gm.STEP_AT + 1]["ours"].add(("b", "case=3"))  # nothing changed there: a false failure
    failing[20]["ours"].add(("b", "case=3"))
    table = gm._table("test", label_of, failing, prefixes)
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1] for line in table.splitlines() if " | " in line}
    assert rows["20% regressions: gate fails at the commit itself"] == "0.500 (1/2)"
    assert rows["20% regressions: gate fails within 3 commits"] == "1.000 (2/2)"
    assert rows["20% regressions: commits until the gate fails (median, p90; never = later than 10)"] == \
        "median 1, p90 2"
    assert rows["10% regressions: gate fails within 10 commits"] == "0.000 (0/1)"
    judged = len(prefixes)
    assert rows["false gate failures per 1,000 judged commits, nothing changed (noise)"] == \
        f"{2000 / judged:.2f} (2 of {judged:,})"


def test_oracle_counts_steps_the_best_split_places_off():
    import numpy as np

    tool = _measurement_tool()
    level = np.r_[np.ones(30), np.full(30, 1.2)]
    planted = [{"kind": "step", "index": 30, "end": 30, "direction": "regression", "size": 0.2}]
    jobs = [(level, None, None, None, "lower", planted),
            (level, None, None, None, "lower", [{**planted[0], "index": 40, "end": 40}])]
    assert tool.oracle_misplaced(jobs) == {0.2: (1, 2)}


# --------------------------------------------------------------------------- results the gate could not read


def two_shards(tmp_path, regressed_step=0.4, n_commits=20):
    """Two machines (shards) over the same commits; shard-a regresses at the newest commit."""
    results = tmp_path / "results"
    spec = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), run_noise=0.01,
                      steps=((n_commits - 1, regressed_step),))
    quiet = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), run_noise=0.01)
    a = write_history(results, [spec], n_commits, seed=5, n_samples=15, machine="shard-a")
    write_history(results, [quiet], n_commits, seed=5, n_samples=15, machine="shard-b", merge_benchmarks=True)
    return a


def newest_file(history):
    return history.results_dir / history.machine / f"{history.commits[-1][:8]}-{history.env_name}.json"


def base_range(history):
    return f"{history.commits[-2][:10]}..{history.commits[-1][:10]}"


def test_a_truncated_result_of_a_judged_commit_cannot_be_judged(tmp_path, capsys):
    history = two_shards(tmp_path)
    assert run(capsys, "--results", str(history.results_dir), "--base", base_range(history))[0] == 1
    path = newest_file(history)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    code, out, err = run(capsys, "--results", str(history.results_dir), "--base", base_range(history))
    assert code == 2, out
    assert path.name in err and "could not be read" in err and "Gate: pass" not in out


def test_a_machine_missing_the_head_commit_cannot_be_judged(tmp_path, capsys):
    history = two_shards(tmp_path)
    newest_file(history).unlink()  # the shard has not landed yet
    code, out, err = run(capsys, "--results", str(history.results_dir), "--base", base_range(history))
    assert code == 2 and "shard-a" in err and "no results for" in err and history.commits[-1][:12] in err


def test_a_truncated_newest_file_without_base_cannot_be_judged(tmp_path, capsys):
    history = make(tmp_path, steps=((39, 0.4),))
    path = newest_file(history)
    path.write_bytes(path.read_bytes()[:300])
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 2 and path.name in err
    path.write_text('{"commit_hash": "')  # nothing left that says when: it cannot be placed either
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 2 and "cannot be placed before the judged commits" in err


def test_an_unreadable_file_of_an_older_commit_is_only_a_warning(tmp_path, capsys):
    history = make(tmp_path, steps=())
    old = history.results_dir / history.machine / f"{history.commits[3][:8]}-{history.env_name}.json"
    old.write_bytes(old.read_bytes()[:old.stat().st_size // 2])  # cut, but its stored date still says when
    (history.results_dir / history.machine).joinpath("notes.json").write_text("[1, 2, 3]")  # not named as asv does
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 0 and old.name in err and "notes.json" in err


def test_one_gate_run_lists_the_folder_twice_the_loads_listing_and_one_after(tmp_path, capsys, monkeypatch):
    """The loader's listing is the gate's "before" (no walk of its own), the classification opens
    the files it names (no walk to find them), and one listing after the judgement tells whether
    the folder changed meanwhile. It listed the folder four times."""
    history = make(tmp_path, steps=((39, 0.4),))  # a finding: the classification reads runner states
    root = os.path.realpath(history.results_dir)
    listed = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def counting(real):
        def listing(path="."):
            if os.path.realpath(os.fspath(path)) == root:
                listed.append(real.__name__)
            return real(path)
        return listing

    monkeypatch.setattr(os, "scandir", counting(real_scandir))
    monkeypatch.setattr(os, "listdir", counting(real_listdir))
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 1 and "REGRESSION" in out and "library" in out, out  # classified from the states read
    assert listed == ["scandir", "scandir"], listed


def test_results_that_change_while_the_gate_reads_them_cannot_be_judged(tmp_path, capsys, monkeypatch):
    history = make(tmp_path, steps=((39, 0.4),))
    from regressions import judgement

    real = judgement.load_results

    def load_then_rewrite(*args, **kwargs):
        loaded = real(*args, **kwargs)
        path = newest_file(history)  # a shard lands while the gate reads
        path.write_bytes(path.read_bytes())
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        return loaded

    monkeypatch.setattr(judgement, "load_results", load_then_rewrite)
    code, out, err = run(capsys, "--results", str(history.results_dir))
    assert code == 2 and "changed while the gate read them" in err
