"""Real-browser test of generic mode: another project's asv results (machinery in
tests/browser_support.py)."""

import pytest

from tests.browser_support import browser_on, figure_value, poll, severe_logs, shoot, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.generic_fixtures import (IMPORT, MIXED, MIXED_STATS, OPTIONAL, READ, STEP_AT, snapshot,  # noqa: E402
                                    write_generic_history, write_run_notes)


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
        # the planted step, found in the browser's view too once the detector's worker is done (the
        # figure may first be drawn with its marks pending, then again with them)
        poll(lambda: "regressions" in figure_value(duo, "series-figure", "g.data.map(t => t.name)"), what="marks")
        assert "pending" not in figure_value(duo, "series-figure", "g.layout.title.text")

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



def test_brw_generic_units_gaps_reasons_runner_marks_and_sub_metrics(tmp_path):
    """The views issue 23's remainder added, on screen: a benchmark without a unit (an axis per
    combination), a line that leaves a gap where its benchmark is not in the results, a point whose
    run changed torch, why a value is n/a, and sub-metrics nested in the inbox."""
    from benchmarks import skip_reasons
    from dashboard.data.urlstate import encode_query

    gx = write_generic_history(tmp_path / "results", mixed_units=True, absent=(IMPORT, range(8, 14)),
                               sub_metrics=True)
    last = len(gx.history.commits) - 1
    write_run_notes(gx.history, {last: [skip_reasons.entry(OPTIONAL, {}, "skipped", "needs a GPU")]},
                    {i: (snapshot("2.12.0" if i >= 18 else "2.11.0"),) * 2 for i in range(last + 1)})
    with browser_on(gx.results_dir, tmp_path) as duo:
        every_stat = {"benchmark": MIXED, "p_stat": [repr(k) for k in MIXED_STATS]}
        duo.driver.get(duo.server_url + "/trends" + encode_query(every_stat))
        axes = poll(lambda: set(figure_value(duo, "series-figure",
                                             "g.data.filter(t => t.mode === 'lines+markers').map(t => t.yaxis)")
                                or []) == {"y", "y3", "y4"}, what="an axis per combination")
        assert axes
        assert "no unit" in duo.find_element("#series-lines-note").text
        shoot(duo, "generic-trends-no-unit")
        duo.driver.get(duo.server_url + f"/trends?benchmark={IMPORT}&logy=log")
        marks = poll(lambda: figure_value(duo, "series-figure",
                                          "g.data.filter(t => (t.name || '').startsWith('runner changed')).length"),
                     what="runner marks")
        assert marks == 1
        ticks = figure_value(duo, "series-figure", "g.layout.yaxis.ticktext")
        assert ticks and len(ticks) <= 8
        shoot(duo, "generic-trends-gap-and-marks")
        duo.driver.get(duo.server_url + f"/compare?a={gx.history.commits[last - 1]}&b={gx.history.commits[last]}")
        why = poll(lambda: "needs a GPU" in duo.find_element("#gcompare-why-na").text, what="why n/a")
        assert why and "1 × needs a GPU; 1 without a recorded reason" in duo.find_element("#gcompare-why-na").text
        shoot(duo, "generic-compare-why-na")
        duo.driver.get(duo.server_url + "/regressions?q=track_step")
        poll(lambda: duo.driver.find_elements("css selector", "#regressions-inbox ul.sub-metrics ul.sub-metrics"),
             timeout=90, what="nested sub-metrics")
        assert gx.history.commits[STEP_AT][:10] in duo.find_element("#regressions-inbox").text
        shoot(duo, "generic-regressions-sub-metrics")
        duo.driver.get(duo.server_url + "/regressions")
        poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=90, what="inbox")
        shoot(duo, "generic-regressions-all")
        assert severe_logs(duo) == []
