"""Real-browser test of the static compile metrics: a results folder with nothing else opens on
the Kernels view, whose table and history follow the controls (machinery in
tests/browser_support.py)."""

import pytest

from tests.browser_support import browser_on, figure_value, poll, severe_logs, skip_module_without_browser

skip_module_without_browser()
pytestmark = pytest.mark.slow

from tests.test_dashboard_static import GROWN, STEP_AT, _write_static  # noqa: E402


def test_brw_static_metrics_open_on_the_kernels_view_and_follow_the_controls(tmp_path):
    root = tmp_path / "results"
    history = _write_static(root)
    with browser_on(root, tmp_path) as duo:
        duo.driver.get(duo.server_url + "/")
        poll(lambda: "No timings in these results yet" in duo.find_element("#static-notice").text, what="notice")
        poll(lambda: "3 kernel configs at" in duo.find_element("#kernels-summary").text, what="table summary")
        lines = poll(lambda: figure_value(duo, "kernels-figure",
                                          "g.data.filter(t => t.mode === 'lines+markers').map(t => t.name)"),
                     what="history lines")
        assert f"{GROWN} bf16" in lines and len(lines) == 3

        step = history.commits[STEP_AT]
        duo.driver.get(duo.server_url + f"/kernels?commit={step[:8]}&changed=only")
        poll(lambda: "1 value(s) up" in duo.find_element("#kernels-summary").text, what="the step's summary")
        rows = poll(lambda: [r.text for r in duo.driver.find_elements("css selector", "#kernels-table td.dash-cell")
                             if r.text], what="table cells")
        assert "128x128x64 w8 s3" in rows and "+20" in rows and "64x64x32 w4 s3" not in rows

        duo.find_element("#page input[type='checkbox'][value='only']").click()  # all configs again
        poll(lambda: "64x64x32 w4 s3" in duo.find_element("#kernels-table").text, what="every config")
        poll(lambda: "changed=" not in duo.driver.current_url, what="URL without the filter")
        assert severe_logs(duo) == []
