"""Issue 31, causes 1 and 4: the runner-state companions and the result files the gate and the
Overview read a second time are read as safely as result files. A FIFO, a link to /dev/zero, a
malformed or a 100k-deep companion costs only that run's state, never a hang, the verdict or the
page; an unreadable file in a machine folder, whatever its name, is "could not judge".

Each surface runs in a subprocess with a timeout (a regression fails CI rather than stalling it)
and an address-space limit (/dev/zero read whole would otherwise take the machine's memory)."""

import json
import subprocess
import sys

from tests.suite_run import ROOT

TIMEOUT_S = 30
BAD_COMPANIONS = ("fifo", "devzero", "malformed", "deep")

# Shared by both scripts: the fixture, and one bad companion put in place by name.
SETUP = r'''
import contextlib, io, os, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # /dev/zero read whole: MemoryError, not the machine's memory
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture
from regressions.recorded_state import state_path

fx = write_dashboard_fixture(sys.argv[1])
commits = fx.main.commits
def result_file(commit):
    return fx.results_dir / MAIN_MACHINE / f"{commit[:8]}-{MAIN_ENV}.json"

def bad_companion(kind, commit):
    path = state_path(result_file(commit))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "malformed":
        path.write_text('{"start": "x", "end": [1]}')
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    return path
'''

GATE = SETUP + r'''
from regressions.cli import main as gate

before = commits[commits.index(fx.regression_commit) - 1]
def judged():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE, "--base", before])
    return code, err.getvalue()

for kind in sys.argv[2:]:
    path = bad_companion(kind, commits[-1])
    code, err = judged()
    print("RESULT", kind, code, "Traceback" in err, flush=True)
    path.unlink()
# A FIFO among the result files (the loader skips it): named, could not judge, never a hang.
fifo = fx.results_dir / MAIN_MACHINE / "zz-queue.json"
os.mkfifo(fifo)
code, err = judged()
print("RESULT fifo-result", code, "Traceback" in err, "zz-queue.json" in err, flush=True)
'''

OVERVIEW = SETUP + r'''
from dashboard.store.model import ResultsStore
from dashboard.pages import overview

data = ResultsStore(fx.results_dir, detect_in_background=False).get()
newest = data.run(MAIN_MACHINE, MAIN_ENV).commits["commit_hash"].tolist()[-1]

def page(commit):
    headline, panels, _, device = overview.update(data, MAIN_MACHINE, MAIN_ENV, commit, None, None, None, None, None, None)
    return "geomean" in str(panels), str(device)

for kind in sys.argv[2:]:
    path = bad_companion(kind, newest)
    ok, device = page(newest)
    print("RESULT", kind, ok, "runner-state companion" in device and "not used" in device, flush=True)
    path.unlink()
# The previous commit's result file, read again for its state, replaced by a FIFO after loading.
previous = result_file(data.run(MAIN_MACHINE, MAIN_ENV).previous_commit(newest))
previous.unlink()
os.mkfifo(previous)
ok, device = page(newest)
print("RESULT fifo-result", ok, "Runner state" in device, flush=True)
'''


def _results_of(script: str, tmp_path, *kinds) -> dict[str, list[str]]:
    try:
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "results"), *kinds], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hung ({TIMEOUT_S} s) after: {exc.stdout!r}") from None
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return {line.split()[1]: line.split()[2:] for line in done.stdout.splitlines() if line.startswith("RESULT ")}


def test_a_bad_companion_costs_the_gate_nothing_and_a_fifo_result_is_could_not_judge(tmp_path):
    got = _results_of(GATE, tmp_path, *BAD_COMPANIONS)
    for kind in BAD_COMPANIONS:  # the planted regression still fails the gate, with no traceback
        assert got[kind] == ["1", "False"], (kind, got)
    assert got["fifo-result"] == ["2", "False", "True"], got


def test_a_bad_companion_costs_the_overview_only_that_runs_state(tmp_path):
    got = _results_of(OVERVIEW, tmp_path, *BAD_COMPANIONS)
    for kind in BAD_COMPANIONS:  # the page shows, and its runner-state list says why the state is missing
        assert got[kind] == ["True", "True"], (kind, got)
    assert got["fifo-result"] == ["True", "True"], got


def test_a_companion_of_the_wrong_shape_is_named_and_its_passes_dropped(tmp_path):
    from regressions.recorded_state import (UNREADABLE, benchmark_states, comparable_state,
                                                      read_state_file, state_path)

    result = tmp_path / "m" / "abcdef12-env.json"
    result.parent.mkdir()
    result.write_text("{}")
    companion = state_path(result)
    companion.parent.mkdir()
    assert read_state_file(result) is None  # none recorded
    for text, said in [('{"start": "x", "end": [1]}', "'start' is str"),
                       ('{"start": {"recorded": true, "gpus": 3}}', "'start.gpus' is not a list"),
                       ('{"start": {"recorded": true, "software": []}}', "'start.software' is not an object"),
                       ("[1]", "top level is list")]:
        companion.write_text(text)
        doc = read_state_file(result)
        assert said in doc[UNREADABLE], doc
        assert comparable_state({"torch": "2.13"}, doc) == {"torch": "2.13", "runner state": doc[UNREADABLE]}
    gpu = {"recorded": True, "gpus": [{"throttle_reasons": [1, "hw_slowdown"], "sm_clock_mhz": 1980}]}
    companion.write_text(json.dumps({"start": {"recorded": False, "reason": "no NVML"}, "benchmarks": [
        {"benchmarks": ["b.x"], "params": {"case": "c"}, "start": gpu, "end": gpu},
        {"benchmarks": ["b.y"], "params": {"case": "c"}, "start": {"recorded": True, "gpus": "?"}, "end": gpu}]}))
    states = benchmark_states(read_state_file(result))
    assert list(states) == [("b.x", "case='c'")]  # the malformed pass is left out, the good one kept
    assert states[("b.x", "case='c'")]["throttle reasons"] == "1, hw_slowdown -> 1, hw_slowdown"


def test_an_oddly_named_newest_file_cut_before_its_hash_is_could_not_judge(tmp_path, capsys):
    from regressions.cli import main as gate
    from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture

    fx = write_dashboard_fixture(tmp_path / "results")
    newest = fx.results_dir / MAIN_MACHINE / f"{fx.main.commits[-1][:8]}-{MAIN_ENV}.json"
    cut = newest.parent / "latest.json"
    cut.write_text(newest.read_text()[:9])  # '{"commit_': cut before its hash, and not asv's name
    newest.unlink()
    assert gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE]) == 2
    err = capsys.readouterr().err
    assert "latest.json could not be read (truncated JSON" in err and "says which commit it holds" in err
    assert "Traceback" not in err
    cut.unlink()  # notes.json, readable JSON that names no commit, stays a warning
    assert gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE]) == 0
