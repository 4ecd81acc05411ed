"""Read a JSON file with limits, so that no file can hang, exhaust or crash a reader: the one
reader of every JSON file under results/ (a git folder that pull requests write to) and the
dashboard's cache, for the dashboard, the gate and the suite alike (asv_results.safe_read is this
module under the dashboard's name). It lives with the suite, torch-free and Dash-free, because
asv runs HEAD's suite against an older commit's installed package, whose dashboard may predate it.

A file is read only when it is a regular file (a FIFO would block the reader, a device such as
/dev/zero never ends), lies inside the folder once every symlink is resolved, is at most
``MAX_FILE_BYTES`` long, and nests at most ``MAX_JSON_DEPTH`` deep. Every refusal comes back as
a reason a person can act on, never as an exception. Text that did not come from a file (stdin)
is parsed with the same limits by ``parse_json``.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path

import numpy as np

try:  # ~2x faster than json on asv's float-heavy files, and it reads NaN/Infinity as json does
    import ujson
except ImportError:  # the suite on an offline GPU runner: json alone, the same documents
    ujson = None

# asv result files are ~0.4 MB for 2,000 series with their samples; 128 MiB is far above any
# real one and still well within memory.
MAX_FILE_BYTES = 128 << 20
# asv's result files nest 6 deep (document, results, row, column, combination, samples).
MAX_JSON_DEPTH = 32
# asv stores commit dates in milliseconds since the epoch; anything outside these years is not a
# commit date (pandas cannot even hold dates past 2262).
EARLIEST_DATE_MS = 0  # 1970-01-01
LATEST_DATE_MS = 7_258_118_400_000  # 2200-01-01


class UnreadableFile(Exception):
    """A file that is refused or cannot be read; the message says why."""


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` lies inside ``root`` once every symlink in either is resolved."""
    real, real_root = os.path.realpath(path), os.path.realpath(root)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def read_bytes(path: Path, root: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file inside ``root``; UnreadableFile otherwise."""
    max_bytes = MAX_FILE_BYTES if max_bytes is None else max_bytes
    if not inside(path, root):
        raise UnreadableFile(f"a symlink to {os.path.realpath(path)!r}, outside {str(root)!r}")
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
        fd = os.open(os.path.realpath(path), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise UnreadableFile(f"cannot open file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"not a regular file ({_kind(info.st_mode)})")
        if info.st_size > max_bytes:
            raise UnreadableFile(f"too large ({info.st_size:,} bytes; the limit is {max_bytes:,})")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)  # a file still growing stops at the limit too
    except OSError as exc:
        raise UnreadableFile(f"cannot read file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnreadableFile(f"too large (more than {max_bytes:,} bytes)")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


# Every byte but the brackets and quotes, deleted before the nesting is counted.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'[]{}"')))


def json_depth(data: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings ignored).

    Escaped backslashes and quotes are dropped first, then every byte but brackets and quotes
    (C speed), and only what is left is counted with numpy: ~10 % of the time json.loads takes,
    so a file cannot make the parser recurse before it is known how deep it goes.
    """
    if b"\\" in data:  # pairs of backslashes first, so that \\" still ends a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    raw = np.frombuffer(data.translate(None, _NOT_STRUCTURE), dtype=np.uint8)
    quote = raw == ord('"')
    in_string = (np.cumsum(quote, dtype=np.int64) & 1).astype(bool)
    step = (((raw == ord("[")) | (raw == ord("{"))).astype(np.int64)
            - ((raw == ord("]")) | (raw == ord("}"))).astype(np.int64))
    step[in_string] = 0
    return int(np.cumsum(step).max(initial=0))


def read_json_text(path: Path, root: Path, max_bytes: int | None = None,
                   max_depth: int | None = None) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason): a file's UTF-8 text, refused (with the reason) before any
    parser sees it when it is not a readable regular file inside ``root``, too large, empty, or
    nested deeper than ``max_depth``. The limits default to MAX_FILE_BYTES and MAX_JSON_DEPTH."""
    try:
        data = read_bytes(Path(path), Path(root), max_bytes)
    except UnreadableFile as exc:
        return None, str(exc)
    return checked_text(data, max_depth)


def checked_text(data: bytes, max_depth: int | None = None) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason): ``data`` as UTF-8 text that is not empty and nests at most
    ``max_depth`` (default MAX_JSON_DEPTH) deep, checked before any parser sees it."""
    max_depth = MAX_JSON_DEPTH if max_depth is None else max_depth
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    if not text.strip():
        return None, "empty file"
    depth = json_depth(data)
    if depth > max_depth:
        return None, f"JSON nested {depth} levels deep (the limit is {max_depth})"
    return text, None


def read_json(path: Path, root: Path, max_bytes: int | None = None,
              max_depth: int | None = None) -> tuple[object | None, str | None]:
    """(document, None) or (None, reason). Accepts asv's NaN/Infinity literals. The limits
    default to MAX_FILE_BYTES and MAX_JSON_DEPTH as they are when called."""
    try:
        data = read_bytes(Path(path), Path(root), max_bytes)
    except UnreadableFile as exc:
        return None, str(exc)
    text, reason = checked_text(data, max_depth)
    return (None, reason) if reason is not None else _parsed(text, data)


def parse_json(data: bytes | str, max_depth: int | None = None) -> tuple[object | None, str | None]:
    """(document, None) or (None, reason) for JSON that did not come from a file read here (stdin,
    a config's text with its comments removed), with the same depth limit and reasons."""
    data = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    text, reason = checked_text(data, max_depth)
    return (None, reason) if reason is not None else _parsed(text, data)


# Every byte but the control characters (tab, CR and LF included), deleted to find whether any
# is there: json refuses them inside strings, ujson would not.
_NOT_CONTROL = bytes(sorted(set(range(256)) - set(range(0x20))))
# A minus sign that no digit follows: ujson reads it as 0 where json reports the file broken.
# One regex scan (a literal prefix: memchr-fast) costs an eighth of one `in` per pattern, at the
# 30,000 minus signs of a result file's exponents.
_BARE_MINUS = re.compile(rb"-[,\]} ]")


def _ujson_reads_as_json(data: bytes) -> bool:
    """Whether ujson would read ``data`` as json does: no control character (a file's final
    newline aside; asv writes each result file as one line) and no bare minus sign. Left to
    ujson: "1." and "01", read as 1.0 and 1, numbers json refuses."""
    body = data.rstrip(b"\r\n")
    return not body.translate(None, _NOT_CONTROL) and not body.endswith(b"-") and _BARE_MINUS.search(body) is None


def _parsed(text: str, data: bytes) -> tuple[object | None, str | None]:
    """``text`` (``data`` decoded) parsed. ujson first where it reads as json does, since
    json.loads takes most of a first parse of 5,000 result files (ujson about half the CPU);
    whatever it refuses goes to json, whose verdicts and messages stand."""
    if ujson is not None and _ujson_reads_as_json(data):
        try:
            return ujson.loads(data), None
        except (ValueError, RecursionError):
            pass
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        if not _starts_as_json(text, exc):
            return None, f"not JSON (the text starts {text.lstrip()[:24]!r})"
        if _looks_truncated(text, exc):
            return None, f"truncated JSON (file ends at character {len(text)} inside a value)"
        return None, f"broken JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:  # cannot happen below MAX_JSON_DEPTH; kept so that no limit change crashes
        return None, "JSON nested too deeply to parse"


# What a JSON document (with asv's NaN and Infinity) may start with, and the words it may start with.
_VALUE_START = set('{["-0123456789tfnNI' + '"')
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")


def _starts_as_json(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether the text begins as a JSON value does: prose, HTML or YAML fail at their first
    character ("hello" is not a cut "null"), a cut file only after it has begun."""
    body = text.lstrip()
    start = len(text) - len(body)
    if not body or body[0] not in _VALUE_START:
        return False
    if exc.pos > start:
        return True
    return body[0] in '{["-0123456789' or any(word.startswith(body.rstrip()) for word in _LITERALS)


def _looks_truncated(text: str, exc: json.JSONDecodeError) -> bool:
    """The parse failed at the end of the file: it stopped mid-value. A cut inside a number or
    a literal ("1.2e", "-", "Infin") makes the parser fail a few characters before the end, so
    an error that close to an end that closes nothing counts as a cut too."""
    body = text.rstrip()
    if exc.pos >= len(body) or exc.msg.startswith("Unterminated string"):
        return True
    return exc.pos >= len(body) - 16 and not body.endswith(("}", "]"))


def date_problem(value: object, name: str = "date") -> str | None:
    """Why ``value`` is not a commit date in milliseconds since the epoch, or None."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"'{name}' is {value!r}, expected milliseconds since the epoch"
    if not (math.isfinite(value) and EARLIEST_DATE_MS <= value < LATEST_DATE_MS):
        return f"'{name}' {value!r} is not a date between 1970 and 2200 (milliseconds since the epoch)"
    return None
