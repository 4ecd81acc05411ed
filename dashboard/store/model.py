"""The dashboard's data, loaded once per results set and shared by every page (no Dash here).

``ResultsStore(results_dir).get()`` returns a DashboardData (dashboard.data.dashboard_data) built by
dashboard.store.load_data (through the on-disk cache of asv_results.cache when there is a cache dir). It
reloads only when the files under the results dir change, and it never writes there.

Regression detection over every series runs once per results set in a worker process
(dashboard.store.detection); pages poll for it, and the Trends page runs the same detector on the few
series it shows.
"""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path

from asv_results import asvconf, conf_reader
from dashboard.data.dashboard_data import DashboardData
from dashboard.store.detection import Detector, FindingsState
from dashboard.store.load_data import build_data, results_signature

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS_DIR = REPO_ROOT / "results"


def _settle_garbage_collector(first: bool) -> None:
    """After a load, freeze what is alive (the libraries, the loaded data) out of the cyclic
    collector's reach: a full collection over it costs ~0.2 s, and it otherwise falls on whichever
    callback happens to trigger it. On a reload the previous load's objects are unfrozen and
    collected first, so their cycles are not kept."""
    if not first:
        gc.unfreeze()
        gc.collect()
    gc.freeze()


class ResultsStore:
    """Holds the current DashboardData of one results dir; reloads when the files change."""

    RECHECK_SECONDS = 2.0  # at most one directory scan per interval, to keep callbacks cheap

    def __init__(self, results_dir: str | Path, asv_conf: Path | None = None, detect_in_background: bool = True,
                 cache_dir: Path | None = None):
        self.results_dir = Path(results_dir)
        self.asv_conf = asv_conf
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._lock = threading.Lock()
        self._data: DashboardData | None = None
        self._checked = 0.0
        self._detector = Detector(detect_in_background)

    def get(self) -> DashboardData:
        if self._data is None or time.monotonic() - self._checked > self.RECHECK_SECONDS:
            self._read_conf_unlocked()
        with self._lock:
            now = time.monotonic()
            if self._data is None or (now - self._checked > self.RECHECK_SECONDS
                                      and results_signature(self.results_dir) != self._data.signature):
                first = self._data is None
                self._data = None
                self._data = build_data(self.results_dir, self.asv_conf, self.cache_dir)
                _settle_garbage_collector(first)
            self._checked = now
            return self._data

    def _read_conf_unlocked(self) -> None:
        """Parse the asv config (if it changed) before the lock is taken, so no request waits on
        it while another holds the store; the reload under the lock then finds it parsed."""
        conf = asvconf.find_conf(self.results_dir, self.asv_conf)
        if conf is not None:
            conf_reader.load_conf(conf)

    def findings(self) -> FindingsState:
        """The detector's findings for the current results set (started on first call)."""
        data = self.get()
        return self._detector.state(data.signature, self.results_dir, self.cache_dir, data.empty,
                                    data.project.commit_rank, self.asv_conf)

    def findings_in_background(self) -> FindingsState | None:
        """The detector's findings, started in its worker if need be; None where the detector
        runs inline (tests, tools): a page that can do without them never waits for a detection."""
        return self.findings() if self._detector.in_background else None

    def close(self) -> None:
        """Stop the detector's worker (tests, app shutdown)."""
        self._detector.close()
