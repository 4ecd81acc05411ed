"""The regression detector and CI gate over asv results: no Dash, no torch.

    direction   which way is better for a metric (the one table)
    statistics  level changes in one series (asv's step fit, tests, intervals)
    newest      a change at the newest one or two commits: clear at once, or suspected
    findings    the detector over every series of a results frame: named, oriented Findings
    failures    benchmarks that started or stopped failing
    acceptance  accepted.json: regressions a team accepted
    gate        the per-commit verdict: what the judged commits introduced
    formatting  values in their units, p-values
    report      the text / Markdown / JSON reports
    cli         python -m regressions
"""

from regressions.acceptance import Acceptance, AcceptedFileError, load_accepted
from regressions.direction import HIGHER, LOWER, metric_direction
from regressions.failures import StatusChange, find_status_changes
from regressions.findings import (IMPROVEMENT, REGRESSION, Finding, find_changes, findings_frame,
                                            position_note, resolve_commit)
from regressions.gate import GateVerdict, judge
from regressions.statistics import (TAIL, Change, DetectorSettings, best_split, change_interval,
                                              detect_changes)

__all__ = ["HIGHER", "IMPROVEMENT", "LOWER", "REGRESSION", "TAIL", "Acceptance", "AcceptedFileError", "Change",
           "DetectorSettings", "Finding", "GateVerdict", "StatusChange", "best_split", "change_interval",
           "detect_changes", "find_changes", "find_status_changes", "findings_frame", "judge", "load_accepted",
           "metric_direction", "position_note", "resolve_commit"]
