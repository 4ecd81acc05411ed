"""The gate's judgement of a results folder, as one object: what ``python -m regressions``
prints and what every dashboard page renders (nothing judges a second time).

``judge_folder(results, ...)`` loads the folder, detects every change, judges the newest commit
(or the commits after ``base``) and classifies each regression with its evidence and the runner
state. ``Judgement.document()`` is the gate's JSON report (``--format json``): plain JSON, so a
dashboard process can store it beside its findings and every page reads the same words.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from asv_results import asvconf
from asv_results.commit_order import ORDER, order_note
from asv_results.data import LoadReport, ResultsDirError
from asv_results.loading import load_results
from regressions.acceptance import AcceptedFileError, accepted_path, load_accepted, unknown_commits
from regressions.classify import LIBRARY, classified_verdict
from regressions.completeness import changed_files, git_is_ancestor, listing_now, missing_at_head, unread_results
from regressions.failures import StatusChange, find_status_changes
from regressions.findings import Finding, find_changes, resolve_commit
from regressions.gate import GateVerdict, judge, judged_runs
from regressions.history import HISTORY, min_history, table_commits, window
from regressions.recorded_state import recorded_states
from regressions.rerun_screen import screen
from regressions.rerun_verdict import RerunFileError, parse_reruns, with_reruns
from asv_results.safe_read import read_json
from regressions.statistics import DetectorSettings


class CannotJudge(Exception):
    """The gate cannot give a verdict; the message says why (exit 2)."""


@dataclass
class Judgement:
    verdict: GateVerdict
    findings: list[Finding]
    status_changes: list[StatusChange]
    report: LoadReport
    header: str
    settings: DetectorSettings
    warnings: list[str]  # printed on stderr by the gate: unusable files, accepted entries without results

    def document(self) -> dict:
        """The gate's JSON report (report.render_json), as a dict."""
        from regressions.report import render_json

        return json.loads(render_json(self.findings, self.status_changes, self.verdict, self.report, self.header,
                                      self.settings))


def judge_folder(results: str | Path, *, machine: str | None = None, threshold: float = 0.05,
                 base: str | None = None, strict: bool = False, fail_on: str = LIBRARY,
                 accepted: Path | None = None, since: str | None = None, asv_conf: Path | None = None,
                 warn=None, rerun: list[Path] | None = None, cache_dir: Path | None = None,
                 progress=None, history: int | None = HISTORY, jobs: int = 1) -> Judgement:
    """The gate's judgement (the CLI's options as keywords, their defaults the CLI's). The CLI and
    the dashboard (verdict_record) get the same completeness check: CannotJudge unless the gate
    read every result it judges and the folder did not change while it read them.
    ``warn(line)``: told each warning as it comes (the CLI prints them on stderr, also before a
    CannotJudge). ``cache_dir``: asv_results.cache's folder, the dashboard's (None: parse every
    file); ``progress``: told of the parse as it goes (asv_results.parse_progress); ``history``:
    the commits per run read, up to the judged ones (regressions.history; None: every commit; the
    header says what was left out); ``jobs``: detector processes (find_changes). CannotJudge when
    it cannot judge."""
    # ``rerun``: benchmarks.rerun's files; the verdict is then the final one (rerun_verdict.py)
    if history is not None and history < min_history():
        raise CannotJudge(f"history {history}: the gate's windows need at least {min_history()} commits per run")
    reruns = [r for path in rerun for r in _read_reruns(path)] if rerun else None
    project = asvconf.read_project(asvconf.find_conf(Path(results), asv_conf))
    chosen: dict = {}

    def window_rows(table):
        """The judged commits and the history before them, from the table (no frame yet)."""
        every = chosen["every_commit"] = table_commits(table)  # whatever the window: --base, accepted.json
        chosen["table"] = table
        try:
            chosen["base"] = _parse_base(base, every)
        except CannotJudge as exc:  # raised once the load's warnings are out, as before
            chosen["error"] = exc
            return np.empty(0, np.int64)
        head = chosen["base"][1]
        chosen["seen"] = _up_to(every, head) if head is not None else every  # the history as it stood at head
        chosen["cut"] = window(table, _judged_positions(chosen["seen"], chosen["base"][0]), history)
        return chosen["cut"].rows

    try:  # the server's loader and commit order (asv_results.loading, asv_results.commit_order)
        # the lean frame (no samples lists, the two CIs) of the window's rows: the detector reads the samples it uses
        loaded = load_results(results, machine=machine, cache_dir=cache_dir, commit_rank=project.commit_rank,
                              progress=progress, samples=False, stats=("ci_99_a", "ci_99_b"), params=False,
                              rows=window_rows)
    except ResultsDirError as exc:
        raise CannotJudge(str(exc)) from None
    report, table, every_commit = loaded.load_report, chosen["table"], chosen["every_commit"]
    warnings: list[str] = []

    def warning(line: str) -> None:
        warnings.append(line)
        if warn is not None:
            warn(line)

    for line in report.lines():
        warning(line)
    if every_commit.empty:
        where = f"machine {machine!r} in " if machine else ""
        raise CannotJudge(f"no usable asv results for {where}{str(results)!r}")
    if accepted is not None and not (accepted.exists() or accepted.is_symlink()):
        raise CannotJudge(f"accepted regressions: --accepted {accepted}: no such file")
    try:
        entries = load_accepted(accepted or accepted_path(results), results if accepted is None else None)
    except AcceptedFileError as exc:
        raise CannotJudge(f"accepted regressions: {exc}") from None
    for e in unknown_commits(entries, every_commit["commit_hash"].astype(str).unique()):
        warning(f"accepted.json: no results for commit {e.commit} ({e.benchmark})")
    if "error" in chosen:
        raise chosen["error"]
    (base_commit, head), seen, cut = chosen["base"], chosen["seen"], chosen["cut"]
    frame = loaded.frame
    _check_complete(results, report, every_commit, frame, base_commit, head, table.parsed.listed, machine)

    settings = DetectorSettings(threshold=threshold)
    findings = find_changes(frame, settings, benchmarks_meta=loaded.benchmarks, samples_of=loaded.samples_of,
                            jobs=jobs)
    status_changes = find_status_changes(frame)
    verdict = judge(frame, findings, status_changes, settings, base_commit=base_commit, accepted=entries,
                    strict=strict, benchmarks_meta=loaded.benchmarks, samples_of=loaded.samples_of)
    verdict = classified_verdict(verdict, frame, lambda: recorded_states(results, frame, per_benchmark=True,
                                                                         paths=_state_files(table, verdict)),
                                 fail_on=fail_on)
    verdict = replace(verdict, screened=screen(frame, verdict, loaded.benchmarks))
    if reruns is not None:
        verdict = with_reruns(verdict, reruns, settings.threshold)
    listed, listed_status = findings, status_changes
    if since:
        start = _commit_date(seen, since, "--since")
        listed = [f for f in findings if f.commit_date >= start]
        listed_status = [c for c in status_changes if c.commit_date >= start]
    lengths = frame.groupby(["machine", "env_name", "benchmark", "params_key"], observed=True)["commit_hash"].nunique()
    header = (f"Level changes and failures in {results} (threshold {settings.threshold:.0%}, {len(lengths)} series, "
              f"{frame['commit_hash'].nunique()} commits, {order_note(project.commit_rank, project.repo)}"
              + (f", listed since {since}" if since else "") + ")" + _too_short_note(lengths, settings) + cut.note())
    return Judgement(verdict, listed, listed_status, report, header, settings, warnings)


def _judged_positions(commits: pd.DataFrame, base_commit: str | None) -> dict[tuple[str, str], tuple[int | None, int]]:
    """Per run of ``commits`` (table_commits, cut at the head): the position of its first judged
    commit (None: nothing to judge) and of its last commit (what history.window takes)."""
    position = {(str(m), str(e), str(h)): int(o) for m, e, h, o in
                commits[["machine", "env_name", "commit_hash", ORDER]].itertuples(index=False)}
    last = commits.groupby(["machine", "env_name"], observed=True)[ORDER].max()
    out = {}
    for r in judged_runs(commits, base_commit):
        first = position[(r.machine, r.env_name, r.commits[0])] if r.commits else None
        out[(r.machine, r.env_name)] = (first, int(last[(r.machine, r.env_name)]))
    return out


def _state_files(table, verdict: GateVerdict) -> list[str]:
    """The result files (relative paths) whose runner states the classification reads: those of
    the commits either side of each finding it classifies, and every file the loader refused (it
    may hold one of them); at 5,000 files of 2 MB, reading every one took minutes."""
    wanted = {c for i in verdict.items if isinstance(i.change, Finding)
              for c in (i.change.previous_commit, i.change.commit_hash)}
    return [e.path for e in table.parsed.files if e.reason is not None or e.commit_hash in wanted]


def _read_reruns(path: Path) -> list:
    """The re-run's measurements (benchmarks.rerun's --out), through the one reader; CannotJudge
    naming the problem."""
    doc, reason = read_json(Path(path), Path(os.path.realpath(path)).parent)  # the file named, wherever it lies
    try:
        if reason is not None:
            raise RerunFileError(reason)
        return parse_reruns(doc)
    except RerunFileError as exc:
        raise CannotJudge(f"--rerun {path}: {exc}") from None


def _too_short_note(lengths, settings: DetectorSettings) -> str:
    """What the gate cannot judge for want of history: a pass there says nothing of a level change
    (two commits measured for a pull request, a new machine's first pushes)."""
    short = int((lengths < settings.min_before + 1).sum())
    if not short:
        return ""
    return (f". {short} of {len(lengths)} series have fewer than {settings.min_before + 1} commits: a level change "
            "cannot be judged there yet, only a series that started failing")


def verdict_record(results: str | Path, asv_conf: Path | None = None, base: str | None = None,
                   machine: str | None = None, cache_dir: Path | None = None) -> dict:
    """What the dashboard keeps of the gate's judgement with the CLI's defaults (``base``: its
    ``--base``; ``machine``: its ``--machine``), as plain JSON: {"document": the gate's JSON report,
    "machines": {machine: {"failed", "verdict"}}} (the verdict of each machine's items, what
    ``--machine`` gives), or {"error": why it cannot judge}."""
    from dataclasses import replace

    from regressions.report import verdict_word

    try:
        judgement = judge_folder(results, asv_conf=asv_conf, base=base, machine=machine, cache_dir=cache_dir)
    except CannotJudge as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a bug in the gate: said on the pages and logged whole, never a blank page
        logging.getLogger(__name__).exception("the gate failed on %s", results)
        return {"error": f"the gate failed ({type(exc).__name__}: {exc}); the server's log has the traceback"}
    verdict = judgement.verdict
    machines = {}
    for machine in sorted({r.machine for r in verdict.runs}):
        mine = replace(verdict, runs=[r for r in verdict.runs if r.machine == machine],
                       items=[i for i in verdict.items if i.change.machine == machine])
        machines[machine] = {"failed": mine.failed, "verdict": verdict_word(mine)}
    return {"document": judgement.document(), "machines": machines}


def _check_complete(results, report, whole, frame, base, head, listed, machine) -> None:
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
    changed = changed_files(listed, listing_now(results, machine))  # the load's listing, and one more now
    if changed:
        problems.append(f"the results changed while the gate read them ({', '.join(changed[:5])}"
                        + (", ..." if len(changed) > 5 else "") + "); run it again once they are complete")
    if problems:
        raise CannotJudge("the gate could not read everything it judges:\n  " + "\n  ".join(problems))


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
