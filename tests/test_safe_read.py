"""No file in a results folder can hang, exhaust or crash the loader, the dashboard or the gate:
each bad one is skipped with its reason and everything else loads (asv_results.safe_read)."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from asv_results import safe_read
from dashboard.data import profiles
from asv_results.loading import load_results
from tests.asv_fixtures import SeriesSpec, write_history

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def history(tmp_path):
    return write_history(tmp_path / "results", [SeriesSpec("bench.S.track_latency", (1,), ("m",))], 8, seed=2)


def _a_result(history) -> dict:
    machine_dir = history.results_dir / history.machine
    return json.loads(next(p for p in sorted(machine_dir.glob("*.json")) if p.name != "machine.json").read_text())


def _reasons(loaded) -> dict[str, str]:
    return {Path(s.path).name: s.reason for s in loaded.load_report.skipped}


def _load_in_a_subprocess(results: Path) -> subprocess.CompletedProcess:
    """Load in a child with a timeout, so that a reader that blocks fails the test, not hangs it."""
    code = ("import sys; from asv_results.loading import load_results; r = load_results(sys.argv[1], jobs=1);"
            "print(r.frame['commit_hash'].nunique()); [print(l) for l in r.load_report.lines()]")
    return subprocess.run([sys.executable, "-c", code, str(results)], cwd=REPO, capture_output=True, text=True,
                          timeout=60)


def test_fifo_device_and_symlinks_out_are_skipped_without_blocking(history, tmp_path):
    machine_dir = history.results_dir / history.machine
    os.mkfifo(machine_dir / "fifo.json")  # opening it for reading would wait for a writer forever
    os.symlink("/dev/zero", machine_dir / "zero.json")  # never ends
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({**_a_result(history), "commit_hash": "f" * 40}))
    os.symlink(outside, machine_dir / "ffffffff-out.json")
    inner = {**_a_result(history), "commit_hash": "e" * 40, "date": _a_result(history)["date"] + 1}
    (history.results_dir / "stash.json").write_text(json.dumps(inner))
    os.symlink("../stash.json", machine_dir / "eeeeeeee-inside.json")  # a symlink that stays inside is fine
    os.symlink(tmp_path, history.results_dir / "elsewhere")  # a machine folder outside the results
    done = _load_in_a_subprocess(history.results_dir)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "9"  # the 8 commits and the symlink inside
    assert any("fifo.json: not a regular file (a FIFO)" in line for line in lines), lines
    assert any("zero.json: a symlink to '/dev/zero', outside" in line for line in lines), lines
    assert any("ffffffff-out.json: a symlink to" in line and "outside" in line for line in lines), lines
    assert any(line.startswith(f"skipped {history.results_dir / 'elsewhere'}: a symlink to") for line in lines)


def test_a_file_over_the_size_limit_is_skipped(history, monkeypatch):
    machine_dir = history.results_dir / history.machine
    big = {**_a_result(history), "commit_hash": "b" * 40, "padding": "x" * 5000}
    (machine_dir / "bbbbbbbb-big.json").write_text(json.dumps(big))
    monkeypatch.setattr(safe_read, "MAX_FILE_BYTES", 4096)
    loaded = load_results(history.results_dir, jobs=1)
    assert _reasons(loaded)["bbbbbbbb-big.json"].startswith("too large (")
    assert "the limit is 4,096" in _reasons(loaded)["bbbbbbbb-big.json"]
    assert loaded.frame["commit_hash"].nunique() == 8


@pytest.mark.parametrize("date, reason", [
    (1e17, "'date' 1e+17 is not a date between 1970 and 2200"),
    (-5, "'date' -5 is not a date between 1970 and 2200"),
    ("2026-01-01", "'date' is '2026-01-01', expected milliseconds"),
    (True, "'date' is True, expected milliseconds"),
])
def test_a_date_out_of_range_is_skipped_with_its_reason(history, date, reason):
    bad = {**_a_result(history), "commit_hash": "d" * 40, "date": date}
    (history.results_dir / history.machine / "dddddddd-date.json").write_text(json.dumps(bad))
    loaded = load_results(history.results_dir, jobs=1)
    assert reason in _reasons(loaded)["dddddddd-date.json"]
    assert loaded.frame["commit_hash"].nunique() == 8


def test_deep_nesting_is_skipped_before_it_is_parsed(history):
    machine_dir = history.results_dir / history.machine
    (machine_dir / "deep.json").write_text("[" * 100_000 + "]" * 100_000)  # json.loads: RecursionError
    nested = _a_result(history)
    nested["commit_hash"], nested["env_vars"] = "a" * 40, {"x": json.loads("[" * 40 + "]" * 40)}
    (machine_dir / "aaaaaaaa-nested.json").write_text(json.dumps(nested))
    loaded = load_results(history.results_dir, jobs=1)
    reasons = _reasons(loaded)
    assert reasons["deep.json"] == f"JSON nested 100000 levels deep (the limit is {safe_read.MAX_JSON_DEPTH})"
    assert reasons["aaaaaaaa-nested.json"].startswith("JSON nested 42 levels deep")
    assert loaded.frame["commit_hash"].nunique() == 8


@pytest.mark.parametrize("text, depth", [
    (b"1", 0), (b"[]", 1), (b'{"a": [1, {"b": "]]][{"}]}', 3), (b'["\\\\"]', 1), (b'["\\"[[["]', 1),
    (b'["\\\\\\"[["]', 1), (b'[["\\\\", [[]]]]', 4),
])
def test_json_depth_ignores_brackets_inside_strings(text, depth):
    json.loads(text)  # each is valid JSON
    assert safe_read.json_depth(text) == depth


@pytest.mark.parametrize("text, reason", [
    ("hello world", "not JSON (the text starts 'hello world')"),
    ("<html><body>502 Bad Gateway</body></html>", "not JSON (the text starts '<html><body>502 Bad Gate')"),
    ("accepted:\n  - benchmark: x\n", "not JSON"),  # YAML
    ("nothing to see", "not JSON"), ("I am text", "not JSON"), ("\ufeff{}", "not JSON"),
    ('{"accepted": [', "truncated JSON"), ('{"a": 1', "truncated JSON"), ('"abc', "truncated JSON"),
    ("tru", "truncated JSON"), ("  -", "truncated JSON"), ("Infin", "truncated JSON"), ("{", "truncated JSON"),
    ('{"a": 1}}', "broken JSON"), ('{"a": 1,, "b": 2, "c": 3, "d": 4, "e": 5}', "broken JSON"),
])
def test_text_that_is_not_json_is_not_called_truncated(tmp_path, text, reason):
    path = tmp_path / "f.json"
    path.write_text(text, encoding="utf-8")
    doc, got = safe_read.read_json(path, tmp_path)
    assert doc is None and got.startswith(reason), got


def test_params_that_are_not_reprs_or_a_huge_grid_skip_the_benchmark_not_the_file(history):
    doc = _a_result(history)
    name = next(iter(doc["results"]))
    row = list(doc["results"][name])
    columns = doc["result_columns"]
    odd = {**doc, "commit_hash": "c" * 40, "results": {**doc["results"]}}
    odd["results"]["bench.S.track_nested_param"] = [None, [[["1"]]]]
    huge = [None] * len(row)
    huge[columns.index("params")] = [[str(i) for i in range(1000)]] * 3  # 10^9 combinations, all failed
    odd["results"]["bench.S.track_huge_grid"] = huge
    (history.results_dir / history.machine / "cccccccc-odd.json").write_text(json.dumps(odd))
    loaded = load_results(history.results_dir, jobs=1)
    problems = " ".join(loaded.load_report.problems)
    assert "'bench.S.track_nested_param' skipped: 'params' holds values that are not parameter reprs" in problems
    assert "'bench.S.track_huge_grid' skipped: a parameter grid of 1,000,000,000 combinations" in problems
    assert loaded.frame["commit_hash"].nunique() == 9


def test_no_mutation_of_a_result_file_crashes_the_loader(history):
    """Replace values anywhere in a real result document with values of other types; every
    variant loads (or is skipped with a reason), never raises."""
    doc = _a_result(history)
    odd_values = [None, True, -1, 1e308, float("nan"), "x", [], {}, [[1]], {"a": [None]}, [None, "1", [2.5]]]
    rng = random.Random(0)

    def paths(node, prefix=()):
        yield prefix
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from paths(child, (*prefix, key))

    every_path = [p for p in paths(doc) if p]
    machine_dir = history.results_dir / history.machine
    for i in range(300):
        variant = json.loads(json.dumps(doc))
        target = rng.choice(every_path)
        node = variant
        for key in target[:-1]:
            node = node[key]
        node[target[-1]] = rng.choice(odd_values)
        variant_path = machine_dir / "ffffffff-variant.json"
        variant_path.write_text(json.dumps(variant))
        loaded = load_results(history.results_dir, jobs=1)
        assert loaded.frame["commit_hash"].nunique() >= 8, (target, loaded.load_report.lines())


def test_profiles_are_read_with_the_same_limits(tmp_path):
    folder = tmp_path / "results" / "profiles" / "gpu"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "fifo.json")
    (folder / "late.json").write_text(json.dumps({"version": 1, "machine": "gpu", "commit_hash": "a" * 40,
                                                  "date": 1e17, "profiles": []}))
    (folder / "deep.json").write_text("[" * 5000 + "]" * 5000)
    (folder / "odd.json").write_text(json.dumps({"version": 1, "machine": "gpu", "commit_hash": "b" * 40,
                                                 "date": 1796000000000, "profiles": [{"case": "c", "impl": "i",
                                                                                      "summary": []}]}))
    loaded = profiles.load_profiles(tmp_path / "results")
    reasons = {Path(p).name: r for p, r in loaded.skipped}
    assert reasons["fifo.json"] == "not a regular file (a FIFO)"
    assert "'date' 1e+17 is not a date between 1970 and 2200" in reasons["late.json"]
    assert reasons["deep.json"].startswith("JSON nested 5000 levels deep")
    assert set(reasons) == {"fifo.json", "late.json", "deep.json", "odd.json"}


# Texts where a lenient parser could differ from json: asv's literals, ints past 64 bits,
# escapes, surrogates, duplicate keys, control characters, cut and broken texts.
PARSER_CASES = ['{"a": NaN, "b": Infinity, "c": -Infinity}', "123456789012345678901234567890",
                '{"k": 1, "k": 2}', '"\\u00e9\\ud800"', '"caf\u00e9"', "[1.0000000000000002, 1e999, -0, 5e-324]",
                '{"a": "\x01"}', '{"a": "x\ty"}', "[1,]", '{"a": 1} x', "nan", "Infinit", "[1, 2", '"abc',
                '{"a": 1}\n', '{\n  "a": [1,\n 2]\n}', '{"a": "x\ny"}', "[-]", '{"a": -}', "[-, 1]", "[1, -",
                "[- 1]", "-", "[" + "1e-05, " * 1500 + "-]", "[-1e-05, -Infinity, -2]"]


@pytest.mark.parametrize("text", PARSER_CASES)
def test_the_fast_parser_reads_every_text_as_json_alone_does(text, monkeypatch):
    fast = safe_read.parse_json(text)
    monkeypatch.setattr(safe_read, "ujson", None)  # the suite on a runner without ujson
    alone = safe_read.parse_json(text)
    assert json.dumps(fast, allow_nan=True) == json.dumps(alone, allow_nan=True)
    assert type(fast[0]) is type(alone[0])


def test_result_files_go_through_ujson_when_it_is_there(history, monkeypatch):
    assert safe_read.ujson is not None, "ujson is in the dashboard's extra: the gate's first parse needs it"
    calls = []
    real = safe_read.ujson.loads
    monkeypatch.setattr(safe_read.ujson, "loads", lambda data: calls.append(1) or real(data))
    machine_dir = history.results_dir / history.machine
    path = next(p for p in sorted(machine_dir.glob("*.json")) if p.name != "machine.json")
    doc, reason = safe_read.read_json(path, history.results_dir)
    assert reason is None and doc == json.loads(path.read_text()) and calls == [1]
