"""The per-commit gate measured as CI uses it: run at every commit of growing histories, judging
the newest commit (python -m regressions with no --base), against asv continuous's
rule on the same data. Used by tools/measure_regression_detection.py (section "CI gate").

What is written (tests/asv_fixtures.py, asv's exact format, 15 samples per commit, read back
with asv_results.data like any results folder), once per noise condition:
- steps of 10 % and 20 % at commit ``STEP_AT`` (40 commits of history before them), regressions
  and improvements, on a lower-is-better (seconds) and a higher-is-better (TFLOP/s) metric;
- series where nothing changes: plain noise and bimodal runs (a run lands 6 % higher with
  probability 0.3).
Noise: commit-to-commit jitter drawn per series from 1-3 %, 2 % jitter of the samples within a
run, slow first samples; the second condition adds asv-like slow runs (2 % of runs 15-50 % slow).

At every history length from ``GATE_FROM`` commits on, the real gate (regressions.gate
on the frame cut at that commit) judges the newest commit. Reported per detector:
- for planted regressions: the share whose gate fails at the commit of the step itself, within
  1, 3 and 10 commits after it, and the time to detection (commits after the step until the
  gate first fails);
- false gate failures per 1,000 judged commits of series where nothing changed, and of
  improvement series (a gate must not fail on an improvement).
asv continuous's rule: ``_is_result_better(previous, newest, ...)`` on the two newest commits'
values, samples and stats (asv compare's code), in the metric's worse direction (asv itself treats
every metric as lower-is-better), at factor 1 + threshold and at asv's default factor 1.1.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from asv.commands.compare import _is_result_better

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from asv_results.loading import load_results
from regressions import find_changes, find_status_changes, judge, metric_direction
from regressions.direction import HIGHER
from regressions.gate import REGRESSION_ITEM, SUSPECTED
from regressions.statistics import DetectorSettings
from asv_results.worker_processes import process_pool
from tests.asv_fixtures import SeriesSpec, params_key, write_history

STEP_SIZES = (0.10, 0.20)
STEP_AT = 40
MAX_DELAY = 10
N_COMMITS = STEP_AT + MAX_DELAY + 1
GATE_FROM = 12
N_SAMPLES = 15
METRICS = (("bench_gate.Latency.track_latency", "seconds", False, 1e-4),
           ("bench_gate.Throughput.track_tflops", "TFLOP/s", True, 300.0))
CONDITIONS = {"1-3 % noise, no slow runs": 0.0, "1-3 % noise + 2 % slow runs (15-50 %)": 0.02}
GATES = ("ours", "ours --strict", "asv continuous, factor 1.05", "asv continuous, factor 1.1 (its default)")


def build_series(reps: int, clean_reps: int, outlier_prob: float, rng: np.random.Generator) -> list[SeriesSpec]:
    specs, labels = [], []
    case = 0
    for name, unit, higher, base in METRICS:
        def add(label, **kw):
            nonlocal case
            specs.append(SeriesSpec(
                benchmark=name, params=(case,), param_names=("case",), unit=unit, higher_is_better=higher,
                base=base * float(rng.uniform(0.5, 2.0)), run_noise=float(rng.uniform(0.01, 0.03)),
                sample_noise=0.02, outlier_prob=outlier_prob, **kw))
            labels.append(label)
            case += 1

        for size in STEP_SIZES:
            for sign in (1, -1):
                worse = (sign < 0) if higher else (sign > 0)
                for _ in range(reps):
                    add(("regression" if worse else "improvement", size), steps=((STEP_AT, sign * size),))
        for _ in range(clean_reps):
            add(("noise", 0.0))
        for _ in range(max(1, clean_reps // 5)):
            add(("bimodal", 0.0), bimodal=(0.06, 0.3))
    return specs, labels


def _judge_prefix(job) -> dict:
    """Which series fail each gate when the history ends at commit n - 1."""
    frame, n, commits, threshold = job
    cut = frame[frame["commit_hash"].isin(commits[:n])]
    settings = DetectorSettings(threshold=threshold)
    findings = find_changes(cut, settings)
    verdict = judge(cut, findings, find_status_changes(cut), settings)
    series = lambda item: (item.change.benchmark, item.change.params)  # noqa: E731
    out = {"ours": {series(i) for i in verdict.of(REGRESSION_ITEM)}}
    out["ours --strict"] = out["ours"] | {series(i) for i in verdict.of(SUSPECTED)}
    newest, previous = commits[n - 1], commits[n - 2]
    rows = cut[cut["commit_hash"].isin([previous, newest])]
    for factor, name in ((1 + threshold, GATES[2]), (1.1, GATES[3])):
        out[name] = {key for key, group in rows.groupby(["benchmark", "params_key"], observed=True)
                     if _asv_continuous_flags(group, previous, newest, factor)}
    return n, out


def _asv_continuous_flags(group: pd.DataFrame, previous: str, newest: str, factor: float) -> bool:
    by_commit = {str(r["commit_hash"]): r for _, r in group.iterrows()}
    if previous not in by_commit or newest not in by_commit:
        return False
    a, b = by_commit[previous], by_commit[newest]
    higher = metric_direction(str(a["benchmark"]), a["unit"] if isinstance(a["unit"], str) else None) == HIGHER

    def ss(r):
        return ({"ci_99_a": r["ci_99_a"], "ci_99_b": r["ci_99_b"], "repeat": r["repeat"]}, r["samples"])

    if higher:  # worse = lower: the newest is "better" than the previous in asv's lower-is-better sense
        return bool(_is_result_better(b["value"], a["value"], ss(b), ss(a), factor))
    return bool(_is_result_better(a["value"], b["value"], ss(a), ss(b), factor))


def measure(reps: int, clean_reps: int, seed: int, jobs: int, threshold: float = 0.05) -> str:
    out = []
    for c, (condition, outlier_prob) in enumerate(CONDITIONS.items()):
        rng = np.random.default_rng(seed * 100 + c)
        specs, labels = build_series(reps, clean_reps, outlier_prob, rng)
        with tempfile.TemporaryDirectory() as tmp:
            history = write_history(Path(tmp) / "results", specs, N_COMMITS, seed=seed * 100 + c, n_samples=N_SAMPLES)
            loaded = load_results(history.results_dir)
        if not loaded.load_report.ok:
            raise SystemExit(f"generated results did not load cleanly: {loaded.load_report.lines()[:5]}")
        frame = loaded.frame
        frame = frame.assign(commit_hash=frame["commit_hash"].astype(str), benchmark=frame["benchmark"].astype(str),
                             params_key=frame["params_key"].astype(str))
        label_of = {(s.benchmark, params_key(("case",), (repr(s.params[0]),))): lab for s, lab in zip(specs, labels)}
        prefixes = range(GATE_FROM, N_COMMITS + 1)
        with process_pool(jobs) as pool:
            failing = dict(pool.map(_judge_prefix, [(frame, n, history.commits, threshold) for n in prefixes]))
        out.append(_table(condition, label_of, failing, prefixes))
    return "\n\n".join(out)


def _table(condition: str, label_of: dict, failing: dict, prefixes) -> str:
    lines = [f"### {condition}; {N_SAMPLES} samples per commit", "",
             "| | " + " | ".join(GATES) + " |", "|" + " --- |" * (len(GATES) + 1)]

    def row(label, cells):
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for size in STEP_SIZES:
        series = [k for k, lab in label_of.items() if lab == ("regression", size)]
        delays = {g: [] for g in GATES}
        for key in series:
            for g in GATES:
                hit = next((d for d in range(MAX_DELAY + 1) if key in failing[STEP_AT + 1 + d][g]), None)
                delays[g].append(hit)
        for within, text in ((0, "at the commit itself"), (1, "within 1 commit"), (3, "within 3 commits"),
                             (MAX_DELAY, f"within {MAX_DELAY} commits")):
            row(f"{size:.0%} regressions: gate fails {text}",
                [_share(sum(d is not None and d <= within for d in delays[g]), len(series)) for g in GATES])
        row(f"{size:.0%} regressions: commits until the gate fails (median, p90; never = later than {MAX_DELAY})",
            [_delay(delays[g]) for g in GATES])
    for kind, text in (("noise", "nothing changed (noise)"), ("bimodal", "nothing changed (bimodal runs)"),
                       ("improvement", "improvement steps (10 %, 20 %), every judged commit")):
        series = [k for k, lab in label_of.items() if lab[0] == kind]
        judged = len(series) * len(prefixes)
        if not judged:
            continue
        cells = []
        for g in GATES:
            fails = sum(key in failing[n][g] for n in prefixes for key in series)
            cells.append(f"{1000 * fails / judged:.2f} ({fails} of {judged:,})")
        row(f"false gate failures per 1,000 judged commits, {text}", cells)
    return "\n".join(lines)


def _share(hits: int, total: int) -> str:
    return f"{hits / total:.3f} ({hits}/{total})" if total else "-"


def _delay(delays: list) -> str:
    known = sorted(d for d in delays if d is not None)
    never = len(delays) - len(known)
    if not known:
        return f"never ({never})"
    text = f"median {np.median(known):.0f}, p90 {np.percentile(known, 90):.0f}"
    return text + (f", never: {never}" if never else "")


if __name__ == "__main__":  # this section alone: python tools/gate_measurement.py [seed] [reps] [clean_reps]
    seed, reps, clean = (int(a) for a in (sys.argv[1:] + ["1", "10", "20"][len(sys.argv) - 1:])[:3])
    sys.exit(print(measure(reps=reps, clean_reps=clean, seed=seed, jobs=2)))
