"""Worker processes that end with the process that started them: the one builder of every process
pool (the result-file parser in asv_results.parallel_parse, the detector's worker in
dashboard.store.detection, the measurement tools). Spawned, not forked: forking a threaded web
server is unsafe. Imports no Dash, so the gate and the tools use it without the viewer."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os

PARENT_CHECK_SECONDS = 0.5


def exit_with_parent(parent_pid: int) -> None:
    """Initializer of a worker process (parse pool, detector): exit once the process that started
    it is gone, however it ended (even by SIGKILL, which runs no clean-up, or before the worker
    finished starting); otherwise an idle worker waits on its queue forever, holding its memory.
    (Not PR_SET_PDEATHSIG: that fires when the thread that happened to spawn the worker ends.)"""
    import threading
    import time

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def process_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """A spawned pool of `workers` processes (forking a threaded web server is unsafe) whose
    workers end with this process, however it ends."""
    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=exit_with_parent, initargs=(os.getpid(),))


def stop_workers(pool: concurrent.futures.ProcessPoolExecutor) -> None:
    """Terminate the pool's workers now (an interrupted load: their chunks are not wanted)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, AttributeError):
            pass


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
