"""Trends while the detector's worker runs: the figure is drawn at once without change marks and
turns a poll on; the poll says when the worker is done, and the figure is drawn again with them."""

import shutil
import time

import pytest

from dashboard.app import create_app
from dashboard.store.detection import FindingsState
from tests.callback_requests import TRENDS_FIGURE, call, qkey
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture

MARKS_READY = "trends-marks-ready.data"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    fixture = write_dashboard_fixture(tmp_path_factory.mktemp("poll") / "results")
    app = create_app(fixture.results_dir, detect_in_background=False)
    yield app, app.server.test_client(), fixture
    app.server.config["FUSED_MLP_STORE"].close()
    shutil.rmtree(fixture.results_dir)


def _figure(app, client, case):
    values = {f"{qkey('trends', k)}.value": v for k, v in dict(
        machine=MAIN_MACHINE, env=MAIN_ENV, case=case, metric="latency", impl=None, x="commit", logy=[],
        commit=None, mode="forward").items()}
    values[f"{qkey('shell', 'theme')}.value"] = "light"
    response = call(client, app, TRENDS_FIGURE, values)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    out = response.get_json()["response"]
    return out["trends-figure"]["figure"], out["trends-poll"]["disabled"]


def _marks(figure) -> list:
    return [t["name"] for t in figure["data"] if t.get("name") in ("regressions", "improvements")]


def test_the_figure_waits_for_the_workers_marks_without_detecting_and_is_redrawn_when_they_come(served, monkeypatch):
    from dashboard.store.detection import detect
    from dashboard.store.load_data import shown_series

    app, client, fixture = served
    store = app.server.config["FUSED_MLP_STORE"]
    data = store.get()
    state = FindingsState("running", time.time())
    monkeypatch.setattr(store, "findings_in_background", lambda: state)
    monkeypatch.setattr("regressions.find_changes", lambda *a, **k: pytest.fail("the page ran the detector"))
    figure, disabled = _figure(app, client, fixture.regressed[0])
    assert disabled is False and _marks(figure) == [] and "pending" in figure["layout"]["title"]["text"]
    still = call(client, app, MARKS_READY, {"trends-poll.n_intervals": 1})
    assert still.status_code == 200 and still.get_json()["response"] == {}  # no update: the worker still runs

    monkeypatch.undo()
    done = detect(data.table, shown_series(data.table), data.benchmarks)
    state.status, state.findings = "done", done
    monkeypatch.setattr(store, "findings_in_background", lambda: state)
    ready = call(client, app, MARKS_READY, {"trends-poll.n_intervals": 2})
    assert ready.status_code == 200 and ready.get_json()["response"]["trends-marks-ready"]["data"] == "done"
    figure, disabled = _figure(app, client, fixture.regressed[0])
    assert disabled is True and _marks(figure) and "pending" not in figure["layout"]["title"]["text"]


def test_without_a_background_worker_the_poll_stays_off(served):
    app, client, fixture = served
    figure, disabled = _figure(app, client, fixture.regressed[0])
    assert disabled is True and _marks(figure)  # detected on the page, as tests and tools run it
