"""Measure the dashboard and the gate at scale: 5,000 commits x 10,000 series (50 M points) in
our suite's shape.

    python tools/measure_dashboard_scale.py [--commits 5000] [--series 10000] [--keep DIR] [--detect]

Writes a synthetic history (tests/suite_fixtures.py, asv's exact format) into --keep DIR (reused
when it is already there) or a temp dir, then measures in fresh processes, each reporting its own
peak resident memory (VmHWM):

1. first start: an empty cache dir, so every result file is parsed (and the cache written),
   its progress on the console as the server prints it;
2. cold start: a new process with that cache, from the first line to a loaded store (imports,
   figure warm-up, load), then every callback body (plus the JSON encoding Dash does) on
   realistic inputs, each repeated; the first call counts;
3. the gate (regressions.judgement.judge_folder, what `python -m regressions --cache-dir` and
   the dashboard's worker run) on the same folder through that cache;
4. with --detect, the regression detector over every series, as its worker process runs it.

Targets (issue 36): first parse <= 120 s, cold start <= 5 s, every callback <= 200 ms, resident
memory of the serving process <= 2 GB, the gate <= 30 s, on a 2-core machine. Exit status 1
when one is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLD_START_TARGET_S, CALLBACK_TARGET_MS, RSS_TARGET_MB = 5.0, 200.0, 2048.0
FIRST_PARSE_TARGET_S, GATE_TARGET_S = 120.0, 30.0
VERDICT_FILE = "gate-verdict.json"  # the gate step's record, which the start step's inbox renders


def _peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM, its own memory's high-water mark. Not
    ru_maxrss: Python starts a child with vfork, so at exec the child's ru_maxrss takes the
    parent's peak (a parent that had just written the 9 GB history gave every step 3.9 GB)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure_start(results: Path, cache: Path, repeat: int) -> dict:
    """In a fresh process: the cold start and every callback."""
    started, started_cpu = time.perf_counter(), time.process_time()
    from plotly.io.json import to_json_plotly

    from dashboard import app as app_module
    import dashboard.ui.facet_widgets as facet_widgets
    from dashboard.pages import compare, overview, regressions, roofline, trends
    from dashboard.pages._commit_info import commit_info
    from asv_results.safe_read import read_json

    imports_s = time.perf_counter() - started
    app = app_module.create_app(results, cache_dir=cache, detect_in_background=False)  # warms figures up
    store = app.server.config["FUSED_MLP_STORE"]
    data = store.get()
    cold_s, cold_cpu_s = time.perf_counter() - started, time.process_time() - started_cpu
    run = data.run(None, None)
    commits = run.commits["commit_hash"]
    newest, previous, oldest = commits.iloc[-1], commits.iloc[-2], commits.iloc[0]
    case = run.catalog[run.catalog["op"] == "gated_mlp"]["case"].iloc[0]
    m, e = run.machine, run.env_name
    pages = app_module.discover_pages()
    from dashboard.store.detection import FindingsState, detect

    # what the detector's worker holds for the case's series once it has run (here only those
    # series: over every one it takes minutes at this size)
    in_view = run.of_case(case, samples=False, metric="latency")["series"].unique()
    detected = FindingsState("done", time.time(), detect(data.table, in_view, data.benchmarks))
    calls = {
        "router: render Overview layout": lambda: app_module.render_page(store, pages, "/", ""),
        "router: render Trends layout": lambda: app_module.render_page(store, pages, "/trends", f"?case={case}"),
        "router: render Compare layout": lambda: app_module.render_page(store, pages, "/compare", ""),
        "overview: headline + panels + device + changes": lambda: overview.update(
            data, m, e, newest, None, None, None, None, None, None),
        "overview: filtered (bf16, gelu_tanh)": lambda: overview.update(
            data, m, e, newest, None, None, ["bf16"], ["gelu_tanh"], None, None),
        "overview: against the oldest commit": lambda: overview.update(
            data, m, e, newest, oldest, None, None, None, None, None),
        "facet counts (all filters)": lambda: facet_widgets.facet_option_lists(
            data, m, e, {"op": ["linear_act"], "dtype": ["bf16"]}),
        # served: once the detector's worker is done, its findings mark the changes (first view of a case)
        "trends: latency (the worker's findings)": lambda: trends.update(data, m, e, case, "latency", None, "commit",
                                                                         [], None, detected=detected),
        # before that (minutes after new results land at this size), the figure without marks, marked pending
        "trends: latency (while the detector runs)": lambda: trends.update(
            data, m, e, case, "latency", None, "commit", [], None, detected=FindingsState("running", time.time())),
        # the other metrics as served once the worker is done (the same series' marks)
        "trends: TFLOP/s log date": lambda: trends.update(data, m, e, case, "tflops", None, "date", ["log"], None,
                                                          detected=detected),
        "trends: roofline fraction": lambda: trends.update(data, m, e, case, "roofline", ["fused", "eager"],
                                                           "commit", [], newest, detected=detected),
        "trends: case options": lambda: trends.case_choices(run, {"op": ["linear_act"], "dtype": ["bf16"]}),
        "trends: speedup over commits": lambda: trends.update(data, m, e, case, "speedup", None, "commit", [], None),
        "overview: one mode": lambda: overview.update(data, m, e, newest, None, None, None, None, None, None,
                                                      mode=["forward"]),
        "trends: commit link": lambda: commit_info(data, m, e, None, newest),
        "compare: newest vs previous, all": lambda: compare.update(
            data, m, e, previous, newest, "latency", "1.1", [], None, None, None, None, None),
        "compare: oldest vs newest, all": lambda: compare.update(
            data, m, e, oldest, newest, "latency", "1.1", [], None, None, None, None, None),
        "compare: significant only, bf16": lambda: compare.update(
            data, m, e, oldest, newest, "latency", "1.05", ["only"], None, ["bf16"], None, None, None),
        "compare: CSV": lambda: compare.csv_text(data, m, e, oldest, newest, "latency", "1.1", [], None, None, None,
                                                 None, None),
        "roofline: newest, all": lambda: roofline.update(data, m, e, newest),
    }
    verdict, reason = read_json(cache / VERDICT_FILE, cache)  # the gate's own, measured just before
    if reason is not None:
        raise SystemExit(f"the gate's verdict is not there to render: {reason}")
    state = FindingsState("done", time.time(), [], 0.0, verdict=verdict)
    calls["regressions: inbox"] = lambda: regressions.inbox(data, state, None, "all", [])
    timings, cpu = {}, {}
    for name, fn in calls.items():
        times, cpu_times = [], []
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            to_json_plotly(fn())
            times.append((time.perf_counter() - t) * 1e3)
            cpu_times.append((time.process_time() - c) * 1e3)
        timings[name], cpu[name] = times, cpu_times
    store.close()
    return {"imports_s": imports_s, "cold_start_s": cold_s, "load_s": data.load_seconds, "rows": data.table.n_rows,
            "series": len(data.table.series), "commits": len(commits), "parsed": data.files_parsed,
            "cache_note": data.cache_note, "timings_ms": timings, "cpu_ms": cpu, "rss_mb": _peak_rss_mb(),
            "cold_start_cpu_s": cold_cpu_s}


def measure_first_start(results: Path, cache: Path) -> dict:
    """In a fresh process with an empty cache: parse every file and write the cache."""
    started = time.perf_counter()
    from dashboard.store.load_data import build_data

    data = build_data(results, cache_dir=cache)
    return {"first_start_s": time.perf_counter() - started, "parsed": data.files_parsed,
            "cache_note": data.cache_note, "rss_mb": _peak_rss_mb()}


def measure_gate(results: Path, cache: Path) -> dict:
    """In a fresh process: the gate's judgement of the folder through the server's cache, as the
    dashboard's worker records it (kept in the cache folder for the Regressions inbox's callback)."""
    started = time.perf_counter()
    from regressions.judgement import verdict_record

    record = verdict_record(results, cache_dir=cache)
    seconds = time.perf_counter() - started
    (cache / VERDICT_FILE).write_text(json.dumps(record))
    if "error" in record:
        raise SystemExit(f"the gate could not judge: {record['error']}")
    gate = record["document"]["gate"]
    return {"gate_s": seconds, "items": len(gate.get("items") or []), "failed": bool(gate.get("failed")),
            "rss_mb": _peak_rss_mb()}


def measure_detection(results: Path, cache: Path) -> dict:
    """In a fresh process: what the detector's worker does (load from the cache, detect, and the
    gate's judgement of the folder, which the pages render)."""
    started = time.perf_counter()
    from dashboard.store.detection import detect_in_worker

    findings, _ = detect_in_worker(str(results), str(cache))
    return {"detect_s": time.perf_counter() - started, "findings": len(findings), "rss_mb": _peak_rss_mb()}


def _child(step: str, results: Path, cache: Path, repeat: int, required: bool = True) -> dict | None:
    """One measurement in a fresh process; None (it said why) when it failed and is not ``required``."""
    # stderr passes through: the first parse's progress lines are what a user sees on the console
    done = subprocess.run([sys.executable, __file__, "--step", step, "--results-dir", str(results),
                           "--cache", str(cache), "--repeat", str(repeat)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if done.returncode != 0:
        if not required:
            return None
        raise SystemExit(f"{step} failed (exit {done.returncode}; its error is above)")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--series", type=int, default=10000)
    parser.add_argument("--keep", type=Path, help="write the history here and keep it (default: a temp dir)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--detect", action="store_true", help="also time the detector over every series (minutes)")
    parser.add_argument("--step", choices=("first", "start", "gate", "detect"), help=argparse.SUPPRESS)
    parser.add_argument("--results-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    if args.step:  # a child: one measurement, one JSON line
        step = {"first": lambda: measure_first_start(args.results_dir, args.cache),
                "start": lambda: measure_start(args.results_dir, args.cache, args.repeat),
                "gate": lambda: measure_gate(args.results_dir, args.cache),
                "detect": lambda: measure_detection(args.results_dir, args.cache)}[args.step]
        print(json.dumps(step()))
        return 0

    from tests.suite_fixtures import write_scale_history

    tmp = tempfile.TemporaryDirectory()
    results = args.keep or Path(tmp.name) / "results"
    if not (results / "benchmarks.json").exists():
        t = time.perf_counter()
        history = write_scale_history(results, n_commits=args.commits, n_series=args.series)
        print(f"generated {len(history.commits)} commits x {len(history.series)} series in "
              f"{time.perf_counter() - t:.0f} s into {results}")
    files = list(results.rglob("*.json"))
    load = os.getloadavg()
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files) / 1e6:,.0f} MB; cpus: {os.cpu_count()}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    cache = Path(tmp.name) / "cache"

    first = _child("first", results, cache, args.repeat)
    ok_first = first["first_start_s"] <= FIRST_PARSE_TARGET_S
    print(f"first start (empty cache: parse {first['parsed']} files, write the cache): {first['first_start_s']:.1f} s, "
          f"peak RSS {first['rss_mb']:,.0f} MB{'; ' + first['cache_note'] if first['cache_note'] else ''} "
          f"target <= {FIRST_PARSE_TARGET_S:.0f} s: {'OK' if ok_first else 'MISSED'}")
    started = time.perf_counter()
    gate = _child("gate", results, cache, args.repeat, required=False)  # the pages still render without it
    ok_gate = gate is not None and gate["gate_s"] <= GATE_TARGET_S
    if gate is None:
        gate = {"gate_s": time.perf_counter() - started}
        (cache / VERDICT_FILE).write_text(json.dumps({"error": "the gate did not finish"}))
        print(f"the gate through the cache: did not finish ({gate['gate_s']:.0f} s); target <= {GATE_TARGET_S:.0f} s: "
              "MISSED")
    else:
        print(f"the gate through the cache: {gate['gate_s']:.1f} s ({gate['items']} items, "
              f"{'FAIL' if gate['failed'] else 'PASS'}), peak RSS {gate['rss_mb']:,.0f} MB; target <= "
              f"{GATE_TARGET_S:.0f} s: {'OK' if ok_gate else 'MISSED'}")
    start = _child("start", results, cache, args.repeat)
    ok_start = start["cold_start_s"] <= COLD_START_TARGET_S
    print(f"cold start with the cache: {start['cold_start_s']:.2f} s (imports {start['imports_s']:.2f} s, load "
          f"{start['load_s']:.2f} s; {start['rows']:,} points, {start['series']:,} series, "
          f"{start['commits']:,} commits, {start['parsed']} files parsed) target <= {COLD_START_TARGET_S} s: "
          f"{'OK' if ok_start else 'MISSED'}")
    print(f"  (CPU time of that process meanwhile: {start['cold_start_cpu_s']:.2f} s; a wall time well above it means "
          "the machine was busy with other work)")
    print(f"\ncallback bodies + JSON encoding, {args.repeat} calls each, wall ms: first / median / max "
          "(CPU ms: first / max)")
    worst = 0.0
    for name, times in start["timings_ms"].items():
        worst = max(worst, max(times))
        cpu = start["cpu_ms"][name]
        flag = "OK" if max(times) <= CALLBACK_TARGET_MS else "MISSED"
        print(f"  {name:<48} {times[0]:7.1f} {sorted(times)[len(times) // 2]:7.1f} {max(times):7.1f}  {flag:<6}"
              f" ({cpu[0]:6.1f} {max(cpu):6.1f})")
    ok_rss = start["rss_mb"] <= RSS_TARGET_MB
    print(f"\npeak resident memory of the serving process: {start['rss_mb']:,.0f} MB "
          f"(target <= {RSS_TARGET_MB:,.0f} MB: {'OK' if ok_rss else 'MISSED'})")
    if args.detect:
        det = _child("detect", results, cache, args.repeat)
        print(f"regression detection over every series (once per results set, in its worker process): "
              f"{det['detect_s']:.0f} s, {det['findings']} findings, worker peak RSS {det['rss_mb']:,.0f} MB")
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"summary: first parse {first['first_start_s']:.0f} s (target {FIRST_PARSE_TARGET_S:.0f} s); cold start "
          f"{start['cold_start_s']:.2f} s (target {COLD_START_TARGET_S} s); slowest callback {worst:.0f} ms (target "
          f"{CALLBACK_TARGET_MS:.0f} ms); peak RSS {start['rss_mb']:,.0f} MB (target {RSS_TARGET_MB:,.0f} MB); gate "
          f"{gate['gate_s']:.1f} s (target {GATE_TARGET_S:.0f} s)")
    tmp.cleanup()
    return 0 if ok_first and ok_start and worst <= CALLBACK_TARGET_MS and ok_rss and ok_gate else 1


if __name__ == "__main__":
    sys.exit(main())
