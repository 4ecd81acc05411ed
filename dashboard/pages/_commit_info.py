"""The card under both Trends figures: the clicked (or marked) commit, a link to it and to
Compare against its predecessor. Shared by the suite's and the generic Trends, so neither page
imports the other."""

from __future__ import annotations

from dash import dcc, html

from dashboard.ui.commit_choice import resolve_commit
from dashboard.data.dashboard_data import DashboardData
from dashboard.data.urlstate import link


def commit_info(data: DashboardData, machine, env, click, marked, theme="light"):
    """A link to the clicked (or marked) commit and to Compare against its predecessor."""
    run = data.run(machine, env)
    chosen = None
    if click and click.get("points"):
        custom = click["points"][0].get("customdata")
        chosen = custom[0] if isinstance(custom, list) and custom else None
    chosen = resolve_commit(run, chosen or marked) if (chosen or marked) and run is not None else None
    if chosen is None:
        return html.Span("Click a point to get a link to its commit.", className="hint")
    row = run.commits[run.commits["commit_hash"] == chosen].iloc[0]
    parts = [html.B(f"commit {chosen[:10]}"), f" · {row['date']:%Y-%m-%d %H:%M} · #{row['position']} "]
    url = data.commit_link(chosen)
    if url:
        parts += [" · ", html.A("open commit ↗", href=url, target="_blank", id="trends-commit-link")]
    previous = run.previous_commit(chosen)
    if previous:
        parts += [" · ", dcc.Link("compare with previous", href=link("/compare", {
            "machine": run.machine, "env": run.env_name, "a": previous, "b": chosen, "theme": theme}))]
    return html.Span(parts)
