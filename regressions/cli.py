"""python -m regressions: the per-commit CI gate over an asv results folder, and the
history's level changes and failures by commit.

Exit status: 0 pass, 1 a regression at the judged commits (see gate.py), 2 the gate could not
judge (bad arguments, an unreadable results folder or accepted.json, a result file of a judged
commit it could not read, a run without results at the head, results that changed while read,
an internal error).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

from asv_results.cache import cache_inside_results
from asv_results.parse_progress import ConsoleProgress
from asv_results.worker_processes import available_cpus
from regressions.classify import LIBRARY
from regressions.history import ALL, HISTORY, min_history
from regressions.judgement import CannotJudge, judge_folder  # noqa: F401 (CannotJudge: the CLI's)
from regressions.report import render_json, render_markdown, render_text

PASS, FAIL, CANNOT_JUDGE = 0, 1, 2


def parse_threshold(text: str) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '5' -> 0.05 (a bare number >= 1 is a percentage)."""
    raw = text.strip()
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"threshold {text!r} is not a number or percentage like 5%") from None
    if raw.endswith("%") or value >= 1:
        value /= 100
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"threshold {text!r} must be a positive relative change")
    return value


def parse_history(text: str) -> int | None:
    """'all' -> None (every commit), else a number of commits no shorter than the detector needs."""
    if text.strip().lower() == "all":
        return ALL
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"history {text!r} is not a number of commits or 'all'") from None
    if value < min_history():
        raise argparse.ArgumentTypeError(f"history {value}: the gate's windows need at least {min_history()} "
                                         "commits per run (or 'all')")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m regressions",
        description="The per-commit gate: exit 1 when the newest commit (or the commits after --base) brought "
                    "a regression or a newly failing benchmark that accepted.json does not accept; 0 when not; "
                    "2 when it cannot judge. Also lists every level change and failure in the history.")
    p.add_argument("--results", default="results", help="asv results directory (default: results)")
    p.add_argument("--machine", help="only this machine (a directory under the results)")
    p.add_argument("--threshold", type=parse_threshold, default=0.05, help="smallest relative change (default 5%%)")
    p.add_argument("--base", metavar="A[..B]",
                   help="judge the commits after A (up to B, ignoring results of later commits); a hash or a "
                        "prefix in the results, or a git revision of this checkout (default: judge the newest commit)")
    p.add_argument("--strict", action="store_true",
                   help="also fail on suspected changes (too small to tell from the commits so far)")
    p.add_argument("--fail-on", choices=(LIBRARY, "all"), default=LIBRARY,
                   help="library (default): fail only on changes the eager/compile controls did not share "
                        "(classified library; environment and noise are listed, not failed); all: every "
                        "regression, as before the classification")
    p.add_argument("--accepted", type=Path,
                   help="accepted regressions (default: accepted.json in the results directory, if there)")
    p.add_argument("--since", help="list only changes at this commit or later in the history (the gate is unchanged)")
    p.add_argument("--rerun", type=Path, metavar="FILE", action="append",
                   help="the A/B re-run's measurements (python -m benchmarks.rerun --out FILE; repeat for one file "
                        "per runner): the final verdict, with the re-run's judgement of each finding it measured again")
    p.add_argument("--history", type=parse_history, default=HISTORY, metavar="N|all",
                   help=f"commits per run read, up to the judged ones (default {HISTORY}; 'all': every commit). A "
                        "regression older than that, even one still open, is not seen; the report says what was "
                        "left out")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--cache-dir", type=Path,
                   help="a folder for the parsed results (the dashboard's --cache-dir): a later run parses only the "
                        "files that changed (default: parse every file, keep nothing)")
    p.add_argument("--asv-conf", type=Path,
                   help="the project's asv.conf.json, whose repository puts the commits in order, as the dashboard "
                        "does (default: the one beside the results, if any; without one: the stored dates)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)  # bad arguments: argparse exits 2 with the reason
    if args.cache_dir is not None and cache_inside_results(args.results, args.cache_dir):
        p.error(f"--cache-dir {args.cache_dir} is inside the results directory {args.results}: its files would be "
                "read as results")
    try:
        return run(args)
    except CannotJudge as exc:
        print(f"error: {exc}", file=sys.stderr)
        return CANNOT_JUDGE
    except Exception as exc:  # a crash must never read as "regression found"
        traceback.print_exc(file=sys.stderr)
        print(f"error: internal error, the gate could not judge ({type(exc).__name__}: {exc})", file=sys.stderr)
        return CANNOT_JUDGE


def run(args: argparse.Namespace) -> int:
    judgement = judge_folder(args.results, machine=args.machine, threshold=args.threshold, base=args.base,
                             strict=args.strict, fail_on=args.fail_on, accepted=args.accepted, since=args.since,
                             asv_conf=args.asv_conf, rerun=args.rerun, cache_dir=args.cache_dir, history=args.history,
                             progress=ConsoleProgress(sys.stderr), jobs=available_cpus(),
                             warn=lambda line: print(f"warning: {line}", file=sys.stderr))
    j = judgement
    if args.format == "json":
        text = render_json(j.findings, j.status_changes, j.verdict, j.report, j.header, j.settings)
    elif args.format == "markdown":
        text = render_markdown(j.findings, j.status_changes, j.verdict, j.report, j.header)
    else:
        text = render_text(j.findings, j.status_changes, j.verdict, j.report, j.header)
    _print_report(text)
    return FAIL if j.verdict.failed else PASS


def _print_report(text: str) -> None:
    """Print the report; a reader that stops early (| head) does not change the verdict."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


if __name__ == "__main__":
    sys.exit(main())
