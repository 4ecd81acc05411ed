"""Change marks that wait for the detector's worker: a Trends figure never detects on its own
while the worker runs (at 5,000 commits asv's step fit costs ~60 ms a series), it says the marks
are pending and is drawn again once the worker is done. The poll that notices it is on only while
a figure is pending: the figure's callback turns it on (poll_disabled) and the poll's own callback
(register_marks_poll) changes the ``<page>-marks-ready`` store the figure's callback listens to."""

from __future__ import annotations

import time

from dash import Input, Output, dcc, no_update

from dashboard.store.model import ResultsStore
from dashboard.ui.callback_guards import guarded

POLL_MS = 2000


def marks_pending(detected) -> bool:
    """Whether the detector's worker (the store's FindingsState; None where none runs) is still
    running: no marks yet."""
    return detected is not None and detected.status == "running"


def worker_done(detected) -> bool:
    """Whether the detector's worker has run over every series: its findings are the marks."""
    return detected is not None and detected.status == "done" and detected.findings is not None


def workers_changes(detected, run, series: set[tuple[str, str]]) -> list:
    """The done worker's level changes (regressions.Finding) in these (benchmark, params) series
    of the run."""
    from regressions import Finding

    return [f for f in detected.findings if isinstance(f, Finding) and f.machine == run.machine
            and f.env_name == run.env_name and (f.benchmark, f.params) in series]


def pending_note(detected) -> str:
    """The line under a pending figure's title."""
    return ("<br><sup>Change marks pending: the regression detector is still running over every series "
            f"({time.time() - detected.started:.0f} s so far); they appear here when it is done.</sup>")


def poll_disabled(detected) -> bool:
    return not marks_pending(detected)


def marks_poll(page_id: str) -> list:
    """The layout's poll (off until a figure is pending) and the store it changes when the marks are there."""
    return [dcc.Interval(id=f"{page_id}-poll", interval=POLL_MS, disabled=True), dcc.Store(id=f"{page_id}-marks-ready")]


def marks_ready_input(page_id: str) -> Input:
    """The figure callback's input that draws it again once the worker is done."""
    return Input(f"{page_id}-marks-ready", "data")


def poll_output(page_id: str) -> Output:
    return Output(f"{page_id}-poll", "disabled")


def register_marks_poll(app, store: ResultsStore, page_id: str) -> None:
    @app.callback(Output(f"{page_id}-marks-ready", "data"), Input(f"{page_id}-poll", "n_intervals"),
                  prevent_initial_call=True)
    @guarded(lambda t: no_update)
    def _marks_ready(polls):
        """The worker's status once it is no longer running (the figure then draws its marks)."""
        detected = store.findings_in_background()
        return no_update if detected is None or marks_pending(detected) else detected.status
