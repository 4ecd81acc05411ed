"""benchmarks.bisect: the search on fake measurements (fast), and end to end on a throw-away git
history of this project with a planted delay in the fused launcher (slow: real asv runs)."""

import json
import re

import pytest

from benchmarks import bisect
from tests.planted_history import BENCHMARK, MACHINE


def test_params_key_round_trips_values_with_commas():
    key = "case='linear_act M=8 K=16, N=32 fp32 relu', impl='fused'"
    assert bisect.parse_params_key(key) == [("case", "'linear_act M=8 K=16, N=32 fp32 relu'"), ("impl", "'fused'")]
    with pytest.raises(bisect.BisectInputError, match="name=value"):
        bisect.parse_params_key("just text")


def test_regex_selects_the_one_combination_as_asv_names_it():
    regex = bisect.benchmark_regex("bench_ops.LinearAct.track_latency", "case='linear_act M=8 K=16', impl='fused'")
    assert re.search(regex, "bench_ops.LinearAct.track_latency('linear_act M=8 K=16', 'fused')")
    assert not re.search(regex, "bench_ops.LinearAct.track_latency('linear_act M=8 K=16', 'eager')")
    assert not re.search(regex, "bench_ops.LinearAct.track_latency_x('linear_act M=8 K=16', 'fused')")


@pytest.mark.parametrize("value, expected", [(1.0, "old"), (1.1, "old"), (1.5, "between"), (1.9, "new"),
                                             (2.5, "new"), (0.5, "old"), (float("nan"), "between")])
def test_classify_value_between_two_levels(value, expected):
    assert bisect.classify_value(value, 1.0, 2.0) == expected


def _fake(levels: dict):
    calls = []

    def measure(commits):
        calls.append(list(commits))
        return {c: levels[c] for c in commits}

    return measure, calls


def test_long_interval_is_bisected_in_fewer_runs_than_commits():
    commits = [f"c{i:02d}" for i in range(34)]  # good, 32 candidates, bad
    truth = {c: (1.0 if i < 21 else 2.0) for i, c in enumerate(commits)}
    measure, calls = _fake(truth)
    s = bisect.bisect_interval(commits, {commits[0]: 1.0, commits[-1]: 2.0}, 1.0, 2.0, measure)
    assert s.boundary == "c21"
    assert len(s.runs) <= 7 < 32


def test_short_interval_measures_every_commit_at_once():
    commits = ["g", "a", "b", "bad"]
    measure, calls = _fake({"a": 1.0, "b": 2.0})
    s = bisect.bisect_interval(commits, {"g": 1.0, "bad": 2.0}, 1.0, 2.0, measure)
    assert calls == [["a", "b"]] and s.boundary == "b"


def test_a_value_between_the_levels_switches_to_every_commit_and_names_no_step():
    commits = [f"c{i}" for i in range(10)]
    truth = {c: 1.0 for c in commits[:3]} | {c: 1.5 for c in commits[3:7]} | {c: 2.0 for c in commits[7:]}
    measure, _ = _fake(truth)
    s = bisect.bisect_interval(commits, {"c0": 1.0, "c9": 2.0}, 1.0, 2.0, measure)
    assert s.boundary is None and s.reason.startswith("not one step")
    assert "c4 between" in s.reason


def test_a_step_that_comes_and_goes_is_not_one_step():
    commits = ["g", "a", "b", "c", "bad"]
    measure, _ = _fake({"a": 2.0, "b": 1.0, "c": 2.0})
    s = bisect.bisect_interval(commits, {"g": 1.0, "bad": 2.0}, 1.0, 2.0, measure, every_commit=True)
    assert s.boundary is None and "not one step" in s.reason


def test_a_commit_without_a_value_is_said():
    commits = [f"c{i}" for i in range(10)]
    s = bisect.bisect_interval(commits, {"c0": 1.0, "c9": 2.0}, 1.0, 2.0, lambda cs: {})
    assert s.boundary is None and "no value at c4" in s.reason


def test_the_search_places_commits_against_the_ends_measured_in_the_same_session():
    # The runner got 60 % slower since the history was measured (1.0 -> 2.0): against the
    # history's levels the neutral commits now look "new"; against the ends measured again they do not.
    commits = [f"c{i}" for i in range(10)]
    now = {c: (1.6 if i < 6 else 3.2) for i, c in enumerate(commits)}
    target = bisect.Target("b", "", "m", "c0", "c9")
    old, new, why = bisect.session_levels({"c0": 1.0, "c9": 2.0}, {"c0": 1.6, "c9": 3.2}, target)
    assert (old, new, why) == (1.6, 3.2, "")
    measure, _ = _fake(now)
    assert bisect.bisect_interval(commits, {"c0": 1.6, "c9": 3.2}, old, new, measure).boundary == "c6"
    measure, _ = _fake(now)
    assert bisect.bisect_interval(commits, {"c0": 1.0, "c9": 2.0}, 1.0, 2.0, measure).boundary != "c6"


@pytest.mark.parametrize("fresh, said", [({"g": 1.0, "b": 1.1}, "did not reproduce"),
                                         ({"g": 1.0, "b": 0.6}, "did not reproduce"),
                                         ({"g": 1.0}, "no value at b")])
def test_a_step_that_does_not_reproduce_in_this_session_is_said(fresh, said):
    old, new, why = bisect.session_levels({"g": 1.0, "b": 2.0}, fresh, bisect.Target("x", "", "m", "g", "b"))
    assert said in why and old != old  # NaN levels: nothing is searched


def test_the_suite_is_checked_and_the_machine_registered_once_per_bisect(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(bisect.suite_run, "check_python", lambda python: calls.append("check") or None)
    monkeypatch.setattr(bisect.suite_run, "prepare_machine", lambda python, machine, grid: calls.append(("register", grid)) or True)
    monkeypatch.setattr(bisect.suite_run, "measure_commits",
                        lambda python, config, machine, commits, bench: calls.append(("run", tuple(commits), bench)) or 0)
    monkeypatch.setattr(bisect, "series_values", lambda results, target: {"a": 1.0, "b": 2.0, "c": 2.0})
    target = bisect.Target(BENCHMARK, "case='linear_act M=64 K=128 N=256 fp32 gelu_tanh bias', impl='fused'", "m", "a", "c")
    measure = bisect.measure_with_suite(target, bisect.Options(tmp_path, tmp_path / "asv.conf.json", "py", None))
    assert measure(["a", "c"]) == {"a": 1.0, "c": 2.0} and measure(["b"]) == {"b": 2.0} and measure([]) == {}
    regex = bisect.benchmark_regex(target.benchmark, target.params)
    assert calls == ["check", ("register", "tiny"), ("run", ("a", "c"), regex), ("run", ("b",), regex)]


def test_a_python_that_cannot_run_the_suite_is_bad_input(tmp_path, monkeypatch):
    monkeypatch.setattr(bisect.suite_run, "check_python", lambda python: "--python 'py' cannot run the suite")
    target = bisect.Target(BENCHMARK, "case='x', impl='fused'", "m", "a", "c")
    with pytest.raises(bisect.BisectInputError, match="cannot run the suite"):
        bisect.measure_with_suite(target, bisect.Options(tmp_path, tmp_path, "py", None))(["a"])
    with pytest.raises(bisect.BisectInputError, match="--grid 'huge'"):
        bisect.measure_with_suite(target, bisect.Options(tmp_path, tmp_path, "py", "huge"))(["a"])


def test_bad_input_exits_2_with_a_message(tmp_path, capsys):
    (tmp_path / "gate.json").write_text('{"summary": "x"}')
    assert bisect.main(["--from-gate", str(tmp_path / "gate.json"), "--results", str(tmp_path)]) == 2
    assert "no gate.failing" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        bisect.main(["--benchmark", "x", "--results", str(tmp_path)])
    assert exc.value.code == 2


# --- end to end (the measured history: tests/planted_history.py) ---------------------------

@pytest.mark.slow  # load-proof: its calls cost a fixed CPU time, whatever runs beside them
def test_bisect_names_the_planted_commit_from_the_gates_finding(measured_history, tmp_path):
    """14 commits, the delay planted at the 9th: the history measures the first 6 and the two
    newest; the gate, judging those two as CI judges a push (--base), fails the first; the
    bisect, on a machine now 10 % slower, measures the interval's two ends again and 3 of its 6
    commits (the midpoint, then the two before it at once), and the detector over the filled-in
    history (5 old, 3 drifted, then the step) agrees."""
    history = measured_history.copy_of(tmp_path)
    commits, repo = history.commits, history.repo
    failing = json.loads(history.gate_json)["gate"]["failing"]
    assert [i["change"]["commit_hash"] for i in failing] == [commits[-2]]
    (tmp_path / "gate.json").write_text(history.gate_json)

    out = history.py("-m", "benchmarks.bisect", "--from-gate", str(tmp_path / "gate.json"), BISECT_TEST_DRIFT="0.1")
    print(out.stdout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"introduced at {commits[8]} (slower fused launcher)" in out.stdout
    found = re.search(r"(\d+) benchmark run\(s\) for (\d+) commit\(s\) in the interval \((\d+) of them the "
                      r"interval's ends", out.stdout)
    runs, inside, ends = map(int, found.groups())
    assert inside == 6 and ends == 2 and runs < inside
    # The bisect's measurements are ordinary asv results beside the history's (the ends measured
    # again replace theirs).
    files = {p.name.split("-")[0] for p in (repo / "results" / MACHINE).glob("*-existing-*.json")}
    assert len(files) == len(history.measured) + runs - ends
