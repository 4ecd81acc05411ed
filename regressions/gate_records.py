"""The gate's judgement a page needs for one run at one commit: the detector worker's (the CLI's
defaults) for the newest commit against the one before, else the gate run with ``--machine M
--base B..commit``, once per results set (regressions.judgement.verdict_record; nothing judged here)."""

from __future__ import annotations

from functools import lru_cache

from regressions.gate_view import WHOLE_FOLDER_ERROR

# Each record is a whole gate report; the Overview's last chosen bases are kept. No lock: two
# requests for different commits judge side by side (two for the same one may both judge).
RECORDS_KEPT = 32


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
        if state.status != "done":
            return None
        return machine_record(store, data, machine, state.verdict["error"]) if "error" in state.verdict \
            else state.verdict
    if base is None:  # the run's first commit: nothing before it to judge against
        return {"error": "the run's first commit: nothing before it to judge against"}
    return _judged(data.signature, data.results_dir, store.asv_conf, machine, f"{base}..{commit}")


def machine_record(store, data, machine: str, whole_folder_error: str) -> dict:
    """The gate's verdict with ``--machine machine``: what one machine's view shows when the gate
    over every machine cannot judge (another machine's unreadable file must not blank this one's),
    with the reason the whole cannot."""
    return {**_judged(data.signature, data.results_dir, store.asv_conf, machine, None),
            WHOLE_FOLDER_ERROR: whole_folder_error}


@lru_cache(maxsize=RECORDS_KEPT)
def _judged(signature, results_dir, asv_conf, machine: str, base: str | None) -> dict:
    """The gate with ``--machine machine [--base base]`` on the results set ``signature`` names (a
    new set is a new key: what was judged on the old one ages out)."""
    from regressions.judgement import verdict_record

    return verdict_record(results_dir, asv_conf, base=base, machine=machine)
