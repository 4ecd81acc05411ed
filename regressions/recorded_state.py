"""The state each run recorded, per machine and commit: what the classification names as changed
(classify.py) and what the dashboard marks (torch-free, reads files only).

Two sources, both beside asv's own results:
- the identity asv copies into every result file's ``params`` (gpu, driver, cuda, torch,
  triton, liger: benchmarks/harness/environment.py registers them);
- the runner's state around the run (clocks, power limit, persistence/ECC, throttling, the
  driver and library versions), a companion file ``<machine>/runner-state/<result file stem>.state``
  that benchmarks.run writes (benchmarks/harness/runner_state.py): {"start": snapshot, "end":
  snapshot}, a snapshot {"recorded": false, "reason": ...} where there was no NVML.

Since version 2 the companion also holds, per measuring pass (one per case x implementation,
every metric of it), the GPUs' state just before and after that pass ("benchmarks"):
``benchmark_states`` reads it per (benchmark, params_key), so a throttle during one benchmark is
tied to that benchmark's values. Version 1 files have none ({}).

Every file here is read through the one reader (asv_results.safe_read: a regular file
inside the results folder, size and depth capped) and its shape is checked before use: a
companion that cannot be read or is not one costs only that run's state ("runner state" says
why), never the verdict or the page.

What is compared between two commits is what should not change from run to run on one machine:
versions, power limit, persistence, ECC, maximum and application clocks, and whether the run
was throttled (power or thermal, from NVML's violation counters over the run). Current clocks,
power draw and temperature are recorded and shown, never compared: they move with the load.
"""

from __future__ import annotations

from pathlib import Path

from asv_results.companion_files import STATE_DIR, readable_companion  # noqa: F401 (STATE_DIR re-exported)
from asv_results.safe_read import read_json

IDENTITY_KEYS = ("gpu", "driver", "cuda", "torch", "triton", "liger")
SOFTWARE_KEYS = ("driver", "cuda_driver", "cuda", "cublas", "torch", "triton", "liger")
GPU_KEYS = ("name", "power_limit_w", "persistence", "ecc", "sm_clock_max_mhz", "mem_clock_max_mhz",
            "sm_clock_app_mhz", "mem_clock_app_mhz")
NOT_RESULTS = {"machine.json", "benchmarks.json"}
# A companion holds two snapshots and one pair per measuring pass: ~1 KB per pass.
MAX_STATE_BYTES = 64 << 20


def state_path(result_file: Path) -> Path:
    """Where a result file's runner state lives (asv_results/companion_files.py: a name
    neither asv nor the results loader reads as a result; an old-named one still found)."""
    return readable_companion(result_file)


def throttling(start: dict | None, end: dict | None) -> str:
    """"none", "power", "thermal" or "power+thermal": what NVML's violation counters grew by
    over the run, on any GPU; "unknown" when the counters were not recorded."""
    if not (start and end and start.get("recorded") and end.get("recorded")):
        return "unknown"
    kinds = set()
    seen = False
    for a, b in zip(start.get("gpus", []), end.get("gpus", [])):
        for kind in ("power", "thermal"):
            key = f"{kind}_violation_ns"
            if isinstance(a.get(key), (int, float)) and isinstance(b.get(key), (int, float)):
                seen = True
                if b[key] > a[key]:
                    kinds.add(kind)
    if not seen:
        return "unknown"
    return "+".join(sorted(kinds)) or "none"


def comparable_state(params: dict | None, companion: dict | None) -> dict[str, str]:
    """The keys compared between commits, as strings (see the module docstring). ``companion``:
    as read_state_file gives it (None when absent)."""
    out = {k: str(v) for k, v in (params or {}).items() if k in IDENTITY_KEYS}
    if companion is None:
        return out
    if UNREADABLE in companion:
        out["runner state"] = companion[UNREADABLE]
        return out
    start, end = companion.get("start") or {}, companion.get("end") or {}
    if not start.get("recorded"):
        out["runner state"] = str(start.get("reason") or "not recorded")
        return out
    for k in SOFTWARE_KEYS:
        if k in start.get("software", {}):
            out[k] = str(start["software"][k])
    for i, gpu in enumerate(start.get("gpus", [])):
        for k in GPU_KEYS:
            if k in gpu:
                out[f"gpu{i} {k}"] = str(gpu[k])
    out["throttled"] = throttling(start, end)
    return out


# read_state_file's answer for a companion that is there but cannot be used: {UNREADABLE: why}.
UNREADABLE = "unreadable"


def read_state_file(result_file: Path, root: Path | None = None) -> dict | None:
    """The companion runner state of one result file: None when there is none, {UNREADABLE:
    why} when it cannot be read (refused by the reader inside ``root``, default the results
    folder two levels up) or is not one; its per-pass entries that are not well-formed are
    dropped (benchmark_states)."""
    path = state_path(result_file)
    if not (path.exists() or path.is_symlink()):
        return None
    doc, reason = read_json(path, Path(root) if root is not None else result_file.parent.parent,
                            max_bytes=MAX_STATE_BYTES)
    reason = reason or companion_problem(doc)
    if reason is not None:
        return {UNREADABLE: f"runner-state companion {path.name} not used: {reason}"}
    return doc


def _snapshot_problem(snapshot: object, name: str) -> str | None:
    if not isinstance(snapshot, dict):
        return f"'{name}' is {type(snapshot).__name__}, expected a snapshot object"
    if not isinstance(snapshot.get("software", {}), dict):
        return f"'{name}.software' is not an object"
    gpus = snapshot.get("gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        return f"'{name}.gpus' is not a list of objects"
    return None


def companion_problem(doc: object) -> str | None:
    """Why a parsed document is not a runner-state companion ({"start": snapshot, "end":
    snapshot or null, "benchmarks": [...]}), or None."""
    if not isinstance(doc, dict):
        return f"top level is {type(doc).__name__}, expected an object"
    problem = _snapshot_problem(doc.get("start"), "start")
    if problem is None and doc.get("end") is not None:
        problem = _snapshot_problem(doc["end"], "end")
    if problem is None and not isinstance(doc.get("benchmarks", []), list):
        problem = "'benchmarks' is not a list"
    return problem


def _result_document(path: Path, root: Path) -> dict | None:
    """A result file read a second time (the loader reports what it refuses), or None."""
    doc, reason = read_json(path, root)
    return doc if reason is None and isinstance(doc, dict) else None


def recorded_states(results_dir, frame=None, per_benchmark: bool = False, paths=None) -> dict[tuple, dict[str, str]]:
    """{(machine, commit_hash): comparable state} for every result file under ``results_dir``
    (only the commits in ``frame``, when given). Unreadable files are left out: the loader
    already reports them. ``per_benchmark``: also {(machine, commit_hash, benchmark, params_key):
    pass_state} for every measuring pass the run recorded (benchmark_states). ``paths``: only
    these result files (relative to the folder, "machine/file.json") are read: the gate passes
    those of the commits either side of each finding it classifies (at 5,000 files of 2 MB,
    reading every one to find the few wanted took minutes)."""
    root = Path(results_dir)
    wanted = set(frame["commit_hash"].astype(str)) if frame is not None else None
    out: dict[tuple[str, str], dict[str, str]] = {}
    if not root.is_dir():
        return out
    for machine, path in _result_paths(root) if paths is None else _named_paths(root, paths):
        doc = _result_document(path, root)
        commit = doc.get("commit_hash") if doc is not None else None
        if not isinstance(commit, str) or (wanted is not None and commit not in wanted):
            continue
        params = doc.get("params") if isinstance(doc.get("params"), dict) else {}
        companion = read_state_file(path, root)
        out[(machine, commit)] = comparable_state(params, companion)
        if per_benchmark:
            out.update({(machine, commit, *key): state for key, state in benchmark_states(companion).items()})
    return out


def _result_paths(root: Path):
    """(machine, path) of every result file in the folder's machine folders."""
    for mdir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        yield from ((mdir.name, path) for path in sorted(mdir.glob("*.json")) if path.name not in NOT_RESULTS)


def _named_paths(root: Path, paths):
    """(machine, path) of the result files named "machine/file.json" (the loader listed them:
    no second walk of the folder)."""
    for relative in sorted({Path(p).as_posix() for p in paths}):
        machine, _, name = relative.partition("/")
        if name and "/" not in name and name not in NOT_RESULTS and not machine.startswith("."):
            yield machine, root / machine / name


def state_of_result(results_dir, path: str, params: dict) -> dict[str, str]:
    """The comparable state of one result file (``path`` relative to the folder) whose
    ``params`` the loader already read (asv_results.table.ResultsTable.file_of): only its
    runner-state companion is read here, not the result file again."""
    root = Path(results_dir)
    return comparable_state(params, read_state_file(root / path, root))


def changed_keys(before: dict[str, str], after: dict[str, str]) -> set[str]:
    """Keys whose value differs between two runs' states (a key only one has counts too)."""
    if not before or not after:
        return set()
    return {k for k in set(before) | set(after) if before.get(k) != after.get(k)}


def params_key(params: dict) -> str:
    """The results frame's params_key of a combination: asv's reprs, "case='...', impl='fused'"."""
    return ", ".join(f"{name}={value!r}" for name, value in params.items())


def _at_ends(start: dict, end: dict, key: str) -> str:
    def one(snap):
        values = [g.get(key) for g in snap.get("gpus", [])] if snap.get("recorded") else []
        shown = [", ".join(map(str, v)) or "none" if isinstance(v, list) else str(v) for v in values if v is not None]
        return "; ".join(shown) or "?"

    return f"{one(start)} -> {one(end)}"


def pass_state(start: dict | None, end: dict | None) -> dict[str, str]:
    """One measuring pass's state: whether it was throttled (the violation counters over the
    pass, as ``throttling``), and the throttle reasons, SM clock, temperature and power draw at
    its start and at its end (shown, never compared: they move with the load)."""
    start, end = start or {}, end or {}
    if not (start.get("recorded") and end.get("recorded")):
        return {"runner state": str(start.get("reason") or end.get("reason") or "not recorded")}
    return {"throttled": throttling(start, end),
            "throttle reasons": _at_ends(start, end, "throttle_reasons"),
            "sm clock MHz": _at_ends(start, end, "sm_clock_mhz"),
            "temperature C": _at_ends(start, end, "temperature_c"),
            "power W": _at_ends(start, end, "power_w")}


def benchmark_states(companion: dict | None) -> dict[tuple[str, str], dict[str, str]]:
    """{(benchmark, params_key): pass_state} from one companion file ({} for a version 1 file,
    or none); entries that are not well-formed are left out."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    entries = (companion or {}).get("benchmarks")
    for entry in entries if isinstance(entries, list) else []:
        if not (isinstance(entry, dict) and isinstance(entry.get("benchmarks"), list)
                and isinstance(entry.get("params"), dict)) \
                or any(_snapshot_problem(entry[end], end) for end in ("start", "end") if isinstance(entry.get(end), dict)):
            continue
        state = pass_state(entry.get("start") if isinstance(entry.get("start"), dict) else None,
                           entry.get("end") if isinstance(entry.get("end"), dict) else None)
        key = params_key(entry["params"])
        for benchmark in entry["benchmarks"]:
            out[(str(benchmark), key)] = state
    return out


def benchmark_states_of_run(results_dir, machine: str, env_name: str, commit: str
                            ) -> dict[tuple[str, str], dict[str, str]]:
    """benchmark_states of one run (machine, environment, commit); {} when not recorded."""
    root = Path(results_dir)
    return benchmark_states(read_state_file(root / machine / f"{commit[:8]}-{env_name}.json", root))
