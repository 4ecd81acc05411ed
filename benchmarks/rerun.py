"""Measure again what the gate suspects: an A/B re-run of its candidates in one session.

    python -m regressions --format json > gate.json        # the first verdict
    python -m benchmarks.rerun --from-gate gate.json --machine h200-a-gpu0 --out rerun.json
    python -m regressions --rerun rerun.json               # the final verdict

The candidates (regressions.rerun_candidates: findings at the judged commits the
first verdict decided on thin evidence; at most 5 a machine a push, --machine's chosen among
that machine's own) are each measured at the base (A, the
last commit surely before the change) and the series' newest commit (B), interleaved
A B A B ..., the fused series and its eager and compile controls together (one asv run per side
and round, through the bisect's machinery: benchmarks.run --commits, HEAD's suite against each
commit's library). Two A B pairs always run; more while the finding's budget (--seconds, 60, of
the session's wall time, which includes asv's start-up: more than the GPU's share) allows
another pair, up to --rounds. While asv measures a commit, the history's result files of that
commit are set aside, so every value is this session's: a side where asv gave none ends the
finding's session with a `problem` (the final verdict then keeps the first, saying why), never
the history's old value standing in. The history's result files of this machine are put back
afterwards: the re-run's values go to --out only, and the gate judges them (rerun_judgement.py).

Exit status: 0 the re-runs were written (a finding that could not be measured says why in the
file), 2 bad arguments or input (a --from-gate file that is not the gate's JSON, a missing
--results folder, an --out that cannot be written: checked before measuring).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from benchmarks import bisect
from benchmarks.bisect import BisectInputError, Options, Target
from benchmarks.writable import unwritable

CONTROLS = ("eager", "compile")
ROUNDS = 4  # A B pairs at most
MIN_PAIRS = 2  # A B pairs always measured, whatever the budget
BAD_INPUT = 2


def impl_params(params: str, impl: str) -> str:
    """The same asv params key with another implementation (the case's control)."""
    pairs = bisect.parse_params_key(params)
    return ", ".join(f"{k}={repr(impl) if k == 'impl' else v}" for k, v in pairs)


def series_of(params: str, controls: Sequence[str] = CONTROLS) -> dict[str, str]:
    """{impl: params key} of the finding's series and, when it has an impl, its controls."""
    impls = dict(bisect.parse_params_key(params))
    if "impl" not in impls:
        return {"fused": params}
    return {"fused": params, **{c: impl_params(params, c) for c in controls}}


def session(candidate, measure: Callable[[str], dict[str, float]], seconds: float, rounds: int,
            clock=time.monotonic) -> dict:
    """One candidate's interleaved rounds: measure(commit) -> {impl: value} for one side. A B
    pairs: always MIN_PAIRS (A B A B: one pair has no within-session spread to judge against),
    then more while the budget allows one (the last pair's time stands for the next)."""
    out = {"benchmark": candidate.benchmark, "params": candidate.params, "machine": candidate.machine,
           "commit_hash": candidate.commit_hash, "base_commit": candidate.base_commit,
           "newest_commit": candidate.newest_commit, "rounds": [], "problem": ""}
    start = clock()
    for n in range(rounds):
        pair_start = clock()
        for side, commit in (("A", candidate.base_commit), ("B", candidate.newest_commit)):
            values = measure(commit)
            if "fused" not in values:
                out["problem"] = (f"no value for the fused series at {commit[:12]}: asv measured none in this "
                                  "session (the re-run job's log says why)")
                break
            out["rounds"].append({"side": side, "values": values})
        if out["problem"]:
            break
        pair = clock() - pair_start
        if n + 1 >= MIN_PAIRS and clock() - start + pair > seconds:
            break
    out["seconds"] = round(clock() - start, 1)
    return out


def measure_candidate(candidate, options: Options, controls: Sequence[str] = CONTROLS
                      ) -> Callable[[str], dict[str, float]]:
    """measure(commit): one asv run at that commit for the candidate's series and controls."""
    series = series_of(candidate.params, controls)
    target = Target(candidate.benchmark, candidate.params, candidate.machine, candidate.base_commit,
                    candidate.newest_commit)
    regex = "|".join(bisect.benchmark_regex(candidate.benchmark, p) for p in series.values())
    run = bisect.suite_runner(target, options, regex)

    def measure(commit: str) -> dict[str, float]:
        got = {}
        with history_set_aside(options.results / candidate.machine, commit):
            run([commit])
            for impl, params in series.items():
                v = bisect.series_values(options.results, Target(candidate.benchmark, params, candidate.machine, "", ""))
                if commit in v and math.isfinite(v[commit]):
                    got[impl] = v[commit]
        return got

    return measure


ASIDE = ".aside"  # asv and the dashboard read *.json only


@contextlib.contextmanager
def history_set_aside(machine_dir: Path, commit: str):
    """While asv measures ``commit``: the history's result files of it (asv names them
    <hash[:8]>-<env>.json) renamed *.json.aside, so a value read then is this run's, never the
    history's (A and B are history commits: where asv did not run, the old value would stand
    for every round of that side). Afterwards what the run wrote is dropped and they are back."""
    own = f"{commit[:8]}-*.json"
    history, moved = sorted(machine_dir.glob(own)), []
    try:
        for f in history:
            f.replace(f.with_name(f.name + ASIDE))
            moved.append(f)
        yield
    finally:
        for f in machine_dir.glob(own):
            if f in moved or f not in history:  # the run's: a history file that could not move stays
                f.unlink()
        for f in moved:
            f.with_name(f.name + ASIDE).replace(f)


def kept_history(results: Path, machine: str):
    """A context manager: the machine's result folder as it is now comes back at the end."""
    @contextlib.contextmanager
    def keep():
        folder = results / machine
        with tempfile.TemporaryDirectory(prefix="rerun-history-") as tmp:
            saved = Path(tmp) / "saved"
            had = folder.is_dir()
            if had:
                shutil.copytree(folder, saved, symlinks=True)
            try:
                yield
            finally:
                if folder.exists():
                    shutil.rmtree(folder)
                if had:
                    shutil.copytree(saved, folder, symlinks=True)

    return keep()


def per_machine(chosen: list, at_most: int) -> list:
    """The first ``at_most`` candidates of each machine, in their order: the cap is per machine
    (each runner's re-run job measures its own), so one machine's many never crowd out another's."""
    taken: dict[str, int] = {}
    out = []
    for c in chosen:
        taken[c.machine] = taken.get(c.machine, 0) + 1
        if taken[c.machine] <= at_most:
            out.append(c)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.rerun", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from-gate", metavar="FILE", required=True, help="the gate's --format json output ('-': stdin)")
    p.add_argument("--out", type=Path, required=True, help="where to write the re-run's JSON (for --rerun)")
    p.add_argument("--machine", help="only candidates of this asv machine (the runner this job is on)")
    p.add_argument("--at-most", type=int, default=None, help="findings re-run at most, of --machine's (default 5)")
    p.add_argument("--seconds", type=float, default=None, help="budget per finding, seconds (default 60)")
    p.add_argument("--rounds", type=int, default=ROUNDS, help=f"A B pairs at most (default {ROUNDS})")
    p.add_argument("--controls", default=",".join(CONTROLS),
                   help="the controls measured beside each fused series, comma-separated, or 'none' (default "
                        f"{','.join(CONTROLS)}; the CPU rehearsal uses none: there the controls' CPU time is "
                        "mostly noise)")
    p.add_argument("--config", type=Path, default=bisect.REPO / "asv.conf.json")
    p.add_argument("--results", type=Path, help="results folder (default: the config's results_dir)")
    p.add_argument("--python", default=sys.executable, help="the Python with torch, triton and asv")
    p.add_argument("--grid", help="grid the cases belong to (default: the first grid that has each)")
    return p


def main(argv: Sequence[str] | None = None, measure_for=None) -> int:
    """``measure_for(candidate, options)``: the measuring function (tests replace asv with it)."""
    from regressions.rerun_candidates import AT_MOST, SECONDS_EACH, candidates

    p = parser()
    args = p.parse_args(argv)
    at_most = AT_MOST if args.at_most is None else args.at_most
    seconds = SECONDS_EACH if args.seconds is None else args.seconds
    if not 1 <= at_most <= AT_MOST:
        p.error(f"--at-most {at_most}: expected 1 to {AT_MOST} (findings re-run per machine and push)")
    if not 0 < seconds <= SECONDS_EACH:
        p.error(f"--seconds {seconds:g}: expected more than 0 and at most {SECONDS_EACH} (GPU seconds per finding)")
    if args.rounds < 2:
        p.error(f"--rounds {args.rounds}: expected at least 2 (A B A B)")
    controls = () if args.controls == "none" else tuple(c.strip() for c in args.controls.split(","))
    if not set(controls) <= set(CONTROLS) or not all(controls):
        p.error(f"--controls {args.controls!r}: expected some of {','.join(CONTROLS)}, or none")
    problem = unwritable(args.out)
    if problem:  # before the measuring (minutes of GPU), not after it
        p.error(f"--out {args.out}: {problem}")
    try:
        results = args.results or bisect._results_dir(args.config)
        if not results.is_dir():
            raise BisectInputError(f"--results {results}: no such folder (the asv results the gate judged)")
        doc = bisect._read_json(args.from_gate)
        try:
            chosen = candidates(doc, at_most=sys.maxsize)  # capped per machine below, after --machine
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BisectInputError(f"--from-gate {args.from_gate}: not the gate's JSON output (python -m "
                                   f"regressions --format json): {type(exc).__name__} {exc}") from None
    except BisectInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    chosen = per_machine([c for c in chosen if args.machine in (None, c.machine)], at_most)
    options = Options(results, args.config, args.python, args.grid)
    reruns = []
    for c in chosen:
        print(f"re-run {c.benchmark}({c.params}) on {c.machine}: A {c.base_commit[:12]}, B {c.newest_commit[:12]} "
              f"(first verdict: {c.category})", flush=True)
        try:
            with kept_history(results, c.machine):
                entry = session(c, (measure_for or measure_candidate)(c, options, controls), seconds, args.rounds)
        except BisectInputError as exc:
            entry = {"benchmark": c.benchmark, "params": c.params, "machine": c.machine, "commit_hash": c.commit_hash,
                     "base_commit": c.base_commit, "newest_commit": c.newest_commit, "rounds": [], "problem": str(exc),
                     "seconds": 0.0}
        reruns.append(entry)
    args.out.write_text(json.dumps({"version": 1, "reruns": reruns}, indent=2))
    print(f"{len(reruns)} finding(s) re-run{' (none were candidates)' if not reruns else ''}: {args.out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
