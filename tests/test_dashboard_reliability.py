"""Hostile or unlucky results folders, caches and inputs (issue 26): each defect has its test here,
written to fail before its fix. What must keep holding (FIFOs, /dev/zero, symlinks out of results/
skipped with a reason; nothing written into results/) is tested beside the features it guards."""

import os

import pytest

from dashboard.data import profiles
from dashboard.app import create_app
from dashboard.pages import profile as profile_page
from tests.suite_fixtures import write_dashboard_fixture


@pytest.fixture(scope="module")
def fixture_results(tmp_path_factory):
    return write_dashboard_fixture(tmp_path_factory.mktemp("reliability") / "results").results_dir


# --------------------------------------------------------------------------- item 1: trace route


def test_a_symlinked_profiles_folder_serves_nothing_outside_the_results(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    outside = tmp_path / "elsewhere"
    (outside / "etc").mkdir(parents=True)
    (outside / "etc" / "passwd").write_text("root:x:0:0")
    os.symlink(outside, results / "profiles")  # git can commit such a symlink
    assert profiles.trace_file(results, "etc/passwd") is None
    (results / "profiles").unlink()
    os.symlink("/", results / "profiles")
    assert profiles.trace_file(results, "etc/passwd") is None


def test_trace_route_refuses_a_symlinked_profiles_folder(fixture_results, tmp_path):
    import shutil

    results = shutil.copytree(fixture_results, tmp_path / "results")
    os.symlink("/", results / "profiles")
    app = create_app(results, detect_in_background=False)
    try:
        response = app.server.test_client().get(profile_page.TRACE_ROUTE + "etc/passwd")
        assert response.status_code == 404
    finally:
        app.server.config["FUSED_MLP_STORE"].close()


def test_a_trace_inside_a_real_profiles_folder_is_still_served(tmp_path):
    results = tmp_path / "results"
    (results / "profiles" / "box").mkdir(parents=True)
    (results / "profiles" / "box" / "t.json.gz").write_bytes(b"\x1f\x8b")
    assert profiles.trace_file(results, "box/t.json.gz") == (results / "profiles" / "box" / "t.json.gz").resolve()
    os.symlink(tmp_path, results / "profiles" / "box" / "out")  # a symlink inside, leading out
    (tmp_path / "secret.gz").write_bytes(b"x")
    assert profiles.trace_file(results, "box/out/secret.gz") is None


# --------------------------------------------------------------------------- item 6: stopped during the first load


def test_sigterm_during_the_first_load_stops_like_ctrl_c(monkeypatch, tmp_path, capsys):
    """The handler is in place before the load starts, and the store is closed however the load ends."""
    import signal

    import dashboard.__main__ as cli

    seen = {}

    class Store:
        def get(self):
            seen["handler"] = signal.getsignal(signal.SIGTERM)
            raise KeyboardInterrupt  # what the handler turns SIGTERM into

        def close(self):
            seen["closed"] = True

    class App:
        server = type("S", (), {"config": {"FUSED_MLP_STORE": Store()}})()

        def run(self, **kw):
            raise AssertionError("must not serve after an interrupted load")

    previous = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr("dashboard.app.create_app", lambda *a, **k: App())
    results = tmp_path / "results"
    results.mkdir()
    try:
        assert cli.main(["--results", str(results), "--no-cache"]) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen["handler"] is cli._stop_like_ctrl_c and seen["closed"]


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads process state from /proc")
def test_parse_workers_end_when_their_parent_is_killed(tmp_path):
    """SIGKILL runs no clean-up in the parent: the workers must notice it is gone themselves."""
    import signal
    import subprocess
    import sys
    import time

    script = ("import os, sys, time\n"
              "from asv_results.worker_processes import process_pool\n"
              "pool = process_pool(1)\n"
              "print(pool.submit(os.getpid).result(), flush=True)\n"
              "pool.submit(time.sleep, 120)\n"
              "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(__file__)))
    try:
        worker = int(parent.stdout.readline())
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(worker):
            time.sleep(0.2)
        assert not _alive(worker), "the parse worker outlived its parent"
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# --------------------------------------------------------------------------- items 7 and 11: python -m dashboard


@pytest.mark.parametrize("args, message", [
    (["--port", "99999"], "--port 99999"),
    (["--port", "-1"], "--port -1"),
    (["--cache-dir", "{results}"], "inside the results"),
    (["--cache-dir", "{results}/machine/cache"], "inside the results"),
])
def test_dashboard_cli_refuses_bad_arguments_with_exit_2(tmp_path, capsys, args, message):
    import dashboard.__main__ as cli

    results = tmp_path / "results"
    (results / "machine").mkdir(parents=True)
    with pytest.raises(SystemExit) as exc:
        cli.main(["--results", str(results), *[a.format(results=results) for a in args]])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and "Traceback" not in err


def test_a_cache_dir_inside_the_results_is_not_used(fixture_results, tmp_path):
    import shutil

    from dashboard.store.load_data import build_data, results_signature

    results = shutil.copytree(fixture_results, tmp_path / "results")
    signature = results_signature(results)
    data = build_data(results, cache_dir=results)
    assert "inside the results folder" in data.cache_note and not data.empty
    assert results_signature(results) == signature  # nothing written there, so nothing to reload
    assert not any(p.name.startswith("results-") for p in results.iterdir())
