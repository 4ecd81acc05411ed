"""Measure the regression detector against asv's own, on synthetic histories with planted changes.

    python tools/measure_regression_detection.py [--seed 0] [--reps 25] [--commits 60] [--jobs 2]
        [--gate-reps 25] [--gate-clean-reps 100] [--only-gate]

What is planted (tests/asv_fixtures.py writes it in asv's exact result format; it is then
read back with asv_results.data like any results directory):
- steps of 2, 5, 10 and 20 %, up and down, on a lower-is-better metric (seconds) and a
  higher-is-better one (TFLOP/s), ``--reps`` series each, at a random commit in the
  second half of the history;
- noise everywhere: commit-to-commit jitter drawn per series from 1-3 %, 2 % jitter of
  the samples within a run, 2 % of runs 15-50 % slow (outliers), slow first samples;
- series with no change: plain noise, bimodal (a run lands 6 % higher with
  probability 0.3), and a gradual drift (+-10 % spread over 20 commits).

Scored per detector, under three matching rules (``RULES``): a planted change counts as
found when the detector reports it in the right direction within +-2 commits; or within
the report's own position interval (widened to +-2); or within +-5 commits, the margin of
the Turing change point benchmark (TCPDBench, van den Burg & Williams 2020,
analysis/scripts/metrics.py ``true_positives(margin=5)``). Per rule: recall per step size,
false alarms per 1,000 series x commits (reports that match nothing planted, in any series),
split into *misplaced* reports (a real change in that direction lies within 5 commits or
the report's interval, or the report repeats one already matched) and reports with nothing
changed nearby (crying wolf); reports with the wrong direction; and the delay: how many
commits after the change the detector first reports it when run on the history as it
grows (0 = at the commit itself).

The CI gate section (tools/gate_measurement.py): the real gate run at every commit of growing
histories with 15 samples per commit, judging the newest commit as CI does; for 10 % and 20 %
regressions at a commit, how often it fails at that commit and the commits until it fails; false
gate failures per 1,000 judged commits where nothing changed; beside asv continuous's rule on
the same data.

A small change under noise cannot always be placed to the commit. The *oracle* row says
how often the best single split of the whole series (an oracle that knows there is exactly
one change) places a planted step more than +-2 commits off: under the +-2 rule each such
step is a miss plus a false alarm for a detector that reports it where the data put it.

asv's detector is what ``asv publish`` runs: ``step_detect.detect_steps(values, weights)``
with weights 2/|ci_99_b - ci_99_a|, then ``detect_regressions(steps, threshold=0.05)``. It
treats every metric as lower-is-better and reports only regressions still present.

Develop on seeds other than the one you report (e.g. 1-3) and report seed 0 plus another
held-out seed: the detector's settings must not be tuned on the seeds it is judged on.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from asv import step_detect  # noqa: E402

from asv_results.loading import load_results  # noqa: E402
from regressions import (  # noqa: E402
    HIGHER, IMPROVEMENT, REGRESSION, DetectorSettings, best_split, change_interval, detect_changes, metric_direction,
)
from asv_results.worker_processes import process_pool  # noqa: E402
from tests.asv_fixtures import SeriesSpec, params_key, write_history  # noqa: E402
from tools import gate_measurement  # noqa: E402

STEP_SIZES = (0.02, 0.05, 0.10, 0.20)
METRICS = (("bench_synth.Latency.track_latency", "seconds", False, 1e-4),
           ("bench_synth.Throughput.track_tflops", "TFLOP/s", True, 300.0))
TOLERANCE = 2  # commits either side of the planted one
NEARBY = 5  # an unmatched report this close to a real change in its direction is misplaced
MAX_DELAY = 10  # commits after the change searched for the first report
THRESHOLD = 0.05


@dataclass(frozen=True)
class Detection:
    index: int
    direction: str
    low: int = -1  # plausible positions [low, high] (change_interval); -1: unknown
    high: int = -1
    present: bool = True  # still there at the newest commit (asv publish lists only those)


def build_series(reps: int, n_commits: int, rng: np.random.Generator) -> list[SeriesSpec]:
    specs: list[SeriesSpec] = []

    def add(name, unit, higher, base, case, **kw):
        specs.append(SeriesSpec(
            benchmark=name, params=(case,), param_names=("case",), unit=unit, higher_is_better=higher,
            base=base * float(rng.uniform(0.5, 2.0)), run_noise=float(rng.uniform(0.01, 0.03)),
            sample_noise=0.02, outlier_prob=0.02, **kw))

    case = 0
    for name, unit, higher, base in METRICS:
        for size in STEP_SIZES:
            for sign in (1, -1):
                for _ in range(reps):
                    at = int(rng.integers(n_commits // 3, n_commits - MAX_DELAY - 1))
                    add(name, unit, higher, base, case, steps=((at, sign * size),))
                    case += 1
        for _ in range(6 * reps):
            add(name, unit, higher, base, case)
            case += 1
        for _ in range(reps):
            add(name, unit, higher, base, case, bimodal=(0.06, 0.3))
            case += 1
        for _ in range(reps):
            start = int(rng.integers(n_commits // 4, n_commits - 25))
            add(name, unit, higher, base, case, drift=(start, start + 19, float(rng.choice([0.1, -0.1]))))
            case += 1
    return specs


def ours(values, ci_a, ci_b, samples, better) -> list[Detection]:
    changes = detect_changes(values, DetectorSettings(threshold=THRESHOLD), ci_a, ci_b, samples)
    out = []
    for c in changes:
        worse = c.relative_change < 0 if better == HIGHER else c.relative_change > 0
        out.append(Detection(c.index, REGRESSION if worse else IMPROVEMENT, c.index_low, c.index_high,
                             c.present_at_newest))
    return out


def asv_publish(values, ci_a, ci_b, samples, better) -> list[Detection]:
    """asv publish's pipeline; every reported jump is a 'regression' (asv has no direction)."""
    with np.errstate(divide="ignore"):
        w = 2.0 / np.abs(np.asarray(ci_b) - np.asarray(ci_a))
    weights = [float(v) if np.isfinite(v) and v > 0 else None for v in w]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steps = step_detect.detect_steps(list(map(float, values)), weights)
        _, _, jumps = step_detect.detect_regressions(steps, threshold=THRESHOLD)
    at = sorted(after for _, after, _, _ in (jumps or []))
    return _with_intervals(values, [Detection(k, REGRESSION) for k in at])


def _with_intervals(values, found: list[Detection]) -> list[Detection]:
    """The same interval rule as detect_changes applies to its own changes: the positions
    whose one-change fit is within the likelihood-ratio cut of the best, between the
    detector's neighbouring reports, on log values."""
    y = np.asarray(values, dtype=float)
    x = np.log(y) if (y > 0).all() else y
    bounds = [0, *[d.index for d in found], len(x)]
    return [Detection(d.index, d.direction, *change_interval(x, d.index, bounds[i], bounds[i + 2],
                                                              DetectorSettings().window), d.present)
            for i, d in enumerate(found)]


DETECTORS = {"this detector": ours, "asv publish": asv_publish}


@dataclass(frozen=True)
class Rule:
    """When a report matches a planted change."""

    name: str
    tolerance: int  # commits either side of the reported one
    use_intervals: bool  # also anywhere in the report's own position interval


RULES = (Rule("+-2 commits", TOLERANCE, False),
         Rule("position intervals", TOLERANCE, True),
         Rule("+-5 commits (TCPDBench's margin)", 5, False))


def score_series(job) -> dict:
    """Run both detectors on one series (full history, then growing prefixes for the delay),
    scored by every rule: {rule name: {detector name: result}}."""
    return {rule.name: _score_series(job, rule) for rule in RULES}


def _score_series(job, rule: Rule) -> dict:
    values, ci_a, ci_b, samples, better, planted = job
    out = {}
    for name, detect in DETECTORS.items():
        reported = detect(values, ci_a, ci_b, samples, better)
        matched, false_alarms, misplaced, wrong_direction = set(), 0, 0, 0
        for report, d in zip(reported, _as_ruled(reported, rule)):
            hit = next((i for i, p in enumerate(planted) if i not in matched and _matches(d, p, rule.tolerance)),
                       None)
            if hit is not None:
                matched.add(hit)
            elif any(_near(d, p, rule.tolerance) and d.direction != p["direction"] for p in planted):
                wrong_direction += 1  # a real change, named the wrong way round
            else:
                false_alarms += 1  # nothing planted there (or a second report of one change)
                misplaced += any(_matches(report, p, NEARBY) for p in planted)  # its interval counts
        delays = {}
        for i in matched:
            p = planted[i]
            if p["kind"] != "step":
                continue
            for delay in range(MAX_DELAY + 1):
                end = p["index"] + delay + 1
                grown = _as_ruled(detect(values[:end], ci_a[:end], ci_b[:end],
                                         None if samples is None else samples[:end], better), rule)
                if any(_matches(d, p, rule.tolerance) for d in grown):
                    delays[i] = delay
                    break
            else:
                delays[i] = None  # found in the full history only, > MAX_DELAY commits later
        out[name] = {"matched": matched, "false_alarms": false_alarms, "misplaced": misplaced,
                     "wrong_direction": wrong_direction, "delays": delays}
    return out


def _as_ruled(found: list[Detection], rule: Rule) -> list[Detection]:
    return found if rule.use_intervals else [Detection(d.index, d.direction) for d in found]


def _near(d: Detection, p: dict, tolerance: int = TOLERANCE) -> bool:
    """d's positions (index +- tolerance, widened to its interval if it has one) overlap
    the planted change's [index, end]."""
    low = d.index - tolerance if d.low < 0 else min(d.low, d.index - tolerance)
    high = d.index + tolerance if d.high < 0 else max(d.high, d.index + tolerance)
    return low <= p["end"] and p["index"] <= high


def _matches(d: Detection, p: dict, tolerance: int = TOLERANCE) -> bool:
    return _near(d, p, tolerance) and d.direction == p["direction"]


def oracle_misplaced(jobs) -> dict[float, tuple[int, int]]:
    """Per step size: (steps the best single split of the whole series places more than
    TOLERANCE commits off, steps). The oracle knows each such series has exactly one change."""
    out: dict[float, tuple[int, int]] = {}
    for values, *_, planted in jobs:
        if len(planted) != 1 or planted[0]["kind"] != "step":
            continue
        y = np.asarray(values, dtype=float)
        x = np.log(y) if (y > 0).all() else y
        k = best_split(x, 1, len(x), 0, len(x))
        size = round(planted[0]["size"], 2)
        off, total = out.get(size, (0, 0))
        out[size] = (off + (abs(k - planted[0]["index"]) > TOLERANCE), total + 1)
    return dict(sorted(out.items()))


def series_jobs(results_dir: Path, history) -> list[tuple]:
    loaded = load_results(results_dir)
    if not loaded.load_report.ok:
        raise SystemExit(f"generated results did not load cleanly: {loaded.load_report.lines()[:5]}")
    frame = loaded.frame[loaded.frame["status"] == "ok"]
    position = {c: i for i, c in enumerate(history.commits)}
    planted_by_series: dict[tuple, list[dict]] = {}
    for p in history.planted:
        planted_by_series.setdefault((p.benchmark, p.params_key), []).append(
            {"kind": p.kind, "index": p.commit_index, "end": p.end_index, "direction": p.direction,
             "size": abs(p.relative_change), "higher": history.series[p.series_index].higher_is_better})
    jobs, labels = [], []
    for (bench, key), group in frame.groupby(["benchmark", "params_key"], observed=True, sort=True):
        group = group.sort_values("date")
        idx = [position[c] for c in group["commit_hash"].astype(str)]
        if idx != list(range(len(history.commits))):
            raise SystemExit(f"series {bench}({key}) lost commits on load")
        unit = group["unit"].iloc[0]
        better = metric_direction(str(bench), unit, metadata=loaded.benchmarks.get(str(bench)))
        planted = planted_by_series.get((str(bench), str(key)), [])
        jobs.append((group["value"].to_numpy(), group["ci_99_a"].to_numpy(), group["ci_99_b"].to_numpy(),
                     list(group["samples"]), better, planted))
        labels.append(_series_kind(history, str(bench), str(key)))
    return jobs, labels


def _series_kind(history, bench, key) -> str:
    for spec in history.series:
        if spec.benchmark == bench and params_key(("case",), (repr(spec.params[0]),)) == key:
            if spec.steps:
                return "step"
            if spec.drift:
                return "drift"
            return "bimodal" if spec.bimodal else "noise"
    raise KeyError(key)


def summarise(jobs, labels, scored, n_commits, rule: Rule) -> str:
    """One markdown table, both detectors side by side, every count under ``rule``."""
    scored = [s[rule.name] for s in scored]
    lines = []
    names = list(DETECTORS)
    header = "| | " + " | ".join(names) + " |"
    lines += [header, "|" + " --- |" * (len(names) + 1)]

    def row(label, cells):
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for direction in (REGRESSION, IMPROVEMENT):
        for size in STEP_SIZES:
            cells = []
            for name in names:
                total = hits = 0
                for job, res in zip(jobs, scored):
                    for i, p in enumerate(job[5]):
                        if p["kind"] == "step" and p["direction"] == direction and math.isclose(p["size"], size):
                            total += 1
                            hits += i in res[name]["matched"]
                cells.append(f"{hits / total:.2f} ({hits}/{total})" if total else "-")
            row(f"recall, {direction}s of {size:.0%}", cells)
    cells = []
    for name in names:
        total = hits = 0
        for job, res in zip(jobs, scored):
            for i, p in enumerate(job[5]):
                if p["kind"] == "drift" and p["direction"] == REGRESSION:
                    total += 1
                    hits += i in res[name]["matched"]
        cells.append(f"{hits / total:.2f} ({hits}/{total})")
    row("recall, gradual drift regressions (10 % over 20 commits)", cells)

    points = len(jobs) * n_commits

    def per_1000(count) -> list[str]:
        totals = [sum(count(r[name]) for r in scored) for name in names]
        return [f"{1000 * total / points:.2f} ({total})" for total in totals]

    for kind in (None, "noise", "bimodal", "drift", "step"):
        cells = []
        for name in names:
            chosen = [r for r, lab in zip(scored, labels) if kind is None or lab == kind]
            n_points = (points if kind is None else sum(lab == kind for lab in labels) * n_commits)
            fa = sum(r[name]["false_alarms"] for r in chosen)
            cells.append(f"{1000 * fa / n_points:.2f} ({fa})")
        row(f"false alarms per 1,000 series x commits, {kind or 'all'} series", cells)
    row(f"- of all those: misplaced (a real change in that direction within {NEARBY} commits or the "
        f"report's interval, or reported twice)", per_1000(lambda r: r["misplaced"]))
    row(f"- of all those: nothing changed within {NEARBY} commits (crying wolf)",
        per_1000(lambda r: r["false_alarms"] - r["misplaced"]))
    row("reported in the wrong direction (count)",
        [str(sum(r[name]["wrong_direction"] for r in scored)) for name in names])
    # A CI gate alerting on an improvement is a false alarm too: same count for both detectors.
    row("false alarms + wrong-direction reports per 1,000 series x commits, all series",
        [f"{1000 * sum(r[name]['false_alarms'] + r[name]['wrong_direction'] for r in scored) / points:.2f}"
         for name in names])
    for size in STEP_SIZES:
        cells = []
        for name in names:
            delays = [res[name]["delays"][i] for job, res in zip(jobs, scored) for i, p in enumerate(job[5])
                      if p["kind"] == "step" and math.isclose(p["size"], size) and i in res[name]["delays"]]
            known = sorted(d for d in delays if d is not None)
            if not delays:
                cells.append("-")
                continue
            late = len(delays) - len(known)
            cells.append(f"median {np.median(known):.0f}, p90 {np.percentile(known, 90):.0f}"
                         + (f", {late} later than {MAX_DELAY}" if late else "") if known else f"all > {MAX_DELAY}")
        row(f"delay in commits, {size:.0%} steps found", cells)
    return "\n".join(lines)


def oracle_table(jobs, n_commits) -> str:
    """The steps that even the best single split places more than +-TOLERANCE off (oracle_misplaced)."""
    points = len(jobs) * n_commits
    lines = [f"| oracle (best single split, knows there is one change) | steps placed more than "
             f"+-{TOLERANCE} commits off | the +-{TOLERANCE} false alarms they cost per 1,000 series x commits, "
             f"if reported |", "| --- | --- | --- |"]
    for size, (off, total) in oracle_misplaced(jobs).items():
        lines.append(f"| {size:.0%} steps | {off / total:.3f} ({off}/{total}) | {1000 * off / points:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=25, help="series per (step size, sign, metric)")
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--gate-reps", type=int, default=25, help="CI gate: step series per (size, sign, metric)")
    parser.add_argument("--gate-clean-reps", type=int, default=100,
                        help="CI gate: series with nothing changed, per metric (a fifth as many bimodal)")
    parser.add_argument("--only-gate", action="store_true", help="measure the CI gate section only")
    args = parser.parse_args(argv)

    started = time.time()
    command = (f"python tools/measure_regression_detection.py --seed {args.seed} --reps {args.reps} "
               f"--commits {args.commits} --jobs {args.jobs} --gate-reps {args.gate_reps} "
               f"--gate-clean-reps {args.gate_clean_reps}" + (" --only-gate" if args.only_gate else ""))
    print(f"Command: {command}")
    if not args.only_gate:
        detector_tables(args)
    print("\n## CI gate: the newest commit judged at every commit, as CI runs it\n")
    print(gate_measurement.measure(args.gate_reps, args.gate_clean_reps, args.seed, args.jobs, THRESHOLD))
    print(f"\nTook {time.time() - started:.0f} s.")
    return 0


def detector_tables(args) -> None:
    rng = np.random.default_rng(args.seed)
    specs = build_series(args.reps, args.commits, rng)
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        history = write_history(results, specs, args.commits, seed=args.seed)
        jobs, labels = series_jobs(results, history)
    with process_pool(args.jobs) as pool:
        scored = list(pool.map(score_series, jobs, chunksize=8))

    counts = {k: labels.count(k) for k in ("step", "noise", "bimodal", "drift")}
    print(f"{len(jobs)} series x {args.commits} commits ({counts}); threshold {THRESHOLD:.0%}")
    explain = {
        RULES[0].name: f"a change is found when reported in its direction within +-{TOLERANCE} commits.",
        RULES[1].name: f"a change is found when the planted commit lies within the report's interval (the "
                       f"split positions whose one-change fit is within a likelihood-ratio cut of the best, "
                       f"regressions.change_interval), widened to at least +-{TOLERANCE}; asv's "
                       f"steps get their interval by the same rule from the same data.",
        RULES[2].name: "a change is found when reported in its direction within +-5 commits, the margin "
                       "TCPDBench scores change point detectors with (van den Burg & Williams 2020).",
    }
    for rule in RULES:
        print(f"\n## Scored by {rule.name}: {explain[rule.name]}\n")
        print(summarise(jobs, labels, scored, args.commits, rule))
        if rule is RULES[0]:
            print("\n" + oracle_table(jobs, args.commits))
    print("\n(asv publish labels every reported step a regression; it does not report improvements.)")


if __name__ == "__main__":
    sys.exit(main())
