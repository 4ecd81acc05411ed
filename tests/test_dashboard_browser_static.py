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


FITS = ("const t = document.querySelector('#{0} .dash-spreadsheet-inner table'); "
        "const box = document.querySelector('#{0}').parentElement; "
        "return t && t.querySelectorAll('td').length ? [t.scrollWidth, box.clientWidth] : null;")


def test_brw_the_kernels_and_machines_tables_keep_their_numbers_visible_at_1000_px(tmp_path):
    from pathlib import Path

    repo_results = Path(__file__).resolve().parents[1] / "results"  # real compile metrics, 13 columns
    with browser_on(repo_results, tmp_path) as duo:
        duo.driver.set_window_size(1000, 900)
        duo.driver.get(duo.server_url + "/kernels")
        table, room = poll(lambda: duo.driver.execute_script(FITS.format("kernels-table")), what="kernels table")
        assert table <= room, (table, room)  # every number column within the window, no sideways scroll
    from dashboard.synthetic.demo import write_demo_history

    demo = write_demo_history(tmp_path / "demo" / "results")
    with browser_on(demo, tmp_path) as duo:
        duo.driver.set_window_size(1000, 900)
        duo.driver.get(duo.server_url + "/machines")
        table, room = poll(lambda: duo.driver.execute_script(FITS.format("machines-table")), what="machines table")
        assert table <= room, (table, room)
