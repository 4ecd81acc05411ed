"""Result files parsed on every available core: the one parse step of the gate's loader
(asv_results.data) and the server's cache (asv_results.cache)."""

from __future__ import annotations

import os

from asv_results.result_file import parse_chunk
from asv_results.worker_processes import available_cpus, process_pool, stop_workers

# Below this many bytes of result files a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
FILES_PER_TASK = 8


def parse_files(tasks: list[tuple[str, str, str]], jobs: int | None) -> list[dict]:
    """Parse every file, in ``tasks`` order; in worker processes when it pays.

    ``jobs``: parse processes (None: every available core when the files are large enough to
    gain from it; 1: this process only). The pool is spawned, as forking a threaded web server
    is unsafe. This process does not parse meanwhile: it must stay free to take the workers'
    arrays off the pipe (a json.loads here holds the GIL for milliseconds and would stall
    them). Any trouble with the pool (cannot start, a worker died) and the affected chunks are
    parsed here instead.
    """
    if jobs is None:
        size = 0
        for path, _, _ in tasks:
            try:
                size += os.path.getsize(path)
            except OSError:
                pass
        jobs = available_cpus() if size >= PARALLEL_MIN_BYTES else 1
    jobs = max(1, min(int(jobs), len(tasks) // FILES_PER_TASK))
    if jobs <= 1:
        return parse_chunk(tasks)
    chunks = [tasks[i:i + FILES_PER_TASK] for i in range(0, len(tasks), FILES_PER_TASK)]
    try:
        pool = process_pool(jobs)
        futures = [pool.submit(parse_chunk, chunk) for chunk in chunks]
    except Exception:  # no processes here (sandbox, daemonic parent): one core it is
        return parse_chunk(tasks)
    parsed: list[dict] = []
    try:
        for chunk, future in zip(chunks, futures):
            try:
                parsed.extend(future.result())
            except Exception:  # a worker died or could not start (BrokenProcessPool)
                parsed.extend(parse_chunk(chunk))
    except BaseException:  # SIGTERM or Ctrl-C during the load: the workers stop with it
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return parsed
