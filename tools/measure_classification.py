"""Measure the controls classification: the gate with and without it, on synthetic histories
where a step is the library's (only the fused series moves) or the environment's (the eager and
torch.compile controls move too, as a driver or machine change moves them).

    python tools/measure_classification.py [--seed 0] [--reps 100] [--commits 44]

Written with tests/asv_fixtures.py in asv's exact format (15 samples per commit, 1-3 % run
noise per series, slow first samples) and read back with dashboard.data like any results
folder. Per case: a fused series and its two controls (impl eager, compile). Planted at commit
``STEP_AT``, regressions of 10 % and 20 %:
- library: the fused series only;
- environment: all three; each control by the same step times a factor drawn from 0.7-1.3
  (a driver or clock change does not move every implementation equally).
Clean cases (nothing planted) give the false failures per 1,000 judged commits.

The real gate (find_changes, judge) judges the newest commit at each of the commits STEP_AT ..
STEP_AT + 3, as CI runs it on each push; "today's gate" fails on any regression
(``--fail-on all``), the classified one on library findings only (the default). Reported: the
share of library steps that fail within those commits (a miss otherwise) and of environment
steps that fail (blamed on the library: a wrong blame).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from dashboard.data import load_results
from dashboard.regressions import find_changes, judge
from dashboard.regressions.classify import LIBRARY, classified_verdict
from tests.asv_fixtures import SeriesSpec, write_history

BENCH = "bench_ops.LinearAct.track_latency"
STEP_AT = 36
JUDGED_AFTER = 3  # the gate runs at STEP_AT .. STEP_AT + JUDGED_AFTER
SIZES = (0.10, 0.20)
KINDS = ("library", "environment", "clean")


def build(reps: int, rng: np.random.Generator) -> tuple[list[SeriesSpec], dict[str, tuple[str, float]]]:
    """The series, and per case key what was planted there: (kind, size)."""
    specs, truth = [], {}
    names = ("case", "impl")
    for kind in KINDS:
        for size in (SIZES if kind != "clean" else (0.0,)):
            for r in range(reps):
                case = f"linear_act M={r + 1} K=64 N=64 bf16 {kind} {size:.2f}"
                truth[case] = (kind, size)
                fused = ((STEP_AT, size),) if size else ()
                specs.append(SeriesSpec(BENCH, (case, "fused"), names, steps=fused,
                                        run_noise=float(rng.uniform(0.01, 0.03))))
                for impl in ("eager", "compile"):
                    moved = ((STEP_AT, size * float(rng.uniform(0.7, 1.3))),) if kind == "environment" else ()
                    specs.append(SeriesSpec(BENCH, (case, impl), names, steps=moved,
                                            run_noise=float(rng.uniform(0.01, 0.03))))
    return specs, truth


def case_of(params: str) -> str:
    return params.split("case='", 1)[1].split("'", 1)[0]


def measure(seed: int, reps: int, n_commits: int) -> dict:
    rng = np.random.default_rng(seed)
    specs, truth = build(reps, rng)
    with tempfile.TemporaryDirectory() as tmp:
        history = write_history(Path(tmp) / "results", specs, n_commits, seed=seed, n_samples=15)
        frame = load_results(history.results_dir).frame
    dates = frame.groupby(frame["commit_hash"].astype(str))["date"].min()
    failed = {"today": defaultdict(bool), "classified": defaultdict(bool)}
    clean_failures = {"today": 0, "classified": 0}
    judged = 0
    for k in range(STEP_AT, STEP_AT + JUDGED_AFTER + 1):
        cut = frame[frame["date"] <= dates[history.commits[k]]]
        verdict = judge(cut, find_changes(cut), [])
        for name, v in (("today", classified_verdict(verdict, cut, {}, fail_on="all")),
                        ("classified", classified_verdict(verdict, cut, {}, fail_on=LIBRARY))):
            cases = {case_of(i.change.params) for i in v.failing}
            for case in cases:
                failed[name][case] = True
                if truth[case][0] == "clean":
                    clean_failures[name] += 1
        judged += 1
    n_clean = sum(1 for kind, _ in truth.values() if kind == "clean")
    rows = {}
    for kind in ("library", "environment"):
        for size in SIZES:
            cases = [c for c, t in truth.items() if t == (kind, size)]
            rows[(kind, size)] = {name: sum(failed[name][c] for c in cases) / len(cases) for name in failed}
    rows["clean"] = {name: 1000 * clean_failures[name] / (n_clean * judged) for name in failed}
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reps", type=int, default=100, help="cases per kind and size")
    p.add_argument("--commits", type=int, default=STEP_AT + JUDGED_AFTER + 5)
    args = p.parse_args(argv)
    if args.reps < 1 or args.commits <= STEP_AT + JUDGED_AFTER:
        p.error(f"--reps must be >= 1 and --commits > {STEP_AT + JUDGED_AFTER}")
    rows = measure(args.seed, args.reps, args.commits)
    print(f"seed {args.seed}, {args.reps} cases per row; the gate at commits {STEP_AT}..{STEP_AT + JUDGED_AFTER}")
    print("| planted | today's gate (--fail-on all) | classified gate (default) |")
    print("| --- | --- | --- |")
    for size in SIZES:
        r = rows[("library", size)]
        print(f"| library step {size:.0%}: fails (misses = 100 % - this) | {r['today']:.1%} | {r['classified']:.1%} |")
    for size in SIZES:
        r = rows[("environment", size)]
        print(f"| environment step {size:.0%}: fails (wrongly blamed on the library) | {r['today']:.1%} | "
              f"{r['classified']:.1%} |")
    r = rows["clean"]
    print(f"| nothing planted: false failures per 1,000 judged case-commits | {r['today']:.2f} | {r['classified']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
