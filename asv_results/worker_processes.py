"""Worker processes that end with the process that started them: the one builder of every process
pool (the result-file parser in asv_results.parallel_parse and the gate's detector in
regressions.findings, both through run_chunks; the dashboard's detector worker in
dashboard.store.detection; the measurement tools). Spawned, not forked: forking a threaded web
server is unsafe. Imports no Dash, so the gate and the tools use it without the viewer."""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
from typing import Callable, Iterator

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


def run_chunks(work: Callable, chunks: list, jobs: int, *args, pool=None) -> list:
    """[work(chunk, *args) for chunk in chunks], in that order, in `jobs` spawned workers (``pool``:
    shared_pool's, kept across calls; else one for this call). This process only collects
    meanwhile (work holding its GIL would stall the workers' results on the pipe). Any trouble
    with the pool (cannot start, a worker died) and the chunks affected run here."""
    if jobs <= 1 or len(chunks) <= 1:
        return [work(chunk, *args) for chunk in chunks]
    if pool is not None:
        return submit_chunks(pool, work, chunks, *args)()
    with shared_pool(jobs) as own:
        return submit_chunks(own, work, chunks, *args)()


def submit_chunks(pool: concurrent.futures.ProcessPoolExecutor | None, work: Callable, chunks: list,
                  *args) -> Callable[[], list]:
    """Start [work(chunk, *args) for chunk in chunks] on ``pool`` and return what collects it, in
    order: the caller works meanwhile (the cache writes one batch's segment while the workers
    parse the next). Without a pool, or with a broken one, collecting runs the chunks here."""
    if pool is None:
        return lambda: [work(chunk, *args) for chunk in chunks]
    try:
        futures = [pool.submit(work, chunk, *args) for chunk in chunks]
    except Exception:  # a broken pool (a worker of an earlier call died): one core it is
        return lambda: [work(chunk, *args) for chunk in chunks]

    def collect() -> list:
        done = []
        for chunk, future in zip(chunks, futures):
            try:
                done.append(future.result())
            except Exception:  # a worker died or could not start (BrokenProcessPool)
                done.append(work(chunk, *args))
        return done

    return collect


@contextlib.contextmanager
def shared_pool(jobs: int) -> Iterator[concurrent.futures.ProcessPoolExecutor | None]:
    """A pool of `jobs` workers for one or several run_chunks calls (a spawned worker costs its
    imports, about half a second of CPU: a first parse in 50 batches spawned 100 of them), or
    None where jobs <= 1 or no pool can start here (sandbox, daemonic parent). Its workers stop
    with it, at once on SIGTERM or Ctrl-C (their chunks are not wanted)."""
    if jobs <= 1:
        yield None
        return
    try:
        pool = process_pool(jobs)
    except Exception:
        yield None
        return
    try:
        yield pool
    except BaseException:
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
