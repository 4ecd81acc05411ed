"""The "why n/a" line: what the suite recorded about the series that were skipped or failed at a
commit (dashboard.data.na_reasons), where a page shows those series as n/a (Overview, Compare)."""

from __future__ import annotations

from dash import html

from dashboard.data.na_reasons import STATUSES, why_na


def why_na_line(data, run, rows, commits: list[str], element_id: str) -> list:
    """[] when nothing among ``rows`` (a run's rows at ``commits``, filters applied) is n/a, else
    one line per commit: its commonest recorded reasons ("12 × cublaslt has no gelu epilogue"),
    "no reason recorded" where the suite kept none, and a reasons file that was left out, why."""
    if run is None or rows is None or not len(rows):
        return []
    lines = []
    for commit in dict.fromkeys(c for c in commits if c):
        mine = rows[rows["commit_hash"].astype(str) == commit]
        n_na = int(mine["status"].astype(str).isin(STATUSES).sum()) if len(mine) else 0
        listed, explained, problem = why_na(mine, run.series, data.results_dir, run.machine, commit)
        if not n_na and not problem:
            continue
        unexplained = f"; {n_na - explained} without a recorded reason" if listed and explained < n_na else ""
        parts = [html.B(f"Why n/a at {commit[:8]}: "), f"{n_na} series skipped or failed"]
        parts += [" — ", "; ".join(listed) + unexplained] if listed else [
            " (no reason recorded: asv keeps none; benchmarks.run records them in results/reasons/)"]
        if problem:
            parts += [html.Br(), html.Span(problem, className="bad")]
        lines.append(html.P(parts, className="hint why-na"))
    return [html.Div(lines, id=element_id)] if lines else []
