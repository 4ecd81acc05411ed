"""The run selector every page shares (machine, environment, commits) with its callbacks, the
run a link asks for, and a trend plot's view controls (x axis, log y, the commit to mark).
"""

from __future__ import annotations

import dash
from dash import Input, Output, State, dcc

from dashboard.ui.commit_choice import commit_of, commit_options, commit_or_newest, marked_commit
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.model import ResultsStore
from dashboard.data.run_view import Run
from dashboard.data.urlstate import Query, qid
from dashboard.ui.widgets import dropdown, labelled, named_values


def run_of(data: DashboardData, query: Query) -> Run | None:
    """The run a link asks for; a machine or environment these results do not have is noted on
    the query (the page then says what it shows instead)."""
    machine, env = query.one("machine"), query.one("env")
    static_machines = {m for m, _ in data.static_runs}
    if machine in static_machines and machine not in data.machine_names():
        machine = env = None  # the Kernels page's machine, carried over: no timings there, so the default run
    if machine is not None and machine not in data.machine_names():
        query.reject("machine", machine)
    run = data.run(machine, env)
    if env is not None and run is not None and env != run.env_name and machine in (None, run.machine):
        query.reject("env", env)
    return run


def trend_view_controls(page: str, query: Query, run: Run | None) -> list:
    """The x axis (commit order or date), a log y axis and the commit to mark, for a trend plot."""
    return [
        labelled("x axis", dcc.RadioItems(id=qid(page, "x"), options=[{"label": " commit order", "value": "commit"},
                                                                       {"label": " date", "value": "date"}],
                                          value=query.one("x", "commit", allowed=("commit", "date")), inline=True),
                 "13rem"),
        labelled("y axis", dcc.Checklist(id=qid(page, "logy"), options=[{"label": " log", "value": "log"}],
                                         value=query.many("logy", allowed=("log",)), inline=True), "6rem"),
        labelled("Mark commit", dropdown(page, "commit", commit_options(run), marked_commit(run, query),
                                         clearable=True, placeholder="none"), "15rem"),
    ]


def run_controls(page: str, data: DashboardData, query: Query, commit_keys: dict[str, int] | None = None):
    """Machine, environment and commit dropdowns. ``commit_keys``: key -> default offset from the
    newest commit (Compare: {"a": 1, "b": 0})."""
    run = run_of(data, query)
    machines = data.machine_names()
    controls = [
        labelled("Machine", dropdown(page, "machine", machine_options(data, machines),
                                     run.machine if run else None, clearable=False), "21rem"),
        labelled("Environment", dropdown(page, "env", env_options(data, run.machine) if run else [],
                                         run.env_name if run else None, clearable=False), "19rem"),
    ]
    for key, offset in (commit_keys or {}).items():
        label = {"commit": "Commit", "a": "Commit A (old)", "b": "Commit B (new)"}.get(key, key)
        controls.append(labelled(label, dropdown(page, key, commit_options(run),
                                                 commit_of(run, query, key, offset), clearable=False),
                                 "15rem"))
    return controls


def machine_options(data: DashboardData, machines: list[str]) -> list[dict]:
    """A machine with its distinct commits (an environment's commits count once), and its
    environments when there are several: the plots show one environment at a time."""
    options = []
    for m in machines:
        runs = [r for (machine, _), r in data.runs.items() if machine == m]
        commits = len(set().union(*(set(r.commits["commit_hash"]) for r in runs))) if runs else 0
        envs = f", {len(runs)} envs" if len(runs) > 1 else ""
        options.append({"label": f"{m} ({commits} commit{'s' if commits != 1 else ''}{envs})", "value": m})
    return options


def env_options(data: DashboardData, machine: str | None) -> list[dict]:
    """The machine's environments, each with the commits it has (what a plot of it shows)."""
    options = []
    for env in data.envs_of(machine) if machine else []:
        n = len(data.runs[(machine, env)].commits)
        options.append({"label": f"{env} ({n} commit{'s' if n != 1 else ''})", "value": env})
    return options


def register_run_controls(app: dash.Dash, store: ResultsStore, page: str, commit_keys: dict[str, int] | None = None):
    """Changing the machine refreshes the environments; changing either refreshes the commits."""

    @app.callback(Output(qid(page, "env"), "options"), Output(qid(page, "env"), "value"),
                  Input(qid(page, "machine"), "value"), State(qid(page, "env"), "value"), prevent_initial_call=True)
    def _envs(machine, env):
        data = store.get()
        envs = data.envs_of(machine) if machine else []
        return env_options(data, machine), env if env in envs else (envs[0] if envs else None)

    if commit_keys:
        keys = list(commit_keys)

        @app.callback([Output(qid(page, k), "options") for k in keys] + [Output(qid(page, k), "value") for k in keys],
                      inputs=dict(machine=Input(qid(page, "machine"), "value"), env=Input(qid(page, "env"), "value")),
                      state=dict(current=named_values(page, keys, State)), prevent_initial_call=True)
        def _commits(machine, env, current):
            run = store.get().run(machine, env)
            options = commit_options(run)
            values = [commit_or_newest(run, current[k], commit_keys[k]) for k in keys]
            return [options] * len(keys) + values
