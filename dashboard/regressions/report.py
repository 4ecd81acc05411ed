"""How findings are reported: the gate's verdict and the text, Markdown and JSON renderers."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Sequence

from dashboard.data import LoadReport
from dashboard.regressions.findings import REGRESSION, Finding


def gate(findings: Sequence[Finding], confirmed_only: bool) -> list[Finding]:
    """The regressions that fail the gate: present at the newest commit (confirmed ones only
    with ``confirmed_only``)."""
    return [f for f in findings if f.direction == REGRESSION and f.present_at_newest
            and (f.confirmed or not confirmed_only)]


def _group_by_commit(findings: Sequence[Finding]) -> list[tuple[tuple, list[Finding]]]:
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:  # already newest first
        groups.setdefault((f.commit_hash, f.commit_date, f.machine, f.env_name), []).append(f)
    for members in groups.values():
        members.sort(key=lambda f: (f.direction != REGRESSION, -abs(f.relative_change)))
    return list(groups.items())


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def render_text(findings, report: LoadReport, header: str, failing: list[Finding]) -> str:
    lines = [header]
    if not findings:
        lines.append("No level changes found.")
    for (commit, date, machine, env), members in _group_by_commit(findings):
        n_reg = sum(f.direction == REGRESSION for f in members)
        lines.append(f"\ncommit {commit[:12]}  {date:%Y-%m-%d %H:%M}  {machine} / {env}: "
                     f"{n_reg} regression(s), {len(members) - n_reg} improvement(s)")
        for f in members:
            lines.append(f"  {f.direction.upper():<11} {f.benchmark}({f.params})  {_fmt(f.before)} -> "
                         f"{_fmt(f.after)} {f.unit or ''}  {f.relative_change:+.1%}  p={f.p_value:.2g}  "
                         f"[{f.status()}; previous {f.previous_commit[:8]}]")
    lines += _report_lines(report)
    lines.append(f"\nGate: {len(failing)} regression(s) present at the newest commit -> "
                 f"{'FAIL' if failing else 'pass'}")
    return "\n".join(lines)


def render_markdown(findings, report: LoadReport, header: str, failing: list[Finding]) -> str:
    lines = [f"## {header}", ""]
    if not findings:
        lines.append("No level changes found.")
    for (commit, date, machine, env), members in _group_by_commit(findings):
        lines += [f"### `{commit[:12]}` ({date:%Y-%m-%d %H:%M}, {machine} / {env})", "",
                  "| change | benchmark | params | before → after | relative | p | status |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for f in members:
            params = f.params.replace("|", "\\|")
            lines.append(f"| {f.direction} | `{f.benchmark}` | {params} | {_fmt(f.before)} → {_fmt(f.after)} "
                         f"{f.unit or ''} | {f.relative_change:+.1%} | {f.p_value:.2g} | {f.status()} |")
        lines.append("")
    problems = _report_lines(report)
    if problems:
        lines += ["### Results that could not be used", ""] + [f"- {p.strip()}" for p in problems[1:]] + [""]
    lines.append(f"**Gate:** {len(failing)} regression(s) present at the newest commit → "
                 f"{'FAIL' if failing else 'pass'}")
    return "\n".join(lines)


def render_json(findings, report: LoadReport, header: str, failing: list[Finding], settings) -> str:
    def finding_dict(f: Finding) -> dict:
        d = dataclasses.asdict(f)
        d["commit_date"] = f.commit_date.isoformat()
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}

    doc = {
        "summary": header,
        "threshold": settings.threshold,
        "commits": [{"commit_hash": c, "date": d.isoformat(), "machine": m, "env_name": e,
                     "findings": [finding_dict(f) for f in members]}
                    for (c, d, m, e), members in _group_by_commit(findings)],
        "load_report": {"loaded_files": len(report.loaded_files),
                        "skipped": [dataclasses.asdict(s) for s in report.skipped],
                        "problems": report.problems},
        "gate": {"failed": bool(failing), "regressions_present_at_newest": len(failing)},
    }
    return json.dumps(doc, indent=2)


def _report_lines(report: LoadReport) -> list[str]:
    if report.ok:
        return []
    return ["\nResults that could not be used:"] + [f"  {line}" for line in report.lines()]
