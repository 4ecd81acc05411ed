"""Real-browser tests of the pages (machinery in tests/browser_support.py)."""

import re
from urllib.parse import quote_plus

import pytest

from tests.browser_support import browser_on, figure_value, poll, severe_logs, shoot, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.suite_fixtures import write_dashboard_fixture  # noqa: E402


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("browser") / "results")


@pytest.fixture
def duo(fx, tmp_path):
    with browser_on(fx.results_dir, tmp_path) as dc:
        yield dc


def test_brw001_every_page_opens_without_console_errors(duo):
    for path, heading, graph in [("/", "Overview", "overview-panels"), ("/trends", "Trends", "trends-figure"),
                                 ("/compare", "Compare two commits", None), ("/roofline", "Roofline", "roofline-figure"),
                                 ("/regressions", "Regressions", None)]:
        duo.driver.get(duo.server_url + path)
        duo.wait_for_text_to_equal("#page h1", heading, timeout=20)
        if graph:
            poll(lambda: figure_value(duo, graph, "g.data.length"), what=f"{graph} drawn")
            titles = duo.driver.execute_script(
                f"return [...document.querySelectorAll('#{graph} .modebar-btn')].map(b => b.getAttribute('data-title'))")
            assert any("download plot" in (t or "").lower() for t in titles), titles  # Plotly's image export
        if path == "/compare":
            poll(lambda: "series" in duo.find_element("#compare-summary-text").text, what="compare table")
        if path == "/regressions":
            poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=60, what="inbox")
        assert "2 file(s) skipped" in duo.find_element("#load-report summary").text
        assert severe_logs(duo) == [], path


def test_brw002_changing_a_control_changes_the_figure_and_the_url(duo, fx):
    duo.driver.get(duo.server_url + "/trends?case=" + quote_plus(fx.regressed[0]))
    poll(lambda: figure_value(duo, "trends-figure", "g.layout.xaxis.title.text") == "commit (oldest → newest)",
         what="commit-order axis")
    duo.find_element("#page input[type='radio'][value='date']").click()
    poll(lambda: figure_value(duo, "trends-figure", "g.layout.xaxis.title.text") == "commit date", what="date axis")
    poll(lambda: "x=date" in duo.driver.current_url, what="URL updated")

    duo.driver.get(duo.server_url + f"/compare?a={fx.main.commits[7]}&b={fx.regression_commit}")
    def shows_every_series():  # "... N series; ... Showing N." with N the two commits' series
        found = re.search(r"(\d+) series;.*Showing (\d+)\.", duo.find_element("#compare-summary-text").text)
        return found and found.group(1) == found.group(2) and int(found.group(1)) > 1

    poll(shows_every_series, what="all rows")
    duo.find_element("#page input[type='checkbox'][value='only']").click()
    poll(lambda: "Showing 1." in duo.find_element("#compare-summary-text").text, what="significant only")
    assert "sig=only" in duo.driver.current_url
    assert severe_logs(duo) == []


def test_brw003_a_copied_link_restores_the_view(duo, fx):
    link = (f"/trends?metric=gbps&x=date&logy=log&theme=dark&case={quote_plus(fx.regressed[0])}"
            f"&commit={fx.regression_commit}")
    duo.driver.get(duo.server_url + link)
    poll(lambda: "GB/s" in (figure_value(duo, "trends-figure", "g.layout.yaxis.title.text") or ""), what="GB/s axis")
    assert figure_value(duo, "trends-figure", "g.layout.yaxis.type") == "log"
    assert figure_value(duo, "trends-figure", "g.layout.xaxis.title.text") == "commit date"
    # the latency regression shows as a regression on its GB/s too, once the detector's worker is
    # done: the figure may first be drawn with its marks pending, then again with them
    poll(lambda: "regressions" in figure_value(duo, "trends-figure", "g.data.map(t => t.name)"), what="marks")
    assert "pending" not in figure_value(duo, "trends-figure", "g.layout.title.text")
    assert duo.driver.execute_script("return document.documentElement.getAttribute('data-theme')") == "dark"
    assert duo.find_element("#page input[type='radio'][value='date']").is_selected()
    url = duo.driver.current_url
    for part in ("metric=gbps", "x=date", "logy=log", "theme=dark", f"commit={fx.regression_commit}"):
        assert part in url, (part, url)
    assert severe_logs(duo) == []


def test_brw004_the_overview_headline_and_a_regressed_cell(duo, fx):
    duo.driver.get(duo.server_url + f"/?commit={fx.regression_commit}")
    row = poll(lambda: duo.find_element("#headline-gated_mlp-bf16"), what="headline row")
    poll(lambda: "1 slower" in row.text, what="the fused regression counted")
    assert "×" in row.text  # the geomean speedup
    texts = poll(lambda: duo.driver.execute_script(
        "return [...document.querySelectorAll('.panels .js-plotly-plot')].map(g => g.data[0].text.flat())"),
        what="heatmap panels")
    marked = [t for panel in texts for t in panel if t and t.startswith("⚠")]
    assert len(marked) == 1  # the planted +30 % fused regression, and nothing else
    ticks = [t.text for t in duo.driver.find_elements("css selector", "#overview-legend .tick")]
    assert len(ticks) >= 3 and "1×" in ticks
    trend = duo.find_element("#overview-change-list a.trend-link")
    assert "case=" in trend.get_attribute("href") and fx.regression_commit in trend.get_attribute("href")
    assert severe_logs(duo) == []


def test_brw005_failed_and_skipped_implementations_in_the_legend(duo, fx):
    case, impl = fx.failing
    duo.driver.get(duo.server_url + "/trends?case=" + quote_plus(case))
    names = poll(lambda: figure_value(duo, "trends-figure", "g.data.map(t => t.name)"), what="trend drawn")
    failed = [n for n in names if n and n.startswith(f"{impl}: failed at")]
    assert failed and any(n and n.startswith("cublaslt: skipped at") for n in names)
    legend = duo.driver.execute_script(
        "return [...document.querySelectorAll('#trends-figure .legendtext')].map(e => e.textContent)")
    assert failed[0] in legend
    assert severe_logs(duo) == []


def test_brw006_machine_against_machine(duo, fx):
    from tests.suite_fixtures import SECOND_MACHINE

    duo.driver.get(duo.server_url + f"/machines?machine_b={SECOND_MACHINE}")
    duo.wait_for_text_to_equal("#page h1", "Machine against machine", timeout=20)
    poll(lambda: "measured on both" in duo.find_element("#machines-summary-text").text, what="machines table")
    assert "the same commit" in duo.find_element("#machines-summary-text").text
    cards = duo.find_element("#machines-ceilings").text
    assert "NVIDIA H200" in cards and "NVIDIA A100" in cards
    ratios = duo.driver.execute_script(
        "return [...document.querySelectorAll('#machines-table td[data-dash-column=ratio]')].map(td => td.innerText)")
    assert ratios and all(float(r) > 1 for r in ratios)  # the A100 is slower on every case
    shoot(duo, "machines")
    assert severe_logs(duo) == []


def test_brw007_every_page_at_1400_and_1000_px(duo, fx):
    """Screenshots of the suite-shaped history (a baseline failing throughout, a planted regression;
    at the newest commit the reasons benchmarks.run keeps for its n/a values, and a torch upgrade
    on the runner a few commits before)."""
    from benchmarks import skip_reasons
    from tests.generic_fixtures import snapshot, write_run_notes
    from tests.suite_fixtures import benchmark_name

    case, failing_impl = fx.failing
    newest = len(fx.main.commits) - 1
    reasons = [skip_reasons.entry(benchmark_name("linear_act", m), {"case": case, "impl": impl}, status, why)
               for m in ("track_latency", "track_peak_memory", "track_kernels_per_call") for impl, status, why in (
                   ("cublaslt", "skipped", "cublaslt has no silu epilogue (only ['gelu_tanh', 'relu'])"),
                   (failing_impl, "failed", "Traceback (most recent call last):\nInductorError: lowering failed"))]
    write_run_notes(fx.main, {newest: reasons},
                    {i: (snapshot("2.12.0" if i >= newest - 3 else "2.11.0"),) * 2 for i in range(newest + 1)})
    duo.driver.set_window_size(1400, 900)  # figures are drawn at the window's width
    duo.driver.get(duo.server_url + "/")
    poll(lambda: "cublaslt has no silu epilogue" in duo.find_element("#overview-why-na").text, what="why n/a")
    duo.driver.get(duo.server_url + "/trends?case=" + quote_plus(case))
    names = poll(lambda: figure_value(duo, "trends-figure", "g.data.map(t => t.name)"), what="trend drawn")
    assert any((n or "").startswith("runner changed or throttled") for n in names)
    shoot(duo, "suite-trends-failing-baseline")
    for path, name in (("/", "overview"), ("/trends?case=" + quote_plus(fx.regressed[0]), "trends"),
                       ("/compare", "compare"), ("/roofline", "roofline"), ("/regressions", "regressions")):
        duo.driver.get(duo.server_url + path)
        poll(lambda: duo.find_element("#page h1"), what=path)
        graph = {"trends": "trends-figure", "roofline": "roofline-figure"}.get(name)
        if graph:
            poll(lambda: figure_value(duo, graph, "g.data.length"), what=f"{graph} drawn")
        if name == "overview":
            poll(lambda: duo.find_element("#headline-all"), what="headline")
        if path == "/regressions":
            poll(lambda: "finding(s)" in duo.find_element("#regressions-count").text, timeout=90, what="inbox")
        shoot(duo, f"suite-{name}")
    assert severe_logs(duo) == []

