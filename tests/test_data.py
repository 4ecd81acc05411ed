"""asv_results.data: asv results -> tidy DataFrame, with bad files reported and skipped."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from asv_results.data import ResultsDirError

from asv_results.loading import load_results
from tests.asv_fixtures import SeriesSpec, write_history

# A result file as asv 0.6.6 wrote it (`asv run --python=same --set-commit-hash HEAD
# --record-samples`, samples shortened): NaN = skipped, null = failed, a whole failed
# benchmark is null, trailing columns dropped, Infinity in a CI (`--quick`).
REAL_RESULT = (
    '{"commit_hash": "7560f609c539dea8f1f155ac4ab34ed7f73ea22c", "env_name": "existing-py_work_venv_bin_python3", '
    '"date": 1796002835000, "params": {"machine": "probebox", "python": "/work/venv/bin/python3"}, '
    '"python": "/work/venv/bin/python3", "requirements": {}, "env_vars": {}, "result_columns": ["result", "params", '
    '"version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", '
    '"stats_number", "stats_repeat", "samples", "profile"], "results": {'
    '"bench_probe.Suite.track_latency": [[0.0001008637, 0.0001008637, 0.000100836, NaN], [["16", "256"], '
    '["\'fused\'", "\'unfused\'"]], "9905fa4d", 1796002836378, 0.69009, [0.00010052, -Infinity, 0.00010049, null], '
    '[0.00010158, Infinity, 0.00010141, null], [0.00010062, 0.00010062, 0.00010062, null], '
    '[0.00010137, 0.00010137, 0.0001011, null], [1, 1, 1, null], [20, 20, 20, null], '
    '[[0.0001007, 0.0001009], [0.0001007, 0.0001009], [0.0001009, 0.0001008], null]], '
    '"bench_probe.Suite.track_tflops": [[123.4, null, 123.4, NaN], [["16", "256"], ["\'fused\'", "\'unfused\'"]], '
    '"fe9c4d2b", 1796002837070, 0.68076], '
    '"bench_probe.track_fail": [null, [], "51f735be", 1796002838097, 0.20168], '
    '"bench_probe.track_plain": [[5.0], [], "362e7443", 1796002838299, 0.18395]}, '
    '"durations": {"<build>": 4.3869e-05}, "version": 2}'
)
REAL_BENCHMARKS = {
    "bench_probe.Suite.track_latency": {"name": "bench_probe.Suite.track_latency", "param_names": ["m", "impl"],
                                        "params": [["16", "256"], ["'fused'", "'unfused'"]], "type": "track",
                                        "unit": "seconds", "version": "9905fa4d"},
    "bench_probe.Suite.track_tflops": {"name": "bench_probe.Suite.track_tflops", "param_names": ["m", "impl"],
                                       "params": [["16", "256"], ["'fused'", "'unfused'"]], "type": "track",
                                       "unit": "TFLOP/s", "version": "fe9c4d2b"},
    "version": 2,
}


@pytest.fixture
def real_results(tmp_path):
    machine = tmp_path / "probebox"
    machine.mkdir()
    (machine / "machine.json").write_text(json.dumps({"machine": "probebox", "version": 1}))
    (machine / "7560f609-existing-py_work_venv_bin_python3.json").write_text(REAL_RESULT)
    (tmp_path / "benchmarks.json").write_text(json.dumps(REAL_BENCHMARKS))
    return tmp_path


def _row(frame, benchmark, **params):
    rows = frame[frame["benchmark"] == benchmark]
    for name, value in params.items():
        rows = rows[rows[name] == value]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_real_asv_file_statuses_params_and_stats(real_results):
    loaded = load_results(real_results)
    frame = loaded.frame
    assert loaded.load_report.ok, loaded.load_report.lines()
    assert len(frame) == 4 + 4 + 1 + 1
    ok = _row(frame, "bench_probe.Suite.track_latency", m=16, impl="fused")
    assert ok["status"] == "ok" and ok["value"] == pytest.approx(0.0001008637)
    assert ok["unit"] == "seconds" and ok["params_key"] == "m=16, impl='fused'"
    assert ok["ci_99_a"] == pytest.approx(0.00010052) and ok["repeat"] == 20
    assert ok["samples"] == [0.0001007, 0.0001009]
    infinite_ci = _row(frame, "bench_probe.Suite.track_latency", m=16, impl="unfused")
    assert infinite_ci["ci_99_a"] == -math.inf and infinite_ci["ci_99_b"] == math.inf
    skipped = _row(frame, "bench_probe.Suite.track_latency", m=256, impl="unfused")
    assert skipped["status"] == "skipped" and math.isnan(skipped["value"]) and skipped["samples"] is None
    failed = _row(frame, "bench_probe.Suite.track_tflops", m=16, impl="unfused")
    assert failed["status"] == "failed" and math.isnan(failed["value"])
    assert _row(frame, "bench_probe.Suite.track_tflops", m=256, impl="unfused")["status"] == "skipped"
    assert _row(frame, "bench_probe.Suite.track_tflops", m=16, impl="fused")["unit"] == "TFLOP/s"
    whole_failure = _row(frame, "bench_probe.track_fail")
    assert whole_failure["status"] == "failed" and whole_failure["params_key"] == ""
    plain = _row(frame, "bench_probe.track_plain")
    assert plain["value"] == 5.0 and math.isnan(plain["repeat"]) and pd.isna(plain["unit"])
    assert plain["commit_hash"] == "7560f609c539dea8f1f155ac4ab34ed7f73ea22c"
    assert plain["date"] == pd.Timestamp(1796002835000, unit="ms", tz="UTC")


def test_generated_history_round_trips_in_date_order(tmp_path):
    specs = [SeriesSpec("b.S.track_latency", (m, impl), ("m", "impl")) for m in (1, 7) for impl in ("a", "b")]
    history = write_history(tmp_path, specs, 12, seed=3, n_samples=6)
    frame = load_results(tmp_path).frame
    assert len(frame) == 12 * 4 and (frame["status"] == "ok").all()
    # file names sort by hash, not time: the order must come from the stored dates
    assert list(dict.fromkeys(frame["commit_hash"].astype(str))) == history.commits
    assert frame["date"].is_monotonic_increasing
    assert sorted(frame["m"].unique()) == [1, 7] and set(frame["impl"]) == {"a", "b"}
    assert all(len(s) == 6 for s in frame["samples"])
    assert (frame["ci_99_a"] <= frame["value"]).all() and (frame["value"] <= frame["ci_99_b"]).all()


def test_bad_files_are_reported_and_the_rest_loads(real_results):
    machine = real_results / "probebox"
    good = json.loads(REAL_RESULT.replace("NaN", "null").replace("-Infinity", "null").replace("Infinity", "null"))
    good["commit_hash"], good["date"] = "b" * 40, 1796002836000
    (machine / "bbbbbbbb-existing-py_work_venv_bin_python3.json").write_text(json.dumps(good))
    (machine / "c1-truncated.json").write_text(REAL_RESULT[: len(REAL_RESULT) // 2])
    (machine / "c2-broken.json").write_text('{"commit_hash": "x", ]')
    (machine / "c3-foreign.json").write_text('{"hello": "world"}')
    (machine / "c4-old.json").write_text(json.dumps({**good, "version": 1}))
    (machine / "c5-binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (machine / "c6-empty.json").write_text("")
    wrong_length = json.loads(json.dumps(good))
    wrong_length["commit_hash"], wrong_length["date"] = "d" * 40, 1796002837000
    wrong_length["results"]["bench_probe.track_plain"][0] = [1.0, 2.0]
    (machine / "dddddddd-existing-py_work_venv_bin_python3.json").write_text(json.dumps(wrong_length))

    loaded = load_results(real_results)
    reasons = {s.path.rsplit("/", 1)[-1]: s.reason for s in loaded.load_report.skipped}
    assert reasons["c1-truncated.json"].startswith("truncated JSON")
    assert reasons["c2-broken.json"].startswith("broken JSON")
    assert reasons["c3-foreign.json"].startswith("not an asv result file")
    assert reasons["c4-old.json"].startswith("unsupported asv result format version 1")
    assert reasons["c5-binary.json"].startswith("not UTF-8")
    assert reasons["c6-empty.json"] == "empty file"
    assert len(loaded.load_report.problems) == 1
    assert "track_plain" in loaded.load_report.problems[0] and "2 results for 1" in loaded.load_report.problems[0]
    commits = loaded.frame["commit_hash"].astype(str)
    assert set(commits) == {"7560f609c539dea8f1f155ac4ab34ed7f73ea22c", "b" * 40, "d" * 40}
    assert not ((commits == "d" * 40) & (loaded.frame["benchmark"] == "bench_probe.track_plain")).any()
    assert ((commits == "d" * 40) & (loaded.frame["benchmark"] == "bench_probe.Suite.track_tflops")).sum() == 4


def test_without_benchmarks_json_params_get_asv_default_names(real_results):
    (real_results / "benchmarks.json").unlink()
    loaded = load_results(real_results)
    assert {"param1", "param2"} <= set(loaded.param_columns)
    row = _row(loaded.frame, "bench_probe.Suite.track_latency", param1=16, param2="fused")
    assert row["params_key"] == "param1=16, param2='fused'" and pd.isna(row["unit"])


def test_param_named_like_a_fixed_column_is_renamed(tmp_path):
    write_history(tmp_path, [SeriesSpec("b.track_x", (1,), ("value",))], 3)
    loaded = load_results(tmp_path)
    assert "param_value" in loaded.param_columns
    assert (loaded.frame["param_value"] == 1).all() and loaded.frame["value"].notna().all()


def test_missing_results_dir_is_a_clear_error(tmp_path):
    with pytest.raises(ResultsDirError, match="does not exist"):
        load_results(tmp_path / "nope")


def test_machine_filter(tmp_path):
    write_history(tmp_path, [SeriesSpec("b.track_x")], 3, machine="m1")
    write_history(tmp_path, [SeriesSpec("b.track_x")], 4, machine="m2", seed=1)
    assert set(load_results(tmp_path, machine="m2").frame["machine"]) == {"m2"}
    assert len(load_results(tmp_path).frame) == 7
    assert np.isfinite(load_results(tmp_path).frame["value"]).all()


# --------------------------------------------------------------------------- speed paths: same results


def _assert_same_load(a, b):
    assert list(a.frame.columns) == list(b.frame.columns) and a.param_columns == b.param_columns
    assert a.load_report.lines() == b.load_report.lines() and a.load_report.loaded_files == b.load_report.loaded_files
    samples_a, samples_b = a.frame["samples"].tolist(), b.frame["samples"].tolist()
    pd.testing.assert_frame_equal(a.frame.drop(columns="samples"), b.frame.drop(columns="samples"), check_exact=True)
    assert samples_a == samples_b


def test_parsing_on_several_processes_gives_the_same_frame_and_report(tmp_path):
    specs = [SeriesSpec("b.S.track_latency", (m, impl), ("m", "impl")) for m in (1, 7) for impl in ("a", "b")]
    write_history(tmp_path, specs, 40, seed=5, n_samples=4)
    machine = tmp_path / "synthetic-gpu"
    (machine / "c1-truncated.json").write_text(REAL_RESULT[:300])
    (machine / "c2-foreign.json").write_text('{"hello": "world"}')
    (machine / "machine.json").write_text("{")
    one = load_results(tmp_path, jobs=1)
    two = load_results(tmp_path, jobs=2)  # 42 files: a spawned worker pool parses them
    _assert_same_load(one, two)
    reasons = [s.reason.split(" (")[0] for s in two.load_report.skipped]
    assert reasons == ["truncated JSON", "truncated JSON", "not an asv result file"]  # machine.json first, then files
    assert len(two.frame) == 40 * 4


def test_null_nan_and_infinity_keep_their_meaning_in_every_path(real_results, tmp_path):
    cache = {"cache_dir": tmp_path / "cache"}  # parsed and written, then read back from the cache
    for kwargs in ({"jobs": 1}, cache, cache):
        frame = load_results(real_results, **kwargs).frame
        statuses = frame.sort_values(["benchmark", "params_key"])["status"].astype(str).tolist()
        assert statuses.count("failed") == 2 and statuses.count("skipped") == 2
        inf = _row(frame, "bench_probe.Suite.track_latency", m=16, impl="unfused")
        assert inf["ci_99_a"] == -math.inf and inf["ci_99_b"] == math.inf


def test_odd_values_become_nan_not_errors(tmp_path):
    doc = json.loads(REAL_RESULT.replace("NaN", "null").replace("-Infinity", "null").replace("Infinity", "null"))
    doc["results"]["bench_probe.track_plain"] = [["5.0"], [], "v", 1, 0.1, [True], None, None, None, None, None,
                                                 [[1, "x", 2.5]]]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "a-env.json").write_text(json.dumps(doc))
    cache = {"cache_dir": tmp_path.parent / f"{tmp_path.name}-cache"}  # outside the results folder
    for kwargs in ({}, cache, cache):
        loaded = load_results(tmp_path, **kwargs)
        plain = _row(loaded.frame, "bench_probe.track_plain")
        assert plain["status"] == "skipped" and math.isnan(plain["value"]) and plain["ci_99_a"] == 1.0
    assert plain is not None and loaded.load_report.ok
    samples = load_results(tmp_path)
    assert _row(samples.frame, "bench_probe.track_plain")["samples"][::2] == [1.0, 2.5]


def test_a_file_cut_anywhere_is_reported_as_truncated(tmp_path):
    """Wherever a copy or a full disk cuts a result file (inside a number, a literal, a
    string), the reason says truncated; a file broken in the middle is not called truncated."""
    from asv_results.result_file import read_json_file

    cuts = {len(REAL_RESULT) * i // 97 for i in range(5, 97)}
    cuts |= {REAL_RESULT.index("0.0001008") + 6, REAL_RESULT.index("NaN") + 2, REAL_RESULT.index("-Infinity") + 1}
    path = tmp_path / "cut.json"
    for cut in sorted(cuts):
        path.write_text(REAL_RESULT[:cut])
        doc, reason = read_json_file(path)
        assert doc is None and reason.startswith("truncated JSON"), (cut, REAL_RESULT[cut - 10:cut], reason)
    path.write_text(REAL_RESULT.replace('"env_vars": {},', '"env_vars": {},,', 1))
    assert read_json_file(path)[1].startswith("broken JSON")


def test_the_gate_and_the_regressions_page_print_one_change_alike(tmp_path, capsys):
    """The same change read "123μs -> 160μs +30.1%" in the gate and "123 µs → 160 µs (+30.1%"
    on the Regressions page: one format_value, one format_change (asv_results.units)."""
    import re

    from dashboard.store.model import ResultsStore
    from dashboard.pages.regressions import inbox
    from regressions.cli import main as gate
    from tests.suite_fixtures import MAIN_MACHINE, write_dashboard_fixture

    fx = write_dashboard_fixture(tmp_path / "results")
    gate(["--results", str(fx.results_dir), "--machine", MAIN_MACHINE, "--format", "text"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if fx.regressed[0] in ln and "track_latency" in ln
             and "'fused'" in ln and "REGRESSION" in ln]
    assert lines, "the gate lists the planted regression"
    before, after, change = re.search(r"  (\S+ \S+) -> (\S+ \S+)  ([+-]\d+\.\d%)  ", lines[0]).groups()
    store = ResultsStore(fx.results_dir, detect_in_background=False)
    try:
        page = str(inbox(store.get(), store.findings(), MAIN_MACHINE, "regression", [])[0])
    finally:
        store.close()
    # the page's columns: before, →, after, change
    assert f"Span(children='{before}', className='num'), Span(children='→', className='arrow'), " \
           f"Span(children='{after}', className='num'), Span(children='{change}', className='num change')" in page


def test_a_commit_prefix_names_the_same_commit_for_the_gate_and_the_pages(tmp_path):
    """One resolve_commit (asv_results.commit_order): the pages once took the first commit an
    ambiguous prefix matched, and matched case-sensitively, where the gate refused."""
    from asv_results.commit_order import resolve_commit
    from dashboard.ui.commit_choice import named_commit
    from dashboard.store.load_data import build_data

    history = write_history(tmp_path, [SeriesSpec("b.S.track_latency", (1,), ("m",))], 40, seed=3)
    run = next(iter(build_data(tmp_path).runs.values()))
    frame = load_results(tmp_path).frame
    by_prefix = {}
    for h in history.commits:
        by_prefix.setdefault(h[:1], []).append(h)
    ambiguous = next(p for p, hs in by_prefix.items() if len(hs) > 1)
    with pytest.raises(ValueError, match="ambiguous"):
        resolve_commit(frame, ambiguous)
    assert named_commit(run, ambiguous) is None
    wanted = history.commits[5][:8].upper()
    assert resolve_commit(frame, wanted) == named_commit(run, wanted) == history.commits[5]


@pytest.mark.parametrize("samples", [
    [[1.0, 2], [3.5]], [[True, 1.5]], [[True, False]], [[None, 1.0]], [["1.5", 2.0]], [[[1.0], 2.0]],
    [[1.0, [2.0, 3.0]]], [[2 ** 70, 1.0]], [[2 ** 62]], [[{"a": 1}, 1.0]], [[]], [], [[math.nan, -math.inf]],
])
def test_samples_are_read_value_by_value_as_any_other_column(samples):
    """The samples' fast path (numpy's type discovery) gives what the value-by-value reading of
    every other column gives: numbers as floats, bools as 1 / 0, anything else NaN."""
    from asv_results.result_file import _float_array, _sample_array

    flat = [value for row in samples for value in row]
    got = _sample_array(samples)
    assert got.dtype == np.float64 and got.ndim == 1
    np.testing.assert_array_equal(got, _float_array(flat) if flat else np.empty(0))
