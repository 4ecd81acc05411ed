"""Why a value is NaN (skipped) or null (failed): asv stores neither reason (only `asv run
--show-stderr` prints them), so the suite keeps them beside the results, torch-free:

    results/reasons/<machine>/<commit>.reasons      (JSON)
    {"version": 1, "machine": "h200-runner", "commit": "<40 hex>",
     "entries": [{"benchmark": "bench_ops.LinearAct.track_latency",
                  "params": {"case": "linear_act M=16 ...", "impl": "cublaslt"},
                  "status": "skipped",            # or "failed"
                  "reason": "cublaslt has no gelu epilogue (only ['gelu_tanh', 'relu'])"}]}

`benchmark` and `params` are asv's benchmark name and the combination's parameter values (not
their repr), so a reader pairs an entry with asv's value directly. `params` is "*"
(EVERY_COMBINATION) where one reason covers every combination of the benchmark: a setup_cache
that skips the whole benchmark (bench_compile on a commit whose library lacks the architecture:
one entry, not one per each of its ~1,000 combinations). The benchmark processes file
one file per measured combination into $FUSED_MLP_OUTCOMES (common._CaseBenchmark); benchmarks.run
sets it per asv run and merges what was filed into the commit's file here (a later run of the
same commit and machine replaces what it measured again, with a reason or without, and keeps the
rest). The dashboard's loaders ignore this folder: it holds no asv result files. The files are
JSON but not named .json: `asv publish` and `asv compare` warn about every .json file in a folder
without a machine.json. One named <commit>.json (written before) is still read, and the next
merge for its commit replaces it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from asv_results.safe_read import read_json

VERSION = 1
DIRNAME = "reasons"
STATUSES = ("skipped", "failed")
MAX_REASON_CHARS = 4000  # a failure's traceback, cut: enough to say where
EVERY_COMBINATION = "*"  # an entry's params: the reason holds for every combination of its benchmark


SUFFIX, LEGACY_SUFFIX = ".reasons", ".json"


def path(results_dir: Path, machine: str, commit: str, suffix: str = SUFFIX) -> Path:
    return Path(results_dir) / DIRNAME / machine / f"{commit}{suffix}"


def entry(benchmark: str, params: dict, status: str, reason: str) -> dict:
    if status not in STATUSES:
        raise ValueError(f"status {status!r}; expected one of {list(STATUSES)}")
    if not isinstance(params, dict) and params != EVERY_COMBINATION:
        raise ValueError(f"params {params!r}; expected the combination's values or {EVERY_COMBINATION!r}")
    return {"benchmark": benchmark, "params": params, "status": status, "reason": str(reason)[:MAX_REASON_CHARS]}


def collect(folder: Path) -> tuple[list[dict], set[tuple]]:
    """(every entry the benchmark processes filed into `folder`, the keys of every combination
    they measured, with a reason or without); files that are not ours are ignored."""
    entries, measured = [], set()
    for filed in sorted(Path(folder).glob("*.json")):
        doc, _ = read_json(filed, Path(folder))  # the one reader: a FIFO or a huge file is skipped
        if not isinstance(doc, dict):
            continue
        listed, pairs = doc.get("entries", []), doc.get("measured", [])
        entries += [e for e in (listed if isinstance(listed, list) else [])
                    if isinstance(e, dict) and e.get("status") in STATUSES]
        measured |= {_key({"benchmark": p[0], "params": p[1]}) for p in (pairs if isinstance(pairs, list) else [])
                     if isinstance(p, list) and len(p) == 2 and (isinstance(p[1], dict) or p[1] == EVERY_COMBINATION)}
    return entries, measured


def read(file: Path) -> dict:
    """A reasons file; ValueError naming the problem when it is not one."""
    doc, reason = read_json(Path(file), Path(file).parent)
    if reason is not None:
        raise ValueError(f"{file}: not a readable reasons file ({reason})")
    if not isinstance(doc, dict) or doc.get("version") != VERSION or not isinstance(doc.get("entries"), list):
        raise ValueError(f"{file}: not a reasons file of this suite (version {VERSION} with an 'entries' list)")
    return doc


def _key(e: dict) -> tuple:
    return e["benchmark"], json.dumps(e["params"], sort_keys=True)


_WHOLE = json.dumps(EVERY_COMBINATION)  # _key's params of a whole-benchmark entry


def merge(results_dir: Path, machine: str, commit: str, new: list[dict], measured: set[tuple]) -> Path:
    """Write the commit's file: the entries before, less those of the combinations this run
    measured again (`measured`, from collect), plus `new`. A benchmark measured again as a whole
    (EVERY_COMBINATION) loses every entry it had; one measured again in any combination loses
    its whole-benchmark entry."""
    target, legacy = path(results_dir, machine, commit), path(results_dir, machine, commit, LEGACY_SUFFIX)
    source = target if target.exists() else legacy if legacy.is_file() else None
    try:
        before = read(source)["entries"] if source is not None else []
    except ValueError:
        before = []  # an unreadable old file is replaced, never merged into
    again = measured | {_key(e) for e in new}
    touched = {benchmark for benchmark, _ in again}
    whole = {benchmark for benchmark, params in again if params == _WHOLE}
    kept = [e for e in before if _key(e) not in again and e["benchmark"] not in whole
            and not (e["params"] == EVERY_COMBINATION and e["benchmark"] in touched)]
    doc = {"version": VERSION, "machine": machine, "commit": commit, "entries": sorted(kept + new, key=_key)}
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".reasons.tmp")
    tmp.unlink(missing_ok=True)  # a link left there is not written through
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, target)
    if source == legacy:  # its entries are in the new file now
        legacy.unlink()
    return target
