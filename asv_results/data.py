"""The vocabulary of a loaded asv results folder (no Dash, no pandas at import): row statuses,
the fixed columns of the gate's frame, and the load report. The one loader that fills them is
asv_results.loading (through the cache and the table); the folder's walk is
asv_results.results_folder, one file's parse asv_results.result_file.

asv's documented on-disk format (api version 2, asv's docs/source/dev.rst):
``results/benchmarks.json``, ``results/<machine>/machine.json`` and
``results/<machine>/<commit>-<env>.json``, whose ``results`` rows are lists ordered by
``result_columns``. Any file that cannot be used is listed in ``LoadReport.skipped`` with the
reason and the rest still loads; every file is read through asv_results.safe_read (regular files
inside the results folder only, size and nesting capped, commit dates in a sane range).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

# commit_order (a frame's commits in order), ResultsDirError and SkippedFile live in their own
# modules; importers still take them from here.
from asv_results.commit_order import commits_in_order as commit_order  # noqa: F401
from asv_results.results_folder import ResultsDirError, SkippedFile, list_results, read_benchmarks  # noqa: F401
from asv_results.result_file import STATS_KEYS

if TYPE_CHECKING:
    import pandas as pd
# pandas only for the type: the parse workers import this module's neighbours and need only
# json and numpy, and start that much sooner.

STATUS_OK, STATUS_SKIPPED, STATUS_FAILED = "ok", "skipped", "failed"

# Fixed columns; a benchmark parameter with one of these names becomes "param_<name>".
FIXED_COLUMNS = (
    "machine", "env_name", "commit_hash", "date", "benchmark", "params_key",
    "value", "status", "unit", *STATS_KEYS, "samples", "series", "row", "order",
)


@dataclass
class LoadReport:
    """What was read, what was skipped (whole files) and what was partial (inside files)."""

    loaded_files: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.skipped and not self.problems

    def lines(self) -> list[str]:
        out = [f"skipped {s.path}: {s.reason}" for s in self.skipped]
        return out + [f"partial: {p}" for p in self.problems]


@dataclass
class LoadedResults:
    frame: pd.DataFrame
    load_report: LoadReport
    benchmarks: dict  # benchmarks.json content, name -> metadata ({} when absent)
    machines: dict  # machine name -> machine.json content ({} when absent)
    param_columns: list[str]  # frame columns that hold benchmark parameters
    # without a samples column (load_results(samples=False)): the samples of the frame's "row"s
    samples_of: Callable[[Sequence[int]], list] | None = None
