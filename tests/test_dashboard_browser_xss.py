"""Issue 31's probe in a real browser: benchmark and parameter names are text, never markup. A
results folder whose benchmark, parameter names and values carry HTML and script is shown on
Trends, Compare and Regressions (machinery in tests/browser_support.py); no script of theirs
runs and no element of theirs appears."""

from urllib.parse import quote

import pytest

from tests.browser_support import browser_on, poll, severe_logs, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.asv_fixtures import SeriesSpec, write_history  # noqa: E402

STEP_AT = 20
BENCHMARK = 'bench_evil.Evil<img src=x onerror="window.__xss=1">.track_value'
VALUES = ('<img src=x onerror="window.__xss=2">', "<a href='javascript:window.__xss=3'>click</a><b>b</b>")
NAMES = ("size<script>window.__xss=4</script>", 'kind"><svg onload="window.__xss=5">')
# What no page may hold: an element a name brought in, or a script it ran.
INJECTED = """return [window.__xss,
  document.querySelectorAll('img[src="x"], svg[onload], [onerror]').length,
  Array.from(document.querySelectorAll('a')).filter(a => /^\\s*javascript:/i.test(
    a.getAttribute('href') || a.getAttribute('xlink:href') || '')).length];"""


def test_brw_names_with_html_and_script_stay_text_on_every_page(tmp_path):
    spec = SeriesSpec(BENCHMARK, VALUES, NAMES, steps=((STEP_AT, 0.3),), run_noise=0.01)
    history = write_history(tmp_path / "results", [spec], 30, seed=5, n_samples=10)
    step, before = history.commits[STEP_AT], history.commits[STEP_AT - 1]
    with browser_on(history.results_dir, tmp_path) as duo:
        pages = [(f"/trends?benchmark={quote(BENCHMARK)}", "#page"),
                 (f"/compare?a={before}&b={step}", "#page"),
                 ("/regressions", "#regressions-inbox")]
        for path, shown in pages:
            duo.driver.get(duo.server_url + path)
            # the names are there, as text (else the check below would pass on an empty page)
            poll(lambda: "onerror" in duo.find_element(shown).text, timeout=90, what=f"the names on {path}")
            assert duo.driver.execute_script(INJECTED) == [None, 0, 0], path
        assert severe_logs(duo) == []
