"""An exclusive lock on a folder shared by several processes (gunicorn's workers on one cache
folder): asv_results/file_lock.py, the one opener of lock files (no symlink followed, no
wait on a FIFO, only a regular file used; else the block runs unlocked, which is slower here but
never wrong), shared with the harness's asv machine registration."""

from __future__ import annotations

from asv_results.file_lock import exclusive

__all__ = ["exclusive"]
