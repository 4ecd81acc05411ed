"""The history the gate judges: per run (machine, environment), the judged commits and the
``history - 1`` commits before the first of them, chosen from the table before any frame is
built (asv_results.table, by commit position).

At 5,000 commits x 10,000 series a frame of every row (50 M) and the detector over every commit of
every series took over an hour and 16 GB; the gate judges the newest commits, and what it says of
them depends only on a bounded history before them: the detector's windows (``window`` commits
either side of a change, the newest-commit search over ``TAIL`` commits and the ``window`` before
them), the classification's and the re-run screen's windows, the noise estimated from the
history. ``min_history()`` is the longest of those windows; ``HISTORY`` the default, chosen by
measurement (tools/measure_gate_history.py, docs/regression-gate.md): on 1,000-commit histories
the gate's pass/fail of a series differed from the full history's in 1.5-2 % of series at 200
commits (2-3 % at 100, 1 % at 400), as the noise estimate and the step fit's penalty use the
whole history read; histories of at most 200 commits are judged exactly as before.

What a window cannot see it does not judge: a regression older than the window, even one still
open, is not listed (the gate says how much history it read; ``--history all`` reads it all).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from asv_results.commit_order import ORDER
from regressions.covariate import SIGMA_WINDOW
from regressions.rerun_screen import HISTORY as SCREEN_HISTORY, WINDOWS as SCREEN_WINDOWS
from regressions.statistics import TAIL, DetectorSettings

ALL = None  # --history all: every commit
HISTORY = 200  # commits per run judged by default (see the module docstring)


def min_history(settings: DetectorSettings = DetectorSettings()) -> int:
    """The fewest commits per run (judged ones included) the gate's windows need: the newest-commit
    search's (``TAIL`` commits and the ``window`` before them), a change's window either side, the
    classification's noise window before a change and the re-run screen's history before its
    newest runs; one more, the commit before them all."""
    return 1 + max(TAIL + settings.window, 2 * settings.window, SIGMA_WINDOW + TAIL,
                   SCREEN_HISTORY + max(SCREEN_WINDOWS))


def table_commits(table) -> pd.DataFrame:
    """Every commit of every run of a ResultsTable, one row each: machine, env_name, commit_hash,
    date and the ``order`` (its position in the run): what the gate resolves --base and --since
    against and checks for unread files, whatever the window."""
    parts = [run.commits[np.diff(run.start) > 0].assign(machine=m, env_name=e).rename(columns={"position": ORDER})
             for (m, e), run in sorted(table.runs.items())]  # a commit without rows is not in any frame either
    columns = ["machine", "env_name", "commit_hash", "date", ORDER]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


@dataclass(frozen=True)
class Window:
    """The rows the gate reads, and what it left out."""

    rows: np.ndarray  # table rows, in table order
    history: int | None  # commits per run before and at the judged ones (None: all)
    commits_left_out: int  # over every run
    runs_cut: int  # runs with commits left out
    longest_run: int  # commits in the longest run

    def note(self) -> str:
        """What the gate's header says of it ("" when nothing was left out)."""
        if not self.commits_left_out:
            return ""
        return (f". Judged on the newest {self.history} commits of each run up to the judged ones (--history "
                f"{self.history}; {self.commits_left_out} older commits of {self.runs_cut} run"
                f"{'s' if self.runs_cut != 1 else ''} not read, of up to {self.longest_run}): a regression older "
                "than that, even one still open, is not seen here (--history all reads every commit)")


def window(table, judged: dict[tuple[str, str], tuple[int | None, int]], history: int | None) -> Window:
    """The rows of each run's commits from ``history - 1`` before its first judged commit to its
    last one read. ``judged``: (machine, env_name) -> (position of the first judged commit, None
    when the run has nothing to judge; position of the last commit read: the head, or the run's
    newest); a run not in it is not read; one with nothing to judge keeps its newest ``history``
    commits up to the last read. ``history`` None: every commit up to the last read."""
    parts, left_out, cut, longest = [], 0, 0, 0
    for key, run in table.runs.items():
        longest = max(longest, len(run.commits))
        if key not in judged:
            continue
        first, last = judged[key]
        start = 0 if history is None else max(0, min(last if first is None else first, last) - (history - 1))
        parts.append(np.arange(run.start[start], run.start[last + 1], dtype=np.int64))
        if start:
            left_out += start
            cut += 1
    rows = np.concatenate(parts) if parts else np.empty(0, np.int64)
    return Window(rows, history, left_out, cut, longest)
