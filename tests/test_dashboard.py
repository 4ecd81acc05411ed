"""The dashboard without a browser: metrics, figure builders, page callbacks called as plain
functions, the app's routing and URL state — on a generated history in our suite's shape and on
one real CPU run of the suite."""

import re
import time

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.data import ab_compare, case_fields, derived_metrics, device_ceilings, facet_filters, speedup_tables
from asv_results.loading import load_results
from dashboard.app import create_app, nav_state, query_from_controls, render_page
from dashboard.figures import build_roofline_figure, build_speedup_panel_figure, build_trend_figure
from dashboard.store.detection import FindingsState
from dashboard.store.load_data import build_data, results_signature
from dashboard.store.model import ResultsStore
from dashboard.pages import discover_pages, overview, regressions as inbox_page, roofline, trends, compare
from regressions import find_changes
from dashboard.data.urlstate import Query, encode_query
from workload import cost
from workload.grids import grid
from workload.case import Case
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, SECOND_MACHINE, SYNTH_CEILINGS, write_dashboard_fixture
from tests.every_page import every_page
from tests.suite_run import run_tiny_suite


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("dash") / "results")


@pytest.fixture(scope="module")
def data(fx):
    return build_data(fx.results_dir)


@pytest.fixture(scope="module")
def main_run(data):
    return data.runs[(MAIN_MACHINE, MAIN_ENV)]


def texts(component) -> str:
    """All text in a Dash component tree."""
    if component is None:
        return ""
    if isinstance(component, (str, int, float)):
        return str(component)
    if isinstance(component, (list, tuple)):
        return " ".join(texts(c) for c in component)
    return texts(getattr(component, "children", None))


# --------------------------------------------------------------------------- data and metrics


def test_broken_files_are_listed_and_the_rest_loads(fx, data):
    skipped = {s.path: s.reason for s in data.report.skipped}
    assert set(skipped) == set(fx.broken_files)
    assert "truncated" in skipped[fx.broken_files[0]]
    assert set(data.runs) == {(MAIN_MACHINE, MAIN_ENV), (MAIN_MACHINE, "existing-py_usr_bin_python3"),
                              (SECOND_MACHINE, MAIN_ENV)}
    panel = texts(render_page(ResultsStore(fx.results_dir), discover_pages(), "/", ""))
    assert "2 file(s) skipped" in panel and "truncated JSON" in panel


def test_case_fields_come_from_case_keys(main_run):
    rows = main_run.series.drop_duplicates("case")
    for key, op, m, k, n, dtype, act in rows[["case", "op", "M", "K", "N", "dtype", "activation"]].itertuples(index=False):
        case = Case.from_key(key)
        assert (case.op, case.M, case.K, case.N, case.dtype, case.activation) == (op, m, k, n, dtype, act)


def test_derived_metrics_follow_the_cost_model(data, main_run, fx):
    rows = main_run.of_case(fx.regressed[0])
    rows = rows[(rows["metric"] == "latency") & (rows["status"] == "ok")].head(5)
    case = Case.from_key(fx.regressed[0])
    tflops = derived_metrics.derive(rows, "tflops")
    np.testing.assert_allclose(tflops["y"], cost.flops(case) / rows["value"] / 1e12)
    assert (tflops["y_lo"] <= tflops["y"]).all() and (tflops["y"] <= tflops["y_hi"]).all()
    gbps = derived_metrics.derive(rows, "gbps")
    np.testing.assert_allclose(gbps["y"], cost.min_bytes(case) / rows["value"] / 1e9)
    frac = derived_metrics.derive(rows, "roofline", data.ceilings)
    for (_, r), f in zip(rows.iterrows(), frac["y"]):
        ceil = device_ceilings.ceilings_of(data.ceilings, r["machine"], r["env_name"], r["commit_hash"])
        assert f == pytest.approx(cost.floor_seconds(case, ceil) / r["value"])


def test_ceilings_are_derived_per_run(data, main_run):
    ceil = device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, main_run.commits["commit_hash"].iloc[-1])
    assert ceil.copy_gbps == pytest.approx(SYNTH_CEILINGS.copy_gbps, rel=0.05)
    assert set(ceil.matmul_tflops) == set(SYNTH_CEILINGS.matmul_tflops)  # every dtype the fixture measured
    assert device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, "not-a-commit") is None


def test_speedup_is_best_baseline_over_fused(main_run):
    newest = main_run.commits["commit_hash"].iloc[-1]
    latency = main_run.at_commit(newest)
    latency = latency[latency["metric"] == "latency"]
    table = speedup_tables.speedups(latency).set_index("case")
    key = table.index[0]
    times = latency[(latency["case"] == key) & (latency["status"] == "ok")].set_index("impl")["value"]
    best = times.drop("fused").min()
    assert table.loc[key, "speedup"] == pytest.approx(best / times["fused"])
    assert table.loc[key, "baseline_impl"] == times.drop("fused").idxmin()
    only_eager = speedup_tables.speedups(latency, ["eager"]).set_index("case")
    assert only_eager.loc[key, "baseline_impl"] == "eager"


def test_compare_flags_the_planted_regression_with_asvs_rule(data, main_run, fx):
    before = main_run.commits["commit_hash"].iloc[15]
    table, _ = compare.compare_table(data, MAIN_MACHINE, MAIN_ENV, before, fx.regression_commit, "latency", "1.1",
                                     None, None, None, None, None)
    row = table[(table["case"] == fx.regressed[0]) & (table["impl"] == "fused")].iloc[0]
    assert row["change"] == "worse" and row["significant"] and row["ratio"] == pytest.approx(1.3, abs=0.06)
    assert table["significant"].sum() == 1  # noise (1.5 %) never passes a 10 % factor
    failing = table[(table["case"] == fx.failing[0]) & (table["impl"] == "compile")].iloc[0]
    assert failing["change"] == "failed → failed" and not failing["significant"]


def test_grids_that_differ_between_commits(data, main_run, fx):
    first, newest = main_run.commits["commit_hash"].iloc[0], main_run.commits["commit_hash"].iloc[-1]
    table, _ = compare.compare_table(data, MAIN_MACHINE, MAIN_ENV, first, newest, "latency", "1.1",
                                     ["narrow_mlp"], None, None, None, None)
    assert len(table) and set(table["change"]) == {"absent → ok"}
    narrow = next(c.key for c in fx.new_grid_cases if c.op == "narrow_mlp")
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, narrow, "latency", ["fused"], "commit", [], None))
    line = next(t for t in fig.data if t.name == "fused")
    assert min(line.x) == 8 and len(line.x) == 16  # measured only since the grid grew


def test_facet_counts_count_cases_given_the_other_filters(main_run):
    counts = facet_filters.facet_counts(main_run.catalog, {"op": ["gated_mlp"]})
    assert counts["dtype"] == {"bf16": 3}
    assert counts["op"]["linear_act"] == main_run.catalog[main_run.catalog["op"] == "linear_act"]["case"].nunique()


# --------------------------------------------------------------------------- figures


def test_speedup_panels_are_sized_by_their_cells_on_one_colour_scale(main_run):
    from dashboard.figures.heatmap import color_span, panel_size, speedup_ticks

    newest = main_run.commits["commit_hash"].iloc[-1]
    latency = main_run.at_commit(newest)
    table = speedup_tables.speedups(latency[latency["metric"] == "latency"])
    span = color_span(table["speedup"])
    sizes = {}
    for (op, dtype), panel in table.groupby(["op", "dtype"]):
        fig = go.Figure(build_speedup_panel_figure(panel, span, "dark", f"{op} {dtype}"))
        (heat,) = fig.data
        assert (heat.zmin, heat.zmax) == (-span, span) and not heat.showscale  # one scale, drawn once on the page
        assert len(heat.y) == panel["shape"].nunique() and len(heat.x) == panel["activation"].nunique()
        sizes[(op, dtype)] = (fig.layout.width, fig.layout.height, len(heat.y))
        assert fig.layout.paper_bgcolor == "#1e2127"
    rows_to_height = {n: h for _, h, n in sizes.values()}
    assert len(rows_to_height) > 1 and sorted(rows_to_height.values()) == [rows_to_height[n] for n in sorted(rows_to_height)]
    for n in (1, 40):  # one case or forty: a cell is as big as in any other panel
        width, height = panel_size(n, 5, 30)
        assert (height - panel_size(1, 5, 30)[1]) == 26 * (n - 1) and width < 1400
    for s in (span, np.log2(1.25), 1.0, 3.0):  # real ticks, not one "1x", never crowded
        ticks = speedup_ticks(s)
        assert 1.0 in ticks and 3 <= len(ticks) <= 9 and ticks == sorted(ticks)
        assert all(abs(np.log2(t)) <= s + 1e-9 for t in ticks)
        assert min(np.diff(np.log2(ticks))) >= s / 4 - 1e-9


def test_trend_figure_marks_detected_changes_and_the_linked_commit(data, fx):
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency", None, "commit", ["log"],
                        fx.regression_commit))
    names = [t.name for t in fig.data]
    assert {"fused", "eager", "compile", "regressions"} <= set(names)
    marker = fig.data[names.index("regressions")]
    assert list(marker.x) == [16] and "+" in marker.text[0]
    assert fig.layout.yaxis.type == "log"
    assert any(s.x0 == 16 for s in fig.layout.shapes)  # the marked commit
    fused = fig.data[names.index("fused")]
    assert fused.customdata[16][0] == fx.regression_commit  # hover: hash and date
    higher = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "tflops", ["fused"], "date", [], None))
    assert higher.layout.xaxis.title.text == "commit date" and "TFLOP/s" in higher.layout.yaxis.title.text


def test_trends_mark_the_detector_workers_findings_once_it_is_done_and_detect_nothing_themselves(fx, monkeypatch):
    """The worker's findings over every series are what Trends shows once they are there: the
    same changes the page's own detector finds on the case's series (5,000 commits: ~60 ms a
    series that a first view no longer waits for)."""
    from dashboard.store.detection import detect
    from dashboard.store.load_data import shown_series

    own = build_data(fx.results_dir)
    figure = go.Figure(trends.update(own, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency", None, "commit", [], None))
    served = build_data(fx.results_dir)
    state = FindingsState("done", 0.0, detect(served.table, shown_series(served.table), served.benchmarks))

    def no_detection(*args, **kwargs):
        raise AssertionError("the page ran the detector although the worker's findings are there")

    monkeypatch.setattr("regressions.find_changes", no_detection)
    from_worker = go.Figure(trends.update(served, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency", None, "commit",
                                          [], None, detected=state))
    marks = lambda fig: [(t.name, list(t.x), list(t.text or [])) for t in fig.data if t.name in ("regressions", "improvements")]  # noqa: E731
    assert marks(from_worker) == marks(figure) and marks(figure)  # the planted regression, marked alike
    # while the worker runs, the page judges nothing itself: no marks, and the title says they are pending
    running = go.Figure(trends.update(build_data(fx.results_dir), MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency",
                                      None, "commit", [], None, detected=FindingsState("running", time.time() - 42)))
    assert marks(running) == [] and [t.name for t in running.data if t.name == "fused"] == ["fused"]
    assert "Change marks pending" in running.layout.title.text and "(42 s so far)" in running.layout.title.text
    monkeypatch.undo()  # a failed worker: the page detects on its own, as without one
    failed = go.Figure(trends.update(build_data(fx.results_dir), MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency",
                                     None, "commit", [], None, detected=FindingsState("failed", 0.0, error="boom")))
    assert marks(failed) == marks(figure) and "pending" not in failed.layout.title.text


@pytest.mark.parametrize("x_axis", ["date", "commit"])
def test_a_trend_figure_with_the_runs_date_text_is_the_one_formatted_per_figure(data, fx, x_axis):
    """Trends formats a run's commit dates once per load (trends.commit_axis); the figure is the
    same as when it formats each line's dates itself."""
    import plotly.io as pio

    run = data.runs[(MAIN_MACHINE, MAIN_ENV)]
    rows = run.of_case(fx.regressed[0], samples=False, metric="latency", mode="forward")
    with_text = derived_metrics.derive(rows.merge(trends.commit_axis(data, run), on="commit_hash"), "latency")
    plain = derived_metrics.derive(rows.merge(run.commits[["commit_hash", "position"]], on="commit_hash"), "latency")
    figures = [build_trend_figure(d, "latency", None, None, x_axis, False, "light", title="t") for d in (with_text, plain)]
    assert pio.to_json(figures[0]) == pio.to_json(figures[1])
    custom = next(t["customdata"] for t in figures[0]["data"] if t.get("customdata") is not None)
    assert custom[0][1] in {text[:16] for text in with_text["date_text"]}  # the hover's date, to the minute


def test_trend_figure_shades_where_an_unpinned_change_may_be():
    import pandas as pd

    series = pd.DataFrame({"impl": "fused", "position": range(6), "commit_hash": [f"c{i}" for i in range(6)],
                           "date": pd.date_range("2026-01-01", periods=6, tz="UTC"),
                           "y": [1.0, 1.0, 1.0, 1.1, 1.1, 1.1], "y_lo": np.nan, "y_hi": np.nan})
    change = {"impl": "fused", "commit_hash": "c3", "direction": "regression", "relative_change": 0.1,
              "confirmed": True, "earliest_commit": "c2", "latest_commit": "c4"}
    fig = go.Figure(build_trend_figure(series, "latency", pd.DataFrame([{**change, "plausible_commits": 3}])))
    marker = next(t for t in fig.data if t.name == "regressions")
    assert "could be any of 3 commits c2..c4" in marker.text[0]
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == [(2, 4)]
    unplotted_end = series.assign(y=np.where(series["commit_hash"] == "c2", np.nan, series["y"]))
    fig = go.Figure(build_trend_figure(unplotted_end, "latency", pd.DataFrame([{**change, "plausible_commits": 3}])))
    assert [(s.x0, s.x1) for s in fig.layout.shapes] == [(2, 4)]  # c2 failed to measure: still its commit
    pinned = go.Figure(build_trend_figure(series, "latency", pd.DataFrame([{**change, "plausible_commits": 1}])))
    assert not pinned.layout.shapes
    assert "could be" not in next(t for t in pinned.data if t.name == "regressions").text[0]


def test_trend_y_axis_keeps_the_values_in_view_when_one_ci_band_spikes():
    import pandas as pd

    y = np.r_[np.full(10, 1.0), np.full(10, 1.05)]
    series = pd.DataFrame({"impl": "fused", "position": range(20), "commit_hash": [f"c{i}" for i in range(20)],
                           "date": pd.date_range("2026-01-01", periods=20, tz="UTC"), "y": y,
                           "y_lo": y * 0.99, "y_hi": np.where(np.arange(20) == 7, 4.0, y * 1.01)})
    for log_y in (False, True):
        low, high = go.Figure(build_trend_figure(series, "latency", log_y=log_y)).layout.yaxis.range
        to_axis = np.log10 if log_y else (lambda v: v)
        assert low < to_axis(0.99) and to_axis(1.05 * 1.01) < high  # every value and the usual band
        assert high < to_axis(1.2)  # not the spike to 4.0: a 5 % step stays visible
    flat = series.assign(y=1.0, y_lo=np.nan, y_hi=np.nan)
    low, high = go.Figure(build_trend_figure(flat, "latency")).layout.yaxis.range
    assert low < 1.0 < high  # one value everywhere, no band: still a range around it


def test_roofline_figure_draws_the_measured_roofs_and_pairs_each_fused_point(data, main_run):
    newest = main_run.commits["commit_hash"].iloc[-1]
    fig = go.Figure(roofline.update(data, MAIN_MACHINE, MAIN_ENV, newest))
    roofs = [t for t in fig.data if (t.name or "").startswith("roof")]
    ceil = device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, newest)
    by_dtype = {t.name.split(":")[0].removeprefix("roof "): max(t.y) for t in roofs}
    assert by_dtype == pytest.approx({d: p for d, p in ceil.matmul_tflops.items()})  # one roof per measured peak
    assert len({t.line.dash for t in roofs}) == len(roofs)  # told apart by their line style
    assert all("TFLOP/s" in t.name for t in roofs) and "GB/s" in roofs[0].name
    points, _ = roofline.roofline_points(data, MAIN_MACHINE, MAIN_ENV, newest, {})
    ops = set(points["op"].astype(str))
    assert {t.name for t in fig.data if (t.name or "").startswith("op: ")} == {f"op: {o}" for o in ops}
    pairs = next(t for t in fig.data if t.name == "fused ↔ its best unfused peer")
    ok = points[np.isfinite(points["tflops"])]
    both = set(ok[ok["impl"] == "fused"]["case"]) & set(ok[ok["impl"] != "fused"]["case"])
    assert len(pairs.x) == 3 * len(both) and pairs.x[0] == pairs.x[1]  # vertical: same case, same intensity
    for axis in (fig.layout.xaxis, fig.layout.yaxis):  # every tick labelled in full, none a bare "2" or "5"
        assert len(axis.tickvals) >= 3
        assert [float(t.replace(",", "")) for t in axis.ticktext] == pytest.approx(list(axis.tickvals))
    from dashboard.figures.roofline import log_ticks

    values, labels = log_ticks(1e-6, 1e-3)
    assert labels[0] == "10<sup>-6</sup>" and values == pytest.approx([1e-6, 1e-5, 1e-4, 1e-3])
    assert "no roof" in go.Figure(build_roofline_figure(fig_points(data, newest), None)).layout.title.text


def fig_points(data, commit):
    points, _ = roofline.roofline_points(data, MAIN_MACHINE, MAIN_ENV, commit, {})
    return points


# --------------------------------------------------------------------------- callbacks and app


def test_overview_headline_answers_is_fused_faster_and_what_got_worse(data, main_run, fx):
    newest = main_run.commits["commit_hash"].iloc[-1]
    headline, panels, changes, device = overview.update(data, MAIN_MACHINE, MAIN_ENV, newest, None, ["gated_mlp"],
                                                        None, None, None, None)
    latency = main_run.at_commit(newest)
    latency = latency[(latency["metric"] == "latency") & (latency["op"] == "gated_mlp")]
    table = speedup_tables.speedups(latency)
    row = next(c for c in _walk(headline) if getattr(c, "id", None) == "headline-gated_mlp-bf16")
    cells = [texts(td) for td in row.children]
    assert cells[1] == str(len(table)) and cells[2] == f"{speedup_tables.geomean(table['speedup']):.2f}×"
    assert cells[3] == "–" and cells[-1] == "unchanged"  # no fused peer in this (pre-peer) history
    assert [int(c) for c in cells[4:7]] == [int((table["verdict"] == v).sum()) for v in ("faster", "slower",
                                                                                         "within noise")]
    assert "NVIDIA H200" in texts(device) and "GB/s" in texts(device)
    assert "slower" in texts(changes) and len([p for p in _walk(panels) if getattr(p, "figure", None)]) == 1
    headline, panels, _, _ = overview.update(data, MAIN_MACHINE, MAIN_ENV, "nonsense", None, None, None, None, None,
                                             None)
    assert "Pick" in texts(headline) and panels == []


def test_a_planted_fused_regression_is_marked_in_the_headline_panel_and_change_list(data, main_run, fx):
    from regressions.judgement import verdict_record

    commit = fx.regression_commit
    verdict = verdict_record(fx.results_dir, base=f"{main_run.previous_commit(commit)}..{commit}")  # the gate's
    headline, panels, changes, _ = overview.update(data, MAIN_MACHINE, MAIN_ENV, commit, None, None, None, None,
                                                   None, None, verdict=verdict)
    row = next(c for c in _walk(headline) if getattr(c, "id", None) == "headline-gated_mlp-bf16")
    assert texts(row.children[7]) == "1 slower"  # fused changes since the previous commit
    assert texts(next(c for c in _walk(headline) if getattr(c, "id", None) == "headline-all").children[7]) == "1 slower"
    compare_link = next(c for c in _walk(row.children[7]) if getattr(c, "href", None))
    q = Query(compare_link.href.split("?", 1)[1])
    assert (q.one("a"), q.one("b"), q.many("impl"), q.many("op")) == (main_run.previous_commit(commit), commit,
                                                                      ["fused"], ["gated_mlp"])
    figure = go.Figure(next(p.figure for p in _walk(panels) if getattr(p, "id", None) == {
        "type": "overview-panel", "op": "gated_mlp", "dtype": "bf16", "mode": "forward"}))
    (heat,) = figure.data
    case = Case.from_key(fx.regressed[0])
    label = case_fields._case_row(fx.regressed[0])["shape"]
    cell = heat.text[list(heat.y).index(label)][list(heat.x).index(case.activation)]
    assert cell.startswith("⚠ ")  # once a plain "1.00x"
    assert len(figure.layout.shapes) == 1  # the outline
    hover = heat.customdata[list(heat.y).index(label)][list(heat.x).index(case.activation)]
    # fused latency +30 % planted; the synthetic samples' noise moves the medians' ratio by a few %
    assert "fails the gate (forward): library: the controls did not move as much" in hover  # the gate's words
    step = re.search(r"fused \+(\d+\.\d)%\)", hover)  # formatting.format_change, as the gate prints it
    assert step and abs(float(step.group(1)) - 30) <= 5, hover
    listed = next(c for c in _walk(changes) if getattr(c, "id", None) == "overview-change-list")
    trend = next(c.href for c in _walk(listed) if getattr(c, "href", "").startswith("/trends"))
    q = Query(trend.split("?", 1)[1])
    assert (q.one("case"), q.one("commit"), q.one("machine"), q.one("mode")) == (fx.regressed[0], commit,
                                                                                  MAIN_MACHINE, "forward")
    older = main_run.commits["commit_hash"].iloc[2]  # a chosen baseline instead of the previous commit
    headline, _, changes, _ = overview.update(data, MAIN_MACHINE, MAIN_ENV, commit, older, None, None, None, None,
                                              None)
    assert f"since {older[:8]}" in texts(headline) and f"Latency since {older[:8]}" in texts(changes)


def test_compare_callback_and_csv(data, main_run, fx):
    before = main_run.commits["commit_hash"].iloc[15]
    rows, columns, summary = compare.update(data, MAIN_MACHINE, MAIN_ENV, before, fx.regression_commit, "latency", "1.1",
                                            ["only"], None, None, None, None, None)
    assert len(rows) == 1 and rows[0]["case"] == fx.regressed[0] and "1 worse" in texts(summary)
    assert [c["id"] for c in columns] == compare.COLUMNS
    csv = compare.csv_text(data, MAIN_MACHINE, MAIN_ENV, before, fx.regression_commit, "latency", "1.1", ["only"],
                           None, None, None, None, None)
    assert csv.splitlines()[0].startswith("metric,case,impl") and len(csv.splitlines()) == 2


def test_regressions_inbox_groups_by_commit_and_links_to_trends(data, fx):
    findings = find_changes(data.rows_frame())
    state = FindingsState("done", 0.0, findings, 1.0)
    children, poll_disabled = inbox_page.inbox(data, state, None, "regression", [], "dark")
    assert poll_disabled
    text = texts(children)
    assert fx.regression_commit[:10] in text and "1 series affected" in text
    links = [c.href for c in _walk(children) if getattr(c, "href", None) and c.href.startswith("/trends")]
    q = Query(links[0].split("?", 1)[1])
    assert (q.one("case"), q.one("commit"), q.one("machine"), q.one("theme")) == (
        fx.regressed[0], fx.regression_commit, MAIN_MACHINE, "dark")
    running, disabled = inbox_page.inbox(data, FindingsState("running", 0.0), None, "regression", [])
    assert not disabled and "Finding changes" in texts(running)


def test_regressions_inbox_shows_accepted_findings_as_accepted(data, fx, tmp_path):
    import dataclasses
    import json

    from tests.judged import judged_state
    from tests.suite_fixtures import copy_results

    findings = find_changes(data.rows_frame())
    (planted,) = [f for f in findings if f.commit_hash == fx.regression_commit and f.direction == "regression"]
    entry = {"benchmark": planted.benchmark, "params": planted.params, "commit": fx.regression_commit[:10],
             "who": "alice", "why": "exact GELU, needed for parity"}
    results = copy_results(fx.results_dir, tmp_path / "results")  # the fixture's own folder stays untouched
    (results / "accepted.json").write_text(json.dumps({"version": 1, "accepted": [entry]}))
    moved = dataclasses.replace(data, results_dir=results)
    state = judged_state(results, findings)
    text = texts(inbox_page.inbox(moved, state, None, "regression", [], "dark")[0])
    open_before = texts(inbox_page.inbox(data, judged_state(fx.results_dir, findings), None, "regression", [])[0])
    n_open = int(open_before.split("s): ")[1].split(" open")[0])
    assert f"{n_open - 1} open regression(s), 1 accepted in accepted.json" in text
    assert "accepted by alice: exact GELU, needed for parity" in text
    assert "accepted by alice" not in texts(inbox_page.inbox(moved, state, None, "regression", ["open"])[0])
    (results / "accepted.json").write_text('{"accepted": [{"benchmark": "b"}]}')
    broken = texts(inbox_page.inbox(moved, judged_state(results, findings), None, "regression", [])[0])
    assert "nothing is shown as accepted" in broken and "'commit' must be" in broken
    assert f"{n_open} open regression(s), 0 accepted" in broken


def _walk(component):
    if isinstance(component, (list, tuple)):
        for c in component:
            yield from _walk(c)
    elif component is not None and not isinstance(component, str):
        yield component
        yield from _walk(getattr(component, "children", None))


def test_url_state_round_trip_and_navigation():
    search = encode_query({"machine": "h200", "impl": ["fused", "eager"], "case": "linear_act M=1 K=8 N=8 fp32 relu",
                           "empty": [], "none": None})
    q = Query(search)
    assert q.many("impl") == ["fused", "eager"] and q.one("case") == "linear_act M=1 K=8 N=8 fp32 relu"
    assert q.one("impl", allowed=["x"]) is None and "empty" not in search
    ids = [{"type": "q", "page": "shell", "key": "theme"}, {"type": "q", "page": "trends", "key": "metric"}]
    assert query_from_controls(["dark", "tflops"], ids, "") == "?theme=dark&metric=tflops"
    hrefs, classes = nav_state(discover_pages(), "/trends", "?machine=h200&metric=tflops&theme=dark")
    assert hrefs[1] == "/trends?machine=h200&theme=dark" and classes[1] == "active"
    hrefs, _ = nav_state(discover_pages(), "/", "?mode=backward&metric=tflops")  # the mode follows to every page
    assert hrefs[1] == "/trends?mode=backward" and hrefs[2] == "/compare?mode=backward"


def test_every_page_renders_from_a_link_and_bad_links_degrade(fx):
    store = ResultsStore(fx.results_dir, detect_in_background=False)
    pages = every_page()
    for page in pages:
        assert "Could not build" not in texts(render_page(store, pages, page.path, "?machine=nope&commit=zzz&op=bogus"))
    restored = render_page(store, pages, "/trends", f"?metric=gbps&case={fx.regressed[0]}&logy=log".replace(" ", "+"))
    values = {c.id["key"]: c.value for c in _walk(restored) if isinstance(getattr(c, "id", None), dict)}
    assert values["metric"] == "gbps" and values["case"] == fx.regressed[0] and values["logy"] == ["log"]
    assert "not found" in texts(render_page(store, pages, "/nowhere", ""))


def test_missing_or_empty_results_dir_shows_how_to_produce_results(tmp_path):
    for path in (tmp_path / "missing", tmp_path):
        text = texts(render_page(ResultsStore(path), discover_pages(), "/trends", ""))
        assert "No benchmark results" in text and "asv run" in text and "--results" in text


def test_app_never_writes_into_results(fx):
    before = results_signature(fx.results_dir)
    app = create_app(fx.results_dir, detect_in_background=False)
    store = app.server.config["FUSED_MLP_STORE"]
    assert store.findings().status == "done"
    client = app.server.test_client()
    assert client.get("/").status_code == 200 and client.get("/_dash-layout").status_code == 200
    assert results_signature(fx.results_dir) == before


# --------------------------------------------------------------------------- the real suite's output


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    return run_tiny_suite(tmp_path_factory.getbasetemp())[2]


@pytest.mark.slow
def test_real_cpu_run_of_the_suite_feeds_every_view(real_run):
    data = build_data(real_run)
    assert not data.empty and data.report.skipped == []
    (machine, env), run = next(iter(data.runs.items()))
    commit = run.commits["commit_hash"].iloc[-1]
    ceil = device_ceilings.ceilings_of(data.ceilings, machine, env, commit)
    assert ceil is not None and set(ceil.matmul_tflops) == {"fp32"}  # the CPU run measures fp32 only
    headline, panels, _, device = overview.update(data, machine, env, commit, None, None, None, None, None, None)
    assert "No case has a fused" in texts(headline) and panels == []  # Triton skips without CUDA
    case = grid("tiny")["linear_act"][0].key  # (the planted broken benchmark's case fails everywhere)
    trend = go.Figure(trends.update(data, machine, env, case, "roofline", None, "commit", [], None))
    eager = next(t for t in trend.data if t.name == "eager")
    # The page's own consistency, not the machine's: the fraction shown is the cost model's floor
    # against this run's stored ceilings over the stored latency. (Whether a loaded CPU stays under
    # a roof it measured minutes earlier is not the dashboard's to promise.)
    stored = load_results(real_run).frame
    latency = stored[(stored["benchmark"] == "bench_ops.LinearAct.track_latency") & (stored["status"] == "ok")
                     & (stored["params_key"].str.contains(repr(case), regex=False))
                     & (stored["params_key"].str.contains("impl='eager'", regex=False))]
    assert len(latency) == 1 and len(eager.y) == 1
    expected = cost.floor_seconds(Case.from_key(case), ceil) / float(latency["value"].iloc[0])
    assert np.isfinite(eager.y[0]) and eager.y[0] > 0 and eager.y[0] == pytest.approx(expected, rel=1e-9)
    roof = go.Figure(roofline.update(data, machine, env, commit))
    assert any((t.name or "").startswith("roof fp32") for t in roof.data)
    rows, _, _ = compare.update(data, machine, env, commit, commit, "latency", "1.1", [], None, None, None, None, None)
    statuses = {(r["impl"], r["mode"]): r["change"] for r in rows if r["case"] == case}  # one row per mode
    assert statuses[("eager", "forward")] == "unchanged" and statuses[("fused", "forward")] == "skipped → skipped"
    print("real run, per implementation and mode:", sorted(statuses.items()))


def test_the_dashboards_table_holds_what_load_results_reads(fx, data, main_run):
    """Every row a view can get (at_commit, of_case, rows_frame) has the value, status, CIs and
    samples that load_results reads from the same files."""
    from asv_results.loading import load_results

    lists = load_results(fx.results_dir).frame
    keys = ["machine", "env_name", "commit_hash", "benchmark", "params_key"]
    expected = {tuple(map(str, row[:5])): row[5:] for row in
                lists[[*keys, "value", "status", "ci_99_a", "ci_99_b", "samples"]].itertuples(index=False)}
    commit = fx.regression_commit
    for rows in (main_run.at_commit(commit), main_run.of_case(fx.regressed[0]), data.rows_frame()):
        assert len(rows)
        for *k, value, status, ci_a, ci_b, samples in rows[[*keys, "value", "status", "ci_99_a", "ci_99_b",
                                                            "samples"]].itertuples(index=False):
            e_value, e_status, e_a, e_b, e_samples = expected[tuple(map(str, k))]
            assert (value == e_value or (np.isnan(value) and np.isnan(e_value))) and str(status) == str(e_status)
            assert (ci_a == e_a or (np.isnan(ci_a) and np.isnan(e_a))) and samples == e_samples
    at = main_run.at_commit(commit)
    assert at["samples"].map(lambda s: isinstance(s, list)).any() and at["samples"].isna().any()  # skipped: None
    assert list(main_run.at_commit("no-such-commit").columns) == list(at.columns)
    case_rows = lists[lists["benchmark"].astype(str).str.startswith("bench_ops.")]
    assert len(data.rows_frame(samples=False)) == len(case_rows)  # every Case row, nothing else


# --------------------------------------------------------------------------- units and markers


def test_values_are_shown_in_one_scaled_unit():
    from asv_results.units import display_unit, format_value

    assert display_unit("seconds", [135e-6, 140e-6, 2e-3]).symbol == "µs"  # the median decides
    assert display_unit("seconds", [135e-6])(135e-6) == pytest.approx(135)
    assert display_unit("bytes", [3.2e9]).symbol == "GB" and display_unit("TFLOP/s", [0.5]).symbol == "TFLOP/s"
    assert display_unit("unit", [5.0]).symbol == "" and display_unit("seconds", []).symbol == "s"
    assert format_value(196e-6, "seconds") == "196 µs" and format_value(2.15e9, "bytes") == "2.15 GB"
    assert format_value(999.7e-6, "seconds") == "1 ms" and format_value(float("nan"), "seconds") == "–"
    assert format_value(312.4, "TFLOP/s") == "312 TFLOP/s" and format_value(7, None) == "7"


def test_trend_axis_names_its_scaled_unit_and_markers_point_the_way_values_moved(data, fx):
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "latency", ["fused"], "commit", [], None))
    fused = next(t for t in fig.data if t.name == "fused")
    raw = data.run(MAIN_MACHINE, MAIN_ENV).of_case(fx.regressed[0])
    raw = raw[(raw["metric"] == "latency") & (raw["impl"] == "fused")]["value"]
    assert 1e-6 <= raw.median() < 1e-3  # the fixture's fused latencies are microseconds
    assert fig.layout.yaxis.title.text == "Latency (µs)" and not fig.layout.yaxis.ticksuffix
    np.testing.assert_allclose(sorted(fused.y), sorted(raw * 1e6))
    up = next(t for t in fig.data if t.name == "regressions")
    assert up.marker.symbol == "triangle-up"  # latency rose
    tflops = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, fx.regressed[0], "tflops", ["fused"], "commit", [], None))
    down = next(t for t in tflops.data if t.name == "regressions")
    line = next(t for t in tflops.data if t.name == "fused")
    at = list(line.x).index(down.x[0])
    assert down.marker.symbol == "triangle-down" and line.y[at] < np.median(line.y[:at])  # TFLOP/s fell


def test_failed_and_skipped_implementations_show_where_their_line_would_be(data, fx):
    case, impl = fx.failing
    rows = data.run(MAIN_MACHINE, MAIN_ENV).of_case(case)
    latency = rows[rows["metric"] == "latency"]
    n_failed = int(((latency["impl"] == impl) & (latency["status"] == "failed")).sum())
    n_skipped = int(((latency["impl"] == "cublaslt") & (latency["status"] == "skipped")).sum())
    assert n_failed and n_skipped  # the fixture: compile fails everywhere, cuBLASLt has no silu epilogue
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", None, "commit", [], None))
    names = [t.name for t in fig.data]
    assert impl not in names  # no value to draw a line through...
    failed = fig.data[names.index(f"{impl}: failed at {n_failed} commits")]  # ...but a legend entry and markers
    assert len(failed.x) == n_failed and failed.marker.symbol == "x" and all("asv stored null" in t for t in failed.text)
    skipped = fig.data[names.index(f"cublaslt: skipped at {n_skipped} commits")]
    assert skipped.marker.symbol == "circle-open" and all("NaN" in t for t in skipped.text)


def test_compare_cells_are_numbers_in_the_unit_of_their_header(data, main_run, fx):
    before = main_run.commits["commit_hash"].iloc[15]
    rows, columns, _ = compare.update(data, MAIN_MACHINE, MAIN_ENV, before, fx.regression_commit, "latency", "1.1",
                                      [], None, None, None, None, None)
    table, _ = compare.compare_table(data, MAIN_MACHINE, MAIN_ENV, before, fx.regression_commit, "latency", "1.1",
                                     None, None, None, None, None)
    header = {c["id"]: c["name"] for c in columns}
    assert header["old"] == "old (µs)" and header["new"] == "new (µs)"
    raw = table.set_index(["case", "impl"])["new"]
    for row in rows[:20]:
        assert row["new"] == pytest.approx(raw[(row["case"], row["impl"])] * 1e6)


def test_machine_and_environment_labels_count_what_the_plot_shows(data):
    from dashboard.ui.run_selector import env_options, machine_options

    main = data.runs[(MAIN_MACHINE, MAIN_ENV)]
    other = data.runs[(MAIN_MACHINE, "existing-py_usr_bin_python3")]
    distinct = len(set(main.commits["commit_hash"]) | set(other.commits["commit_hash"]))
    label = next(o["label"] for o in machine_options(data, data.machine_names()) if o["value"] == MAIN_MACHINE)
    assert label == f"{MAIN_MACHINE} ({distinct} commits, 2 envs)"
    envs = {o["value"]: o["label"] for o in env_options(data, MAIN_MACHINE)}
    assert envs[MAIN_ENV] == f"{MAIN_ENV} ({len(main.commits)} commits)"


def _set_result(path, benchmark, values):
    """Rewrite one benchmark's stored results in an asv result file (asv writes Infinity too)."""
    import json

    doc = json.loads(path.read_text())
    column = doc["result_columns"].index("result")
    doc["results"][benchmark][column] = values
    path.write_text(json.dumps(doc))


def test_one_bad_ceiling_value_is_left_out_with_its_reason(fx, tmp_path):
    import shutil

    from tests.suite_fixtures import COPY_BENCHMARK, MATMUL_BENCHMARK

    results = shutil.copytree(fx.results_dir, tmp_path / "results")
    by_commit = {json_commit(p): p for p in (results / MAIN_MACHINE).glob(f"*-{MAIN_ENV}.json")}
    data = build_data(results)
    run = data.run(MAIN_MACHINE, MAIN_ENV)
    newest_commit, older_commit = run.commits["commit_hash"].iloc[-1], run.commits["commit_hash"].iloc[-2]
    newest, older = by_commit[newest_commit], by_commit[older_commit]
    _set_result(newest, COPY_BENCHMARK, [float("inf")])  # a copy "measured" as taking forever
    _set_result(older, MATMUL_BENCHMARK, [0.0, 2e-3, 2e-2, 1e-3])  # bf16 0 s; fp16, fp32 and fp8 fine (sorted dtypes)
    data = build_data(results)
    assert device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, newest_commit) is None
    kept = device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, older_commit)
    assert kept is not None and set(kept.matmul_tflops) == {"fp16", "fp32", "fp8"}
    third = device_ceilings.ceilings_of(data.ceilings, MAIN_MACHINE, MAIN_ENV, run.commits["commit_hash"].iloc[-3])
    assert set(third.matmul_tflops) == set(SYNTH_CEILINGS.matmul_tflops)  # other commits untouched
    reasons = [p.text() for p in data.ceiling_problems]
    assert len(reasons) == 2 and any("copy" in r and "inf" in r for r in reasons)
    assert any("matmul ceiling bf16" in r and "0.0" in r for r in reasons)
    assert any("left out" in p for p in data.report.problems)
    _, panels, _, device = overview.update(data, MAIN_MACHINE, MAIN_ENV, newest_commit, None, None, None, None, None,
                                           None)
    assert panels and "no usable copy ceiling" in texts(device) and "inf" in texts(device)
    roof = go.Figure(roofline.update(data, MAIN_MACHINE, MAIN_ENV, newest_commit))
    assert "no roof" in roof.layout.title.text and any(t.name == "fused" for t in roof.data)
    roof = go.Figure(roofline.update(data, MAIN_MACHINE, MAIN_ENV, older_commit))
    assert {t.name.split(":")[0] for t in roof.data if (t.name or "").startswith("roof")} == {"roof fp16", "roof fp32", "roof fp8"}


def json_commit(path):
    import json

    return json.loads(path.read_text())["commit_hash"]


def test_a_bad_link_shows_a_notice_and_the_nearest_valid_view(fx, data):
    store = ResultsStore(fx.results_dir, detect_in_background=False)
    pages = discover_pages()
    page = render_page(store, pages, "/trends", "?machine=nosuch&case=bogus&dtype=fp8,bf16&commit=zzz")
    notice = next(c for c in _walk(page) if getattr(c, "id", None) == "link-notice")
    values = {c.id["key"]: c.value for c in _walk(page) if isinstance(getattr(c, "id", None), dict)}
    nearest = data.run(None, None)
    assert values["machine"] == nearest.machine and values["dtype"] == ["bf16"] and values["commit"] is None
    text = texts(notice)
    for asked, shown in (("'nosuch'", f"showing {nearest.machine}"), ("'bogus'", f"showing {values['case']}"),
                         ("'fp8'", "left out"), ("'zzz'", "left out")):
        assert asked in text and shown in text, (asked, shown, text)
    assert values["case"] in trends.case_choices(nearest, {"dtype": ["bf16"]})
    clean = render_page(store, pages, "/trends", f"?machine={MAIN_MACHINE}")
    assert not any(getattr(c, "id", None) == "link-notice" for c in _walk(clean))
    compare_page = render_page(store, pages, "/compare", f"?a=zzz&b={fx.regression_commit}&metric=bogus")
    assert "'zzz'" in texts(compare_page) and "'bogus'" in texts(compare_page)


def test_compare_fetches_samples_only_for_the_rows_beyond_the_factor(main_run, fx):
    import pandas as pd

    a, b = main_run.commits["commit_hash"].iloc[15], fx.regression_commit
    eager = ab_compare.compare_rows(main_run.at_commit(a), main_run.at_commit(b), 1.1)
    asked = []

    def samples(rows):
        asked.append(len(rows))
        return main_run.table.samples(rows)

    lazy = ab_compare.compare_rows(main_run.at_commit(a, samples=False), main_run.at_commit(b, samples=False), 1.1,
                                samples=samples)
    pd.testing.assert_frame_equal(eager, lazy)
    beyond = int(((eager["ratio"] > 1.1) | (eager["ratio"] < 1 / 1.1)).sum())
    assert beyond >= 1 and asked == [beyond, beyond]  # old and new samples of those rows, nothing else


def test_why_a_suite_series_is_n_a_shows_on_trends_the_overview_and_compare(fx, data, main_run):
    """The reasons benchmarks.run keeps (results/reasons/) where a person meets the n/a."""
    from benchmarks import skip_reasons

    case, failing_impl = fx.failing  # compile fails; cuBLASLt has no silu epilogue (skipped)
    newest, before = main_run.commits["commit_hash"].iloc[-1], main_run.commits["commit_hash"].iloc[-2]
    mine = main_run.series[(main_run.series["case"] == case) & (main_run.series["metric"] == "latency")
                           & (main_run.series["mode"] == "forward")]
    entries = [skip_reasons.entry(r.benchmark, dict(zip(r.param_names, r.param_values)), status, why)
               for r in mine.itertuples() for impl, status, why in (
                   ("cublaslt", "skipped", "cublaslt has no silu epilogue (only ['gelu_tanh', 'relu'])"),
                   (failing_impl, "failed", "Traceback (most recent call last):\nInductorError: <lowering> boom"))
               if r.impl == impl]
    assert len(entries) == 2
    target = skip_reasons.merge(fx.results_dir, MAIN_MACHINE, newest, entries, set())
    try:
        fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", None, "commit", [], None))
        skipped = next(t for t in fig.data if (t.name or "").startswith("cublaslt: skipped"))
        assert skipped.text[-1] == "skipped: cublaslt has no silu epilogue (only ['gelu_tanh', 'relu'])"
        failed = next(t for t in fig.data if (t.name or "").startswith(f"{failing_impl}: failed"))
        assert failed.text[-1] == "failed: InductorError: &lt;lowering&gt; boom"  # escaped for the hover
        assert failed.text[0].startswith("failed: asv stored null")  # no reason recorded there
        _, _, changes, _ = overview.update(data, MAIN_MACHINE, MAIN_ENV, newest, None, None, None, None, None, None)
        line = " ".join(texts(next(c for c in _walk(changes) if getattr(c, "id", None) == "overview-why-na")).split())
        assert "1 × cublaslt has no silu epilogue" in line and "1 × InductorError: <lowering> boom" in line
        _, _, summary = compare.update(data, MAIN_MACHINE, MAIN_ENV, before, newest, "latency", "1.1", [], None,
                                       None, None, None, None)
        line = " ".join(texts(next(c for c in _walk(summary) if getattr(c, "id", None) == "compare-why-na")).split())
        assert f"Why n/a at {newest[:8]}:" in line and "1 × cublaslt has no silu epilogue" in line
        assert f"Why n/a at {before[:8]}:" in line and "no reason recorded" in line
    finally:
        target.unlink()


def test_a_findings_numbers_sit_in_right_aligned_columns_and_its_evidence_in_small_type(data, fx):
    """Before / after / change / p each in a cell of their own (right-aligned, tabular figures, so they
    line up from one finding to the next); the classification's evidence on a small line below."""
    import pathlib

    findings = [f for f in find_changes(data.rows_frame()) if f.commit_hash == fx.regression_commit
                and f.direction == "regression"]
    from tests.judged import judged_state

    children, _ = inbox_page.inbox(data, judged_state(fx.results_dir, findings), None, "regression", [])
    (item,) = [li for li in _walk(children[1:]) if type(li).__name__ == "Li" and fx.regressed[0] in texts(li)]
    (numbers,) = [c for c in item.children if getattr(c, "className", "") == "finding-numbers"]
    cells = [c for c in numbers.children if "num" in (getattr(c, "className", "") or "").split()]
    (f,) = [f for f in findings if fx.regressed[0] in f.params]
    from asv_results.units import format_value

    assert [texts(c) for c in cells[:3]] == [format_value(f.before, f.unit), format_value(f.after, f.unit),
                                             f"{f.relative_change:+.1%}"]
    assert texts(cells[3]).startswith("p")
    (evidence,) = [c for c in item.children if type(c).__name__ == "Small"]
    assert evidence.className == "evidence" and len(texts(evidence)) > 10
    css = (pathlib.Path(__file__).parent.parent / "dashboard" / "assets" / "style.css").read_text()
    rule = re.search(r"\.finding-numbers \.num \{([^}]*)\}", css).group(1)
    assert "text-align: right" in rule and "font-variant-numeric: tabular-nums" in rule
    small = re.search(r"small\.evidence \{([^}]*)\}", css).group(1)
    assert re.search(r"font-size: 0\.[0-9]+rem", small)
