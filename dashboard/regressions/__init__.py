"""The regression detector and CI gate over asv results: no Dash, no torch.

    direction   which way is better for a metric (the one table)
    statistics  level changes in one series (asv's step fit, tests, intervals)
    findings    the detector over every series of a results frame: named, oriented Findings
    report      the gate's verdict and the text / Markdown / JSON reports
    cli         python -m dashboard.regressions
"""

from dashboard.regressions.direction import HIGHER, LOWER, metric_direction
from dashboard.regressions.findings import (IMPROVEMENT, REGRESSION, Finding, find_changes, findings_frame,
                                            position_note, resolve_commit, since_filter)
from dashboard.regressions.statistics import (TAIL, Change, DetectorSettings, best_split, change_interval,
                                              detect_changes)

__all__ = ["HIGHER", "IMPROVEMENT", "LOWER", "REGRESSION", "TAIL", "Change", "DetectorSettings", "Finding",
           "best_split", "change_interval", "detect_changes", "find_changes", "findings_frame",
           "metric_direction", "position_note", "resolve_commit", "since_filter"]
