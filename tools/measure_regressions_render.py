"""Measure the Regressions page's first render in a real browser (headless Chromium).

    python tools/measure_regressions_render.py [--size real --size large] [--repeats 3] [--keep DIR]

For each generated history (dashboard.synthetic.histories: ``real``, 76 commits x 280 series of
``track_`` benchmarks with a ``function=`` parameter, about 220 findings over 29 commits, some
failing; ``large``, 500 commits, about 2,000 findings), it serves the dashboard
(``python -m dashboard --no-cache``) on a free port, waits until the detector and the gate's
judgement are done (the page then shows its findings), and then loads ``/regressions`` afresh
``--repeats`` times: the time from the navigation's start until the inbox's findings and the
gate's verdict are in the DOM (performance.now() in the page, polled every 20 ms), the DOM's
element count, and the machine's load average. Target: 2 s (issue 33). Exit status 1 when a
median misses it. Needs chromium and chromedriver (Debian: /usr/bin/chromium,
/usr/bin/chromedriver) and selenium (the test extra).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 2.0
READY = ("return (document.querySelector('#regressions-verdict h2') && document.querySelector("
         "'#regressions-pager')) ? performance.now() : null;")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1000"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                            options=options)


def _wait_ready(driver, timeout: float, step: float = 0.02) -> float | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        at = driver.execute_script(READY)
        if at is not None:
            return at / 1000
        time.sleep(step)
    return None


def measure(results: Path, repeats: int) -> dict:
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "dashboard", "--results", str(results), "--no-cache",
                               "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/regressions"
    driver = None
    try:
        for _ in range(600):  # the server loads the results first
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit(f"the dashboard did not start: {server.stderr.read().decode()[-2000:]}")
                time.sleep(0.5)
        driver = _browser()
        started = time.monotonic()
        driver.get(url)
        if _wait_ready(driver, 900, 0.5) is None:  # detection and the gate's judgement, once per results set
            raise SystemExit("the findings did not appear within 15 minutes")
        detect_s = time.monotonic() - started
        runs = []
        for _ in range(repeats):
            driver.get("about:blank")
            driver.get(url)
            at = _wait_ready(driver, 120)
            nodes = driver.execute_script("return document.getElementsByTagName('*').length;")
            runs.append((at, nodes, os.getloadavg()[0]))
        return {"detect_s": detect_s, "runs": runs}
    finally:
        if driver is not None:
            driver.quit()
        server.terminate()
        server.wait(timeout=30)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", action="append", choices=("real", "large"), help="history to measure (default: both)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--keep", type=Path, help="write (or reuse) the histories here instead of a temp dir")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))  # run from a checkout, uninstalled
    from dashboard.synthetic.histories import write_function_history

    where = args.keep or Path(tempfile.mkdtemp(prefix="regressions-render-"))
    missed = False
    for size in args.size or ["real", "large"]:
        results = where / size / "results"
        if not results.exists():
            write_function_history(results, size)
        out = measure(results, args.repeats)
        times = [t for t, _, _ in out["runs"] if t is not None]
        median = statistics.median(times) if len(times) == len(out["runs"]) else float("inf")
        missed |= median > TARGET_S
        print(f"{size}: first render median {median:.2f} s, worst {max(times, default=float('inf')):.2f} s over "
              f"{len(out['runs'])} loads (target {TARGET_S:g} s); DOM elements {out['runs'][-1][1]}; load average "
              f"{', '.join(f'{load:.1f}' for _, _, load in out['runs'])}; detector and gate {out['detect_s']:.0f} s "
              "before the first load", flush=True)
    if args.keep is None:
        shutil.rmtree(where, ignore_errors=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
