"""Issue 36 point 2: a callback with many inputs binds them by name (Dash's dict ``inputs=``/``state=``
and a function of keyword arguments), never by their position in a list, where inserting one
input shifts every value after it onto the wrong parameter without an error."""

import shutil

import pytest

from dashboard.app import create_app
from dashboard.data.metrics import METRICS
from tests.callback_requests import TRENDS_FIGURE, body, call, output_key, qkey
from tests.every_page import every_page
from tests.suite_fixtures import MAIN_ENV, MAIN_MACHINE, write_dashboard_fixture

MOST_POSITIONAL = 3  # a callback of up to three inputs and states may keep its positional signature
FAILED = "Could not build this view"  # callback_guards: what a guarded callback that raised shows


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    fixture = write_dashboard_fixture(tmp_path_factory.mktemp("named") / "results")
    app = create_app(fixture.results_dir, detect_in_background=False)
    client = app.server.test_client()
    for page in every_page():  # the server learns every page's controls, as when a visitor opens them
        assert call(client, app, output_key(app, "page.children"), {"url.pathname": page.path}).status_code == 200
    yield app, client, fixture
    app.server.config["FUSED_MLP_STORE"].close()
    shutil.rmtree(fixture.results_dir)


def _dependencies(callback) -> int:
    return len(callback["inputs"]) + len(callback.get("state", []))


def _many_input_callbacks(app) -> list[str]:
    return [key for key, cb in app.callback_map.items() if _dependencies(cb) > MOST_POSITIONAL]


def test_every_callback_with_many_inputs_takes_them_by_name(served):
    app, _, _ = served
    many = _many_input_callbacks(app)
    assert len(many) >= 10, many  # the pages' figures and tables are among them: the walk checks something
    positional = [key for key in many if not isinstance(app.callback_map[key]["inputs_state_indices"], dict)]
    assert positional == [], f"callbacks that bind more than {MOST_POSITIONAL} inputs by position: {positional}"


def test_each_named_callback_accepts_the_names_it_is_given(served):
    """A name in ``inputs=`` that the page's function does not take is a TypeError at the first call
    (the guarded callbacks show it as a message): call every one as an empty page would."""
    app, client, _ = served
    for key in _many_input_callbacks(app):
        response = call(client, app, key, {})
        assert response.status_code in (200, 204), (key, response.status_code, response.get_data(as_text=True)[:300])
        assert FAILED not in response.get_data(as_text=True), (key, response.get_data(as_text=True)[:300])


def _trends_figure(app, client, **values) -> dict:
    named = {f"{qkey('trends', k)}.value": v for k, v in values.items()}
    named[f"{qkey('shell', 'theme')}.value"] = "light"
    response = client.post("/_dash-update-component", json=body(app, TRENDS_FIGURE, named))
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    return response.get_json()["response"]["trends-figure"]["figure"]


def test_the_trends_figure_is_built_from_each_control_it_names(served):
    """Each value reaches its parameter: the title names the metric, case, mode and machine chosen."""
    app, client, fixture = served
    case = fixture.regressed[0]
    figure = _trends_figure(app, client, machine=MAIN_MACHINE, env=MAIN_ENV, case=case, metric="tflops",
                            impl=["fused"], x="commit", logy=[], commit=None, mode="forward")
    title = figure["layout"]["title"]["text"]
    assert title == f"{METRICS['tflops'].label} — {case} — forward — {MAIN_MACHINE}", title
