"""Measure the gate's classification and its A/B re-run on synthetic histories where a step is
the library's (only the fused series moves), the environment's (the eager and torch.compile
controls move too) or nothing (plain noise, or a bimodal runner).

    python tools/measure_classification.py --seeds 21 22 --reps 200

Written with dashboard.synthetic.asv_history in asv's exact format (15 samples per commit, 1-3 %
run noise per series, slow first samples) and read back with asv_results.data. Per case a fused
series and its two controls; planted at commit STEP_AT: library 5 %, 10 %, 20 % (fused only);
environment 10 %, 20 % (all three, each control by the step times 0.7-1.3); nothing; a bimodal
runner (each run of each series lands 6 % high with probability 0.3).

The first verdict is the real gate's (find_changes, judge) on the fused series, at each commit
STEP_AT .. STEP_AT + 3 as CI runs it on each push, each finding classified by the gate's own
classify.series_class (noise model, covariate test) on that case's arrays. The re-run is
SIMULATED: for each candidate (rerun_candidates.is_candidate) ROUNDS A B pairs are drawn from the
same noise model with the within-session noise assumed: per round a run offset of
--session-share times the series' run-to-run sigma (default 0.5; not measured on a GPU here)
and the median of 15 samples; a bimodal runner stays bimodal in the session; an environment
change is in place at both sides. It is judged by rerun_judgement.judge_rerun and merged by
rerun_verdict.with_reruns, as the gate does. Each case is judged as its own push (the cap of 5
re-runs a push is not simulated; the re-runs per 1,000 clean case-commits say what it costs, and
the lines after the table scale them to --fused-series series a push). A series below the
detector's bar is re-run when the re-run's screen picks it (rerun_screen.screen, on the case's
fused series and its controls as the gate sees them).
Rates carry 95 % Wilson intervals.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import binom, binomtest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from asv_results.data import STATUS_OK

from asv_results.loading import load_results
from regressions import find_changes, judge
from regressions.classify import LIBRARY, series_class
from regressions.findings import Finding
from regressions.gate import REGRESSION_ITEM, SUSPECTED
from regressions.rerun_candidates import AT_MOST, SECONDS_EACH, is_candidate
from regressions.rerun_screen import screen
from regressions.rerun_verdict import Rerun, with_reruns
from dashboard.synthetic.asv_history import SeriesSpec, write_history

BENCH = "bench_ops.LinearAct.track_latency"
STEP_AT = 36
JUDGED_AFTER = 3  # the gate runs at STEP_AT .. STEP_AT + JUDGED_AFTER
IMPLS = ("fused", "eager", "compile")
ROWS = (("library", 0.05), ("library", 0.10), ("library", 0.20), ("environment", 0.10), ("environment", 0.20),
        ("clean", 0.0), ("bimodal", 0.0))
BIMODAL = (0.06, 0.3)  # a run lands this much high with this probability
ROUNDS = 4  # A B pairs in a simulated re-run
SAMPLES = 15
SAMPLE_NOISE = 0.02  # asv_history's default


@dataclass
class Case:
    kind: str
    size: float
    noise: dict  # impl -> run sigma
    steps: dict  # impl -> relative step at STEP_AT
    logs: np.ndarray  # (3, n_commits) log values, IMPLS order


def build(reps: int, rng: np.random.Generator) -> tuple[list[SeriesSpec], dict[str, Case]]:
    specs, cases = [], {}
    names = ("case", "impl")
    for kind, size in ROWS:
        for r in range(reps):
            key = f"linear_act M={r + 1} K=64 N=64 bf16 {kind} {size:.2f}"
            noise, steps = {}, {}
            for impl in IMPLS:
                noise[impl] = float(rng.uniform(0.01, 0.03))
                moved = size if impl == "fused" and kind in ("library", "environment") else 0.0
                if impl != "fused" and kind == "environment":
                    moved = size * float(rng.uniform(0.7, 1.3))
                steps[impl] = moved
                specs.append(SeriesSpec(BENCH, (key, impl), names, steps=((STEP_AT, moved),) if moved else (),
                                        run_noise=noise[impl], bimodal=BIMODAL if kind == "bimodal" else None))
            cases[key] = Case(kind, size, noise, steps, np.empty(0))
    return specs, cases


def case_of(params: str) -> str:
    return params.split("case='", 1)[1].split("'", 1)[0]


def simulated_rerun(case: Case, finding: Finding, index: dict, rng, share: float) -> Rerun:
    """ROUNDS interleaved A B pairs at the commit before the change's first plausible one (A) and
    the series' newest (B), as rerun_candidates chooses them."""
    rounds = []
    a, b = index[finding.before_earliest or finding.previous_commit], index[finding.series_last_commit]
    for _ in range(ROUNDS):
        for side, at in (("A", a), ("B", b)):
            values = {}
            for impl in IMPLS:
                step = case.steps[impl]
                # an environment change is the runner's: in place for both sides of the session
                level = 1 + step if step and (case.kind == "environment" or at >= STEP_AT) else 1.0
                run = math.exp(rng.normal(0, share * case.noise[impl]))
                if case.kind == "bimodal" and rng.random() < BIMODAL[1]:
                    run *= 1 + BIMODAL[0]
                samples = run * np.exp(rng.normal(0, SAMPLE_NOISE, SAMPLES))
                values[impl] = 1e-4 * level * float(np.median(samples))
            rounds.append({"side": side, "values": values})
    return Rerun(finding.benchmark, finding.params, finding.machine, finding.commit_hash,
                 finding.before_earliest or finding.previous_commit, finding.series_last_commit, tuple(rounds), "")


def classified(item, case: Case, index: dict, k: int):
    """The item with the gate's class (classified_verdict's rule: a non-library one moves to its class)."""
    f = item.change
    logs = case.logs[:, :k + 1]
    low, high = index[f.earliest_commit or f.commit_hash], index[f.latest_commit or f.commit_hash]
    kind = series_class(logs[0], logs[1:], np.arange(low), np.arange(high, k + 1), math.log(f.after / f.before))
    kind = kind if kind in ("environment", LIBRARY) else "noise"
    return replace(item, category=item.category if kind == LIBRARY else kind), kind


def measure(seed: int, reps: int, n_commits: int, share: float) -> dict:
    rng = np.random.default_rng(seed)
    specs, cases = build(reps, rng)
    with tempfile.TemporaryDirectory() as tmp:
        history = write_history(Path(tmp) / "results", specs, n_commits, seed=seed, n_samples=SAMPLES)
        frame = load_results(history.results_dir).frame
    index = {c: i for i, c in enumerate(history.commits)}
    ok = frame[frame["status"] == STATUS_OK]
    for (key, impl), g in ok.groupby([ok["params_key"].astype(str).map(case_of),
                                      ok["params_key"].astype(str).str.extract(r"impl='(\w+)'")[0]]):
        if impl in IMPLS:
            case = cases[key]
            if not case.logs.size:
                case.logs = np.full((3, n_commits), np.nan)
            case.logs[IMPLS.index(impl), g["commit_hash"].astype(str).map(index).to_numpy()] = np.log(g["value"])
    fused = frame[frame["params_key"].astype(str).str.contains("impl='fused'")]
    dates = fused.groupby(fused["commit_hash"].astype(str))["date"].min()
    first = {"own": set(), "within": set()}
    final = {"own": set(), "within": set()}
    clean_fail = defaultdict(lambda: [0, 0])  # kind -> [first, final] failures at judged case-commits
    reruns = defaultdict(int)
    rerun_rng = np.random.default_rng(seed + 1_000_003)
    for k in range(STEP_AT, STEP_AT + JUDGED_AFTER + 1):
        cut = fused[fused["date"] <= dates[history.commits[k]]]
        verdict = judge(cut, find_changes(cut), [])
        whole = frame[frame["date"] <= dates[history.commits[k]]]
        judged = set(verdict.runs[0].commits)
        items, runs = [], []
        for item in verdict.items:
            if item.category in (REGRESSION_ITEM, SUSPECTED) and isinstance(item.change, Finding):
                case = cases[case_of(item.change.params)]
                item, _ = classified(item, case, index, k)
                if is_candidate(item.category, item.change.confirmed, item.change.params,
                                item.change.series_last_commit in judged):
                    runs.append(simulated_rerun(case, item.change, index, rerun_rng, share))
                    reruns[case.kind] += 1
            items.append(item)
        first_v = replace(verdict, items=items)
        first_v.screened = screen(whole, first_v)
        for finding, _ in first_v.screened:
            case = cases[case_of(finding.params)]
            runs.append(simulated_rerun(case, finding, index, rerun_rng, share))
            reruns[case.kind] += 1
        final_v = with_reruns(first_v, runs, 0.05)
        for name, v, got in (("first", first_v, first), ("final", final_v, final)):
            for item in v.failing:
                key = case_of(item.change.params)
                got["within"].add(key)
                if k == STEP_AT:
                    got["own"].add(key)
                if cases[key].kind in ("clean", "bimodal"):
                    clean_fail[cases[key].kind][name == "final"] += 1
    out = {}
    for kind, size in ROWS:
        keys = [c for c, v in cases.items() if (v.kind, v.size) == (kind, size)]
        if kind in ("clean", "bimodal"):
            n = len(keys) * (JUDGED_AFTER + 1)
            out[(kind, size)] = {"first": (clean_fail[kind][0], n), "final": (clean_fail[kind][1], n),
                                 "reruns": (reruns[kind], n)}
        else:
            out[(kind, size)] = {f"{name} {when}": (sum(c in got[when] for c in keys), len(keys))
                                 for name, got in (("first", first), ("final", final)) for when in ("own", "within")}
    return out


def rate(hits: int, n: int) -> str:
    ci = binomtest(hits, n).proportion_ci(method="wilson")
    return f"{hits / n:.1%} [{ci.low:.1%}, {ci.high:.1%}]"


def per_1000(hits: int, n: int) -> str:
    ci = binomtest(hits, n).proportion_ci(method="wilson")
    return f"{1000 * hits / n:.2f} [{1000 * ci.low:.2f}, {1000 * ci.high:.2f}]"


def table(seed: int, rows: dict, reps: int, share: float) -> list[str]:
    lines = [f"seed {seed}, {reps} cases per row; the gate at commits {STEP_AT}..{STEP_AT + JUDGED_AFTER}; re-run "
             f"SIMULATED ({ROUNDS} A B pairs, within-session run noise {share:g} x the history's, 95 % Wilson intervals)",
             "| planted | first verdict | with the re-run |", "| --- | --- | --- |"]
    for (kind, size), r in rows.items():
        if kind == "library":
            lines.append(f"| library {size:.0%}: fails at its own commit | {rate(*r['first own'])} | "
                         f"{rate(*r['final own'])} |")
            lines.append(f"| library {size:.0%}: fails within 3 commits | {rate(*r['first within'])} | "
                         f"{rate(*r['final within'])} |")
        elif kind == "environment":
            lines.append(f"| environment {size:.0%}: wrongly blamed on the library | {rate(*r['first within'])} | "
                         f"{rate(*r['final within'])} |")
        else:
            what = "nothing planted" if kind == "clean" else "bimodal runner"
            lines.append(f"| {what}: false failures per 1,000 judged case-commits | {per_1000(*r['first'])} | "
                         f"{per_1000(*r['final'])} |")
            lines.append(f"| {what}: re-runs per 1,000 judged case-commits | | {per_1000(*r['reruns'])} |")
    return lines


def push_cost(rows: dict, series: int) -> list[str]:
    """Re-runs a push would ask for with ``series`` fused timing series, each screened and
    judged like a case here (independently): the mean, and how often the cap of AT_MOST binds."""
    lines = []
    for (kind, _), r in rows.items():
        if kind in ("clean", "bimodal"):
            hits, n = r["reruns"]
            p = hits / n
            lines.append(f"{'clean' if kind == 'clean' else 'bimodal runner'} history, {series} fused series: "
                         f"{series * p:.1f} re-runs asked for a push (at most {series * p * SECONDS_EACH / 60:.1f} GPU-minutes at "
                         f"{SECONDS_EACH} s each); more than {AT_MOST} asked for at {binom.sf(AT_MOST, series, p):.0%} "
                         "of pushes (the cap re-runs the top ones)")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--reps", type=int, default=100, help="cases per row")
    p.add_argument("--commits", type=int, default=STEP_AT + JUDGED_AFTER + 5)
    p.add_argument("--session-share", type=float, default=0.5,
                   help="within-session run noise as a share of the history's run-to-run noise (assumed)")
    p.add_argument("--fused-series", type=int, default=31,
                   help="fused timing series a push judges (the default grid's: 31, see docs/regression-gate.md)")
    args = p.parse_args(argv)
    if args.fused_series < 1:
        p.error("--fused-series must be >= 1")
    if args.reps < 1 or args.commits <= STEP_AT + JUDGED_AFTER or not 0 <= args.session_share <= 1:
        p.error(f"--reps must be >= 1, --commits > {STEP_AT + JUDGED_AFTER}, --session-share in [0, 1]")
    for seed in args.seeds:
        start = time.process_time()
        rows = measure(seed, args.reps, args.commits, args.session_share)
        print("\n".join(table(seed, rows, args.reps, args.session_share) + push_cost(rows, args.fused_series)))
        print(f"({time.process_time() - start:.0f} s CPU)\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
