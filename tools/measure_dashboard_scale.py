"""Measure the dashboard at scale: 500 commits x 2,000 series in our suite's shape.

    python tools/measure_dashboard_scale.py [--commits 500] [--series 2000] [--keep DIR]

Writes a synthetic history (tests/suite_fixtures.py, asv's exact format) into a temp dir, then in
this fresh process: imports, the cold load (load_results, which parses the files on every core in
spawned workers, + derived Case columns + indexes; no cache exists to be warm), and
every callback body (plus the JSON encoding Dash does) on realistic inputs, each repeated. Targets
(issue 4): cold load <= 5 s, each callback <= 300 ms on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LOAD_TARGET_S, CALLBACK_TARGET_MS = 5.0, 300.0


def timed(fn, repeat: int = 5):
    """(result, [milliseconds per call])."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return out, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=500)
    parser.add_argument("--series", type=int, default=2000)
    parser.add_argument("--keep", type=Path, help="write the history here and keep it (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    from tests.suite_fixtures import write_scale_history

    tmp = None
    if args.keep:
        results = args.keep
    else:
        tmp = tempfile.TemporaryDirectory()
        results = Path(tmp.name) / "results"
    if not (results / "benchmarks.json").exists():
        t = time.perf_counter()
        history = write_scale_history(results, n_commits=args.commits, n_series=args.series)
        print(f"generated {len(history.commits)} commits x {len(history.series)} series in "
              f"{time.perf_counter() - t:.1f} s into {results}")
    files = [p for p in results.rglob("*.json")]
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:.0f} MB; cpus: {os.cpu_count()}")

    t = time.perf_counter()
    from plotly.io.json import to_json_plotly

    from dashboard import app as app_module
    from dashboard.model import build_data
    from dashboard.pages import compare, overview, regressions, roofline, trends
    import dashboard.components as components
    print(f"imports: {time.perf_counter() - t:.2f} s")

    t = time.perf_counter()
    from dashboard.figures import warm_up

    warm_up()  # what create_app does at start-up, counted in the cold load to be conservative
    data = build_data(results)
    load_s = time.perf_counter() - t
    run = data.run(None, None)
    rows = data.case_rows  # (data.cases would build every row's samples list: views never need that)
    print(f"cold load: {load_s:.2f} s ({len(rows):,} rows, {rows.groupby(['benchmark', 'params_key'], observed=True).ngroups:,} Case series, "
          f"{len(run.commits)} commits) target <= {LOAD_TARGET_S} s: {'OK' if load_s <= LOAD_TARGET_S else 'MISSED'}")

    newest, previous = run.commits["commit_hash"].iloc[-1], run.commits["commit_hash"].iloc[-2]
    oldest = run.commits["commit_hash"].iloc[0]
    case = run.catalog[run.catalog["op"] == "gated_mlp"]["case"].iloc[0]
    m, e = run.machine, run.env_name

    class Store:  # what the callbacks get: the already-loaded data
        def get(self):
            return data

    from dashboard.model import FindingsState
    pages = app_module.discover_pages()
    calls = {
        "router: render Overview layout": lambda: app_module.render_page(Store(), pages, "/", ""),
        "router: render Trends layout": lambda: app_module.render_page(Store(), pages, "/trends", f"?case={case}"),
        "router: render Compare layout": lambda: app_module.render_page(Store(), pages, "/compare", ""),
        "overview: heatmap + device + changes": lambda: overview.update(data, m, e, newest, None, None, None, None, None),
        "overview: filtered (bf16, gelu_tanh)": lambda: overview.update(data, m, e, newest, None, ["bf16"], ["gelu_tanh"], None, None),
        "facet counts (all filters)": lambda: components.facet_option_lists(data, m, e, {"op": ["linear_act"], "dtype": ["bf16"]}),
        "trends: latency": lambda: trends.update(data, m, e, case, "latency", None, "commit", [], None),
        "trends: TFLOP/s log date": lambda: trends.update(data, m, e, case, "tflops", None, "date", ["log"], None),
        "trends: roofline fraction": lambda: trends.update(data, m, e, case, "roofline", ["fused", "eager"], "commit", [], newest),
        "trends: case options": lambda: trends.case_choices(run, {"op": ["linear_act"], "dtype": ["bf16"]}),
        "trends: commit link": lambda: trends.commit_info(data, m, e, None, newest),
        "compare: newest vs previous, all": lambda: compare.update(data, m, e, previous, newest, "latency", "1.1", [], None, None, None, None, None),
        "compare: oldest vs newest, all": lambda: compare.update(data, m, e, oldest, newest, "latency", "1.1", [], None, None, None, None, None),
        "compare: significant only, bf16": lambda: compare.update(data, m, e, oldest, newest, "latency", "1.05", ["only"], None, ["bf16"], None, None, None),
        "compare: CSV": lambda: compare.csv_text(data, m, e, oldest, newest, "latency", "1.1", [], None, None, None, None, None),
        "roofline: newest, all": lambda: roofline.update(data, m, e, newest, None, None, None, None, None),
    }
    worst = 0.0
    print(f"\ncallback bodies + JSON encoding, {args.repeat} calls each (ms): first / median / max")
    for name, fn in calls.items():
        _, times = timed(lambda: to_json_plotly(fn()), args.repeat)
        worst = max(worst, max(times[1:]) if len(times) > 1 else times[0])
        flag = "OK" if max(times) <= CALLBACK_TARGET_MS else ("OK after first" if max(times[1:]) <= CALLBACK_TARGET_MS else "MISSED")
        print(f"  {name:<40} {times[0]:7.1f} {statistics.median(times):7.1f} {max(times):7.1f}  {flag}")

    t = time.perf_counter()
    from dashboard.model import _detect_in_subprocess
    findings = _detect_in_subprocess(str(results))
    detect_s = time.perf_counter() - t
    state = FindingsState("done", time.time(), findings, detect_s)
    _, times = timed(lambda: to_json_plotly(regressions.inbox(data, state, None, "all", [])), args.repeat)
    print(f"  {'regressions: inbox (findings cached)':<40} {times[0]:7.1f} {statistics.median(times):7.1f} {max(times):7.1f}  "
          f"{'OK' if max(times) <= CALLBACK_TARGET_MS else 'MISSED'}")
    print(f"\nregression detection over every series (once per results set, in a worker process, not in a callback): "
          f"{detect_s:.1f} s, {len(findings)} findings")
    print(f"summary: cold load {load_s:.2f} s (target {LOAD_TARGET_S} s); slowest callback after warm-up "
          f"{worst:.0f} ms (target {CALLBACK_TARGET_MS:.0f} ms)")
    if tmp:
        tmp.cleanup()
    return 0 if load_s <= LOAD_TARGET_S and worst <= CALLBACK_TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
