"""An exclusive lock on a folder shared by several processes (gunicorn's workers on one cache
folder): a lock file in it, held with flock while the block runs. Where there is no lock to take
(the folder cannot be written, no flock on this platform) the block runs unlocked: each process
then does the work itself, which is slower but never wrong. The lock file is opened without
following a symlink or waiting on a FIFO, and used only when it is a regular file: a lock file
someone replaced (a FIFO hung every load, a symlink created its target outside the folder) means
running unlocked too."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


@contextlib.contextmanager
def exclusive(folder: Path, lock_name: str):
    """Hold ``folder/lock_name`` exclusively while the block runs (see the module's text)."""
    fd = _open_lock_file(Path(folder), lock_name) if fcntl is not None else None
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def _open_lock_file(folder: Path, lock_name: str) -> int | None:
    """A descriptor of the regular lock file, created if missing; None when there is none to use."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / lock_name, flags, 0o644)
    except OSError:  # a symlink (ELOOP), a folder that cannot be written
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None
