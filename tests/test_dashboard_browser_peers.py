"""Real-browser tests of the views a history with fused peers and training modes gets: the mode
filter, the two headline speedups, a comparison set that changed, failures in the inbox.
Screenshots go to $DASHBOARD_SHOTS when set (e.g. /work/shots), at 1400 and 1000 px."""

from urllib.parse import quote_plus

import pytest

from tests.browser_support import browser_on, figure_value, poll, severe_logs, shoot, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.suite_fixtures import write_peer_fixture  # noqa: E402

@pytest.fixture(scope="module")
def px(tmp_path_factory):
    return write_peer_fixture(tmp_path_factory.mktemp("browser-peers") / "results")


@pytest.fixture(scope="module")
def duo(px, tmp_path_factory):
    with browser_on(px.results_dir, tmp_path_factory.mktemp("downloads")) as dc:
        yield dc


def test_brp001_overview_mode_filter_two_speedups_and_the_changed_comparison_set(duo, px):
    duo.driver.get(duo.server_url + f"/?commit={px.dropped_at}")
    row = poll(lambda: duo.find_element("#headline-gated_mlp-bf16"), what="headline row")
    poll(lambda: "compile failed since" in row.text, what="the comparison set's change")
    assert "vs compile_max_autotune" in row.text and row.text.count("×") >= 2  # both speedups, the peer named
    assert "stopped running" in row.text
    assert duo.find_element("#headline-gated_mlp-bf16-backward") is not None
    texts = poll(lambda: duo.driver.execute_script(
        "return [...document.querySelectorAll('.panels .js-plotly-plot')].map(g => g.data[0].text.flat())"),
        what="heatmap panels")
    assert sum(t.startswith("Δ") for panel in texts for t in panel if t) == 1
    shoot(duo, "overview-peers")
    duo.driver.get(duo.server_url + f"/?commit={px.dropped_at}&mode=backward")
    poll(lambda: duo.find_element("#headline-gated_mlp-bf16-backward"), what="backward row")
    rows = duo.driver.execute_script(
        "return [...document.querySelectorAll('#overview-headline-table tbody tr')].map(r => r.id)")
    assert rows == ["headline-gated_mlp-bf16-backward", "headline-linear_act-bf16-backward", "headline-all"]
    assert severe_logs(duo) == []


def test_brp002_trends_and_compare_take_the_mode(duo, px):
    case = px.cases[3].key
    duo.driver.get(duo.server_url + f"/trends?case={quote_plus(case)}&mode=full")
    poll(lambda: "full" in (figure_value(duo, "trends-figure", "g.layout.title.text") or ""), what="full mode trend")
    names = figure_value(duo, "trends-figure", "g.data.map(t => t.name)")
    assert {"fused", "liger_mlp", "compile_max_autotune"} <= set(names)
    shoot(duo, "trends-peers")
    dropped_case, _, mode = px.dropped
    duo.driver.get(duo.server_url + f"/trends?case={quote_plus(dropped_case)}&mode={mode}&metric=speedup")
    names = poll(lambda: figure_value(duo, "trends-figure", "g.data.map(t => t.name)"), what="speedup trend")
    assert {"over best unfused", "over best fused peer"} <= set(names)
    shoot(duo, "trends-speedup")
    duo.driver.get(duo.server_url + f"/compare?a={px.history.commits[-2]}&b={px.history.commits[-1]}&mode=backward")
    poll(lambda: "series" in duo.find_element("#compare-summary-text").text, what="compare table")
    modes = duo.driver.execute_script(
        "return [...document.querySelectorAll('#compare-table td[data-dash-column=mode]')].map(td => td.innerText)")
    assert modes and set(modes) == {"backward"}
    shoot(duo, "compare-peers")
    for width in (1400, 1000):  # the numbers never hide behind a scroll
        duo.driver.set_window_size(width, 900)
        right = poll(lambda: duo.driver.execute_script(
            "const c = document.querySelector('#compare-table td[data-dash-column=change]');"
            "return c ? c.getBoundingClientRect().right : null;"), what="change column")
        assert right <= duo.driver.execute_script("return document.documentElement.clientWidth"), width
    duo.driver.set_window_size(1400, 900)
    assert severe_logs(duo) == []


def test_brp003_failures_are_on_the_regressions_page(duo, px):
    duo.driver.get(duo.server_url + "/regressions")
    poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=90, what="inbox")
    page = duo.find_element("#regressions-inbox").text
    assert "started failing" in page and px.dropped_at[:10] in page
    shoot(duo, "regressions-peers")
    assert severe_logs(duo) == []
