"""The gate's judgement a page needs for one run at one commit: the detector worker's (the CLI's
defaults) for the newest commit against the one before, else the gate run with ``--base
B..commit``, once per results set (regressions.judgement.verdict_record; nothing judged here)."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_records: dict[tuple, dict] = {}  # (results signature, base, head) -> record; one results set at a time


def record_for(store, data, machine, env, commit, base) -> dict | None:
    """The verdict record for ``commit`` of the run judged against ``base`` (None: the commit
    before it); None while the detector is still running for the default view."""
    run = data.run(machine, env)
    if run is None or commit not in set(run.commits["commit_hash"]):
        return None
    previous = run.previous_commit(commit)
    base = base if base and base != commit else previous
    if commit == run.commits["commit_hash"].iloc[-1] and base == previous:
        state = store.findings()
        if state.status == "failed":
            return {"error": f"the detector failed: {state.error}"}
        return state.verdict if state.status == "done" else None
    if base is None:  # the run's first commit: nothing before it to judge against
        return {"error": "the run's first commit: nothing before it to judge against"}
    key = (data.signature, base, commit)
    with _lock:
        if key not in _records:
            from dashboard.regressions.judgement import verdict_record

            record = verdict_record(data.results_dir, store.asv_conf, base=f"{base}..{commit}")
            if not any(k[0] == data.signature for k in _records):
                _records.clear()
            _records[key] = record
        return _records[key]
