"""python -m dashboard.regressions: the per-commit CI gate over an asv results folder, and the
history's level changes and failures by commit.

Exit status: 0 pass, 1 a regression at the judged commits (see gate.py), 2 the gate could not
judge (bad arguments, an unreadable results folder or accepted.json, a result file of a judged
commit it could not read, a run without results at the head, results that changed while read,
an internal error).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from dashboard.commit_order import ORDER
from dashboard.regressions.classify import LIBRARY
from dashboard.regressions.completeness import (changed_files, folder_state, git_is_ancestor, missing_at_head,
                                                unread_results)
from dashboard.regressions.findings import resolve_commit
from dashboard.regressions.gate import judged_runs
from dashboard.regressions.judgement import CannotJudge, judge_folder  # noqa: F401 (CannotJudge: the CLI's)
from dashboard.regressions.report import render_json, render_markdown, render_text

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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dashboard.regressions",
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
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--asv-conf", type=Path,
                   help="the project's asv.conf.json, whose repository puts the commits in order, as the dashboard "
                        "does (default: the one beside the results, if any; without one: the stored dates)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)  # bad arguments: argparse exits 2 with the reason
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
                             asv_conf=args.asv_conf, warn=lambda line: print(f"warning: {line}", file=sys.stderr))
    j = judgement
    if args.format == "json":
        text = render_json(j.findings, j.status_changes, j.verdict, j.report, j.header, j.settings)
    elif args.format == "markdown":
        text = render_markdown(j.findings, j.status_changes, j.verdict, j.report, j.header)
    else:
        text = render_text(j.findings, j.status_changes, j.verdict, j.report, j.header)
    _print_report(text)
    return FAIL if j.verdict.failed else PASS


def _check_complete(results, report, whole, frame, base, head, state) -> None:
    """CannotJudge unless the gate read every result it judges (see completeness.py)."""
    judged: dict[str, list[str]] = {}
    base_of: dict[str, str] = {}
    dates = frame.groupby("commit_hash", observed=True)["date"].min()
    judged_from: dict[str, int] = {}
    for r in judged_runs(frame, base):
        judged.setdefault(r.machine, []).extend(r.commits)
        base_of[r.machine] = base_of.get(r.machine) or r.base_commit
        if r.commits:
            first = int(dates[r.commits[0]].value // 1_000_000)  # ms, as asv stores dates
            judged_from[r.machine] = min(judged_from.get(r.machine, first), first)
    problems = unread_results(report.skipped, results, whole, judged, base_of, git_is_ancestor, judged_from)
    if head is not None:
        problems += missing_at_head(frame, base, head)
    changed = changed_files(state, folder_state(results))
    if changed:
        problems.append(f"the results changed while the gate read them ({', '.join(changed[:5])}"
                        + (", ..." if len(changed) > 5 else "") + "); run it again once they are complete")
    if problems:
        raise CannotJudge("the gate could not read everything it judges:\n  " + "\n  ".join(problems))


def _print_report(text: str) -> None:
    """Print the report; a reader that stops early (| head) does not change the verdict."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit


def _parse_base(text: str | None, frame) -> tuple[str | None, str | None]:
    """--base A or A..B -> (full hash of A, full hash of B or None)."""
    if text is None:
        return None, None
    first, sep, last = text.partition("..")
    if not first:
        raise CannotJudge(f"--base {text!r}: name the base commit (A or A..B)")
    base = _resolve(frame, first, "--base")
    head = _resolve(frame, last, "--base") if sep and last else None
    if head is not None and _older(frame, head, base):
        raise CannotJudge(f"--base {text!r}: {last} is older than {first}")
    return base, head


def _older(frame, commit: str, than: str) -> bool:
    """In the commit order of a run that has both (else by stored date)."""
    both = frame[frame["commit_hash"].astype(str).isin([commit, than])]
    for _, rows in both.groupby(["machine", "env_name"], observed=True):
        at = rows.groupby(rows["commit_hash"].astype(str))[ORDER].min()
        if len(at) == 2:
            return bool(at[commit] < at[than])
    return bool(_date(frame, commit) < _date(frame, than))


def _up_to(frame, head: str):
    """The rows of the history as it stood at ``head``: per run, its commits up to head in the run's
    order; a run without head, its commits dated up to head's date."""
    runs = pd.MultiIndex.from_arrays([frame["machine"].astype(str), frame["env_name"].astype(str)])
    at_head = frame["commit_hash"].astype(str).to_numpy() == head
    head_at = pd.Series(frame[ORDER].to_numpy()[at_head], index=runs[at_head]).groupby(level=[0, 1]).min()
    limit = head_at.reindex(runs).to_numpy(dtype=float)  # NaN: the run has no head
    keep = np.where(np.isnan(limit), (frame["date"] <= _date(frame, head)).to_numpy(),
                    frame[ORDER].to_numpy() <= np.nan_to_num(limit))
    return frame[keep]


def _resolve(frame, name: str, option: str) -> str:
    """A commit of the results: a hash or prefix there, else a git revision of this checkout."""
    try:
        return resolve_commit(frame, name)
    except ValueError as exc:
        from_git = _git_revision(name)
        if from_git is None:
            raise CannotJudge(f"{option}: {exc}") from None
        try:
            return resolve_commit(frame, from_git)
        except ValueError:
            raise CannotJudge(f"{option}: {name} is commit {from_git[:12]}, which has no results here") from None


def _git_revision(name: str) -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _date(frame, commit: str):
    return frame.loc[frame["commit_hash"].astype(str) == commit, "date"].min()


def _commit_date(frame, name: str, option: str):
    return _date(frame, _resolve(frame, name, option))


if __name__ == "__main__":
    sys.exit(main())
