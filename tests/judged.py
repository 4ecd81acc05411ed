"""The Regressions page's input as the dashboard makes it: findings plus the gate's own
judgement of the same folder (regressions.judgement.verdict_record), for tests that call the
page's callbacks as functions."""

from __future__ import annotations

from pathlib import Path

from dashboard.store.detection import FindingsState
from regressions.judgement import verdict_record


def judged_state(results_dir: str | Path, findings: list, asv_conf: Path | None = None) -> FindingsState:
    return FindingsState("done", 0.0, findings, 1.0, verdict=verdict_record(results_dir, asv_conf))
