"""Profile: for one case, what each implementation launches and how long each kernel takes, at
one commit and across the commits profiled (from results/profiles/, written by
`python -m benchmarks.profile --save`); links to download the kept Chrome traces."""

from __future__ import annotations

import threading
from urllib.parse import quote

import flask
from dash import Input, Output, html

from dashboard.data import profiles
from dashboard.ui.callback_guards import error_figure, guarded
from dashboard.ui.notices import message
from dashboard.ui.widgets import dropdown, graph, labelled, named_values
from dashboard.figures import build_profile_figure, build_profile_history_figure
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.model import ResultsStore
from dashboard.pages import Page
from dashboard.data.urlstate import SHELL, Query, qid

ID = "profile"
TRACE_ROUTE = "/profile-trace/"


class _ProfilesCache:
    """The loaded profile passes of a results dir, reloaded only when the files change."""

    def __init__(self):
        self._lock = threading.Lock()
        self._key, self._loaded = None, None

    def get(self, results_dir) -> profiles.LoadedProfiles:
        key = (str(results_dir), profiles.signature(results_dir))
        with self._lock:
            if key != self._key:
                self._key, self._loaded = key, profiles.load_profiles(results_dir)
            return self._loaded


_cache = _ProfilesCache()


def choices(loaded: profiles.LoadedProfiles, machine: str | None):
    """(machines, the machine in effect, its cases, its commits newest first)."""
    frame = loaded.frame
    machines = sorted(frame["machine"].unique())
    machine = machine if machine in machines else (machines[0] if machines else None)
    mine = frame[frame["machine"] == machine]
    cases = sorted(mine["case"].unique())
    commits = (mine[["commit_hash", "date"]].drop_duplicates().sort_values("date", ascending=False))
    return machines, machine, cases, [(h, d) for h, d in zip(commits["commit_hash"], commits["date"])]


def layout(data: DashboardData, query: Query):
    loaded = _cache.get(data.results_dir)
    if loaded.frame.empty:
        return html.Div([html.H1("Profile"), message(
            "No profile passes yet. On a GPU runner: python -m benchmarks.profile --grid quick "
            "--machine NAME --save results/profiles [--trace], then commit results/profiles/.")]
            + _skipped(loaded))
    machines, machine, cases, commits = choices(loaded, query.one("machine"))
    case = query.one("case", cases[0] if cases else None, allowed=cases)
    commit = query.one("commit", commits[0][0] if commits else None, allowed=[h for h, _ in commits])
    return html.Div([
        html.H1("Profile"),
        html.Div([
            labelled("Machine", dropdown(ID, "machine", machines, machine, clearable=False)),
            labelled("Case", dropdown(ID, "case", cases, case, clearable=False), "30rem"),
            labelled("Commit", dropdown(ID, "commit", _commit_options(commits), commit, clearable=False), "16rem"),
        ], className="controls"),
        graph(ID, "figure"),
        graph(ID, "history"),
        html.Div(id="profile-details"),
        *_skipped(loaded),
    ])


def _commit_options(commits):
    return [{"label": f"{h[:8]} · {d:%Y-%m-%d %H:%M}", "value": h} for h, d in commits]


def _skipped(loaded: profiles.LoadedProfiles):
    if not loaded.skipped:
        return []
    return [html.Details([html.Summary(f"{len(loaded.skipped)} profile file(s) or entries left out",
                                       id="profile-skipped"),
                          html.Ul([html.Li(f"{p}: {why}") for p, why in loaded.skipped])])]


def update(results_dir, machine, case, commit, theme="light"):
    """(figure at the commit, figure across commits, details: not-profiled reasons and traces)."""
    loaded = _cache.get(results_dir)
    frame = loaded.frame
    of_case = frame[(frame["machine"] == machine) & (frame["case"] == case)]
    at_commit = of_case[of_case["commit_hash"] == commit]
    title = f"{case} — {machine}, commit {str(commit)[:8]}"
    details = []
    skipped = loaded.not_profiled
    skipped = skipped[(skipped["machine"] == machine) & (skipped["case"] == case) & (skipped["commit_hash"] == commit)]
    if not skipped.empty:
        details.append(html.P("Not profiled: " + "; ".join(f"{i} ({r})" for i, r in zip(skipped["impl"], skipped["reason"]))))
    traces = at_commit.dropna(subset=["trace"]).drop_duplicates("impl")
    if not traces.empty:
        details.append(html.P(["Chrome traces (open in Perfetto): "] + [
            html.A(impl, href=TRACE_ROUTE + quote(t), download="", style={"marginRight": "1em"})
            for impl, t in zip(traces["impl"], traces["trace"])]))
    return (build_profile_figure(at_commit, theme, title), build_profile_history_figure(of_case, theme), details)


def register(app, store: ResultsStore):
    @app.server.route(TRACE_ROUTE + "<path:relative>")
    def _trace(relative):  # read-only, and only files inside results/profiles
        path = profiles.trace_file(store.results_dir, relative)
        if path is None:
            flask.abort(404)
        return flask.send_file(path, as_attachment=True, download_name=path.name)

    @app.callback(Output(qid(ID, "case"), "options"), Output(qid(ID, "commit"), "options"),
                  Input(qid(ID, "machine"), "value"))
    @guarded(lambda t: [], lambda t: [])
    def _options(machine):
        _, _, cases, commits = choices(_cache.get(store.results_dir), machine)
        return cases, _commit_options(commits)

    @app.callback(Output(f"{ID}-figure", "figure"), Output(f"{ID}-history", "figure"),
                  Output("profile-details", "children"),
                  inputs=dict(named_values(ID, ("machine", "case", "commit")),
                              theme=Input(qid(SHELL, "theme"), "value")))
    @guarded(error_figure(), error_figure(), lambda t: message(t, "error"))
    def _update(**named):  # update's parameters by name
        return update(store.results_dir, **named)


PAGE = Page("/profile", "Profile", 5, layout, register, "kernels launched per implementation, per commit")
