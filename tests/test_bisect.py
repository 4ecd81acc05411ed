"""benchmarks.bisect: the search on fake measurements (fast), and end to end on a throw-away git
history of this project with a planted delay in the fused launcher (slow: real asv runs)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bisect

ROOT = Path(__file__).resolve().parents[1]


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


# --- end to end ---------------------------------------------------------------------------

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


def _git(repo, *args, date=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _history(repo: Path, n: int, planted_at: int) -> list[str]:
    """A copy of this project with n commits: the drift knob first, then neutral ones and one
    that plants the delay."""
    for part in ("fused_mlp", "benchmarks", "dashboard", "tools/asv_plugins"):  # asv.conf.json names the plugin
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("asv.conf.json", "pyproject.toml"):
        shutil.copy(ROOT / part, repo / part)
    (repo / ".gitignore").write_text("results/\n.asv/\n__pycache__/\n")
    _git(repo, "init", "-q", "-b", "main")
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
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject, date=f"2026-01-{i + 1:02d}T12:00:00+00:00")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    return commits


@pytest.mark.slow  # load-proof: its calls cost a fixed CPU time, whatever runs beside them
def test_bisect_names_the_planted_commit_from_the_gates_finding(tmp_path):
    """14 commits, the delay planted at the 9th: the history measures the first 6 and the two
    newest; the gate, judging those two as CI judges a push (--base), fails the first; the
    bisect, on a machine now 10 % slower, measures the interval's two ends again and 3 of its 6
    commits (the midpoint, then the two before it at once), and the detector over the filled-in
    history (5 old, 3 drifted, then the step) agrees."""
    repo = tmp_path / "repo"
    repo.mkdir()
    commits = _history(repo, 14, planted_at=8)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TRITON_INTERPRET": "1"}
    env.pop("BISECT_TEST_DRIFT", None)
    (tmp_path / "home").mkdir()
    case = "linear_act M=64 K=128 N=256 fp32 gelu_tanh bias"  # the tiny grid's case
    only_fused = bisect.benchmark_regex(BENCHMARK, f"case='{case}', impl='fused'")

    def py(*args, **extra_env):
        return subprocess.run([sys.executable, *args], cwd=repo, env={**env, **extra_env}, capture_output=True,
                              text=True, timeout=600)

    # Two commits at the new level: with one, a history with slow runs in it (a shared CPU has
    # them) rightly keeps the gate waiting for a second commit (docs/regression-gate.md, the gate's numbers).
    measured = commits[:6] + commits[-2:]
    done = py("-m", "benchmarks.run", "--machine", "cpu-bisect", "--grid", "tiny", "--commits", " ".join(measured),
              "-b", only_fused)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    gate = py("-m", "dashboard.regressions", "--results", "results", "--format", "json", "--base", commits[5])
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr[-3000:]
    (tmp_path / "gate.json").write_text(gate.stdout)
    failing = json.loads(gate.stdout)["gate"]["failing"]
    assert [i["change"]["commit_hash"] for i in failing] == [commits[-2]]

    out = py("-m", "benchmarks.bisect", "--from-gate", str(tmp_path / "gate.json"), BISECT_TEST_DRIFT="0.1")
    print(out.stdout)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"introduced at {commits[8]} (slower fused launcher)" in out.stdout
    found = re.search(r"(\d+) benchmark run\(s\) for (\d+) commit\(s\) in the interval \((\d+) of them the "
                      r"interval's ends", out.stdout)
    runs, inside, ends = map(int, found.groups())
    assert inside == 6 and ends == 2 and runs < inside
    # The bisect's measurements are ordinary asv results beside the history's (the ends measured
    # again replace theirs).
    files = {p.name.split("-")[0] for p in (repo / "results" / "cpu-bisect").glob("*-existing-*.json")}
    assert len(files) == len(measured) + runs - ends
