"""The cache's manifest (asv_results.cache): its checksum and the checks a manifest read back must
pass before anything in it is used. A manifest is data the dashboard wrote, but it lies on a disk
others can write to: an edit, a truncation or a foreign file must be noticed, never followed
(an index out of range, a segment name with ``../``) or shown as results.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

SEGMENT_NAME = re.compile(r"^seg-[0-9a-f]{12}$")
CHECKSUM_KEY = "checksum"
IDENTITY_FIELDS = 5  # a column file's size, mtime_ns, ctime_ns, inode and device (asv_results.cache)


class CacheDamaged(Exception):
    """The cache's files are not what asv_results.cache wrote; the message says what is off."""


def checksum(body: dict) -> str:
    """SHA-256 of a manifest without its checksum, in one canonical spelling."""
    text = json.dumps({k: v for k, v in body.items() if k != CHECKSUM_KEY}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _is_int(value, low: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _fail(what: str):
    raise CacheDamaged(f"manifest: {what}")


def check_manifest(doc: object, file_fields: dict[str, type | tuple], columns: tuple[str, ...]) -> None:
    """CacheDamaged unless ``doc`` is a manifest as asv_results.cache writes it (format and parser
    already matched by the caller): its checksum, every field's type, every index in range,
    every file's rows inside its segment and as many as its layouts' grids hold.
    ``file_fields``: FileEntry's field name -> accepted type(s); ``columns``: a segment's columns."""
    if not isinstance(doc, dict):
        _fail(f"top level is {type(doc).__name__}, expected an object")
    if doc.get(CHECKSUM_KEY) != checksum(doc):
        _fail("its checksum does not match its content (edited or damaged)")
    segments, layouts, files = doc.get("segments"), doc.get("layouts"), doc.get("files")
    if not (isinstance(segments, list) and isinstance(layouts, list) and isinstance(files, list)):
        _fail("'segments', 'layouts' and 'files' must be lists")
    rows = _check_segments(segments, columns)
    sizes = _check_layouts(layouts)
    for i, entry in enumerate(files):
        _check_file(i, entry, file_fields, rows, sizes)


def _check_segments(segments: list, columns: tuple[str, ...]) -> list[int]:
    names, rows = set(), []
    for i, seg in enumerate(segments):
        if not isinstance(seg, dict) or set(seg) != {"name", "rows", "samples", "files"}:
            _fail(f"segment {i} is not {{name, rows, samples, files}}")
        name, identities = seg["name"], seg["files"]
        if not isinstance(name, str) or not SEGMENT_NAME.match(name) or name in names:
            _fail(f"segment {i} has the name {name!r}, not one this cache writes")
        if not (_is_int(seg["rows"]) and _is_int(seg["samples"])):
            _fail(f"segment {name}: rows and samples must be counts")
        if not isinstance(identities, dict) or set(identities) != set(columns) or not all(
                isinstance(x, list) and len(x) == IDENTITY_FIELDS and all(_is_int(v) for v in x)
                for x in identities.values()):
            _fail(f"segment {name}: 'files' must give each column's file identity "
                  f"({IDENTITY_FIELDS} counts: size, mtime, ctime, inode, device)")
        names.add(name)
        rows.append(seg["rows"])
    return rows


def _check_layouts(layouts: list) -> list[int]:
    """Rows per layout: the size of its parameter grid."""
    sizes = []
    for i, layout in enumerate(layouts):
        if not (isinstance(layout, list) and len(layout) == 2 and isinstance(layout[0], str)
                and isinstance(layout[1], list) and all(isinstance(p, list) for p in layout[1])
                and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for p in layout[1] for v in p)):
            _fail(f"layout {i} is not [benchmark, [[parameter values], ...]]")
        sizes.append(math.prod(len(p) for p in layout[1]))
    return sizes


def _check_file(i: int, entry, file_fields: dict, rows: list[int], sizes: list[int]) -> None:
    if not isinstance(entry, dict) or set(entry) != set(file_fields):
        _fail(f"file entry {i} does not have exactly the fields of a file entry")
    for name, kind in file_fields.items():
        if not isinstance(entry[name], kind) or (isinstance(entry[name], bool) and kind is int):
            _fail(f"file entry {i}: '{name}' is {type(entry[name]).__name__}")
    if entry["reason"] is not None:
        return
    segment, start, n = entry["segment"], entry["row_start"], entry["n_rows"]
    if not (0 <= segment < len(rows)) or not (_is_int(start) and _is_int(n)) or start + n > rows[segment]:
        _fail(f"file entry {i} ({entry['path']!r}) points outside its segment")
    layouts = entry["layouts"]
    if not all(_is_int(x) and x < len(sizes) for x in layouts) or sum(sizes[x] for x in layouts) != n:
        _fail(f"file entry {i} ({entry['path']!r}): its layouts do not account for its {n} rows")
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in entry["problems"]):
        _fail(f"file entry {i}: 'problems' must be [benchmark, reason] pairs")
