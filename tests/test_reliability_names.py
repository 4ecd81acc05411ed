"""Issue 26 item 9: a machine folder whose name is not UTF-8 (Linux hands it to Python with
surrogate escapes, e.g. 'h200-\\udcff') must not break any page: links carry its bytes
percent-encoded, and such a link selects that machine again."""

import json
import os
import shutil

import pytest

from dashboard.app import create_app
from dashboard.data.urlstate import Query, encode_query, link
from tests.callback_requests import call, output_key, qkey
from tests.every_page import every_page
from tests.suite_fixtures import write_dashboard_fixture

RAW_NAME = b"h200-\xff\xfe"  # not UTF-8
NAME = os.fsdecode(RAW_NAME)  # 'h200-\udcff\udcfe', as os.listdir gives it


def test_a_name_with_surrogate_escapes_round_trips_through_the_query_string():
    search = encode_query({"machine": NAME, "impl": [NAME, "fused"]})
    assert search.startswith("?machine=h200-%FF%FE&")
    query = Query(search)
    assert query.one("machine") == NAME
    assert query.many("impl") == [NAME, "fused"]
    assert Query(link("/trends", {"machine": NAME})[len("/trends"):]).one("machine", allowed=[NAME]) == NAME


def test_a_link_percent_encodes_the_names_bytes():
    assert link("/trends", {"machine": NAME}) == "/trends?machine=h200-%FF%FE"


@pytest.fixture(scope="module")
def app_over_a_non_utf8_machine(tmp_path_factory):
    fixture = write_dashboard_fixture(tmp_path_factory.mktemp("names") / "results")
    results = fixture.results_dir
    os.rename(os.fsencode(results / "h200-runner"), os.fsencode(results) + b"/" + RAW_NAME)
    app = create_app(results, detect_in_background=False)
    yield app
    app.server.config["FUSED_MLP_STORE"].close()
    shutil.rmtree(os.fsencode(results))


def test_the_machine_is_loaded_under_its_escaped_name(app_over_a_non_utf8_machine):
    store = app_over_a_non_utf8_machine.server.config["FUSED_MLP_STORE"]
    assert NAME in store.get().machine_names()


@pytest.mark.parametrize("search", ["", "?machine=h200-%FF%FE", "?machine=h200-%FF%FE&theme=dark"])
def test_every_page_renders_over_http(app_over_a_non_utf8_machine, search):
    app = app_over_a_non_utf8_machine
    client = app.server.test_client()
    route = output_key(app, "page.children")
    for page in every_page():
        response = call(client, app, route, {"url.pathname": page.path, "url.search": search})
        assert response.status_code == 200, (page.path, response.status_code)
        text = json.dumps(response.get_json())
        assert "Could not build this page" not in text, page.path
        nav = call(client, app, output_key(app, "nav-0.href"), {"url.pathname": page.path, "url.search": search})
        assert nav.status_code == 200, page.path


def test_the_regressions_inbox_lists_and_links_the_machine(app_over_a_non_utf8_machine):
    app = app_over_a_non_utf8_machine
    client = app.server.test_client()
    values = {"regressions-poll.n_intervals": 1, f"{qkey('regressions', 'machine')}.value": NAME,
              f"{qkey('regressions', 'direction')}.value": "all", f"{qkey('shell', 'theme')}.value": "light"}
    response = call(client, app, output_key(app, "regressions-inbox.children"), values)
    assert response.status_code == 200
    text = json.dumps(response.get_json(), ensure_ascii=False)
    assert "Could not build" not in text
    assert "machine=h200-%FF%FE" in text  # the fixture plants changes on every machine


def test_choosing_the_machine_writes_its_bytes_into_the_url(app_over_a_non_utf8_machine):
    app = app_over_a_non_utf8_machine
    client = app.server.test_client()
    ids = [{"type": "q", "page": "trends", "key": "machine"}]
    values = {'{"key":["ALL"],"page":["ALL"],"type":"q"}.value': [(ids[0], NAME)],
              '{"key":["ALL"],"page":["ALL"],"type":"q"}.id': [(ids[0], ids[0])], "url.search": ""}
    response = call(client, app, "url.search", values)
    assert response.status_code == 200
    assert response.get_json()["response"]["url"]["search"] == "?machine=h200-%FF%FE"


def test_a_results_folder_whose_path_is_not_utf8_is_cached(tmp_path):
    from dashboard.store.load_data import build_data

    built = write_dashboard_fixture(tmp_path / "results").results_dir
    raw = os.fsencode(tmp_path) + b"/results-\xff"
    os.rename(os.fsencode(built), raw)
    results = tmp_path / os.fsdecode(b"results-\xff")
    first = build_data(results, cache_dir=tmp_path / "cache")
    second = build_data(results, cache_dir=tmp_path / "cache")
    assert first.problem is None and second.problem is None
    assert first.files_parsed > 0 and second.files_parsed == 0  # the second start reads the cache
    assert sorted(first.machine_names()) == sorted(second.machine_names())


def test_every_callback_given_the_machine_answers_without_an_error(app_over_a_non_utf8_machine, caplog):
    """Each callback with a machine control, given the machine with the escaped name (the
    other controls empty, as on a page's first render)."""
    app = app_over_a_non_utf8_machine
    client = app.server.test_client()
    for page in every_page():  # the server learns each page's controls as a visitor's browser shows them
        call(client, app, output_key(app, "page.children"), {"url.pathname": page.path, "url.search": ""})
    caplog.clear()
    called = 0
    for key, callback in app.callback_map.items():
        machine = [f"{d['id']}.value" for d in callback["inputs"] + callback.get("state", [])
                   if '"key":"machine"' in d["id"] and d["property"] == "value"]
        if not machine or '"page":"series"' in machine[0] or '"page":"gcompare"' in machine[0]:
            continue  # the generic pages are not shown over this suite's results
        response = call(client, app, key, {machine[0]: NAME})
        called += 1
        assert response.status_code in (200, 204), (key, response.status_code, response.get_data(as_text=True)[:300])
        assert "Could not build" not in response.get_data(as_text=True), key
    assert called >= 10
    assert not [r for r in caplog.records if r.levelno >= 30], [r.getMessage()[:300] for r in caplog.records]
