"""The detector's findings kept in the cache folder, so that several dashboard processes over one
results folder (gunicorn's workers) run the detector once per results change, not once each.

    <cache_dir>/results-<key>/findings.json     {"key": ..., "findings": [...], "verdict": {...}, "checksum": ...}

The first process to detect takes the folder's findings lock, detects and writes the file (a new
file moved into place); the others wait for the lock and read it. ``key`` names what the
findings are of: the results folder's signature, the commit order and the dashboard's code, so a
changed folder, order or detector never serves old findings. The file is read as the cache reads
its manifest: with asv_results.safe_read's limits, a checksum, and every field of every finding of
the type it must have; anything off and the findings are detected again (never trusted, never
shown half). No pickle: the file lies on a disk others can write to. ``verdict`` is the gate's
judgement (regressions.judgement.verdict_record), plain JSON already.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import tempfile
import typing
from functools import lru_cache
from pathlib import Path

import pandas as pd

from asv_results import folder_lock, safe_read

log = logging.getLogger(__name__)
FILE_NAME, LOCK_NAME = "findings.json", ".findings.lock"
MAX_BYTES = 256 << 20


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Changes when any of the dashboard's code does (the detector, the loader, the table)."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def findings_key(signature: tuple, commit_rank: dict | None) -> str:
    """What a set of findings is of: the results' signature, the commit order, the code."""
    rank = sorted(commit_rank.items()) if commit_rank else None
    return hashlib.sha256(repr((signature, rank, code_fingerprint())).encode()).hexdigest()


def _kinds():
    from regressions.failures import StatusChange
    from regressions.findings import Finding

    return {"finding": Finding, "status": StatusChange}


def _to_json(change) -> dict:
    out = {}
    for f in dataclasses.fields(change):
        value = getattr(change, f.name)
        if isinstance(value, pd.Timestamp):
            value = value.isoformat()
        elif isinstance(value, float) and not math.isfinite(value):
            value = repr(value)  # "nan", "inf": JSON has no spelling for them
        out[f.name] = value
    return out


@lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def _field_value(cls, f: dataclasses.Field, value):
    """The field's value from its JSON, or ValueError when it is not of the field's type."""
    kind = _hints(cls)[f.name]
    if kind is pd.Timestamp:
        if not isinstance(value, str):
            raise ValueError(f"{f.name} is not a date")
        return pd.Timestamp(value)
    if kind is float:
        if isinstance(value, str) and value in ("nan", "inf", "-inf"):
            return float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise ValueError(f"{f.name} is not a number")
    allowed = typing.get_args(kind) or (kind,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise ValueError(f"{f.name} is {type(value).__name__}, expected {kind}")
    return value


def _from_json(item: object):
    kinds = _kinds()
    if not isinstance(item, dict) or set(item) - {"type", "fields"} or item.get("type") not in kinds:
        raise ValueError("an entry is not {type, fields}")
    cls, values = kinds[item["type"]], item.get("fields")
    names = {f.name for f in dataclasses.fields(cls)}
    if not isinstance(values, dict) or set(values) != names:
        raise ValueError(f"a {item['type']} entry does not have exactly its fields")
    return cls(**{f.name: _field_value(cls, f, values[f.name]) for f in dataclasses.fields(cls)})


def _checksum(key: str, findings: list, verdict: dict) -> str:
    return hashlib.sha256(json.dumps([key, findings, verdict], sort_keys=True,
                                     separators=(",", ":")).encode()).hexdigest()


def _verdict(doc: object) -> dict:
    """The stored verdict record, or ValueError when it is not one."""
    if not isinstance(doc, dict) or not (set(doc) == {"error"} and isinstance(doc["error"], str)
                                         or set(doc) == {"document", "machines"} and isinstance(doc["document"], dict)
                                         and isinstance(doc["machines"], dict)):
        raise ValueError("the verdict is not {document, machines} or {error}")
    return doc


def read(folder: Path, key: str) -> tuple[list, dict] | None:
    """(findings, verdict record) stored for ``key``, or None (none stored, another key's, or not
    trustworthy)."""
    path = folder / FILE_NAME
    if not (path.exists() or path.is_symlink()):
        return None
    doc, reason = safe_read.read_json(path, folder, max_bytes=MAX_BYTES)
    try:
        if reason is not None:
            raise ValueError(reason)
        if not isinstance(doc, dict) or set(doc) != {"key", "findings", "verdict", "checksum"}:
            raise ValueError("not {key, findings, verdict, checksum}")
        if doc["key"] != key:
            return None  # of another results set: detected again and replaced
        if not isinstance(doc["findings"], list) or doc["checksum"] != _checksum(key, doc["findings"],
                                                                                  doc["verdict"]):
            raise ValueError("its checksum does not match its content")
        return [_from_json(item) for item in doc["findings"]], _verdict(doc["verdict"])
    except (ValueError, TypeError) as exc:
        log.warning("the stored findings in %s are not used (%s); detecting again", folder, exc)
        return None


def write(folder: Path, key: str, detected: tuple[list, dict]) -> None:
    """Store (findings, verdict record) for ``key`` (a new file moved into place); an OSError is
    only logged."""
    findings, verdict = detected
    kinds = {cls: name for name, cls in _kinds().items()}
    items = [{"type": kinds[type(c)], "fields": _to_json(c)} for c in findings]
    body = json.dumps({"key": key, "findings": items, "verdict": verdict,
                       "checksum": _checksum(key, items, verdict)}).encode()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            os.replace(tmp, folder / FILE_NAME)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.warning("could not store the findings in %s (%s)", folder, exc.strerror or exc)


def exclusive(folder: Path):
    """One process at a time detects for this folder; without a lock to take, each goes ahead."""
    return folder_lock.exclusive(folder, LOCK_NAME)


def detect_once(folder: Path | None, key: str | None, detect: typing.Callable[[], tuple[list, dict]]
                ) -> tuple[list, dict]:
    """The stored (findings, verdict) for ``key`` when another process already detected them,
    else ``detect()``'s, stored for the others (no folder or key: just ``detect()``)."""
    if folder is None or key is None:
        return detect()
    with exclusive(folder):
        stored = read(folder, key)
        if stored is not None:
            return stored
        findings = detect()
        write(folder, key, findings)
        return findings
