"""Stopping `python -m dashboard` ends every process it started: the regression detector's worker
and multiprocessing's resource tracker included (they once outlived a SIGTERM, ~490 MB each)."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.suite_fixtures import write_dashboard_fixture

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow,  # starts real servers (~10 s each)
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> dict[int, str]:
    """pid -> command line of every process below ``pid``."""
    tree, out, todo = _children(), {}, [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            try:
                out[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its parent has not collected it yet


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def start_detection(base: str) -> None:
    """Fire the Regressions page's callback the way the browser does, which starts the detector
    in its worker process (found from /_dash-dependencies, not hard-coded)."""
    deps = json.loads(_get(base + "/_dash-dependencies"))
    dep = next(d for d in deps if "regressions-inbox.children" in d["output"])

    def ident(i):
        return json.loads(i) if i.startswith("{") else i

    outputs = [{"id": ident(part.rsplit(".", 1)[0]), "property": part.rsplit(".", 1)[1]}
               for part in dep["output"].strip(".").split("...")]
    body = {"output": dep["output"], "outputs": outputs,
            "inputs": [{"id": ident(i["id"]), "property": i["property"], "value": None} for i in dep["inputs"]],
            "state": [{"id": ident(s["id"]), "property": s["property"], "value": None} for s in dep["state"]],
            "changedPropIds": []}
    request = urllib.request.Request(base + "/_dash-update-component", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        assert r.status == 200


def wait_for(condition, timeout: float, what: str):
    end = time.time() + timeout
    while time.time() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("shutdown") / "results").results_dir


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# "SIGINT, inherited ignored": a server started by a parent that ignores SIGINT (a script's
# background job; once a test run's worker) must still stop on it.
@pytest.mark.parametrize("how, start_ignoring", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                                 (signal.SIGINT, True), (signal.SIGKILL, False)],
                         ids=["SIGTERM", "SIGINT", "SIGINT, inherited ignored", "SIGKILL"])
def test_stopping_the_server_ends_every_child_process(results, how, start_ignoring, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",)}
    log = tmp_path / "server.log"  # a file, not a pipe: a process left behind would hold a pipe open
    server = subprocess.Popen([sys.executable, "-m", "dashboard", "--results", str(results), "--port", str(port),
                               "--cache-dir", str(tmp_path / "cache")],  # not the user's ~/.cache
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("wb"),
                              preexec_fn=_ignore_sigint if start_ignoring else None)
    children: dict[int, str] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: server.poll() is None and _try(lambda: _get(base + "/")), 60, "the server to answer")
        start_detection(base)
        children = wait_for(lambda: (lambda d: d if any("spawn_main" in c for c in d.values()) else None)(
            descendants(server.pid)), 30, "the detector's worker process")
        assert any("resource_tracker" in c for c in children.values()), children
        server.send_signal(how)
        code = server.wait(timeout=30)
        assert code == (-signal.SIGKILL if how == signal.SIGKILL else 0), log.read_text()[-2000:]
        wait_for(lambda: not any(alive(p) for p in children), 15,
                 f"{[c for p, c in children.items() if alive(p)]} to end")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pid in children:  # what this test started, if the server left it behind
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def _try(fn):
    try:
        return fn()
    except OSError:
        return None
