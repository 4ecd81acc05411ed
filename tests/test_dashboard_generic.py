"""The dashboard on another project's asv results (generic mode) and on the project's asv config:
Trends by benchmark and parameters, Compare and Regressions on the raw series, a line on Overview
and Roofline saying why they are off, commit links and commit order from asv.conf.json."""

import json
import subprocess

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.app import render_page
from dashboard.store.detection import detect_in_worker
from dashboard.data.dashboard_data import GENERIC
from dashboard.store.load_data import build_data
from dashboard.store.model import ResultsStore
from dashboard.pages import _generic_compare, _generic_trends, discover_pages, regressions as inbox_page
from dashboard.data.urlstate import Query, encode_query, link
from tests.every_page import every_page
from tests.generic_fixtures import (BROKEN, ENV, GRID, IMPORT, MACHINE, MIXED, MIXED_STATS, OPTIONAL, READ, STEP_AT,
                                    THROUGHPUT, snapshot, write_generic_history, write_run_notes)
from tests.test_dashboard import _walk, texts


@pytest.fixture(scope="module")
def gx(tmp_path_factory):
    return write_generic_history(tmp_path_factory.mktemp("generic") / "results", mixed_units=True,
                                 absent=ABSENT)


ABSENT = (IMPORT, range(8, 14))  # commits whose results leave time_import out (it did not run there)


@pytest.fixture(scope="module")
def data(gx):
    return build_data(gx.results_dir)


def test_other_projects_results_load_in_generic_mode(data, gx):
    assert not data.empty and data.mode == GENERIC
    run = data.run(MACHINE, ENV)
    assert len(run.commits) == len(gx.history.commits)
    assert set(run.series["benchmark"]) == {s.benchmark for s in gx.history.series}
    assert len(run.series) == len(gx.history.series)
    line = data.what_was_loaded()
    n_benchmarks = len({s.benchmark for s in gx.history.series})
    assert f"{len(gx.history.series)} series of {n_benchmarks} benchmarks, {len(gx.history.commits)} commits on 1 " \
           "machine" in line


def test_every_page_renders_and_overview_and_roofline_say_why_they_are_off(gx):
    store = ResultsStore(gx.results_dir, detect_in_background=False)
    pages = every_page()
    for page in pages:
        text = texts(render_page(store, pages, page.path, ""))
        assert "Could not build" not in text and "no benchmark results of this suite" not in text, page.path
    for path in ("/", "/roofline"):
        text = texts(render_page(store, pages, path, ""))
        assert "is off for these results" in text and "case" in text and "impl" in text and "bench_device" in text
        assert store.get().what_was_loaded() in text
    assert "Generic asv results" in texts(render_page(store, pages, "/trends", ""))


def test_trends_draws_one_line_per_parameter_combination_in_its_own_unit(data):
    run = data.run(MACHINE, ENV)
    fig, note = _generic_trends.update(data, MACHINE, ENV, READ, {}, "commit", [], None)
    fig = go.Figure(fig)
    lines = [t.name for t in fig.data if t.mode == "lines+markers"]
    assert lines == ["size=1024, kind='csv'", "size=1024, kind='json'", "size=1024, kind='parquet'",
                     "size=65536, kind='csv'", "size=65536, kind='json'", "size=65536, kind='parquet'"]
    assert note == "" and fig.layout.yaxis.title.text.startswith("time_read (")
    raw = run.of_series(run.series[run.series["benchmark"] == READ].index[:1])["value"]
    shown = next(t for t in fig.data if t.name == lines[0])
    scale = raw.median() / np.median(shown.y)
    assert scale in (pytest.approx(1e-3), pytest.approx(1e-6))  # seconds shown as ms or µs, one scale
    only = go.Figure(_generic_trends.update(data, MACHINE, ENV, READ, {"kind": ["'csv'"]}, "commit", [], None)[0])
    assert [t.name for t in only.data if t.mode == "lines+markers"] == ["size=1024", "size=65536"]  # what varies


def test_trends_marks_the_planted_steps_the_right_way_up(data, gx):
    fig, _ = _generic_trends.update(data, MACHINE, ENV, READ, {"size": ["65536"], "kind": ["'csv'"]}, "commit", [],
                                    None)
    fig = go.Figure(fig)
    marker = next(t for t in fig.data if t.name == "regressions")
    assert list(marker.x) == [STEP_AT] and marker.marker.symbol == "triangle-up"  # a time went up
    fig, _ = _generic_trends.update(data, MACHINE, ENV, THROUGHPUT, {}, "commit", [], None)
    fig = go.Figure(fig)
    marker = next(t for t in fig.data if t.name == "regressions")
    assert list(marker.x) == [STEP_AT] and marker.marker.symbol == "triangle-down"  # MB/s fell: worse, down
    assert "kind='parquet'" in marker.text[0]


def test_failed_and_skipped_benchmarks_show_in_trends(data, gx):
    fig, _ = _generic_trends.update(data, MACHINE, ENV, BROKEN, {}, "commit", [], None)
    fig = go.Figure(fig)
    (failed,) = fig.data
    assert failed.name == f"time_broken: failed at {len(gx.history.commits)} commits" and failed.marker.symbol == "x"
    fig, _ = _generic_trends.update(data, MACHINE, ENV, OPTIONAL, {}, "commit", [], None)
    fig = go.Figure(fig)
    assert fig.data[0].name.startswith("time_optional: skipped at")


def test_a_parameter_value_with_a_comma_survives_the_link(gx):
    store = ResultsStore(gx.results_dir, detect_in_background=False)
    url = encode_query({"benchmark": GRID, "p_shape": ["(64, 64)"], "p_method": ["'lu'", "'qr'"]})
    page = render_page(store, discover_pages(), "/trends", url)
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    assert values["benchmark"] == GRID and values["p_shape"] == ["(64, 64)"] and values["p_method"] == ["'lu'", "'qr'"]
    assert not any(getattr(c, "id", None) == "link-notice" for c in _walk(page))
    fig, _ = _generic_trends.update(store.get(), MACHINE, ENV, GRID, {"shape": ["(64, 64)"]}, "commit", [], None)
    fig = go.Figure(fig)
    assert sorted(t.name for t in fig.data if t.mode == "lines+markers") == ["method='lu'", "method='qr'"]


def test_a_benchmark_without_a_unit_opens_on_one_combination_and_never_shares_an_axis(gx, data):
    """asv's placeholder unit says nothing: GB, seconds and a count of one benchmark get an axis each."""
    store = ResultsStore(gx.results_dir, detect_in_background=False)
    page = render_page(store, discover_pages(), "/trends", encode_query({"benchmark": MIXED}))
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    assert values["p_stat"] == [repr(next(iter(MIXED_STATS)))]  # opens on one combination
    fig, note = _generic_trends.update(data, MACHINE, ENV, MIXED, {}, "commit", [], None)  # all three picked
    fig = go.Figure(fig)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == len(MIXED_STATS) and len({t.yaxis for t in lines}) == len(MIXED_STATS)
    domains = sorted(tuple(fig.layout[f"yaxis{t.yaxis[1:]}"].domain) for t in lines)
    assert all(a[1] <= b[0] for a, b in zip(domains, domains[1:]))  # stacked, never overlapping
    for t in lines:  # each axis spans its own line's values
        low, high = fig.layout[f"yaxis{t.yaxis[1:]}"].range
        assert low <= min(v for v in t.y if v is not None) and max(v for v in t.y if v is not None) <= high
    assert "no unit" in note and MIXED in note
    one_unit, _ = _generic_trends.update(data, MACHINE, ENV, READ, {}, "commit", [], None)
    assert {t.yaxis for t in go.Figure(one_unit).data if t.mode == "lines+markers"} == {"y"}  # seconds: one axis


def test_a_line_leaves_a_gap_where_its_benchmark_is_not_in_the_results(data, gx):
    benchmark, missing = ABSENT
    fig, _ = _generic_trends.update(data, MACHINE, ENV, benchmark, {}, "commit", [], None)
    (line,) = [t for t in go.Figure(fig).data if t.mode == "lines+markers"]
    x = list(line.x)
    assert None in x and x[x.index(None) - 1] == missing.start - 1 and x[x.index(None) + 1] == missing.stop
    assert not set(missing) & {v for v in x if v is not None} and x.count(None) == 1
    assert line.y[x.index(None)] is None
    (band,) = [t for t in go.Figure(fig).data if (t.name or "").endswith("99% CI")]  # the band breaks there too
    outlines = [v for v in band.x]
    assert outlines.count(None) == 1 and not set(missing) & {v for v in outlines if v is not None}


def test_a_log_axis_labels_a_few_round_values_not_every_minor_tick(data):
    fig, _ = _generic_trends.update(data, MACHINE, ENV, READ, {"size": ["65536"], "kind": ["'csv'"]}, "commit",
                                    ["log"], None)
    axis = go.Figure(fig).layout.yaxis
    assert axis.type == "log" and 3 <= len(axis.tickvals) <= 8
    low, high = 10 ** axis.range[0], 10 ** axis.range[1]
    assert all(low <= v <= high for v in axis.tickvals)
    assert [float(t.replace(",", "")) for t in axis.ticktext] == pytest.approx(list(axis.tickvals))


def test_many_combinations_are_narrowed_not_drawn_as_a_tangle(data):
    grid = [("a", [str(i) for i in range(5)]), ("b", [str(i) for i in range(4)])]  # 20 > MAX_LINES
    assert _generic_trends.default_choice(grid) == {"a": [], "b": ["0"]}
    assert _generic_trends.default_choice(grid[:1]) == {"a": []}


def test_compare_judges_each_benchmark_in_its_own_direction(data, gx):
    run = data.run(MACHINE, ENV)
    before, after = run.commits["commit_hash"].iloc[STEP_AT - 1], gx.step_commit
    table = _generic_compare.compare_table(data, MACHINE, ENV, before, after, "1.1", [])
    verdict = {(b, p): c for b, p, c in table[["benchmark", "params_key", "change"]].itertuples(index=False)}
    assert verdict[gx.stepped] == "worse"  # +25 % time
    assert verdict[gx.dropped] == "worse"  # -20 % MB/s: a higher-is-better unit
    assert verdict[(BROKEN, "")] == "failed → failed" and verdict[(OPTIONAL, "")] == "skipped → skipped"
    rows, columns, summary = _generic_compare.update(data, MACHINE, ENV, before, after, "1.1", ["only"], [])
    assert {(r["benchmark"], r["params_key"]) for r in rows} == {gx.stepped, gx.dropped}
    assert "2 worse" in texts(summary)
    by_id = {r["params_key"]: r for r in rows}
    assert by_id[gx.dropped[1]]["new"].endswith(" MB/s") and by_id[gx.stepped[1]]["new"].endswith("s")
    rows, columns, _ = _generic_compare.update(data, MACHINE, ENV, before, after, "1.1", [], [READ])
    assert next(c["name"] for c in columns if c["id"] == "new") in ("new (ms)", "new (µs)")  # one unit: numbers


def test_the_detector_and_the_inbox_work_on_every_series(data, gx):
    findings = detect_in_worker(str(gx.results_dir), None)[0]
    found = {(f.benchmark, f.params, f.commit_hash, f.direction) for f in findings}
    assert (*gx.stepped, gx.step_commit, "regression") in found
    assert (*gx.dropped, gx.step_commit, "regression") in found
    from dashboard.store.detection import FindingsState

    children, _ = inbox_page.inbox(data, FindingsState("done", 0.0, findings, 1.0), None, "regression", [])
    assert gx.step_commit[:10] in texts(children)
    run = data.run(MACHINE, ENV)
    q = run.trend_query(*gx.stepped)  # what the inbox's trend link should carry in generic mode
    assert q == {"benchmark": READ, "p_size": ["65536"], "p_kind": ["'csv'"]}
    # the links the page emits: each opens its own series (once every one dropped the benchmark)
    items = [li for li in _walk(children) if type(li).__name__ == "Li"]
    stepped = next(li for li in items if gx.stepped[1] in texts(li) and READ in texts(li))  # the item names it
    href = next(c.href for c in _walk(stepped) if getattr(c, "href", "").startswith("/trends"))
    emitted = Query(href.split("?", 1)[1])
    assert (emitted.one("benchmark"), emitted.many("p_size"), emitted.many("p_kind"), emitted.one("commit")) == (
        READ, ["65536"], ["'csv'"], gx.step_commit)
    hrefs = {c.href for li in items for c in _walk(li) if getattr(c, "href", "").startswith("/trends")}
    assert len(hrefs) == len(items)  # no two findings share a link
    page = render_page(ResultsStore(gx.results_dir, detect_in_background=False), discover_pages(), "/trends",
                       link("", {**q, "commit": gx.step_commit}))
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    assert (values["benchmark"], values["p_size"], values["commit"]) == (READ, ["65536"], gx.step_commit)


# --------------------------------------------------------------------------- the project's asv config


def _git(repo, *args, date=None):
    env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {}
    import os

    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True, env={**os.environ, **env}).stdout.strip()


def test_asv_conf_gives_commit_links_and_the_repositorys_commit_order(tmp_path):
    """Results whose stored dates disagree with the repository (a rebase, a clock) follow the
    repository's order, as asv's own graphs do; commit links use the config's URL."""
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    hashes = []
    for i in range(6):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}", date=f"2026-01-0{i + 1}T12:00:00")
        hashes.append(_git(repo, "rev-parse", "HEAD"))
    gx = write_generic_history(repo / "results", n_commits=6)
    dates = [5, 1, 4, 2, 6, 3]  # stored dates out of the repository's order
    for old, new, day in zip(gx.history.commits, hashes, dates):
        path = next((repo / "results" / MACHINE).glob(f"{old[:8]}-*.json"))
        doc = json.loads(path.read_text())
        doc["commit_hash"], doc["date"] = new, 1_790_000_000_000 + day * 86_400_000
        path.write_text(json.dumps(doc))
    (repo / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "project", "repo": ".", "results_dir": "results",
        "show_commit_url": "https://example.org/project/commit/"}))
    data = build_data(repo / "results")  # the config beside the results is found
    assert data.run(MACHINE, ENV).commits["commit_hash"].tolist() == hashes
    assert data.commit_link(hashes[2]) == f"https://example.org/project/commit/{hashes[2]}"
    assert "repository" in data.project.order_note()
    by_date = build_data(repo / "results", asv_conf=tmp_path / "missing.json")
    assert by_date.commit_link(hashes[0]) is None and "cannot" not in by_date.project.order_note()
    order = [hashes[i] for i in np.argsort(dates, kind="stable")]
    assert by_date.run(MACHINE, ENV).commits["commit_hash"].tolist() == order  # no repository: stored dates


def test_a_foreign_results_folder_never_gets_this_repositorys_commit_links(gx):
    assert build_data(gx.results_dir).commit_link("abc") is None


def test_sub_metrics_are_nested_under_their_parent_in_the_inbox(tmp_path):
    """step.forward under step, step.forward.solve under step.forward: the gate's rule, on the page."""
    from dashboard.store.detection import FindingsState
    from tests.asv_fixtures import SeriesSpec, write_history

    names = ("bench.M.track_step", "bench.M.track_step.forward", "bench.M.track_step.forward.solve")
    history = write_history(tmp_path / "results", [SeriesSpec(n, (16,), ("m",), steps=((24, 0.3),), run_noise=0.01)
                                                   for n in names], 30, seed=5, n_samples=15)
    findings = [f for f in detect_in_worker(str(history.results_dir), None)[0] if f.commit_hash == history.commits[24]]
    assert {f.benchmark for f in findings} == set(names)
    children, _ = inbox_page.inbox(build_data(history.results_dir), FindingsState("done", 0.0, findings, 1.0), None,
                                   "regression", [])
    (group,) = [c for c in _walk(children) if type(c).__name__ == "Details" and "inbox-group" in c.className]
    top = next(c for c in group.children if type(c).__name__ == "Ul")
    chain = []
    level = top
    while level is not None:
        (item,) = level.children  # one finding per level
        below = next((c for c in item.children if type(c).__name__ == "Ul" and c.className == "sub-metrics"), None)
        own = texts([c for c in item.children if c is not below])
        chain.append(next(n for n in names[::-1] if n in own))
        level = below
    assert chain == list(names)


def _write_reasons(results_dir, machine, commit, entries):
    from benchmarks import skip_reasons

    return skip_reasons.merge(results_dir, machine, commit, entries, set())


def test_recorded_reasons_say_why_a_value_is_n_a_and_a_broken_file_is_reported(tmp_path):
    """results/reasons/<machine>/<commit>.reasons (benchmarks/skip_reasons.py) on Trends' not-run
    markers and Compare's why-n/a line; a broken reasons file is named, never the page's end."""
    from benchmarks import skip_reasons

    gx = write_generic_history(tmp_path / "results", n_commits=6)
    commits = gx.history.commits
    _write_reasons(gx.results_dir, MACHINE, commits[-1], [
        skip_reasons.entry(OPTIONAL, {}, "skipped", "needs a GPU (torch.cuda.is_available() is False)"),
        skip_reasons.entry(BROKEN, {}, "failed", "Traceback (most recent call last):\n  File x\nRuntimeError: boom")])
    broken = skip_reasons.path(gx.results_dir, MACHINE, commits[-2])
    broken.write_text('{"version": 1, "entries": [')  # cut short
    data = build_data(gx.results_dir)
    fig = go.Figure(_generic_trends.update(data, MACHINE, ENV, OPTIONAL, {}, "commit", [], None)[0])
    (skipped,) = fig.data
    assert skipped.text[-1] == "skipped: needs a GPU (torch.cuda.is_available() is False)"
    assert skipped.text[0].startswith("skipped: asv stored NaN")  # nothing recorded at the first commit
    fig = go.Figure(_generic_trends.update(data, MACHINE, ENV, BROKEN, {}, "commit", [], None)[0])
    assert fig.data[0].text[-1] == "failed: RuntimeError: boom"  # a traceback's last line
    _, _, summary = _generic_compare.update(data, MACHINE, ENV, commits[-3], commits[-1], "1.1", [], [])
    line = " ".join(texts(next(c for c in _walk(summary) if getattr(c, "id", None) == "gcompare-why-na")).split())
    assert f"Why n/a at {commits[-1][:8]}: 2 series skipped or failed" in line
    assert "1 × needs a GPU" in line and "1 × RuntimeError: boom" in line and "without a recorded" not in line
    assert f"Why n/a at {commits[-3][:8]}: 2 series skipped or failed (no reason recorded" in line
    _, _, summary = _generic_compare.update(data, MACHINE, ENV, commits[-3], commits[-2], "1.1", [], [])
    line = " ".join(texts(next(c for c in _walk(summary) if getattr(c, "id", None) == "gcompare-why-na")).split())
    assert f"reasons/{MACHINE}/{commits[-2]}.reasons left out: truncated JSON" in line
    fig = go.Figure(_generic_trends.update(data, MACHINE, ENV, OPTIONAL, {}, "commit", [], None)[0])
    assert fig.data[0].text[-2].startswith("skipped: asv stored NaN")  # the broken file's commit


def test_a_reasons_entry_that_is_not_one_is_left_out_and_counted(tmp_path):
    from dashboard.data import na_reasons

    target = na_reasons.path_of(tmp_path, "m", "c" * 40)
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"version": 1, "entries": [
        {"benchmark": "b.time_x", "params": {"n": 16}, "status": "skipped", "reason": "no GPU"},
        {"benchmark": "b.time_x", "params": "n=16", "status": "skipped", "reason": "params not a dict"},
        {"benchmark": "b.time_y", "params": {}, "status": "slow", "reason": "not a status"}]}))
    found = na_reasons.reasons_at(tmp_path, "m", "c" * 40)
    assert found.at(na_reasons.series_key("b.time_x", ["n"], ["16"]), "skipped") == ("skipped", "no GPU")
    assert len(found.by_series) == 1
    assert "2 entries left out" in found.problem
    assert na_reasons.reasons_at(tmp_path, "m", "d" * 40) is na_reasons.NONE  # no file: nothing to say
    target.write_text(json.dumps({"version": 2, "entries": []}))
    assert "not a reasons file" in na_reasons.reasons_at(tmp_path, "m", "c" * 40).problem  # re-read once changed


def test_a_whole_benchmark_reason_explains_every_combination_of_its_status_and_no_other(tmp_path):
    """One entry with params "*" (a setup_cache that skipped the whole benchmark): every skipped
    combination gets its reason; a failed one, or one with an entry of its own, does not."""
    from dashboard.data import na_reasons

    target = na_reasons.path_of(tmp_path, "m", "c" * 40)
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"version": 1, "entries": [
        {"benchmark": "b.track_x", "params": "*", "status": "skipped", "reason": "no sm_100 at this commit"},
        {"benchmark": "b.track_x", "params": {"n": 32}, "status": "skipped", "reason": "its own"}]}))
    found = na_reasons.reasons_at(tmp_path, "m", "c" * 40)
    assert found.problem is None and len(found.by_series) == 1
    assert found.at(na_reasons.series_key("b.track_x", ["n"], ["16"]), "skipped") == ("skipped", "no sm_100 at this commit")
    assert found.at(na_reasons.series_key("b.track_x", ["n"], ["32"]), "skipped") == ("skipped", "its own")
    assert found.at(na_reasons.series_key("b.track_x", ["n"], ["16"]), "failed") is None
    assert found.at(na_reasons.series_key("b.track_y", ["n"], ["16"]), "skipped") is None


def test_a_companion_over_one_mib_that_the_gate_uses_still_marks_its_run(tmp_path):
    """A v2 companion with many measuring passes is over 1 MiB: the gate reads it (its reader
    allows 64 MiB), so the Overview's run marks read it the same way rather than dropping it."""
    from asv_results.companion_files import companion_file
    from regressions.recorded_state import read_state_file, UNREADABLE
    from dashboard.data.run_marks import marks_of

    commits = ("a" * 40, "b" * 40)
    machine_dir = tmp_path / MACHINE
    (machine_dir / "runner-state").mkdir(parents=True)
    passes = [{"benchmark": f"bench_ops.Case{i}.track_latency", "params": {"case": "x" * 200},
               "start": snapshot(), "end": snapshot()} for i in range(3000)]
    for commit, torch in zip(commits, ("2.11.0", "2.12.0")):
        result = machine_dir / f"{commit[:8]}-{ENV}.json"
        path = companion_file(result)
        path.write_text(json.dumps({"version": 2, "start": snapshot(torch), "end": snapshot(torch),
                                    "benchmarks": passes}))
        assert path.stat().st_size > 1 << 20
        assert UNREADABLE not in read_state_file(result, tmp_path)  # the gate uses it
    assert marks_of(tmp_path, MACHINE, ENV, commits) == {commits[1]: "torch 2.11.0 → 2.12.0"}


def test_trends_mark_points_whose_run_throttled_or_changed_software(tmp_path):
    """The runner state benchmarks.run records beside each result file: a marker and the hover
    saying what differs from the run before (torch 2.11.0 → 2.12.0) or that it throttled."""
    gx = write_generic_history(tmp_path / "results", n_commits=7)
    commits = gx.history.commits
    folder = gx.results_dir / MACHINE / "runner-state"
    folder.mkdir()
    states = [(snapshot(), snapshot())] * 3 + [(snapshot("2.12.0"), snapshot("2.12.0")),
                                               (snapshot("2.12.0"), snapshot("2.12.0", power_violation_ns=5_000_000))]
    for commit, (start, end) in zip(commits, states):
        (folder / f"{commit[:8]}-{ENV}.json").write_text(json.dumps({"start": start, "end": end}))
    (folder / f"{commits[5][:8]}-{ENV}.json").write_text('{"start": {"recorded": true, "gpus": ["x"]}')  # broken
    data = build_data(gx.results_dir)
    fig = go.Figure(_generic_trends.update(data, MACHINE, ENV, IMPORT, {}, "commit", [], None)[0])
    (marks,) = [t for t in fig.data if (t.name or "").startswith("runner changed or throttled")]
    assert marks.name == "runner changed or throttled (2 commits)" and list(marks.x) == [3, 4]
    assert marks.marker.symbol == "diamond-open"
    assert "torch 2.11.0 → 2.12.0" in marks.text[0] and commits[3][:10] in marks.text[0]
    assert "throttled (power)" in marks.text[1] and "torch" not in marks.text[1]  # same software as the run before
    (line,) = [t for t in fig.data if t.mode == "lines+markers"]
    assert list(marks.y) == [line.y[3], line.y[4]]  # on the points themselves
    bare = write_generic_history(tmp_path / "bare", n_commits=4)  # no runner state recorded: no marks
    fig = go.Figure(_generic_trends.update(build_data(bare.results_dir), MACHINE, ENV, IMPORT, {}, "commit", [],
                                           None)[0])
    assert not [t for t in fig.data if (t.name or "").startswith("runner changed")]


def test_runner_state_recorded_after_the_results_were_loaded_still_marks(tmp_path):
    gx = write_generic_history(tmp_path / "results", n_commits=4)
    data = build_data(gx.results_dir)

    def marked():
        fig = go.Figure(_generic_trends.update(data, MACHINE, ENV, IMPORT, {}, "commit", [], None)[0])
        return [t for t in fig.data if (t.name or "").startswith("runner changed")]

    assert not marked()  # nothing recorded yet
    write_run_notes(gx.history, {}, {0: (snapshot(), snapshot()), 1: (snapshot("2.12.0"), snapshot("2.12.0"))})
    (marks,) = marked()
    assert list(marks.x) == [1]


def test_generic_trends_opens_on_the_series_with_the_most_measured_points(tmp_path):
    history = write_generic_history(tmp_path / "results", absent=(GRID, range(3, 30)))  # GRID: 3 of 30 commits
    store = ResultsStore(history.results_dir, detect_in_background=False)
    page = render_page(store, discover_pages(), "/trends", "")
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    run = store.get().run(MACHINE, ENV)
    assert sorted(_generic_trends.benchmarks_of(run))[0] == GRID  # the first name: once where it opened
    opened = run.series[run.series["benchmark"] == values["benchmark"]]
    assert values["benchmark"] != GRID and run.measured_points[opened.index].max() == 30


def test_generic_trends_mark_the_workers_findings_and_wait_for_them_without_detecting(gx, monkeypatch):
    """Another project's Trends as the suite's: the worker's findings once it is done (the same
    marks the page's own detector finds), pending while it runs, never a detection of its own then."""
    import time

    from dashboard.store.detection import FindingsState, detect
    from dashboard.store.load_data import shown_series

    benchmark = gx.stepped[0]
    own = go.Figure(_generic_trends.update(build_data(gx.results_dir), MACHINE, ENV, benchmark, {}, "commit", [],
                                           None)[0])
    served = build_data(gx.results_dir)
    done = FindingsState("done", 0.0, detect(served.table, shown_series(served.table), served.benchmarks))
    monkeypatch.setattr("regressions.find_changes", lambda *a, **k: pytest.fail("the page ran the detector"))
    marks = lambda fig: [(t.name, list(t.x)) for t in fig.data if t.name in ("regressions", "improvements")]  # noqa: E731
    from_worker = go.Figure(_generic_trends.update(served, MACHINE, ENV, benchmark, {}, "commit", [], None,
                                                   detected=done)[0])
    assert marks(from_worker) == marks(own) and marks(own)  # the planted step, marked alike
    running = go.Figure(_generic_trends.update(build_data(gx.results_dir), MACHINE, ENV, benchmark, {}, "commit", [],
                                               None, detected=FindingsState("running", time.time()))[0])
    assert marks(running) == [] and "Change marks pending" in running.layout.title.text
