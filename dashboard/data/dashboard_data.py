"""What one load of a results folder gives every page: the table, its runs, the ceilings, the
project (commit URL and order), what could not be loaded, and the results' mode.

Three modes. This suite's results (benchmarks with ``case`` and ``impl`` parameters that name a
Case) are "suite"; any other asv results folder is "generic"; a folder with nothing but static
compile metrics is "static". The page registry (dashboard.pages) decides what each page shows
for the mode.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from asv_results import asvconf
from asv_results.data import LoadReport
from dashboard.data.run_view import Run
from asv_results.table import ResultsTable

MACHINE_IDENTITY_KEYS = ("gpu", "driver", "cuda", "torch", "triton", "cpu", "os")
SUITE, GENERIC, STATIC = "suite", "generic", "static"


class KeptValues:
    """What the pages computed from one load (the detector's findings of a series in view), the
    newest ``kept`` of them, kept on that load's DashboardData: a reload starts empty, and two
    stores never see each other's. Callbacks run in the server's threads, hence the lock."""

    def __init__(self, kept: int = 256):
        self.kept = kept
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key, make):
        """The value kept under ``key``, else ``make()`` (called outside the lock), kept."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = make()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.kept:
                self._values.popitem(last=False)
        return value


@dataclass
class DashboardData:
    results_dir: Path
    problem: str | None  # why there is nothing to show (missing dir, no result files), else None
    report: LoadReport = field(default_factory=LoadReport)
    mode: str = SUITE
    table: ResultsTable | None = None
    ceilings: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["machine", "env_name",
                                                                                  "commit_hash", "copy_gbps"]))
    ceiling_problems: list = field(default_factory=list)  # device_ceilings.CeilingProblem: stored ceilings left out
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    static_runs: dict[tuple[str, str], Run] = field(default_factory=dict)  # static compile metrics only
    machines: dict = field(default_factory=dict)
    benchmarks: dict = field(default_factory=dict)
    project: asvconf.ProjectInfo = field(default_factory=asvconf.ProjectInfo)
    signature: tuple = ()
    cache_note: str = ""
    files_parsed: int = 0  # result files parsed at this load (the rest came from the cache)
    load_seconds: float = 0.0
    # the Trends pages' detector findings per series in view (page state of this load, not a global)
    findings_in_view: KeptValues = field(default_factory=KeptValues, repr=False, compare=False)
    # what else pages compute once per load and view (a run's colour scale, a commit's runner state)
    kept: KeptValues = field(default_factory=KeptValues, repr=False, compare=False)

    @property
    def empty(self) -> bool:
        return self.problem is not None

    def static_run(self, machine: str | None) -> Run | None:
        """The static metrics of a machine (its environment with most commits), else of the
        machine with the longest static history."""
        mine = [r for (m, _), r in self.static_runs.items() if m == machine] or list(self.static_runs.values())
        return max(mine, key=lambda r: (len(r.commits), r.machine == machine, r.machine, r.env_name), default=None)

    @property
    def commit_url(self) -> str | None:
        return self.project.commit_url

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

    def rows_frame(self, samples: bool = True) -> pd.DataFrame:
        """Every shown row of every run as one frame (tests and tools; a view never needs it)."""
        frames = [run.frame(np.arange(run.index.rows.start, run.index.rows.stop)[
            run._shown[run.table.series_of_row[run.index.rows]]], samples) for run in self.runs.values()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def what_was_loaded(self, static: bool = False) -> str:
        """One line: how many series of how many benchmarks, commits and machines (of the static
        compile metrics with ``static``)."""
        runs = self.static_runs if static else self.runs
        shown = pd.concat([r.series for r in runs.values()]) if runs else pd.DataFrame()
        n_series, n_bench = len(shown), shown["benchmark"].nunique() if len(shown) else 0
        commits = len(set().union(*(set(r.commits["commit_hash"]) for r in runs.values())))
        machines = sorted({m for m, _ in runs})
        return (f"{n_series:,} series of {n_bench:,} benchmark{'s' if n_bench != 1 else ''}, {commits:,} "
                f"commit{'s' if commits != 1 else ''} on {len(machines)} machine{'s' if len(machines) != 1 else ''} "
                f"({', '.join(machines[:4])}{', …' if len(machines) > 4 else ''})")
