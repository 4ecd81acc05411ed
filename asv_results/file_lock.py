"""An exclusive lock held with flock on a lock file while a block runs (torch-free: the dashboard's
cache and findings folders use it too, through asv_results/folder_lock.py). Where there is no lock
to take (the folder cannot be written, no flock on this platform) the block runs unlocked: each
process then does the work itself or may race, which the caller's ``unlocked`` hears about. The
lock file is opened without following a symlink or waiting on a FIFO, and used only when it is a
regular file: a lock file someone replaced (a FIFO hung every load, a symlink created its target
outside the folder) means running unlocked too."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Callable

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None


@contextlib.contextmanager
def exclusive(folder: Path, lock_name: str, unlocked: Callable[[str], None] | None = None):
    """Hold ``folder/lock_name`` exclusively while the block runs (see the module's text);
    ``unlocked(why)`` is told when the block runs without the lock."""
    fd, why = _open_lock_file(Path(folder), lock_name) if fcntl is not None else (None, "no flock here")
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            os.close(fd)
            fd, why = None, f"flock failed: {exc.strerror or exc}"
    if fd is None and unlocked is not None:
        unlocked(f"{Path(folder) / lock_name}: {why}")
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # closing releases the lock


def _open_lock_file(folder: Path, lock_name: str) -> tuple[int | None, str]:
    """(a descriptor of the regular lock file, created if missing, "") or (None, why not)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / lock_name, flags, 0o644)
    except OSError as exc:  # a symlink (ELOOP), a folder that cannot be written
        return None, f"cannot open the lock file ({exc.strerror or exc}; a symlink is not followed)"
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd, ""
    except OSError:
        pass
    os.close(fd)
    return None, "the lock file is not a regular file"
