"""The dashboard on a history with the fused peers (compile_max_autotune, liger_*) and the
training modes (forward, backward, full): the mode filter, the two headline speedups, and a
comparison set that changes (a baseline that starts failing, a peer that appears)."""

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.data import case_fields, comparison_set, metrics, speedup_tables
from asv_results.loading import load_results
from dashboard.store.load_data import build_data
from dashboard.pages import compare, overview, trends
from dashboard.data.urlstate import Query
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, autotune_kernels, write_peer_fixture
from tests.test_dashboard import _walk, texts


@pytest.fixture(scope="module")
def px(tmp_path_factory):
    return write_peer_fixture(tmp_path_factory.mktemp("peers") / "results")


@pytest.fixture(scope="module")
def data(px):
    return build_data(px.results_dir)


@pytest.fixture(scope="module")
def run(data):
    return data.runs[(MAIN_MACHINE, MAIN_ENV)]


def _row(headline, row_id):
    return next(c for c in _walk(headline) if getattr(c, "id", None) == row_id)


def _panel(panels, op: str) -> dict:
    """The (first) heatmap panel figure of an op."""
    return next(p.figure for p in _walk(panels) if isinstance(getattr(p, "id", None), dict) and p.id["op"] == op)


def _overview(data, commit, **kw):
    return overview.update(data, MAIN_MACHINE, MAIN_ENV, commit, None, None, None, None, None, None, **kw)


def _stored_latency(px, commit):
    """Latency rows as asv stored them (the loader that does not go through the dashboard's table),
    with case, impl and mode read from the params."""
    frame = load_results(px.results_dir).frame
    frame = frame[(frame["commit_hash"] == commit) & frame["benchmark"].str.endswith(".track_latency")
                  & (frame["status"] == "ok")]
    frame = frame[frame["benchmark"].str.startswith(("bench_ops.", "bench_training."))]
    return frame.assign(case=frame["case"].astype(str), impl=frame["impl"].astype(str),
                        mode=frame["mode"].astype(object).where(frame["mode"].notna(), "forward"))


def test_the_mode_comes_from_the_benchmark(run):
    modes = run.catalog.groupby("mode")["case"].nunique().to_dict()
    assert modes == {"forward": 4, "backward": 4, "full": 4}
    series = run.series
    forward = series[series["benchmark"].str.startswith("bench_ops.")]
    assert set(forward["mode"]) == {"forward"}  # bench_ops has no mode parameter: its numbers are forward
    assert set(series[series["benchmark"].str.startswith("bench_training.")]["mode"]) == {"backward", "full"}


def test_two_speedups_per_case_and_mode_over_the_unfused_and_over_the_fused_peers(px, run):
    newest = px.history.commits[-1]
    latency = run.at_commit(newest, samples=False)
    table = speedup_tables.speedups(latency[latency["metric"] == "latency"]).set_index(["case", "mode"])
    stored = _stored_latency(px, newest)
    assert len(table) == 12  # 4 cases x 3 modes
    for (case, mode), r in table.iterrows():
        mine = stored[(stored["case"] == case) & (stored["mode"] == mode)].set_index("impl")["value"]
        peers = mine[[i for i in mine.index if i in metrics.FUSED_PEERS]]
        unfused = mine.drop(["fused", *peers.index])
        assert r["speedup"] == pytest.approx(unfused.min() / mine["fused"])
        assert r["baseline_impl"] == unfused.idxmin()
        assert r["peer_speedup"] == pytest.approx(peers.min() / mine["fused"])
        assert r["peer_impl"] == peers.idxmin()


def test_the_headline_shows_both_speedups_per_op_dtype_mode_with_the_peer_named(px, data, run):
    newest = px.history.commits[-1]
    headline, panels, _, _ = _overview(data, newest)
    latency = run.at_commit(newest, samples=False)
    table = speedup_tables.speedups(latency[latency["metric"] == "latency"])
    for mode, row_id in (("forward", "headline-gated_mlp-bf16"), ("backward", "headline-gated_mlp-bf16-backward"),
                         ("full", "headline-gated_mlp-bf16-full")):
        mine = table[(table["op"] == "gated_mlp") & (table["mode"] == mode)]
        cells = [texts(td) for td in _row(headline, row_id).children]
        assert cells[0] == f"gated_mlp · bf16 · {mode}"
        assert cells[2] == f"{speedup_tables.geomean(mine['speedup']):.2f}×"
        assert cells[3].startswith(f"{speedup_tables.geomean(mine['peer_speedup']):.2f}×")
        assert set(mine["peer_impl"]) == {"compile_max_autotune", "liger_mlp"}  # GeGLU: max-autotune; SwiGLU: Liger
        assert "vs compile_max_autotune, liger_mlp" in cells[3] or "vs liger_mlp, compile_max_autotune" in cells[3]
    panel_ids = [p.id for p in _walk(panels) if getattr(p, "figure", None)]
    assert {(i["op"], i["mode"]) for i in panel_ids} == {(o, m) for o in ("gated_mlp", "linear_act")
                                                         for m in ("forward", "backward", "full")}
    only, _, _, _ = _overview(data, newest, mode=["backward"])
    ids = [c.id for c in _walk(only) if str(getattr(c, "id", "")).startswith("headline-")]
    assert ids == ["headline-gated_mlp-bf16-backward", "headline-linear_act-bf16-backward", "headline-all"]


def test_max_autotunes_kernels_per_call_are_in_the_hover(px, data):
    _, panels, _, _ = _overview(data, px.history.commits[-1], mode=["forward"])
    figure = _panel(panels, "linear_act")
    hovers = [h for row in figure["data"][0]["customdata"] for h in row if "linear_act" in h]
    want = {c.key: autotune_kernels(c) for c in px.cases if c.op == "linear_act"}
    assert set(want.values()) == {1, 2}  # one case fused its epilogue, one did not
    for key, k in want.items():
        hover = next(h for h in hovers if key in h)
        assert f"compile_max_autotune: {k} kernel" in hover
        assert ("epilogue fused" in hover) == (k == 1)


def test_a_baseline_that_starts_failing_is_said_in_the_headline_the_cell_and_the_hover(px, data, run):
    """The issue's defect: compile fails, the speedup jumps, and the page said "unfused changes: none"."""
    commits = px.history.commits
    case, impl, mode = px.dropped
    at = commits.index(px.dropped_at)
    before, after = (_overview(data, commits[i], mode=["forward"]) for i in (at - 1, at))
    jump = [speedup_tables.speedups(l[l["metric"] == "latency"]).set_index(["case", "mode"]).loc[(case, mode)]
            for l in (run.at_commit(commits[i], samples=False) for i in (at - 1, at))]
    # the best unfused is now eager: fused looks faster without changing
    assert [j["baseline_impl"] for j in jump] == ["compile", "eager"] and jump[1]["speedup"] > jump[0]["speedup"]
    row_before, row_after = (_row(h[0], "headline-gated_mlp-bf16") for h in (before, after))
    assert texts(row_before.children[-1]) == "unchanged"
    said = texts(row_after.children[-1])
    assert f"{impl} failed since {px.dropped_at[:8]}" in said and "1 case" in said
    assert "stopped running" in texts(row_after.children[8])  # unfused changes: never "none" here
    assert f"{impl} failed since {px.dropped_at[:8]}" in texts(_row(after[0], "headline-all").children[-1])
    heat = _panel(after[1], "gated_mlp")["data"][0]
    label = case_fields._case_row(case)["shape"]
    i, j = heat["y"].index(label), heat["x"].index(case_fields._case_row(case)["activation"])
    assert heat["text"][i][j].startswith("Δ ")
    assert f"comparison set changed: {impl} failed since {px.dropped_at[:8]}" in heat["customdata"][i][j]
    later, _, _, _ = _overview(data, commits[-1], mode=["forward"])  # still said while it lasts
    assert f"{impl} failed since {px.dropped_at[:8]}" in texts(_row(later, "headline-gated_mlp-bf16").children[-1])
    other = [x for x in (texts(td) for td in _row(after[0], "headline-linear_act-bf16").children)]
    assert other[-1] == "unchanged"


def test_a_peer_that_appears_is_said_once_at_its_commit(px, data, run):
    commits = px.history.commits
    case, impl, mode = px.appeared
    at = commits.index(px.appeared_at)
    found = [c.text() for c in comparison_set.changes(run, commits[at], None)]
    assert found == [f"{impl} joined at {px.appeared_at[:8]}"]
    assert comparison_set.changes(run, commits[at - 1], None) == []
    assert [c.kind for c in comparison_set.changes(run, commits[at + 1], None)] == []
    # against a chosen older baseline, it joined since then
    older = comparison_set.changes(run, commits[at + 2], commits[at - 2])
    assert [(c.impl, c.kind, c.since) for c in older] == [(impl, comparison_set.JOINED, px.appeared_at)]
    headline, _, _, _ = _overview(data, commits[at], mode=["forward"])
    assert f"Δ {impl} joined at {px.appeared_at[:8]}" in texts(_row(headline, "headline-gated_mlp-bf16").children[-1])


def test_trends_shows_one_mode_at_a_time(px, data, run):
    case = px.cases[3].key
    backward = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", ["fused"], "commit", [], None,
                                       mode="backward"))
    forward = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", ["fused"], "commit", [], None))
    line = {f: next(t for t in fig.data if t.name == "fused") for f, fig in (("b", backward), ("f", forward))}
    stored = _stored_latency(px, px.history.commits[0])
    fused = stored[(stored["case"] == case) & (stored["impl"] == "fused")].set_index("mode")["value"]
    for key, mode in (("b", "backward"), ("f", "forward")):  # the figure shows seconds in a scaled unit (ms, µs)
        scale = line[key].y[0] / fused[mode]
        assert min(abs(scale / 1000.0 ** k - 1) for k in range(4)) < 1e-9
    assert "backward" in backward.layout.title.text
    derived = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "tflops", None, "commit", [], None,
                                      mode="full"))
    assert "forward mode only" in derived.layout.annotations[0].text  # not a wrong rate
    modes, chosen = trends.mode_choice(run, case, ["full", "backward"])  # a list from the Overview's URL
    assert modes == ["forward", "backward", "full"] and chosen == "full"
    assert trends.mode_choice(run, case, None)[1] == "forward"


def test_compare_has_the_mode_as_a_column_and_a_filter(px, data):
    a, b = px.history.commits[-2], px.history.commits[-1]
    rows, columns, _ = compare.update(data, MAIN_MACHINE, MAIN_ENV, a, b, "latency", "1.1", [], None, None, None,
                                      None, None)
    assert "mode" in [c["id"] for c in columns] and {r["mode"] for r in rows} == {"forward", "backward", "full"}
    keys = [(r["case"], r["impl"], r["mode"]) for r in rows]
    assert len(keys) == len(set(keys))  # one row per case x impl x mode: modes never merged
    only, _, _ = compare.update(data, MAIN_MACHINE, MAIN_ENV, a, b, "latency", "1.1", [], None, None, None, None,
                                None, ["full"])
    assert {r["mode"] for r in only} == {"full"} and len(only) == len(rows) // 3


def test_the_overviews_links_carry_the_mode(px, data):
    commits = px.history.commits
    at = commits.index(px.dropped_at)
    headline, _, _, _ = _overview(data, commits[at], mode=["forward"])
    href = next(c.href for c in _walk(_row(headline, "headline-gated_mlp-bf16").children[8]) if getattr(c, "href", None))
    q = Query(href.split("?", 1)[1])
    assert q.many("mode") == ["forward"] and q.many("op") == ["gated_mlp"] and q.one("b") == commits[at]
    rows, _, _ = compare.update(data, MAIN_MACHINE, MAIN_ENV, q.one("a"), q.one("b"), "latency", "1.1", q.many("sig"),
                                q.many("op"), None, None, None, q.many("impl"), q.many("mode"))
    assert any(r["change"] == "ok → failed" and r["impl"] == "compile" for r in rows)  # what "stopped running" counts
    assert np.isfinite([r["ratio"] for r in rows if r["change"] == "unchanged"]).all()


def test_failures_are_findings_on_the_regressions_page(px, data):
    """ok -> failed and failed -> ok reach the inbox (the gate always reported them), grouped by
    their commit, with a trend link to the series in its mode."""
    from dashboard.store.detection import detect_in_worker
    from dashboard.store.detection import FindingsState
    from dashboard.pages import regressions as inbox_page

    found = detect_in_worker(str(px.results_dir), None)[0]
    status = {(f.commit_hash, f.params, f.direction) for f in found if f.kind == "status"}
    case, impl, mode = px.dropped
    dropped = next(p for c, p, d in status if c == px.dropped_at and d == "regression")
    assert f"impl='{impl}'" in dropped and case in dropped
    fcase, fimpl, fmode = px.flaky
    assert {(c, d) for c, p, d in status if fcase in p and f"impl='{fimpl}'" in p and f"mode='{fmode}'" in p} == {
        (px.flaky_failed_at, "regression"), (px.flaky_fixed_at, "improvement")}
    state = FindingsState("done", 0.0, found, 1.0)
    children, _ = inbox_page.inbox(data, state, None, "regression", [])
    group = next(g for g in _walk(children) if getattr(g, "className", "") == "card inbox-group"
                 and px.dropped_at[:10] in texts(g.children[0]))
    assert "started failing" in texts(group) and "1 started failing" in texts(group.children[0])
    item = next(li for li in _walk(group) if getattr(li, "children", None) and "started failing" in texts(li)
                and type(li).__name__ == "Li")
    assert "failing" in texts(item.children[0]) and case in texts(item) and f"[{impl}]" in texts(item)
    href = next(c.href for c in _walk(item) if getattr(c, "href", None))
    q = Query(href.split("?", 1)[1])
    assert (q.one("case"), q.one("mode"), q.one("commit")) == (case, mode, px.dropped_at)
    every, _ = inbox_page.inbox(data, state, None, "all", [])
    fixed = [li for li in _walk(every) if type(li).__name__ == "Li" and "stopped failing" in texts(li)]
    assert any(fcase in texts(li) and "fixed" in texts(li.children[0]) for li in fixed)
    assert not any("stopped failing" in texts(li) for li in _walk(children) if type(li).__name__ == "Li")
    still, _ = inbox_page.inbox(data, state, None, "regression", ["present"])  # still failing now: compile only
    assert [texts(li.children[2]) for li in _walk(still) if type(li).__name__ == "Li"
            and "started failing" in texts(li)] == [case]


def test_speedup_over_commits_on_trends_over_the_unfused_and_the_peers(px, data, run):
    case, impl, mode = px.dropped
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "speedup", None, "commit", [], None, mode=mode))
    lines = {t.name: t for t in fig.data if t.name in (speedup_tables.OVER_UNFUSED, speedup_tables.OVER_PEER)}
    assert set(lines) == {speedup_tables.OVER_UNFUSED, speedup_tables.OVER_PEER}
    unfused = lines[speedup_tables.OVER_UNFUSED]
    assert len(unfused.y) == len(px.history.commits)
    for i, commit in enumerate(px.history.commits):  # each point is that commit's Overview speedup
        rows = run.at_commit(commit, samples=False)
        table = speedup_tables.speedups(rows[rows["metric"] == "latency"]).set_index(["case", "mode"])
        assert unfused.y[i] == pytest.approx(table.loc[(case, mode), "speedup"])
        assert lines[speedup_tables.OVER_PEER].y[i] == pytest.approx(table.loc[(case, mode), "peer_speedup"])
    assert any(t.name == f"{speedup_tables.OVER_UNFUSED} 99% CI" for t in fig.data)  # the band
    only_eager = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "speedup", ["eager"], "commit", [], None,
                                         mode=mode))
    names = {t.name for t in only_eager.data}
    assert speedup_tables.OVER_PEER not in names and speedup_tables.OVER_UNFUSED in names


def test_a_finding_offers_the_accepted_json_entry_that_accepts_it(px, data, tmp_path):
    """The entry the page shows, with who and why filled in, is one the gate's reader takes and
    that accepts exactly that finding; the app writes nothing."""
    import dataclasses
    import json

    from dashboard.store.detection import detect_in_worker
    from dashboard.pages import regressions as inbox_page
    from regressions.acceptance import find_acceptance, load_accepted

    from tests.judged import judged_state
    from tests.suite_fixtures import copy_results

    found = detect_in_worker(str(px.results_dir), None)[0]
    failing = next(f for f in found if f.kind == "status" and f.commit_hash == px.dropped_at)
    children, _ = inbox_page.inbox(data, judged_state(px.results_dir, found), None, "regression", [])
    buttons = [c for c in _walk(children) if isinstance(getattr(c, "id", None), dict)
               and c.id.get("type") == inbox_page.ACCEPT]
    opened = [inbox_page.accept_box(found, b.id["index"]) for b in buttons]  # built when clicked
    offers = [c for c in _walk(opened) if getattr(c, "className", "") == "accept-entry"]
    shown = [json.loads(texts(c)) for c in offers]
    entry = next(e for e in shown if e["commit"] and px.dropped_at.startswith(e["commit"]))
    assert entry == {**inbox_page.acceptance_entry(failing)} and entry["params"] == failing.params
    clip = [c for c in _walk(opened) if type(c).__name__ == "Clipboard"]
    assert len(clip) == len(offers) and json.loads(clip[0].content) == shown[0]
    results = copy_results(px.results_dir, tmp_path / "results")
    (results / "accepted.json").write_text(json.dumps({"version": 1, "accepted": [
        {**entry, "who": "alice", "why": "compile breaks on this shape in torch 2.13; tracked upstream"}]}))
    accepted = load_accepted(results / "accepted.json")
    assert find_acceptance(accepted, failing.benchmark, failing.params, failing.machine, [failing.commit_hash])
    moved = dataclasses.replace(data, results_dir=results)
    after = texts(inbox_page.inbox(moved, judged_state(results, found), None, "regression", [])[0])
    assert "accepted by alice" in after
    assert not (px.results_dir / "accepted.json").exists()


def test_compare_says_when_a_is_newer_than_b(px, data):
    a, b = px.history.commits[-1], px.history.commits[-2]
    _, _, backwards = compare.update(data, MAIN_MACHINE, MAIN_ENV, a, b, "latency", "1.1", [], None, None, None,
                                     None, None)
    assert "is newer than B" in texts(backwards)
    _, _, forwards = compare.update(data, MAIN_MACHINE, MAIN_ENV, b, a, "latency", "1.1", [], None, None, None,
                                    None, None)
    assert "newer" not in texts(forwards)


def test_a_trend_line_leaves_a_gap_where_it_failed(px, data):
    case, impl, mode = px.flaky  # failed at one commit, ran again at the next
    fig = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", [impl], "commit", [], None,
                                  mode=mode))
    line = next(t for t in fig.data if t.name == impl)
    failed_at = px.history.commits.index(px.flaky_failed_at)
    assert list(line.x).count(None) == 1 and line.y[list(line.x).index(None)] is None
    measured = [x for x in line.x if x is not None]
    assert failed_at not in measured and len(measured) == len(px.history.commits) - 1
    assert line.x[list(line.x).index(None) - 1] == failed_at - 1 and line.x[list(line.x).index(None) + 1] == failed_at + 1
    other = go.Figure(trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", ["fused"], "commit", [], None,
                                    mode=mode))
    assert None not in list(next(t for t in other.data if t.name == "fused").x)  # never failed: no gap


def test_the_overviews_colour_scale_is_the_same_at_every_commit(px, data, run):
    def scale(commit):
        _, panels, _, _ = _overview(data, commit)
        figure = _panel(panels, "gated_mlp")["data"][0]
        return figure["zmin"], figure["zmax"]

    commits = px.history.commits
    spans = {scale(c) for c in (commits[0], commits[px.history.commits.index(px.dropped_at)], commits[-1])}
    assert len(spans) == 1 and next(iter(spans))[0] == -next(iter(spans))[1]  # symmetric in log around 1x
    per_commit = set()
    for c in (commits[0], commits[-1]):
        rows = run.at_commit(c, samples=False)
        per_commit.add(round(float(np.abs(np.log2(speedup_tables.speedups(rows[rows["metric"] == "latency"])["speedup"]
                                                  .astype(float))).max()), 6))
    assert len(per_commit) == 2  # the commits' own largest speedups differ: a per-commit scale would move


def test_the_inbox_searches_and_collapses_older_commits(px, data, monkeypatch):
    from dashboard.store.detection import detect_in_worker
    from dashboard.store.detection import FindingsState
    from dashboard.pages import regressions as inbox_page

    found = detect_in_worker(str(px.results_dir), None)[0]
    state = FindingsState("done", 0.0, found, 1.0)
    monkeypatch.setattr(inbox_page, "OPEN_GROUPS", 1)
    everything, _ = inbox_page.inbox(data, state, None, "all", [])
    groups = [g for g in _walk(everything) if getattr(g, "className", "") == "card inbox-group"]
    assert len(groups) >= 3 and [g.open for g in groups] == [True] + [False] * (len(groups) - 1)
    case, impl, mode = px.flaky
    searched, _ = inbox_page.inbox(data, state, None, "all", [], "light", f"{impl} {mode.upper()}")
    items = [texts(li) for li in _walk(searched) if type(li).__name__ == "Li"]
    assert len(items) == 2 and all(f"[{impl} · {mode}]" in t and case in t for t in items)  # failed, then fixed
    nothing, _ = inbox_page.inbox(data, state, None, "all", [], "light", "no-such-benchmark")
    assert "No regressions and improvements found" in texts(nothing)
