"""How the gate's verdict and the history's changes are reported: text, Markdown and JSON.

Every change is one line: level changes with their values in real units (formatting.py) and a
p-value of sensible precision, benchmarks that started or stopped failing, each grouped by the
commit it is at. A sub-metric (``step.forward`` beside ``step``, same parameters, same way) is
listed under its parent instead of beside it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Sequence

from asv_results.data import LoadReport
from regressions.acceptance import PLACEHOLDERS
from regressions.failures import StatusChange
from regressions.findings import REGRESSION, Finding
from regressions.formatting import format_change, format_p, format_value
from regressions.classify import ENVIRONMENT, NOISE
from regressions.gate import ACCEPTED, EARLIER, REGRESSION_ITEM, SUSPECTED, GateItem, GateVerdict

Change = Finding | StatusChange
EARLIER_LISTED = 10  # earlier open regressions named in the gate section; all are in the history


def _group_by_commit(changes: Sequence[Change]) -> list[tuple[tuple, list[Change]]]:
    groups: dict[tuple, list[Change]] = {}
    for c in sorted(changes, key=lambda c: (c.commit_date, c.commit_hash), reverse=True):
        groups.setdefault((c.commit_hash, c.commit_date, c.machine, c.env_name), []).append(c)
    return list(groups.items())


_PARAM = re.compile(r"(?:^|,\s*)(\w+)=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,]*)")


def _params_nest(parent: str, child: str) -> bool:
    """Whether ``child``'s parameters are ``parent``'s but for one string value that extends the
    parent's by a dotted part (``function='step.forward'`` under ``function='step'``): hierarchy
    carried in a parameter, as another project stores it."""
    a, b = _PARAM.findall(parent or ""), _PARAM.findall(child or "")
    if not a or [n for n, _ in a] != [n for n, _ in b]:
        return False
    differ = [(x, y) for (_, x), (_, y) in zip(a, b) if x != y]
    if len(differ) != 1:
        return False
    x, y = differ[0]
    return len(x) >= 2 and x[0] == x[-1] == y[0] == y[-1] and x[0] in "'\"" and y[1:-1].startswith(x[1:-1] + ".")


def _is_parent(p, c) -> bool:
    """A sub-metric: a benchmark whose name extends p's by a dotted part with the same
    parameters, or the same benchmark with a parameter that does (_params_nest)."""
    return ((c.benchmark.startswith(p.benchmark + ".") and p.params == c.params)
            or (c.benchmark == p.benchmark and _params_nest(p.params, c.params)))


def nested(members: Sequence[Change]) -> list[tuple[Change, int]]:
    """(change, depth) in report order: regressions first, larger first, each sub-metric right
    under its nearest parent (a benchmark whose name is a dotted prefix of its name, same
    parameters; or the same benchmark whose parameter value is a dotted prefix of its own:
    ``function='step'`` over ``function='step.forward'``; same direction)."""
    ordered = sorted(members, key=lambda c: (c.direction != REGRESSION, isinstance(c, Finding),
                                             -abs(getattr(c, "relative_change", 0.0)), c.benchmark))

    def parent(c):
        candidates = [p for p in ordered if p is not c and isinstance(p, Finding) and isinstance(c, Finding)
                      and _is_parent(p, c) and p.direction == c.direction]
        return max(candidates, key=lambda p: (len(p.benchmark), len(p.params)), default=None)

    parents = {id(c): parent(c) for c in ordered}
    out: list[tuple[Change, int]] = []

    def place(c, depth):
        out.append((c, depth))
        for child in ordered:
            if parents[id(child)] is c:
                place(child, depth + 1)

    for c in ordered:
        if parents[id(c)] is None:
            place(c, 0)
    return out


def _nested_items(items: Sequence[GateItem]) -> list[tuple[GateItem, int]]:
    """Gate items in report order, sub-metrics under their parents (see nested)."""
    by_change = {id(i.change): i for i in items}
    return [(by_change[id(c)], depth) for c, depth in nested([i.change for i in items])]


def describe(c: Change) -> str:
    """One change on one line (no commit: the group header says it)."""
    name = f"{c.benchmark}({c.params})" if c.params else c.benchmark
    if isinstance(c, StatusChange):
        label = "FAILING" if c.direction == REGRESSION else "FIXED"
        previous = f"; previous {c.previous_commit[:8]}" if c.previous_commit else ""
        return f"{label:<11} {name}  {c.summary()}  [{c.status()}{previous}]"
    return (f"{c.direction.upper():<11} {name}  {format_value(c.before, c.unit)} -> "
            f"{format_value(c.after, c.unit)}  {format_change(c.relative_change)}  {format_p(c.p_value)}  "
            f"[{c.status()}; previous {c.previous_commit[:8]}]")


def acceptance_entry(c: Change) -> dict:
    """The accepted.json entry that would accept this change (who and why left to fill in)."""
    entry = {"benchmark": c.benchmark, "params": c.params, "machine": c.machine, "commit": c.commit_hash[:12],
             **PLACEHOLDERS}
    return {k: v for k, v in entry.items() if v != ""}


def _judged_line(verdict: GateVerdict) -> list[str]:
    lines = []
    for run in verdict.runs:
        if not run.commits:
            lines.append(f"  {run.machine} / {run.env_name}: no commits after the base")
            continue
        span = run.commits[0][:8] if len(run.commits) == 1 else f"{run.commits[0][:8]}..{run.commits[-1][:8]}"
        after = f" after {run.base_commit[:8]}" if run.base_commit else ""
        lines.append(f"  {run.machine} / {run.env_name}: {len(run.commits)} commit(s){after}: {span}")
    return lines


def verdict_word(verdict: GateVerdict) -> str:
    failing = verdict.failing
    if failing:
        top = [i for i, depth in _nested_items(failing) if depth == 0]  # sub-metrics count with their parent
        regressions = sum(i.category == REGRESSION_ITEM for i in top)
        suspected = len(top) - regressions
        parts = [f"{regressions} regression(s)" if regressions else "",
                 f"{suspected} suspected (--strict)" if suspected else "",
                 f"{len(failing) - len(top)} sub-metric(s) with them" if len(failing) > len(top) else ""]
        return "FAIL: " + ", ".join(p for p in parts if p)
    suspected = len(verdict.of(SUSPECTED))
    return "pass" + (f" ({suspected} suspected; --strict would fail)" if suspected else "")


def render_text(findings: Sequence[Finding], status_changes: Sequence[StatusChange], verdict: GateVerdict,
                report: LoadReport, header: str) -> str:
    lines = [header, "", "Gate: judged commits", *_judged_line(verdict)]
    sections = ((REGRESSION_ITEM, "fails the gate"), (SUSPECTED, "fails only with --strict"),
                (ENVIRONMENT, "the controls moved too: not failed, --fail-on all fails it"),
                (NOISE, "the spread grew, not the level (--fail-on all fails it), or an A/B re-run did not "
                          "reproduce it: not failed"),
                (ACCEPTED, "accepted in accepted.json"))
    for category, meaning in sections:
        items = verdict.of(category)
        if items:
            lines.append(f"\n{category.upper()} ({meaning}):")
            for item, depth in _nested_items(items):
                pad = "  " * depth
                lines.append(f"  {pad}{'└ ' if depth else ''}{describe(item.change)}")
                lines.append(f"      {pad}at {item.change.commit_hash[:12]} on {item.change.machine}: {item.note}")
                if item.classification is not None:
                    lines.append(f"      {pad}class {item.classification.label()}")
                if category != ACCEPTED:
                    lines.append(f"      {pad}to accept, add to accepted.json: "
                                 f"{json.dumps(acceptance_entry(item.change))}")
    earlier = [i for i in verdict.of(EARLIER) if i.acceptance is None]
    if earlier:
        lines.append(f"\nStill open from before the judged commits (not judged now; accept them in accepted.json): "
                     f"{len(earlier)}")
        for item in earlier[:EARLIER_LISTED]:
            lines.append(f"  {item.change.commit_hash[:8]} {describe(item.change)}")
        if len(earlier) > EARLIER_LISTED:
            lines.append(f"  ... and {len(earlier) - EARLIER_LISTED} more (below)")
    lines.append("\nHistory: every change found, newest commit first")
    changes = [*findings, *status_changes]
    if not changes:
        lines.append("No level changes found.")
    for (commit, date, machine, env), members in _group_by_commit(changes):
        n_reg = sum(c.direction == REGRESSION for c in members)
        lines.append(f"\ncommit {commit[:12]}  {date:%Y-%m-%d %H:%M}  {machine} / {env}: "
                     f"{n_reg} regression(s), {len(members) - n_reg} improvement(s)")
        for c, depth in nested(members):
            lines.append(f"  {'  ' * depth}{'└ ' if depth else ''}{describe(c)}")
    lines += _report_lines(report)
    lines.append(f"\nGate: {verdict_word(verdict)}")
    return "\n".join(lines)


def render_markdown(findings: Sequence[Finding], status_changes: Sequence[StatusChange], verdict: GateVerdict,
                    report: LoadReport, header: str) -> str:
    lines = [f"## {header}", "", f"**Gate: {verdict_word(verdict)}**", "", "Judged commits:", ""]
    lines += [f"- {line.strip()}" for line in _judged_line(verdict)] + [""]
    for category in (REGRESSION_ITEM, SUSPECTED, ENVIRONMENT, NOISE, ACCEPTED, EARLIER):
        items = verdict.of(category)
        if items:
            lines += [f"### {category} ({len(items)})", "", "| commit | change | note |", "| --- | --- | --- |"]
            lines += [f"| `{i.change.commit_hash[:12]}` | {_md(describe(i.change))} | {_md(_note(i))} |" for i in items]
            lines.append("")
    for (commit, date, machine, env), members in _group_by_commit([*findings, *status_changes]):
        lines += [f"### `{commit[:12]}` ({date:%Y-%m-%d %H:%M}, {machine} / {env})", "",
                  "| change | benchmark | params | before → after | relative | p | status |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for c, depth in nested(members):
            name = f"{'↳ ' * depth}`{c.benchmark}`"
            if isinstance(c, StatusChange):
                lines.append(f"| {c.summary()} | {name} | {_md(c.params)} | {c.before or '—'} → {c.after} | | | "
                             f"{c.status()} |")
            else:
                lines.append(f"| {c.direction} | {name} | {_md(c.params)} | {format_value(c.before, c.unit)} → "
                             f"{format_value(c.after, c.unit)} | {format_change(c.relative_change)} | "
                             f"{format_p(c.p_value).removeprefix('p=')} | {c.status()} |")
        lines.append("")
    if not findings and not status_changes:
        lines += ["No level changes found.", ""]
    problems = _report_lines(report)
    if problems:
        lines += ["### Results that could not be used", ""] + [f"- {p.strip()}" for p in problems[1:]] + [""]
    return "\n".join(lines)


def _note(item: GateItem) -> str:
    return item.note + (f"; class {item.classification.label()}" if item.classification is not None else "")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_json(findings: Sequence[Finding], status_changes: Sequence[StatusChange], verdict: GateVerdict,
                report: LoadReport, header: str, settings) -> str:
    def change_dict(c: Change) -> dict:
        d = dataclasses.asdict(c)
        d["commit_date"] = c.commit_date.isoformat()
        d["kind"] = c.kind
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}

    def item_dict(i: GateItem) -> dict:
        out = {"category": i.category, "note": i.note, "change": change_dict(i.change)}
        if i.acceptance is not None:
            out["accepted"] = dataclasses.asdict(i.acceptance)
        if i.classification is not None:
            c = i.classification
            out["classification"] = {"class": c.kind, "evidence": c.evidence, "state_changes": list(c.state_changes),
                                     "controls": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                                   for k, v in dataclasses.asdict(m).items()} for m in c.controls]}
        if i.rerun is not None:
            out["rerun"] = _rerun_dict(i.rerun)
        return out

    doc = {
        "summary": header,
        "threshold": settings.threshold,
        "gate": {"failed": verdict.failed, "strict": verdict.strict, "verdict": verdict_word(verdict),
                 "judged": [dataclasses.asdict(r) for r in verdict.runs],
                 "failing": [item_dict(i) for i in verdict.failing],
                 "rerun": [item_dict(i) for i in verdict.items if i.rerun is not None],
                 "items": [item_dict(i) for i in verdict.items],
                 "screened": [{"change": change_dict(f), "z": z} for f, z in verdict.screened],
                 "accepted_elsewhere": [{"change": change_dict(c), "accepted": dataclasses.asdict(e)}
                                        for c, e in verdict.accepted_elsewhere]},
        "commits": [{"commit_hash": c, "date": d.isoformat(), "machine": m, "env_name": e,
                     "changes": [change_dict(x) for x, _ in nested(members)]}
                    for (c, d, m, e), members in _group_by_commit([*findings, *status_changes])],
        "load_report": {"loaded_files": len(report.loaded_files),
                        "skipped": [dataclasses.asdict(s) for s in report.skipped],
                        "problems": report.problems},
    }
    return json.dumps(doc, indent=2)


def _rerun_dict(rerun) -> dict:
    """A re-run's judgement (rerun_judgement.RerunJudgement) or the reason it could not measure."""
    if isinstance(rerun, str):
        return {"outcome": "not measured", "problem": rerun}
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in dataclasses.asdict(rerun).items()}


def _report_lines(report: LoadReport) -> list[str]:
    if report.ok:
        return []
    return ["\nResults that could not be used:"] + [f"  {line}" for line in report.lines()]
