"""Real-browser tests: headless Debian chromium + chromedriver through dash's testing tools.

Needs /usr/bin/chromium (or DASH_TEST_CHROMEPATH) and chromedriver on PATH; nothing is
downloaded. Without them the tests skip locally but FAIL when CI=true: a skipped browser test in
CI would hide a broken UI.
"""

import os
import shutil
import time
from urllib.parse import quote_plus

import pytest

CHROME = os.environ.get("DASH_TEST_CHROMEPATH") or shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = None if CHROME and os.path.exists(CHROME) and DRIVER else (
    f"headless browser tests need chromium and chromedriver (found chromium={CHROME!r}, chromedriver={DRIVER!r}); "
    "apt-get install -y chromium chromium-driver")
IN_CI = os.environ.get("CI", "").lower() == "true"

if MISSING and not IN_CI:
    pytest.skip(MISSING, allow_module_level=True)

from dash.testing.application_runners import ThreadedRunner  # noqa: E402
from dash.testing.composite import DashComposite  # noqa: E402

from dashboard.app import create_app  # noqa: E402
from tests.suite_fixtures import write_dashboard_fixture  # noqa: E402


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("browser") / "results")


@pytest.fixture
def duo(fx, tmp_path):
    if MISSING:
        pytest.fail(f"CI=true but {MISSING}")
    os.environ.setdefault("DASH_TEST_CHROMEPATH", CHROME)
    app = create_app(fx.results_dir)
    with ThreadedRunner() as server:
        with DashComposite(server, browser="Chrome", headless=True, download_path=str(tmp_path),
                           percy_finalize=False) as dc:
            dc.start_server(app)
            yield dc
    app.server.config["FUSED_MLP_STORE"].close()


def poll(fn, timeout=20.0, what="condition"):
    """Wait until fn() is truthy (the UI updates asynchronously); return its value."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            value = fn()
        except Exception:  # element not rendered yet
            value = None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def figure_value(duo, graph_id, expr):
    return duo.driver.execute_script(
        f"const g = document.querySelector('#{graph_id} .js-plotly-plot'); return g && g.layout ? {expr} : null;")


def severe_logs(duo):
    return [e for e in duo.get_logs() or [] if e.get("level") == "SEVERE"]


def test_brw001_every_page_opens_without_console_errors(duo):
    for path, heading, graph in [("/", "Overview", "overview-heatmap"), ("/trends", "Trends", "trends-figure"),
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
    poll(lambda: "Showing 168" in duo.find_element("#compare-summary-text").text, what="all rows")
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
    names = figure_value(duo, "trends-figure", "g.data.map(t => t.name)")
    assert "regressions" in names  # the latency regression shows as a regression on its GB/s too
    assert duo.driver.execute_script("return document.documentElement.getAttribute('data-theme')") == "dark"
    assert duo.find_element("#page input[type='radio'][value='date']").is_selected()
    url = duo.driver.current_url
    for part in ("metric=gbps", "x=date", "logy=log", "theme=dark", f"commit={fx.regression_commit}"):
        assert part in url, (part, url)
    assert severe_logs(duo) == []
