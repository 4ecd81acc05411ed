"""asv_results.folder_lock (issue 31, cause 2) and the asv machine registration's lock, both
asv_results/file_lock.py: a lock file someone replaced never hangs a load or a
registration nor writes outside the folder, and a worker killed while it holds the lock frees
it. Each command that could hang runs in a subprocess with a timeout."""

import os
import signal
import subprocess
import sys
import time

from asv_results.folder_lock import exclusive
from tests.suite_run import ROOT

TIMEOUT_S = 30

# A cache load and a findings detection through a cache folder whose lock files are FIFOs.
FIFO_LOCKS = r'''
import os, sys
from pathlib import Path
from asv_results import cache
from regressions import findings_store
from tests.suite_fixtures import write_dashboard_fixture

fx = write_dashboard_fixture(sys.argv[1])
store = cache.ResultsCache(fx.results_dir, Path(sys.argv[2]))
store.dir.mkdir(parents=True)
os.mkfifo(store.dir / cache.LOCK_NAME)
print("loaded", len(store.load().files), flush=True)
os.mkfifo(store.dir / findings_store.LOCK_NAME)
print("detected", findings_store.detect_once(store.dir, "key", lambda: ([], {})), flush=True)
'''

# Holds the findings lock in detect_once (as a worker's detector does) until it is killed.
HOLDER = r'''
import sys, time
from pathlib import Path
from regressions import findings_store

def detect():
    Path(sys.argv[2]).write_text("holding")
    time.sleep(600)

findings_store.detect_once(Path(sys.argv[1]), "key", detect)
'''

DETECT = r'''
import sys
from pathlib import Path
from regressions import findings_store
print("detected", findings_store.detect_once(Path(sys.argv[1]), "key", lambda: ([], {})), flush=True)
'''


def _python(script: str, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"hung ({TIMEOUT_S} s) after: {exc.stdout!r}") from None


def test_a_fifo_lock_file_runs_the_load_and_the_detection_unlocked(tmp_path):
    done = _python(FIFO_LOCKS, str(tmp_path / "results"), str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loaded " in done.stdout and "detected ([], {})" in done.stdout, done.stdout


def test_a_symlinked_lock_file_creates_nothing_outside_the_folder(tmp_path):
    folder, outside = tmp_path / "cache", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / ".lock").symlink_to(outside / "created")
    ran = []
    with exclusive(folder, ".lock"):
        ran.append(True)
    assert ran and list(outside.iterdir()) == []
    with exclusive(folder, "fresh.lock"):  # an ordinary lock file is still created and used
        assert (folder / "fresh.lock").is_file()


def test_a_worker_killed_while_its_detector_holds_the_findings_lock_frees_it(tmp_path):
    folder, ready = tmp_path / "cache", tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(ready)], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not ready.exists():
            assert holder.poll() is None, holder.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the holder never took the lock"
            time.sleep(0.05)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=TIMEOUT_S)
        holder.stderr.close()
    done = _python(DETECT, str(folder))
    assert done.returncode == 0 and "detected ([], {})" in done.stdout, done.stderr[-3000:]


# The asv machine registration's lock (benchmarks/harness/environment.py), beside ~/.asv-machine.json.
REGISTRATION_LOCK = r'''
import sys
from pathlib import Path
from benchmarks.harness.environment import _locked
with _locked(Path(sys.argv[1])):
    print("registered", flush=True)
'''


def test_a_fifo_or_symlinked_registration_lock_registers_unlocked_and_says_why(tmp_path):
    home, outside = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    outside.mkdir()
    machine_file = home / ".asv-machine.json"
    os.mkfifo(home / ".asv-machine.json.lock")  # open(..., "a") waited for a reader forever
    done = _python(REGISTRATION_LOCK, str(machine_file))
    assert done.returncode == 0 and "registered" in done.stdout, done.stderr[-3000:]
    assert "registering the asv machine unlocked" in done.stderr and "not a regular file" in done.stderr
    os.remove(home / ".asv-machine.json.lock")
    (home / ".asv-machine.json.lock").symlink_to(outside / "created")  # open(..., "a") created it
    done = _python(REGISTRATION_LOCK, str(machine_file))
    assert done.returncode == 0 and "registered" in done.stdout, done.stderr[-3000:]
    assert list(outside.iterdir()) == [] and "a symlink is not followed" in done.stderr
    os.remove(home / ".asv-machine.json.lock")
    done = _python(REGISTRATION_LOCK, str(machine_file))  # an ordinary lock file: locked, nothing said
    assert done.returncode == 0 and done.stderr == "" and (home / ".asv-machine.json.lock").is_file()
