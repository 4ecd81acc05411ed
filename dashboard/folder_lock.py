"""An exclusive lock on a folder shared by several processes (gunicorn's workers on one cache
folder): a lock file in it, held with flock while the block runs. Where there is no lock to take
(the folder cannot be written, no flock on this platform) the block runs unlocked: each process
then does the work itself, which is slower but never wrong."""

from __future__ import annotations

import contextlib
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


@contextlib.contextmanager
def exclusive(folder: Path, lock_name: str):
    """Hold ``folder/lock_name`` exclusively while the block runs (see the module's text)."""
    handle = None
    if fcntl is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            handle = open(folder / lock_name, "a")
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            if handle is not None:
                handle.close()
            handle = None
    try:
        yield
    finally:
        if handle is not None:
            handle.close()  # closing releases the lock
