"""Find the commit that brought a regression: measure the commits inside a finding's interval.

    python -m regressions --format json > gate.json     # exit 1: it failed
    python -m benchmarks.bisect --from-gate gate.json             # bisect the gate's failing changes
    python -m benchmarks.bisect --machine h200-runner --benchmark bench_ops.LinearAct.track_latency \\
        --params "case='linear_act M=16 K=4096 N=16384 bf16 gelu_tanh', impl='fused'" --range A..B

Only the finding's own case runs (asv -b on the benchmark's name with its parameters), HEAD's
suite against each commit's library, through `benchmarks.run --commits` (so results land in the
results folder as ordinary asv results and the dashboard shows the filled-in history).

The search: the interval's two ends are measured again first, in the same session as the
commits inside it (a runner, or a shared CPU, that got slower since the history was measured
would otherwise push every commit toward the new level and name a neutral one), and the step
must reproduce there. A commit's value is "old" when it lies in the first quarter of the way
from the old level to the new one, "new" in the last quarter, "between" otherwise; the history's
spread either side says whether one run can be placed at all. A long
interval is bisected (one commit per run); a short one (at most --short commits), a gradual change,
or an interval where a commit measured "between" is measured commit by commit. Then the detector
(the gate's own, regressions) judges the filled-in series again: the answer is
"introduced at <commit>" only where the search and the detector agree on one commit.

Exit status: 0 a commit was named for every finding, 1 not (the report says why), 2 bad
arguments or input.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import run as suite_run
from asv_results.safe_read import MAX_FILE_BYTES, parse_json, read_json

REPO = Path(__file__).resolve().parents[1]
OLD, NEW, BETWEEN = "old", "new", "between"
SHORT = 2  # unmeasured commits at most: measure them all rather than bisect
LEVEL_POINTS = 5  # measured commits either side that give the old and the new level
# The step must stand this many noise sigmas clear of each level for a single run to be placed.
MIN_SEPARATION_SIGMAS = 4.0
FOUND, CANNOT_TELL, BAD_INPUT = 0, 1, 2


class BisectInputError(ValueError):
    """The finding or the arguments cannot be bisected; the message says why (exit 2)."""


@dataclass(frozen=True)
class Target:
    """One series to bisect and the interval: ``good`` measured at the old level, ``bad`` at the new."""

    benchmark: str
    params: str  # the asv-style key: "case='...', impl='fused'"
    machine: str
    good: str
    bad: str
    gradual: bool = False  # a drift: measure every commit, there is no one step to bisect


@dataclass
class Search:
    """What the search measured and concluded (pure; see bisect_interval)."""

    sequence: list[str]  # good, the candidate commits, bad (git order)
    values: dict[str, float]
    classes: dict[str, str] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # commits measured by the search, in order
    boundary: str | None = None  # first commit at the new level, when one was found
    reason: str = ""  # why no boundary


def parse_params_key(key: str) -> list[tuple[str, str]]:
    """"case='a, b', impl='fused'" -> [("case", "'a, b'"), ("impl", "'fused'")] (values as repr)."""
    pattern = re.compile(r"\s*(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,]*)\s*(?:,|$)")
    out, pos = [], 0
    while pos < len(key):
        m = pattern.match(key, pos)
        if not m or m.end() == pos:
            raise BisectInputError(f"params {key!r}: expected name=value pairs like case='...', impl='fused'")
        out.append((m.group(1), m.group(2).strip()))
        pos = m.end()
    return out


def benchmark_regex(benchmark: str, params: str) -> str:
    """asv -b regex for this benchmark with this parameter combination only (asv matches
    parameterised benchmarks as ``name(value0, value1)``, the values as repr)."""
    values = ", ".join(v for _, v in parse_params_key(params)) if params else ""
    return "^" + re.escape(benchmark) + (r"\(" + re.escape(values) + r"\)$" if params else "$")


def classify_value(value: float, old: float, new: float) -> str:
    """Where one measurement lies between the two levels (in log space: steps are relative)."""
    if not (value > 0 and old > 0 and new > 0) or old == new:
        return BETWEEN
    position = math.log(value / old) / math.log(new / old)
    return OLD if position <= 0.25 else NEW if position >= 0.75 else BETWEEN


def bisect_interval(sequence: Sequence[str], values: dict[str, float], old: float, new: float,
                    measure: Callable[[list[str]], dict[str, float]], *, short: int = SHORT,
                    every_commit: bool = False) -> Search:
    """Find the first commit at the new level in ``sequence`` (good first, bad last, both measured).

    ``measure(commits)`` runs the benchmark at those commits and returns their values (a commit
    missing from the answer did not give a value). Bisection while the interval is long and
    every midpoint lies clearly at one level; commit by commit otherwise.
    """
    s = Search(list(sequence), dict(values))
    lo, hi = 0, len(sequence) - 1

    def run(commits: list[str]) -> None:
        s.runs += commits
        got = measure(commits)
        s.values.update({c: v for c, v in got.items() if c in commits})

    while hi - lo > 1:
        inside = s.sequence[lo + 1:hi]
        if every_commit or len(inside) <= short:
            run([c for c in inside if c not in s.values])
            return _scan(s, lo, hi, old, new)
        mid = (lo + hi) // 2
        if s.sequence[mid] not in s.values:
            run([s.sequence[mid]])
        if s.sequence[mid] not in s.values:
            s.reason = f"no value at {s.sequence[mid][:12]} (the benchmark did not run there; see above)"
            return s
        cls = classify_value(s.values[s.sequence[mid]], old, new)
        s.classes[s.sequence[mid]] = cls
        if cls == OLD:
            lo = mid
        elif cls == NEW:
            hi = mid
        else:
            every_commit = True  # not a clean step here: look at every commit of what is left
    s.boundary = s.sequence[hi]
    return s


def _scan(s: Search, lo: int, hi: int, old: float, new: float) -> Search:
    """Every commit of sequence[lo..hi] measured: one step, or why not."""
    part = s.sequence[lo:hi + 1]
    missing = [c[:12] for c in part if c not in s.values]
    if missing:
        s.reason = f"no value at {', '.join(missing)} (the benchmark did not run there; see above)"
        return s
    classes = [classify_value(s.values[c], old, new) for c in part]
    s.classes.update(zip(part, classes))
    first_new = next((i for i, c in enumerate(classes) if c == NEW), None)
    if first_new is None:
        s.reason = "no commit of the interval measured at the new level"
    elif all(c == OLD for c in classes[:first_new]) and all(c == NEW for c in classes[first_new:]):
        s.boundary = part[first_new]
    else:
        s.reason = "not one step: " + ", ".join(f"{c[:8]} {k}" for c, k in zip(part, classes))
    return s


# --- the measurements: results folder, asv through benchmarks.run ---

def series_values(results_dir: Path, target: Target) -> dict[str, float]:
    """Measured value per commit of the target's series (ok results only)."""
    from asv_results.data import STATUS_OK
    from asv_results.loading import load_results

    frame = load_results(results_dir, machine=target.machine, jobs=1).frame
    if frame.empty:
        return {}
    rows = frame[(frame["benchmark"].astype(str) == target.benchmark)
                 & (frame["params_key"].astype(str) == target.params) & (frame["status"] == STATUS_OK)]
    return {str(c): float(v) for c, v in zip(rows["commit_hash"], rows["value"]) if math.isfinite(v)}


def history_order(results_dir: Path, target: Target) -> list[str]:
    """The series' measured commits in the results' (date) order."""
    from asv_results.data import commit_order
    from asv_results.loading import load_results

    frame = load_results(results_dir, machine=target.machine, jobs=1).frame
    rows = frame[(frame["benchmark"].astype(str) == target.benchmark)
                 & (frame["params_key"].astype(str) == target.params)]
    order = commit_order(rows)
    return order["commit_hash"].astype(str).tolist()


def levels(values: dict[str, float], order: list[str], good: str, bad: str) -> tuple[float, float, float]:
    """(old level, new level, noise sigma in log units) from up to LEVEL_POINTS measured commits
    at and before ``good`` and at and after ``bad``."""
    import numpy as np

    measured = [c for c in order if c in values]
    if good not in measured or bad not in measured:
        raise BisectInputError("the interval's ends have no values")
    g, b = measured.index(good), measured.index(bad)
    old = np.log([values[c] for c in measured[max(0, g - LEVEL_POINTS + 1):g + 1]])
    new = np.log([values[c] for c in measured[b:b + LEVEL_POINTS]])
    spread = [np.median(np.abs(side - np.median(side))) * 1.4826 for side in (old, new) if len(side) > 1]
    sigma = float(max(spread)) if spread else float("nan")
    return float(np.exp(np.median(old))), float(np.exp(np.median(new))), sigma


@dataclass(frozen=True)
class Options:
    results: Path
    config: Path
    python: str
    grid: str | None


def measure_with_suite(target: Target, options: Options) -> Callable[[list[str]], dict[str, float]]:
    """measure(commits): what `benchmarks.run --commits` does on those commits, this benchmark's
    case only (suite_runner), and the target's values at those commits."""
    run = suite_runner(target, options, benchmark_regex(target.benchmark, target.params))

    def measure(commits: list[str]) -> dict[str, float]:
        if not commits:
            return {}
        run(commits)
        got = series_values(options.results, target)
        return {c: got[c] for c in commits if c in got}

    return measure


def suite_runner(target: Target, options: Options, regex: str) -> Callable[[list[str]], None]:
    """run(commits): `benchmarks.run --commits` on those commits for the benchmarks ``regex``
    selects (the bisect's, or a re-run's series and controls). The Python is checked and the
    machine registered once, before the first run, not once per step (each costs a torch
    import: ~5 s on the GPU runner)."""
    from workload.grids import GRID_ENV, GRIDS

    grid = options.grid or grid_of(target.params) or os.environ.get(GRID_ENV, "default")
    prepared = []

    def prepare() -> None:
        problem = (f"--grid {grid!r}: expected one of {list(GRIDS)}" if grid not in GRIDS else None) or \
            suite_run.check_machine_name(target.machine) or suite_run.check_python(options.python)
        if problem:
            raise BisectInputError(problem)
        if not suite_run.prepare_machine(options.python, target.machine, grid):
            raise BisectInputError(f"asv could not register machine {target.machine!r} (see above)")
        prepared.append(True)

    def run(commits: list[str]) -> None:
        if not commits:
            return
        if not prepared:
            prepare()
        print(f"-- measuring {len(commits)} commit(s): {' '.join(c[:12] for c in commits)}", flush=True)
        # a commit where asv did not run simply has no value (said by the caller)
        suite_run.measure_commits(options.python, options.config, target.machine, commits, regex)

    return run


def grid_of(params: str) -> str | None:
    """The first grid whose Cases include this case (the suite runs only its grid's cases)."""
    case = dict(parse_params_key(params)).get("case")
    if case is None:
        return None
    key = case.strip("'\"")
    from workload.grids import GRIDS, grid

    for name in GRIDS:
        if any(c.key == key for cases in grid(name).values() for c in cases):
            return name
    return None


def git_interval(good: str, bad: str) -> list[str]:
    """good, the commits after it up to bad, bad: full hashes in git order (oldest first)."""
    try:
        inside = suite_run.resolve_commits(f"{good}..{bad}")
        first = suite_run.resolve_commits(good)
    except ValueError as exc:
        raise BisectInputError(str(exc)) from None
    if inside[-1] != suite_run.resolve_commits(bad)[-1]:
        raise BisectInputError(f"{bad[:12]} does not descend from {good[:12]}")
    return first + inside


def targets_from_gate(doc: dict, results: Path) -> tuple[list[Target], list[str]]:
    """The gate's failing level changes as targets (and notes on what cannot be bisected)."""
    try:
        items = doc["gate"]["failing"]
    except (KeyError, TypeError):
        raise BisectInputError("not the gate's JSON output (python -m regressions --format json): "
                               "no gate.failing") from None
    if not isinstance(items, list):
        raise BisectInputError(f"gate.failing is {type(items).__name__}, expected a list (the gate's JSON output)")
    targets, notes = [], []
    for i, item in enumerate(items):
        change = _gate_change(item, i)
        name = f"{change.get('benchmark')}({change.get('params')})"
        if "before" not in change or "earliest_commit" not in change:
            notes.append(f"{name}: started failing at {str(change.get('commit_hash'))[:12]}; bisect finds level "
                         "changes only")
            continue
        probe = Target(change["benchmark"], change["params"], change["machine"], "", "")
        order = history_order(results, probe)
        earliest = change["earliest_commit"] or change["commit_hash"]
        if earliest not in order or order.index(earliest) == 0:
            notes.append(f"{name}: no measured commit before {earliest[:12]} in {results}")
            continue
        good = order[order.index(earliest) - 1]
        targets.append(Target(change["benchmark"], change["params"], change["machine"], good,
                              change["latest_commit"] or change["commit_hash"], change.get("kind") == "gradual"))
    return targets, notes


GATE_CHANGE_STRINGS = ("benchmark", "params", "machine", "commit_hash")  # what a target is built from
GATE_CHANGE_COMMITS = ("earliest_commit", "latest_commit")  # a hash, or null


def _gate_change(item: object, i: int) -> dict:
    """gate.failing[i]'s change, its fields checked; BisectInputError naming what is wrong."""
    change = item.get("change") if isinstance(item, dict) else None
    if not isinstance(change, dict):
        raise BisectInputError(f"gate.failing[{i}] has no 'change' object (the gate's JSON output)")
    if "before" not in change or "earliest_commit" not in change:
        return change  # a status change: noted, not bisected
    for key in GATE_CHANGE_STRINGS:
        if not isinstance(change.get(key), str):
            raise BisectInputError(f"gate.failing[{i}].change.{key} is {change.get(key)!r}, expected a string")
    for key in GATE_CHANGE_COMMITS:
        if not (change.get(key) is None or isinstance(change[key], str)):
            raise BisectInputError(f"gate.failing[{i}].change.{key} is {change[key]!r}, expected a commit hash or null")
    return change


def rejudge(results: Path, target: Target, boundary: str):
    """The detector's regression in the filled-in series at ``boundary`` (or None, and why)."""
    from asv_results.loading import load_results
    from regressions.findings import REGRESSION, find_changes

    loaded = load_results(results, machine=target.machine, jobs=1)
    frame = loaded.frame
    rows = frame[(frame["benchmark"].astype(str) == target.benchmark)
                 & (frame["params_key"].astype(str) == target.params)]
    findings = [f for f in find_changes(rows, benchmarks_meta=loaded.benchmarks) if f.direction == REGRESSION]
    for f in findings:
        if f.commit_hash == boundary and f.plausible_commits == 1:
            return f, ""
    at = "; ".join(f"{f.commit_hash[:8]} ({f.relative_change:+.1%}, {f.position_note() or 'pinned'})"
                   for f in findings)
    return None, f"the detector over the filled-in history finds {at or 'no regression'}"


def session_levels(history: dict[str, float], fresh: dict[str, float], target: Target
                   ) -> tuple[float, float, str]:
    """(old, new, "") from the ends as measured in this session, or (nan, nan, why not).

    The search places commits against the ends measured now, not as the history had them: a
    runner (or a shared CPU) that got slower or faster since the history was measured would
    otherwise push every commit the search measures toward one level and name a neutral commit.
    The step must reproduce: the same sign and at least half the size the history showed."""
    nan = float("nan")
    missing = [c[:12] for c in (target.good, target.bad) if c not in fresh]
    if missing:
        return nan, nan, f"no value at {', '.join(missing)} when the interval's ends were measured again"
    old, new = fresh[target.good], fresh[target.bad]
    was = math.log(history[target.bad] / history[target.good])
    now = math.log(new / old) if old > 0 and new > 0 else 0.0
    if was == 0 or now / was < 0.5:
        return nan, nan, (f"the step did not reproduce: measured again, {target.good[:12]} {old:.6g} and "
                          f"{target.bad[:12]} {new:.6g} ({new / old - 1:+.1%}; the history had "
                          f"{math.exp(was) - 1:+.1%})")
    return old, new, ""


def bisect_target(target: Target, options: Options, measure=None) -> tuple[int, list[str]]:
    """(FOUND or CANNOT_TELL, report lines) for one target."""
    name = f"{target.benchmark}({target.params}) on {target.machine}"
    sequence = git_interval(target.good, target.bad)
    lines = [f"{name}: {len(sequence) - 2} commit(s) between {target.good[:12]} (old level) and "
             f"{target.bad[:12]} (new level)"]
    measure = measure or measure_with_suite(target, options)
    history = series_values(options.results, target)
    ends = [target.good, target.bad]
    fresh = measure(ends)  # the levels, measured in this session (see session_levels)
    history = {**fresh, **history}  # an end the history lacks: its value now stands for it
    order = history_order(options.results, target)
    # Commits the history has not measured are placed where git puts them (the interval's order).
    order = [c for c in order if c not in sequence[1:-1]]
    if target.good not in order or target.bad not in order or not all(c in history for c in ends):
        return CANNOT_TELL, lines + [f"  cannot tell: no value at {target.good[:12]} or {target.bad[:12]}"]
    old_then, new_then, sigma = levels(history, order, target.good, target.bad)
    old, new, why_not = session_levels(history, fresh, target)
    if why_not:
        return CANNOT_TELL, lines + [f"  2 benchmark run(s), the interval's ends", f"  cannot tell: {why_not}"]
    separation = abs(math.log(new / old))
    lines.append(f"  old level {old:.6g}, new level {new:.6g} ({new / old - 1:+.1%}) measured again now "
                 f"(the history: {old_then:.6g} -> {new_then:.6g}); noise {sigma:.2%} per run")
    every = target.gradual or not (separation >= MIN_SEPARATION_SIGMAS * sigma)  # NaN sigma: every commit
    if every:
        why = "a gradual change" if target.gradual else "the step is small against the run-to-run noise"
        lines.append(f"  measuring every commit: {why}")
    search = bisect_interval(sequence, dict(fresh), old, new, measure, every_commit=every)
    runs = len(ends) + len(search.runs)
    for c in sequence:
        if c in search.classes or c in (target.good, target.bad):
            v = search.values.get(c)
            lines.append(f"    {c[:12]} {_subject(c):<50.50} {v:.6g} {search.classes.get(c, '')}".rstrip()
                         if v is not None else f"    {c[:12]} no value")
    lines.append(f"  {runs} benchmark run(s) for {len(sequence) - 2} commit(s) in the interval "
                 f"({len(ends)} of them the interval's ends, measured again)")
    if search.boundary is None:
        return CANNOT_TELL, lines + [f"  cannot tell: {search.reason}"]
    finding, why = rejudge(options.results, target, search.boundary)
    if finding is None:
        return CANNOT_TELL, lines + [f"  cannot tell: the search points at {search.boundary[:12]}, but {why}"]
    lines.append(f"  introduced at {search.boundary} ({_subject(search.boundary)}): "
                 f"{finding.before:.6g} -> {finding.after:.6g} ({finding.relative_change:+.1%}), p={finding.p_value:.2g}, "
                 f"previous {finding.previous_commit[:12]}")
    return FOUND, lines


def _subject(commit: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%s", commit], capture_output=True, text=True)
    return done.stdout.strip()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bisect", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from-gate", metavar="FILE", help="the gate's --format json output ('-': stdin)")
    p.add_argument("--benchmark", help="asv benchmark name, e.g. bench_ops.LinearAct.track_latency")
    p.add_argument("--params", default="", help="its parameter key as the gate prints it: case='...', impl='fused'")
    p.add_argument("--range", metavar="A..B", help="A measured (or to measure) at the old level, B at the new")
    p.add_argument("--machine", help="asv machine name (with --benchmark; the gate's JSON names it)")
    p.add_argument("--config", type=Path, default=REPO / "asv.conf.json")
    p.add_argument("--results", type=Path, help="results folder (default: the config's results_dir)")
    p.add_argument("--python", default=sys.executable, help="the Python with torch, triton and asv")
    p.add_argument("--grid", help="grid the case belongs to (default: the first grid that has it)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        results = args.results or _results_dir(args.config)
        if not results.is_dir():
            raise BisectInputError(f"--results {results}: no such folder (the asv results to bisect in)")
        if args.from_gate:
            if args.benchmark or args.range:
                p.error("--from-gate or --benchmark/--range, not both")
            doc = _read_json(args.from_gate)
            targets, notes = targets_from_gate(doc, results)
            for note in notes:
                print(f"skipped: {note}")
            if not targets:
                print("nothing to bisect: the gate's output has no failing level change that can be bisected")
                return CANNOT_TELL if notes else FOUND
        else:
            if not (args.benchmark and args.range and args.machine):
                p.error("give --from-gate FILE, or --benchmark, --range A..B and --machine")
            good, sep, bad = args.range.partition("..")
            if not (sep and good and bad):
                p.error(f"--range {args.range!r}: expected A..B")
            parse_params_key(args.params)
            targets = [Target(args.benchmark, args.params, args.machine, _full(good), _full(bad))]
        options = Options(results, args.config, args.python, args.grid)
        status = FOUND
        for target in targets:
            code, lines = bisect_target(target, options)
            print("\n".join(lines), flush=True)
            status = max(status, code)
        return status
    except BisectInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT


def _full(rev: str) -> str:
    try:
        return suite_run.resolve_commits(rev)[0]
    except ValueError as exc:
        raise BisectInputError(str(exc)) from None


def _read_json(name: str) -> dict:
    """The gate's JSON output from a file or stdin ('-'), read through the one reader (a regular
    file, size and depth capped); BisectInputError naming the problem."""
    if name == "-":
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        doc, reason = parse_json(data) if len(data) <= MAX_FILE_BYTES else (None, f"more than {MAX_FILE_BYTES:,} bytes")
    else:
        path = Path(name)
        doc, reason = read_json(path, Path(os.path.realpath(path)).parent)  # the file named, wherever it lies
    if reason is None and not isinstance(doc, dict):
        reason = f"top level is {type(doc).__name__}, expected the gate's JSON object"
    if reason is not None:
        raise BisectInputError(f"--from-gate {name}: {reason}")
    return doc


def _results_dir(config: Path) -> Path:
    from asv import util as asv_util

    try:
        conf = asv_util.load_json(str(config), js_comments=True)
    except Exception as exc:  # asv raises its own UserError for a bad file
        raise BisectInputError(f"--config {config}: {exc}") from None
    path = Path(conf.get("results_dir", "results"))
    return path if path.is_absolute() else config.resolve().parent / path


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
