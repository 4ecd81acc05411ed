"""Real-browser test of generic mode: another project's asv results (machinery in
tests/browser_support.py)."""

import pytest

from tests.browser_support import browser_on, figure_value, poll, severe_logs, shoot, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.generic_fixtures import READ, write_generic_history  # noqa: E402


@pytest.fixture(scope="module")
def gx(tmp_path_factory):
    return write_generic_history(tmp_path_factory.mktemp("browser-generic") / "results")


def test_brw_generic_trends_compare_regressions_and_why_overview_is_off(gx, tmp_path):
    with browser_on(gx.results_dir, tmp_path) as duo:
        duo.driver.get(duo.server_url + "/")
        duo.wait_for_text_to_equal("#page h1", "Overview", timeout=20)
        assert "is off for these results" in duo.find_element("#generic-notice").text

        duo.driver.get(duo.server_url + f"/trends?benchmark={READ}")
        lines = poll(lambda: figure_value(duo, "series-figure",
                                          "g.data.filter(t => t.mode === 'lines+markers').map(t => t.name)"),
                     what="one line per parameter combination")
        assert len(lines) == 6 and "size=65536, kind='csv'" in lines
        assert "Generic asv results" in duo.find_element("#generic-line").text
        duo.find_element("#page input[type='radio'][value='date']").click()
        poll(lambda: figure_value(duo, "series-figure", "g.layout.xaxis.title.text") == "commit date",
             what="date axis")
        poll(lambda: "x=date" in duo.driver.current_url and "benchmark=" in duo.driver.current_url, what="URL")
        names = figure_value(duo, "series-figure", "g.data.map(t => t.name)")
        assert "regressions" in names  # the planted step, found in the browser's view too

        before = gx.history.commits[gx.history.commits.index(gx.step_commit) - 1]
        duo.driver.get(duo.server_url + f"/compare?a={before}&b={gx.step_commit}&sig=only")
        poll(lambda: "2 worse" in duo.find_element("#compare-summary-text").text, what="compare summary")

        duo.driver.get(duo.server_url + "/regressions")
        poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=90, what="inbox")
        assert gx.step_commit[:10] in duo.find_element("#regressions-inbox").text
        assert severe_logs(duo) == []


def test_brw_generic_a_benchmark_that_starts_failing_and_every_page_on_screen(tmp_path):
    gx = write_generic_history(tmp_path / "results", failing_from=24)
    with browser_on(gx.results_dir, tmp_path) as duo:
        duo.driver.get(duo.server_url + "/regressions")
        poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=90, what="inbox")
        inbox = duo.find_element("#regressions-inbox").text
        assert "started failing (was ok)" in inbox and gx.history.commits[24][:10] in inbox
        shoot(duo, "generic-regressions")
        for path, name in (("/", "overview"), (f"/trends?benchmark={READ}", "trends"), ("/compare", "compare")):
            duo.driver.get(duo.server_url + path)
            poll(lambda: duo.find_element("#page h1"), what=path)
            if name == "trends":
                poll(lambda: figure_value(duo, "series-figure", "g.data.length"), what="trend drawn")
            if name == "compare":
                poll(lambda: "series" in duo.find_element("#compare-summary-text").text, what="compare table")
            shoot(duo, f"generic-{name}")
        assert severe_logs(duo) == []

