"""Page state lives on the load, not in module globals (the Trends pages' detector findings are
DashboardData.findings_in_view: one per store, gone with it), and the roofline callback binds
its facets by name."""

import gc
import json
import weakref

import pytest

from dashboard.app import create_app
from dashboard.data.dashboard_data import KeptValues
from dashboard.pages import _generic_trends, roofline, trends
from dashboard.store.load_data import build_data
from tests.callback_requests import call, qkey
from tests.generic_fixtures import ENV, MACHINE, write_generic_history
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("page-state") / "results")


def test_kept_values_keep_the_newest_and_make_each_once():
    made = []
    kept = KeptValues(kept=2)
    for key in ("a", "b", "a", "c"):  # "a" used again: "b" is then the oldest
        kept.get(key, lambda key=key: made.append(key) or key.upper())
    assert made == ["a", "b", "c"]
    assert "a" in kept and "c" in kept and "b" not in kept and len(kept) == 2


def test_trends_findings_are_kept_per_store_and_never_shared(suite_results, monkeypatch):
    import regressions

    scans = []
    real = regressions.find_changes
    monkeypatch.setattr(regressions, "find_changes", lambda rows, **kw: scans.append(len(rows)) or real(rows, **kw))
    first, second = build_data(suite_results.results_dir), build_data(suite_results.results_dir)
    case = suite_results.regressed[0]
    for data in (first, first, second):
        trends.update(data, MAIN_MACHINE, MAIN_ENV, case, "latency", ["fused"], "commit", [], None)
    assert len(scans) == 2  # the second call on the first store found its findings kept
    assert len(first.findings_in_view) == 1 and len(second.findings_in_view) == 1
    assert not hasattr(trends, "_CHANGES")


def test_generic_trends_findings_go_with_their_store(tmp_path):
    gx = write_generic_history(tmp_path / "results")
    data = build_data(gx.results_dir)
    run = weakref.ref(data.run(MACHINE, ENV))
    _generic_trends.update(data, MACHINE, ENV, gx.stepped[0], {}, "commit", [], None)
    assert len(data.findings_in_view) == 1
    del data
    gc.collect()
    assert run() is None  # nothing module-level (an lru_cache keyed by the run) holds the load


def _points(figure: dict) -> int:
    """The markers a roofline figure shows (a served one's arrays arrive encoded: go.Figure reads them)."""
    import plotly.graph_objects as go

    return sum(len(t.x) for t in go.Figure(figure).data if t.mode in (None, "markers") and t.x is not None)


def test_the_roofline_callback_binds_each_facet_by_its_name(suite_results):
    app = create_app(suite_results.results_dir, detect_in_background=False)
    try:
        data = app.server.config["FUSED_MLP_STORE"].get()
        commit = data.run(MAIN_MACHINE, MAIN_ENV).commits["commit_hash"].iloc[-1]
        dtypes = sorted(roofline.roofline_points(data, MAIN_MACHINE, MAIN_ENV, commit, {})[0]["dtype"].astype(str).unique())
        assert len(dtypes) > 1
        values = {f"{qkey('roofline', k)}.value": v for k, v in
                  {"machine": MAIN_MACHINE, "env": MAIN_ENV, "commit": commit, "dtype": [dtypes[0]]}.items()}
        values[f"{qkey('shell', 'theme')}.value"] = "light"
        response = call(app.server.test_client(), app, "roofline-figure.figure", values)
        assert response.status_code == 200, response.get_data(as_text=True)[:500]
        served = json.loads(response.get_data(as_text=True))["response"]["roofline-figure"]["figure"]
        direct = roofline.update(data, MAIN_MACHINE, MAIN_ENV, commit, {"dtype": [dtypes[0]]})
        everything = roofline.update(data, MAIN_MACHINE, MAIN_ENV, commit)
        assert 0 < _points(served) == _points(direct) < _points(everything)
    finally:
        app.server.config["FUSED_MLP_STORE"].close()
