"""The dashboard's data, loaded once per results set and shared by every page (no Dash here).

``ResultsStore(results_dir).get()`` returns a :class:`DashboardData`: the loaded results, the
Case rows with their fields (``metrics.cases_frame``), the ceilings per run, each run's commit
order and the commit URL. It reloads only when the files under the results dir change, and it
never writes there.

Raw samples stay compact (``dashboard.data.SampleStore``, one flat float array): rows carry a
``sample_row`` number, and ``Run.at_commit`` / ``Run.of_case`` hand out their rows with the
``samples`` column built for just those rows (Compare's significance test, the detector on the
series in view). ``DashboardData.cases`` builds it for every row, on first use.

Regression detection over every series takes tens of seconds at scale (find_changes is
~41 s for 500 commits x 2,000 series), so it runs once per results set in a separate process
(no GIL contention with the web server) and pages poll for it; the Trends page runs the same
detector on the few series it shows.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from dashboard import metrics
from dashboard.data import (SAMPLE_ROW, SAMPLES_COMPACT, LoadReport, ResultsDirError, SampleStore,
                            commit_order, load_results)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS_DIR = REPO_ROOT / "results"
DEFAULT_ASV_CONF = REPO_ROOT / "asv.conf.json"
MACHINE_IDENTITY_KEYS = ("gpu", "driver", "cuda", "torch", "triton", "cpu", "os")


def read_commit_url(asv_conf: Path | None) -> str | None:
    """``show_commit_url`` from an asv.conf.json (asv's JSON with comments), or None."""
    if asv_conf is None or not Path(asv_conf).is_file():
        return None
    try:
        from asv import util as asv_util

        conf = asv_util.load_json(str(asv_conf), js_comments=True)
    except Exception:  # a broken config must not take the dashboard down; links just go away
        return None
    url = conf.get("show_commit_url")
    return url if isinstance(url, str) and url else None


@dataclass(eq=False)  # identity: a Run is a cache key
class Run:
    """One (machine, environment): its commits oldest first and its Case rows."""

    machine: str
    env_name: str
    commits: pd.DataFrame  # commit_hash, date, position
    rows: pd.DataFrame  # metrics.cases_frame rows of this run (``sample_row``, no ``samples``)
    samples: SampleStore | None = None  # what ``sample_row`` indexes

    @cached_property
    def catalog(self) -> pd.DataFrame:
        """Distinct (case, impl) with Case fields: what the filters count."""
        return metrics.case_catalog(self.rows)

    @cached_property
    def _by_commit(self) -> dict:
        return self.rows.groupby("commit_hash", observed=True).indices

    @cached_property
    def _by_case(self) -> dict:
        return self.rows.groupby("case", observed=True).indices

    @cached_property
    def series_of_params(self) -> dict[tuple[str, str], tuple[str, str]]:
        """(benchmark, params_key) -> (case, impl): how a detector finding maps back to a Case."""
        pairs = self.rows[["benchmark", "params_key", "case", "impl"]].drop_duplicates(["benchmark", "params_key"])
        return {(str(b), str(p)): (str(c), str(i)) for b, p, c, i in pairs.itertuples(index=False)}

    def warm(self) -> None:
        """Build the cached indexes (part of loading, not of the first callback)."""
        self.catalog, self._by_commit, self._by_case  # noqa: B018 (cached_property side effect)

    def at_commit(self, commit: str | None) -> pd.DataFrame:
        """The rows measured at one commit, with their ``samples``."""
        positions = self._by_commit.get(commit)
        return with_samples(self.rows.iloc[positions] if positions is not None else self.rows.iloc[:0], self.samples)

    def of_case(self, case: str | None) -> pd.DataFrame:
        """Every row of one case (all commits, impls and metrics), with their ``samples``."""
        positions = self._by_case.get(case)
        return with_samples(self.rows.iloc[positions] if positions is not None else self.rows.iloc[:0], self.samples)

    def previous_commit(self, commit: str) -> str | None:
        hashes = self.commits["commit_hash"].tolist()
        i = hashes.index(commit) if commit in hashes else -1
        return hashes[i - 1] if i > 0 else None


def with_samples(rows: pd.DataFrame, samples: SampleStore | None) -> pd.DataFrame:
    """``rows`` with a ``samples`` column (lists or None, as asv stored them) built from the store."""
    if SAMPLE_ROW not in rows.columns or samples is None:
        return rows
    out = rows.drop(columns=SAMPLE_ROW)
    out.insert(rows.columns.get_loc(SAMPLE_ROW), "samples", samples.lists(rows[SAMPLE_ROW].to_numpy()))
    return out


@dataclass
class DashboardData:
    results_dir: Path
    problem: str | None  # why there is nothing to show (missing dir, no result files), else None
    report: LoadReport = field(default_factory=LoadReport)
    case_rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # every run's Case rows, ``sample_row``
    ceilings: pd.DataFrame = field(default_factory=pd.DataFrame)
    ceiling_problems: list = field(default_factory=list)  # metrics.CeilingProblem: stored ceilings left out
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    machines: dict = field(default_factory=dict)
    benchmarks: dict = field(default_factory=dict)
    commit_url: str | None = None
    signature: tuple = ()
    samples: SampleStore | None = None

    @cached_property
    def cases(self) -> pd.DataFrame:
        """Every Case row with its ``samples`` (built on first use: a list per row is ~1 s at scale)."""
        return with_samples(self.case_rows, self.samples)

    @property
    def empty(self) -> bool:
        return self.problem is not None

    def machine_names(self) -> list[str]:
        return sorted({m for m, _ in self.runs})

    def envs_of(self, machine: str) -> list[str]:
        """Environments of a machine, the one with most commits first."""
        envs = [(e, len(r.commits)) for (m, e), r in self.runs.items() if m == machine]
        return [e for e, _ in sorted(envs, key=lambda x: (-x[1], x[0]))]

    def run(self, machine: str | None, env: str | None) -> Run | None:
        """The run asked for, else the machine's main env, else the first run (bad links degrade)."""
        if (machine, env) in self.runs:
            return self.runs[(machine, env)]
        if machine in self.machine_names():
            return self.runs[(machine, self.envs_of(machine)[0])]
        if self.runs:  # the longest history is the one a person most likely wants
            return max(self.runs.values(), key=lambda r: (len(r.commits), r.machine, r.env_name))
        return None

    def commit_link(self, commit: str) -> str | None:
        return f"{self.commit_url}{commit}" if self.commit_url else None

    def machine_identity(self, machine: str) -> dict[str, str]:
        info = self.machines.get(machine, {})
        return {k: str(info[k]) for k in MACHINE_IDENTITY_KEYS if k in info}


def results_signature(results_dir: Path) -> tuple:
    """Names, sizes and mtimes of the files asv writes: changes when results change."""
    entries = []
    try:
        with os.scandir(results_dir) as top:
            for entry in top:
                if entry.is_file() and entry.name.endswith(".json"):
                    st = entry.stat()
                    entries.append((entry.name, st.st_size, st.st_mtime_ns))
                elif entry.is_dir() and not entry.name.startswith("."):
                    with os.scandir(entry.path) as sub:
                        for f in sub:
                            if f.name.endswith(".json"):
                                st = f.stat()
                                entries.append((f"{entry.name}/{f.name}", st.st_size, st.st_mtime_ns))
    except OSError:
        return ("missing",)
    return tuple(sorted(entries))


def build_data(results_dir: str | Path, asv_conf: Path | None = DEFAULT_ASV_CONF) -> DashboardData:
    """Load and index a results dir; never raises for bad input (the problem is reported)."""
    root = Path(results_dir)
    signature = results_signature(root)
    # Reading asv.conf.json imports asv (~0.2 s): done in a thread while the files are parsed
    # (in worker processes at scale, so this process only waits meanwhile).
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        url_future = pool.submit(read_commit_url, asv_conf)
        try:
            loaded = load_results(root, samples=SAMPLES_COMPACT)
        except ResultsDirError as exc:
            return DashboardData(root, str(exc), commit_url=url_future.result(), signature=signature)
        commit_url = url_future.result()
    cases = metrics.cases_frame(loaded.frame)
    ceilings, ceiling_problems = metrics.ceilings_table(loaded.frame)
    loaded.load_report.problems.extend(p.text() for p in ceiling_problems)
    data = DashboardData(root, None, loaded.load_report, cases, ceilings, ceiling_problems=ceiling_problems,
                         machines=loaded.machines, benchmarks=loaded.benchmarks, commit_url=commit_url,
                         signature=signature, samples=loaded.samples)
    if cases.empty:
        n_files = len(loaded.load_report.loaded_files)
        data.problem = (f"no benchmark results of this suite in {str(root)!r}" if n_files
                        else f"no asv result files in {str(root)!r}")
        return data
    order = commit_order(loaded.frame)
    for (machine, env), rows in cases.groupby(["machine", "env_name"], observed=True, sort=True):
        commits = order[(order["machine"] == machine) & (order["env_name"] == env)]
        commits = commits[commits["commit_hash"].isin(rows["commit_hash"].unique())]
        commits = commits[["commit_hash", "date"]].astype({"commit_hash": str}).reset_index(drop=True)
        commits["position"] = np.arange(len(commits))
        data.runs[(str(machine), str(env))] = Run(str(machine), str(env), commits, rows.reset_index(drop=True),
                                                  loaded.samples)
    for run in data.runs.values():  # index now, so no page's first callback pays for it
        run.warm()
    return data


# --------------------------------------------------------------------------- regression findings


def _detect_in_subprocess(results_dir: str) -> list:
    """Runs in the worker process: load, keep the Case rows, detect."""
    from dashboard.data import load_results as load
    from dashboard.regressions import find_changes

    loaded = load(results_dir, samples=SAMPLES_COMPACT)
    cases = with_samples(metrics.cases_frame(loaded.frame), loaded.samples)
    return find_changes(cases, benchmarks_meta=loaded.benchmarks)


def _die_with_parent(parent: int) -> None:
    """In the detector's worker: exit once the server process ``parent`` is gone, however it
    ended (even by SIGKILL, which runs no clean-up, or before this worker finished starting);
    otherwise the idle worker would wait on its queue forever. (Not PR_SET_PDEATHSIG: that
    fires when the request thread that spawned the worker ends.)"""

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


@dataclass
class FindingsState:
    status: str  # "running", "done" or "failed"
    started: float
    findings: list | None = None
    seconds: float | None = None
    error: str | None = None


class ResultsStore:
    """Holds the current DashboardData of one results dir; reloads when the files change."""

    RECHECK_SECONDS = 2.0  # at most one directory scan per interval, to keep callbacks cheap

    def __init__(self, results_dir: str | Path, asv_conf: Path | None = DEFAULT_ASV_CONF,
                 detect_in_background: bool = True):
        self.results_dir = Path(results_dir)
        self.asv_conf = asv_conf
        self.detect_in_background = detect_in_background
        self._lock = threading.Lock()
        self._data: DashboardData | None = None
        self._checked = 0.0
        self._findings: dict[tuple, FindingsState] = {}
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    def get(self) -> DashboardData:
        with self._lock:
            now = time.monotonic()
            if self._data is None or (now - self._checked > self.RECHECK_SECONDS
                                      and results_signature(self.results_dir) != self._data.signature):
                self._data = build_data(self.results_dir, self.asv_conf)
            self._checked = now
            return self._data

    def findings(self) -> FindingsState:
        """The detector's findings for the current results set (started on first call)."""
        data = self.get()
        with self._lock:
            state = self._findings.get(data.signature)
            if state is None:
                state = FindingsState("running", time.time())
                self._findings = {data.signature: state}  # older results sets are dropped
                if data.empty:
                    state.status, state.findings, state.seconds = "done", [], 0.0
                elif self.detect_in_background:
                    future = self._pool().submit(_detect_in_subprocess, str(self.results_dir))
                    future.add_done_callback(lambda f, s=state: self._finish(s, f))
                else:
                    self._run_inline(state)
            return state

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            # spawn: forking a threaded web server is unsafe
            self._executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_die_with_parent,
                initargs=(os.getpid(),))
        return self._executor

    def _run_inline(self, state: FindingsState) -> None:
        try:
            state.findings = _detect_in_subprocess(str(self.results_dir))
            state.status = "done"
        except Exception as exc:  # reported on the page, not raised into a callback
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        state.seconds = time.time() - state.started

    def _finish(self, state: FindingsState, future: concurrent.futures.Future) -> None:
        try:
            state.findings = future.result()
            state.status = "done"
        except concurrent.futures.process.BrokenProcessPool:
            # The worker could not start (e.g. a __main__ without a main guard re-ran on spawn):
            # detect in a thread instead; slower to serve meanwhile, but the inbox still fills.
            self._executor = None
            threading.Thread(target=self._run_inline, args=(state,), daemon=True).start()
            return
        except Exception as exc:
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        state.seconds = time.time() - state.started

    def close(self) -> None:
        """Stop the detector's worker (tests, app shutdown); a running detection is abandoned."""
        executor, self._executor = self._executor, None
        if executor is not None:
            for process in list(getattr(executor, "_processes", {}).values()):
                process.terminate()  # do not wait tens of seconds for a detection nobody will read
            executor.shutdown(wait=True, cancel_futures=True)
