"""Result files parsed on every available core: the one parse step of the gate's loader
(asv_results.data) and the server's cache (asv_results.cache)."""

from __future__ import annotations

import os
from typing import Callable

from asv_results.result_file import parse_chunk
from asv_results.worker_processes import available_cpus, run_chunks, submit_chunks

# Below this many bytes of result files a process pool costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
FILES_PER_TASK = 8


def parse_jobs(total_bytes: int) -> int:
    """Parse processes for files of `total_bytes`: every available core when they gain from it."""
    return available_cpus() if total_bytes >= PARALLEL_MIN_BYTES else 1


def parse_files(tasks: list[tuple[str, str, str]], jobs: int | None, pool=None) -> list[dict]:
    """Parse every file, in ``tasks`` order; in worker processes when it pays.

    ``jobs``: parse processes (None: parse_jobs of the files' size; 1: this process only), through
    worker_processes.run_chunks (``pool``: a shared_pool kept across calls): this process does not
    parse meanwhile (a json.loads here would hold the GIL for milliseconds and stall the workers'
    arrays on the pipe); a chunk whose worker fails is parsed here instead.
    """
    return start_parse(tasks, jobs, pool)()


def start_parse(tasks: list[tuple[str, str, str]], jobs: int | None, pool=None) -> Callable[[], list[dict]]:
    """parse_files begun, returned as what collects its records: on ``pool`` (a shared_pool) the
    workers start at once and the caller works meanwhile; otherwise collecting does the parse."""
    jobs = _jobs_for(tasks, jobs)
    if jobs <= 1:
        return lambda: parse_chunk(tasks)
    if pool is None:
        return lambda: _flat(run_chunks(parse_chunk, _chunks(tasks), jobs))
    collect = submit_chunks(pool, parse_chunk, _chunks(tasks))
    return lambda: _flat(collect())


def _jobs_for(tasks: list, jobs: int | None) -> int:
    if jobs is None:
        size = 0
        for path, _, _ in tasks:
            try:
                size += os.path.getsize(path)
            except OSError:
                pass
        jobs = parse_jobs(size)
    return max(1, min(int(jobs), len(tasks) // FILES_PER_TASK))


def _chunks(tasks: list) -> list[list]:
    return [tasks[i:i + FILES_PER_TASK] for i in range(0, len(tasks), FILES_PER_TASK)]


def _flat(parsed_chunks: list[list[dict]]) -> list[dict]:
    return [record for parsed in parsed_chunks for record in parsed]
