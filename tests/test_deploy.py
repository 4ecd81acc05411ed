"""The team deployment: gunicorn serving dashboard.wsgi:server over a results folder named in the
environment, several workers, one shared cache directory outside the results."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dashboard import wsgi
from tests.generic_fixtures import READ, write_generic_history
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
START_SECONDS = 90  # two shared CPU cores: importing Dash and loading the results take a while there


def _get(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, response.read()


def _wait_for(url: str, server: subprocess.Popen) -> tuple[int, bytes]:
    deadline = time.monotonic() + START_SECONDS
    while True:
        if server.poll() is not None:
            raise AssertionError(f"gunicorn exited ({server.returncode}): {server.stderr.read().decode()[-3000:]}")
        try:
            return _get(url)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _route_body(dependencies: list, pathname: str) -> bytes:
    """The router callback's request (what the browser sends on opening ``pathname``), built from
    the callbacks the server itself declares."""
    router = next(d for d in dependencies if "page.children" in d["output"])
    outputs = [{"id": json.loads(i) if i.startswith("{") else i, "property": p}
               for i, p in (o.rsplit(".", 1) for o in router["output"].strip(".").split("..."))]
    values = {("url", "pathname"): pathname, ("url", "search"): ""}
    return json.dumps({
        "output": router["output"], "outputs": outputs,
        "inputs": [{**d, "value": values.get((d["id"], d["property"]))} for d in router["inputs"]],
        "state": [{**d, "value": values.get((d["id"], d["property"]))} for d in router.get("state", [])],
        "changedPropIds": [f"{d['id']}.{d['property']}" for d in router["inputs"]],
    }).encode()


GUNICORN = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or shutil.which("gunicorn")


def test_gunicorn_serves_the_dashboard_over_a_results_folder(tmp_path):
    assert GUNICORN is not None, "gunicorn is not installed: pip install -e '.[test]' (the dashboard extra has it)"
    results = write_generic_history(tmp_path / "results", n_commits=6).results_dir
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    port = free_port()
    env = {**os.environ, wsgi.RESULTS_ENV: str(results), wsgi.CACHE_ENV: str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([GUNICORN, "--workers", "2", "--bind", f"127.0.0.1:{port}", "--timeout", "120",
                               "dashboard.wsgi:server"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        status, index = _wait_for(f"http://127.0.0.1:{port}/", server)
        assert status == 200 and b"fused-mlp-bench" in index
        _, dependencies = _get(f"http://127.0.0.1:{port}/_dash-dependencies")
        for _ in range(4):  # every request may land on either worker: each answers alike
            status, page = _get(f"http://127.0.0.1:{port}/_dash-update-component",
                                _route_body(json.loads(dependencies), "/trends"))
            assert status == 200 and READ in page.decode() and "Could not build" not in page.decode()
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
        server.stderr.close()
    assert server.returncode == 0
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before  # nothing written there
    assert any((tmp_path / "cache").rglob("manifest.json"))  # the workers' shared cache


def test_settings_come_from_the_environment_and_bad_ones_are_named(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    settings = wsgi.settings_from_env({wsgi.RESULTS_ENV: str(results), wsgi.CACHE_ENV: "none"})
    assert settings == {"results_dir": results, "cache_dir": None, "asv_conf": None}
    assert wsgi.settings_from_env({wsgi.RESULTS_ENV: str(results)})["cache_dir"] is not None  # the default cache
    with pytest.raises(ValueError, match="inside the results folder"):
        wsgi.settings_from_env({wsgi.RESULTS_ENV: str(results), wsgi.CACHE_ENV: str(results / "cache")})
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=f"{wsgi.RESULTS_ENV}.*not a directory"):
        wsgi.settings_from_env({wsgi.RESULTS_ENV: str(tmp_path / "file")})
    with pytest.raises(ValueError, match=f"{wsgi.CONF_ENV}.*not a file"):
        wsgi.settings_from_env({wsgi.RESULTS_ENV: str(results), wsgi.CONF_ENV: str(tmp_path / "nope.json")})
