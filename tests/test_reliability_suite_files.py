"""Issue 31, causes 1 (the suite's side) and 3: what benchmarks.run, the benchmark processes and
benchmarks.bisect read is read through the one reader (asv_results.safe_read). A FIFO, a
huge or a deeply nested file never hangs or crashes them; bisect's input of the wrong shape, too
deep, or a --results that is not there is exit 2 with the problem named, never a traceback."""

import json
import subprocess
import sys

import pytest

from benchmarks import bisect
from tests.suite_run import ROOT

TIMEOUT_S = 30

# Every suite-side reader meets a FIFO where it expects JSON; each must answer, not wait.
FIFOS = r'''
import json, os, subprocess, sys
from pathlib import Path
from benchmarks import run, skip_reasons
from benchmarks.harness import runner_state

tmp = Path(sys.argv[1])
folder = tmp / "filed"
folder.mkdir()
os.mkfifo(folder / "a.json")
(folder / "b.json").write_text(json.dumps({"benchmarks": ["x"], "params": {}, "start": {}, "end": {}}))
print("collect_benchmark_states", len(runner_state.collect_benchmark_states(folder)), flush=True)
print("collect_reasons", skip_reasons.collect(folder), flush=True)
try:
    skip_reasons.read(folder / "a.json")
except ValueError as exc:
    print("read_reasons", "not a regular file (a FIFO)" in str(exc), flush=True)
print("read_benchmarks_json", run.read_benchmarks_json(folder / "a.json"), flush=True)
print("results_dir", run.results_dir(folder / "a.json").name, flush=True)
result = tmp / "results" / "m" / "abcdef12-env.json"
result.parent.mkdir(parents=True)
result.write_text("{}")
companion = result.parent / runner_state.STATE_DIR / result.name
companion.parent.mkdir()
os.mkfifo(companion)
(written,) = runner_state.write_companions([result], {"recorded": False}, {"recorded": False})
print("write_companions", written.is_file() and json.loads(written.read_text())["benchmarks"] == [], flush=True)
done = subprocess.run([sys.executable, "-m", "benchmarks.bisect", "--from-gate", str(folder / "a.json"),
                       "--results", str(tmp)], capture_output=True, text=True, timeout=20)
print("bisect", done.returncode, "not a regular file (a FIFO)" in done.stderr, "Traceback" in done.stderr, flush=True)
'''


def test_every_suite_side_reader_answers_a_fifo_at_once(tmp_path):
    try:
        done = subprocess.run([sys.executable, "-c", FIFOS, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hung ({TIMEOUT_S} s) after: {exc.stdout!r}") from None
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    got = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert got == {"collect_benchmark_states": "1", "collect_reasons": "([], set())", "read_reasons": "True",
                   "read_benchmarks_json": "{}", "results_dir": "results", "write_companions": "True",
                   "bisect": "2 True False"}, got


def _gate_doc(change) -> str:
    return json.dumps({"gate": {"failing": [{"change": change}]}})


GOOD_CHANGE = {"benchmark": "b.x", "params": "case='c'", "machine": "m", "commit_hash": "a" * 40, "before": 1.0,
               "earliest_commit": None, "latest_commit": None}


@pytest.mark.parametrize("text, said", [
    ('{"gate": {"failing": ' + "[" * 100_000 + "]" * 100_000 + "}}", "JSON nested 100002 levels deep"),
    ('[1]', "top level is list"),
    ('{"gate": {"failing": {"a": 1}}}', "gate.failing is dict, expected a list"),
    ('{"gate": {"failing": [3]}}', "gate.failing[0] has no 'change' object"),
    (_gate_doc({**GOOD_CHANGE, "benchmark": ["b.x"]}), "gate.failing[0].change.benchmark is ['b.x']"),
    (_gate_doc({**GOOD_CHANGE, "earliest_commit": 7}), "change.earliest_commit is 7, expected a commit hash or null"),
    ('{"gate": ', "truncated JSON"),
])
def test_bisect_input_of_the_wrong_shape_is_exit_2_with_the_problem_named(tmp_path, capsys, text, said):
    (tmp_path / "gate.json").write_text(text)
    assert bisect.main(["--from-gate", str(tmp_path / "gate.json"), "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err


def test_bisect_with_a_results_folder_that_is_not_there_is_exit_2(tmp_path, capsys):
    (tmp_path / "gate.json").write_text(_gate_doc(GOOD_CHANGE))
    assert bisect.main(["--from-gate", str(tmp_path / "gate.json"), "--results", str(tmp_path / "nosuch")]) == 2
    assert f"--results {tmp_path / 'nosuch'}: no such folder" in capsys.readouterr().err


def test_bisect_reads_stdin_with_the_same_limits(tmp_path):
    deep = '{"gate": {"failing": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    done = subprocess.run([sys.executable, "-m", "benchmarks.bisect", "--from-gate", "-", "--results", str(tmp_path)],
                          cwd=ROOT, input=deep, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 2 and "--from-gate -: JSON nested 100002 levels deep" in done.stderr, done.stderr[-2000:]
