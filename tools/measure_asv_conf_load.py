"""Measure what a large asv.conf.json costs the dashboard (issue 26 item 5).

    python tools/measure_asv_conf_load.py [--mib 4] [--comments]

Writes the dashboard's test fixture (tests/suite_fixtures.py) and, beside it, an asv.conf.json of
about --mib MiB (a big "matrix"; --comments starts it with a // line, so it is not plain JSON).
Then, in this process: the start (the first ResultsStore.get, as ``python -m dashboard`` loads
before serving) and the first request after a results file changed (a reload). Prints seconds
and what the dashboard made of the config (its commit URL, or the note saying why not).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def write_conf(path: Path, mib: float, comments: bool) -> int:
    conf = {"version": 1, "project": "big", "repo": ".", "show_commit_url": "https://example.org/commit/",
            "matrix": {f"pkg{i}": ["1.0", "2.0", ""] for i in range(int(mib * 12_500))}}
    text = ("// a large config\n" if comments else "") + json.dumps(conf, indent=4)
    path.write_text(text)
    return len(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=4.0, help="size of the config in MiB (default 4)")
    parser.add_argument("--comments", action="store_true", help="start the config with a // comment")
    args = parser.parse_args(argv)
    from dashboard.store.model import ResultsStore
    from tests.suite_fixtures import write_dashboard_fixture

    with tempfile.TemporaryDirectory() as tmp:
        results = write_dashboard_fixture(Path(tmp) / "results").results_dir
        size = write_conf(Path(tmp) / "asv.conf.json", args.mib, args.comments)
        store = ResultsStore(results, detect_in_background=False)
        try:
            started = time.perf_counter()
            data = store.get()
            start_s = time.perf_counter() - started
            victim = next(results.glob("*/*.json"))
            os.utime(victim, ns=(time.time_ns(), time.time_ns()))  # a results change
            store._checked = 0.0  # the next request rechecks now, not 2 s later
            started = time.perf_counter()
            store.get()
            reload_s = time.perf_counter() - started
        finally:
            store.close()
        print(f"asv.conf.json {size / (1 << 20):.2f} MiB{' with comments' if args.comments else ''}: "
              f"start {start_s:.2f} s, first request after a results change {reload_s:.2f} s; "
              f"commit URL {data.project.commit_url!r}; notes {list(data.project.notes)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
