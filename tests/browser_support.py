"""Shared machinery of the real-browser tests: headless Debian chromium + chromedriver through
dash's testing tools. Nothing is downloaded. Without the browser a test skips locally but FAILS
when CI=true: a skipped browser test in CI would hide a broken UI."""

import os
import shutil
import time
from contextlib import contextmanager

import pytest

from tests.ports import free_port

CHROME = os.environ.get("DASH_TEST_CHROMEPATH") or shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
MISSING = None if CHROME and os.path.exists(CHROME) and DRIVER else (
    f"headless browser tests need chromium and chromedriver (found chromium={CHROME!r}, chromedriver={DRIVER!r}); "
    "apt-get install -y chromium chromium-driver")
IN_CI = os.environ.get("CI", "").lower() == "true"


def skip_module_without_browser():
    if MISSING and not IN_CI:
        pytest.skip(MISSING, allow_module_level=True)


@contextmanager
def browser_on(results_dir, download_dir):
    """A dash_duo-like composite driving the app over ``results_dir``."""
    if MISSING:
        pytest.fail(f"CI=true but {MISSING}")
    from dash.testing.application_runners import ThreadedRunner
    from dash.testing.composite import DashComposite

    from dashboard.app import create_app

    os.environ.setdefault("DASH_TEST_CHROMEPATH", CHROME)
    app = create_app(results_dir)
    store = app.server.config["FUSED_MLP_STORE"]
    try:
        with ThreadedRunner() as server:
            with DashComposite(server, browser="Chrome", headless=True, download_path=str(download_dir),
                               percy_finalize=False) as dc:
                dc.start_server(app, port=free_port())
                try:
                    yield dc
                finally:
                    # Before the runner stops: it raises SystemExit in every thread started since
                    # it began, the detector pool's manager thread too (pytest's "unhandled thread
                    # exception" warning); closing the store joins that thread first.
                    store.close()
    finally:
        store.close()  # the server failed to start: the pool may exist all the same


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


def shoot(duo, name: str) -> None:
    """The page at 1400 and 1000 px wide, full height, into $DASHBOARD_SHOTS when it is set
    (screenshots to look at; nothing is asserted on them)."""
    shots = os.environ.get("DASHBOARD_SHOTS")
    if not shots:
        return
    from pathlib import Path

    Path(shots).mkdir(parents=True, exist_ok=True)
    for width in (1400, 1000):
        duo.driver.set_window_size(width, 900)
        height = duo.driver.execute_script("return document.documentElement.scrollHeight")
        duo.driver.set_window_size(width, min(max(height + 40, 900), 6000))
        # A figure with a fixed height does not follow a window resize (dcc.Graph's responsive
        # "auto"): lay each one out again at this width, as a page opened at this width has it.
        duo.driver.execute_script("document.querySelectorAll('.js-plotly-plot')"
                                  ".forEach(g => window.Plotly && Plotly.Plots.resize(g));")
        time.sleep(0.5)
        duo.driver.save_screenshot(str(Path(shots) / f"{name}-{width}.png"))
    duo.driver.set_window_size(1400, 900)

