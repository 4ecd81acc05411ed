"""The regression detector over every series of a results set, run once per results set in a
worker process (no GIL contention with the web server); pages poll for its findings.

The worker loads the results itself (from the cache the server already brought up to date, so
it parses nothing it does not have to) and runs ``regressions.find_changes`` on a few
hundred series at a time: one frame of every row with its samples as lists would need gigabytes
at 2,000 commits x 5,000 series.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from asv_results.worker_processes import process_pool

SERIES_PER_CHUNK = 250
WORKER_STOP_SECONDS = 5  # per worker, after terminate (then kill): a stopping server never waits on a detection


def detect(table, series_ids, benchmarks_meta: dict) -> list:
    """find_changes and find_status_changes (into and out of "failed", as the gate reports them)
    over these series of a asv_results.table.ResultsTable, a chunk at a time: level changes
    (regressions.Finding) and status changes (regressions.failures.StatusChange, ``kind`` "status"),
    newest first, as find_changes orders them."""
    from regressions import find_changes
    from regressions.failures import find_status_changes

    ids = np.asarray(list(series_ids), dtype=np.int64)
    findings = []
    for i in range(0, len(ids), SERIES_PER_CHUNK):
        rows = table.rows_of_series(ids[i:i + SERIES_PER_CHUNK])
        frame = table.frame(rows)
        findings += find_changes(frame, benchmarks_meta=benchmarks_meta)
        findings += find_status_changes(frame)
    findings.sort(key=lambda f: (f.commit_date, f.commit_hash, f.benchmark, f.params), reverse=True)
    return findings


def detect_in_worker(results_dir: str, cache_dir: str | None, commit_rank: dict | None = None,
                     key: str | None = None, asv_conf: str | None = None) -> tuple[list, dict]:
    """What the worker process runs: load, pick the series the dashboard shows, detect, in the
    dashboard's commit order (``commit_rank``: the repository's, asv_results.commit_order); and the
    gate's own judgement of the folder (regressions.judgement.verdict_record: what
    ``python -m regressions`` gives with its defaults), which the pages render and never
    judge again. With a cache dir and a ``key`` (findings_store.findings_key), what another
    process over the same results already detected is read instead (gunicorn's workers detect
    once in all). Returns (findings, verdict record)."""
    from asv_results.cache import ResultsCache
    from regressions.findings_store import detect_once
    from asv_results.loading import load_table
    from dashboard.store.load_data import shown_series

    cache = Path(cache_dir) if cache_dir else None

    def run() -> tuple[list, dict]:
        from regressions.judgement import verdict_record

        table = load_table(Path(results_dir), cache, commit_rank)
        findings = detect(table, shown_series(table), table.parsed.benchmarks)
        # the gate reads through the same cache: the files just parsed are not parsed again
        return findings, verdict_record(results_dir, Path(asv_conf) if asv_conf else None, cache_dir=cache)

    return detect_once(ResultsCache(results_dir, cache).dir if cache else None, key, run)


@dataclass
class FindingsState:
    status: str  # "running", "done" or "failed"
    started: float
    findings: list | None = None
    seconds: float | None = None
    error: str | None = None
    # the gate's judgement (regressions.judgement.verdict_record): {"document", "machines"} or {"error"}
    verdict: dict | None = None


class Detector:
    """Runs detect_in_worker for one results set at a time; the newest request replaces older ones."""

    def __init__(self, in_background: bool = True):
        self.in_background = in_background
        self._lock = threading.Lock()
        self._states: dict[tuple, FindingsState] = {}
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._closed = False  # stopped with the app: a worker lost now is not replaced by a thread

    def state(self, key: tuple, results_dir: Path, cache_dir: Path | None, nothing_to_do: bool,
              commit_rank: dict | None = None, asv_conf: Path | None = None) -> FindingsState:
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                return state
            state = FindingsState("running", time.time())
            self._states = {key: state}  # older results sets are dropped
            if nothing_to_do:
                state.status, state.findings, state.seconds = "done", [], 0.0
                state.verdict = {"error": "no results to judge"}
                return state
            from regressions.findings_store import findings_key

            args = (str(results_dir), str(cache_dir) if cache_dir else None, commit_rank or None,
                    findings_key((key, str(asv_conf)), commit_rank) if cache_dir else None,
                    str(asv_conf) if asv_conf else None)
            if self.in_background and cache_dir:  # gunicorn's workers: one detects, the others read
                threading.Thread(target=self._detect_once, args=(state, args), daemon=True,
                                 name="findings-store").start()
                return state
            if self.in_background:
                future = self._pool().submit(detect_in_worker, *args)
                future.add_done_callback(lambda f, s=state: self._finish(s, f, args))
                return state
        self._run_inline(state, args)
        return state

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            self._executor = process_pool(1)
        return self._executor

    def _detect_once(self, state: FindingsState, args) -> None:
        """With a cache folder: take the folder's findings lock in this process; read what another
        process over the same results stored, else detect in the worker process (started only
        now, so only the process that detects has one) and store it for the others."""
        from regressions import findings_store
        from asv_results.cache import ResultsCache

        results_dir, cache_dir, _, key, _ = args
        folder = ResultsCache(results_dir, Path(cache_dir)).dir
        try:
            with findings_store.exclusive(folder):
                stored = findings_store.read(folder, key)
                if stored is None:
                    # the worker must not take the lock this thread holds: no key, no store there
                    stored = self._pool().submit(detect_in_worker, *args[:3], None, args[4]).result()
                    findings_store.write(folder, key, stored)
            state.findings, state.verdict = stored
            state.status = "done"
        except concurrent.futures.process.BrokenProcessPool:
            self._executor = None
            if not self._abandoned_if_closed(state):
                self._run_inline(state, args)
            return
        except Exception as exc:  # reported on the page, not raised into a thread
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        state.seconds = time.time() - state.started

    @staticmethod
    def _run_inline(state: FindingsState, args) -> None:
        try:
            state.findings, state.verdict = detect_in_worker(*args)
            state.status = "done"
        except Exception as exc:  # reported on the page, not raised into a callback
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        state.seconds = time.time() - state.started

    def _finish(self, state: FindingsState, future: concurrent.futures.Future, args) -> None:
        try:
            state.findings, state.verdict = future.result()
            state.status = "done"
        except concurrent.futures.process.BrokenProcessPool:
            # The worker could not start (e.g. a __main__ without a main guard re-ran on spawn):
            # detect in a thread instead; slower to serve meanwhile, but the inbox still fills.
            self._executor = None
            if not self._abandoned_if_closed(state):
                threading.Thread(target=self._run_inline, args=(state, args), daemon=True).start()
            return
        except Exception as exc:
            state.status, state.error = "failed", f"{type(exc).__name__}: {exc}"
        state.seconds = time.time() - state.started

    def _abandoned_if_closed(self, state: FindingsState) -> bool:
        """Whether the detector was closed (its worker then dies by design); if so the detection
        is marked abandoned in ``state``, not run again in a thread of a server that is stopping."""
        if self._closed:
            state.status, state.error = "failed", "the dashboard stopped before the detection finished"
            state.seconds = time.time() - state.started
        return self._closed

    def close(self) -> None:
        """Stop the worker (tests, app shutdown); a running detection is abandoned."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            processes = list(getattr(executor, "_processes", {}).values())
            for process in processes:
                process.terminate()  # do not wait minutes for a detection nobody will read
            # Bounded: the pool's own shutdown(wait=True) waits on its management thread, which
            # once held a stopping server past 30 s on a loaded machine; the workers are what matter.
            executor.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.join(WORKER_STOP_SECONDS)
                if process.is_alive():
                    process.kill()
                    process.join(WORKER_STOP_SECONDS)
