"""One loader (asv_results.loading) for the server and the gate: the gate's lean frame judges as
the full one does, a gate through the dashboard's cache says what a gate that parses says, and a
long first parse says how far it has come."""

import io
import json

import pytest

from asv_results import cache as cache_module
from asv_results.cache import ResultsCache
from asv_results.loading import load_results
from asv_results.parse_progress import ConsoleProgress
from regressions import cli
from regressions import findings as findings_module
from regressions.findings import find_changes
from regressions.judgement import judge_folder
from tests.asv_fixtures import SeriesSpec, write_history

COMMITS = 40


@pytest.fixture
def history(tmp_path):
    """A step at the second newest commit (the samples' test decides there), one at 20, and a
    series that fails sometimes, over two machines."""
    specs = [SeriesSpec("b.S.track_latency", (m, impl), ("m", "impl"), run_noise=0.01,
                        steps=((COMMITS - 2, 0.25),) if (m, impl) == (1, "fused") else ((20, -0.2),) if m == 7 else (),
                        fail_prob=0.1 if impl == "eager" else 0.0)
             for m in (1, 7) for impl in ("fused", "eager")]
    write_history(tmp_path / "results", specs, COMMITS, seed=4, n_samples=8, machine="gpu-a")
    write_history(tmp_path / "results", [SeriesSpec("b.S.track_latency", (1, "fused"), ("m", "impl"))], 12, seed=5,
                  n_samples=8, machine="gpu-b")
    return tmp_path / "results"


def _key(f):
    return (f.machine, f.benchmark, f.params, f.commit_hash, f.kind, f.confirmed, round(f.relative_change, 12),
            f.p_value, f.clear)


def test_the_lean_frame_finds_what_the_full_frame_finds(history, monkeypatch):
    full = load_results(history)
    lean = load_results(history, samples=False, stats=("ci_99_a", "ci_99_b"), params=False)
    assert "samples" in full.frame and "samples" not in lean.frame and "row" in lean.frame
    assert str(lean.frame["benchmark"].dtype) == "category" and str(lean.frame["commit_hash"].dtype) == "category"
    given = []  # what the detector got per series: values and the samples of its tail
    detect = findings_module.detect_changes
    monkeypatch.setattr(findings_module, "detect_changes", lambda values, settings, a, b, samples: (
        given.append((list(values), samples)), detect(values, settings, a, b, samples))[1])
    asked = []

    def samples_of(rows):
        asked.append(len(rows))
        return lean.samples_of(rows)

    found = find_changes(lean.frame, samples_of=samples_of)
    from_lean, given[:] = list(given), []
    assert sorted(map(_key, found)) == sorted(map(_key, find_changes(full.frame)))
    assert from_lean == given and any(s is not None and any(x for x in s if x) for _, s in given)
    assert 0 < sum(asked) < len(lean.frame) // 2  # only the series' tails were read


def test_the_gate_through_the_dashboards_cache_judges_as_one_that_parses(history, tmp_path):
    cache = tmp_path / "cache"
    parsed = judge_folder(history).document()
    first = judge_folder(history, cache_dir=cache).document()  # parses and writes the cache
    again = judge_folder(history, cache_dir=cache).document()  # reads it back
    assert parsed == first == again and parsed["gate"]["judged"]
    assert ResultsCache(history, cache).load().parsed == 0  # the gate left a cache the server can start from


def test_the_gate_cli_takes_a_cache_dir_but_not_inside_the_results(history, tmp_path, capsys):
    assert cli.main(["--results", str(history), "--format", "json"]) in (0, 1)
    plain = json.loads(capsys.readouterr().out)
    assert cli.main(["--results", str(history), "--format", "json", "--cache-dir", str(tmp_path / "c")]) in (0, 1)
    assert json.loads(capsys.readouterr().out) == plain
    with pytest.raises(SystemExit) as stop:
        cli.main(["--results", str(history), "--cache-dir", str(history / "cache")])
    assert stop.value.code == 2 and "inside the results directory" in capsys.readouterr().err


def test_a_first_parse_reports_its_progress_batch_by_batch(history, monkeypatch):
    monkeypatch.setattr(cache_module, "BATCH_BYTES", 1)  # one file a batch
    seen = []
    ResultsCache(history, progress=lambda done, total, seconds: seen.append((done, total))).load()
    total = COMMITS + 12
    assert seen == [(done, total) for done in range(1, total + 1)]
    assert ResultsCache(history, progress=lambda *a: seen.append(a)).load() and len(seen) == total + total


def test_the_console_progress_line_names_files_rate_and_time_left():
    out = io.StringIO()
    progress = ConsoleProgress(out, min_files=10, every_s=0.0)
    progress(250, 1000, 5.0)
    progress(1000, 1000, 20.0)
    assert out.getvalue().splitlines() == ["parsed 250 of 1,000 result files (50 files/s, about 15 s left)",
                                          "parsed 1,000 of 1,000 result files (50 files/s)"]
    quiet = io.StringIO()
    ConsoleProgress(quiet, min_files=10)(3, 9, 1.0)  # a small folder: nothing to wait for
    assert quiet.getvalue() == ""
