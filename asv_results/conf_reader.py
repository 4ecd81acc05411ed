"""Read a JSON config with // and /* */ comments (asv.conf.json) with limits, parsed once per
change of the file (no Dash, no pandas).

asv itself reads its config with json5, which takes ~8 s per MiB: a large config made every reload
of the dashboard wait that long. Here the text is tried as plain JSON first, then with its comments
and trailing commas removed (both at C speed); json5 is the last resort, for small files only. A
file over ``MAX_CONF_BYTES``, not a regular file, or nested too deep is refused with a reason.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

from asv_results.safe_read import parse_json, read_json_text

# Real asv configs are a few KB; 1 MiB is far above any of them.
MAX_CONF_BYTES = 1 << 20
# json5 accepts what the faster paths do not (unquoted keys, single quotes) at ~8 s per MiB.
MAX_JSON5_BYTES = 64 << 10

# A string (kept whole, so "//" inside a URL survives), else a comment.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
# A string, else a comma that only a closing bracket follows.
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=\s*[}\]])')

_parsed: dict[str, tuple[tuple, object, str | None]] = {}  # real path -> (file identity, doc, reason)
_lock = threading.Lock()


def _keep_strings(match: re.Match) -> str:
    text = match.group(0)
    return text if text.startswith('"') else ""


def strip_comments(text: str) -> str:
    """``text`` without // and /* */ comments and trailing commas (outside strings)."""
    text = _STRING_OR_COMMENT.sub(_keep_strings, text)
    return _STRING_OR_TRAILING_COMMA.sub(_keep_strings, text)


def parse_conf_text(text: str) -> tuple[object | None, str | None]:
    """(document, None) or (None, reason) for a config's text (parsed by the one reader's parse_json)."""
    doc, error = parse_json(text)
    if error is None:
        return doc, None
    doc, error = parse_json(strip_comments(text))
    if error is None:
        return doc, None
    if len(text.encode("utf-8", "surrogateescape")) <= MAX_JSON5_BYTES:
        try:
            import json5  # asv's own reader (asv depends on it)

            return json5.loads(text), None
        except ImportError:
            pass
        except ValueError as exc:
            error = exc
    return None, str(error) if str(error).startswith("not JSON") else f"not JSON ({error})"


def _read(path: str) -> tuple[object | None, str | None]:
    text, reason = read_json_text(Path(path), Path(path).parent, MAX_CONF_BYTES)
    return (None, reason) if reason is not None else parse_conf_text(text)


def load_conf(path: str | Path) -> tuple[object | None, str | None]:
    """(document, None) or (None, reason). Parsed again only when the file changes (its inode,
    size, mtime or ctime), so calling this at every reload costs one stat."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        return None, f"cannot open file ({exc.strerror or exc})"
    identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _lock:  # held through the parse: a second caller waits for it instead of parsing again
        known = _parsed.get(real)
        if known is None or known[0] != identity:
            known = (identity, *_read(real))
            _parsed[real] = known
    return known[1], known[2]
