"""What Trends marks on a point besides its value: the run was throttled, or the software under it
(driver, CUDA, cuBLAS, torch, Triton, Liger) differs from the run of the commit before.

Read from the runner state benchmarks.run records beside each result file
(``<machine>/runner-state/<result file stem>.state``, asv_results/companion_files.py), compared the
way the gate's classification compares it (regressions/recorded_state.py). Only those small
companion files are read, through safe_read, once per results set and run; a run without them
(a CPU machine, an older history) simply has no marks. Torch-free, no Dash.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from asv_results.companion_files import STATE_DIR, readable_companion


def marks_of(results_dir, machine: str, env_name: str, commits: tuple[str, ...], signature_key: int = 0
             ) -> dict[str, str]:
    """{commit hash: what to say on its points} for the commits (oldest first) of one run:
    "throttled (power)", "torch 2.11.0 → 2.12.0", joined by "; "."""
    try:  # the folder's own time too: runner state written after the results were loaded still counts
        listed_at = os.stat(Path(results_dir) / machine / STATE_DIR).st_mtime_ns
    except (OSError, ValueError):
        return {}  # no runner state recorded for this machine
    return dict(_marks(str(results_dir), machine, env_name, tuple(commits), signature_key, listed_at))


def marks_of_run(data, run) -> dict[str, str]:
    """marks_of for a DashboardData's Run (its results folder, machine, environment, commits)."""
    return marks_of(data.results_dir, run.machine, run.env_name, tuple(run.commits["commit_hash"].astype(str)),
                    hash(data.signature))


@lru_cache(maxsize=64)
def _marks(root: str, machine: str, env_name: str, commits: tuple[str, ...], _signature: int,
           _listed_at: int) -> tuple:
    # the gate's package imports scipy: on first use, not with the page
    from regressions.recorded_state import SOFTWARE_KEYS, comparable_state, read_state_file, throttling

    folder = Path(root) / machine / STATE_DIR
    try:
        with os.scandir(folder) as entries:
            present = {e.name for e in entries}
    except OSError:  # no runner state recorded for this machine
        return ()
    out, before = [], None
    for commit in commits:
        result_file = Path(root) / machine / f"{commit[:8]}-{env_name}.json"
        # the gate's own reader (size cap, shape check): a companion it uses is marked here too
        doc = read_state_file(result_file, Path(root)) if readable_companion(result_file).name in present else None
        state = comparable_state(None, doc) if doc is not None else None
        said = []
        if doc is not None:
            kind = throttling(doc.get("start"), doc.get("end"))
            if kind not in ("none", "unknown"):
                said.append(f"throttled ({kind})")
        if state is not None and before is not None:
            said += [f"{k} {before[k]} → {state[k]}" for k in SOFTWARE_KEYS
                     if k in state and k in before and state[k] != before[k]]
        if said:
            out.append((commit, "; ".join(said)))
        before = state if state is not None and "runner state" not in state else before
    return tuple(out)
