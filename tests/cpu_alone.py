"""Tests marked ``alone`` time CPU work (the bisect's planted step is measured in CPU seconds
under the interpreter) and need the CPUs to themselves: beside another pytest-xdist worker's
interpreted kernels, a 0.17 s call measured 0.31-0.33 s at some commits and not at others, and
the detector then rightly could not place the step to one commit.

Across the workers of one run, every test holds a shared lock on one file while it runs (its
fixtures included); an ``alone`` test holds it exclusively. A second, "turnstile" lock keeps new
tests from starting while an ``alone`` test waits for the running ones to finish (flock itself
would let shared holders starve it). Without xdist there is one process and nothing to lock."""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
from pathlib import Path

MARK = "alone"


def lock_dir(config) -> Path | None:
    """The run's lock folder under xdist (one per run: xdist's testrunuid), else None."""
    worker = getattr(config, "workerinput", None)
    if worker is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"fused-mlp-tests-{worker['testrunuid']}"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def cpu_share(folder: Path | None, alone: bool):
    """Run the block beside other tests (shared), or with none running (``alone``)."""
    if folder is None:
        yield
        return
    with open(folder / "turnstile", "a") as turnstile, open(folder / "cpus", "a") as cpus:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(cpus, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)  # let the next test (or an alone one) queue
        try:
            yield
        finally:
            fcntl.flock(cpus, fcntl.LOCK_UN)
            if alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
