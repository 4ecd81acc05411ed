"""docs/suite.md's plain asv commands, as written, on this machine: torch lives in a venv (this
test's Python), asv builds each commit in its own environment (asv.conf.json's
virtualenv-runner-site, tools/asv_plugins), and nothing reaches a network: every proxy points at
a closed port. Tiny grid, a few benchmarks (-b), two commits of this repository."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.suite_run import ROOT, asv, asv_env, asv_project

# Where the benchmark process found its library and torch: the commit's build in asv's
# environment, torch in the Python that runs asv. A constant, so asv continuous never sees a change.
WHERE_BENCHMARK = '''
import os
import sys


def track_library_is_the_commits_build():
    import fused_mlp
    import torch

    env_dir = os.path.realpath(os.environ["ASV_ENV_DIR"])
    library, torch_dir = os.path.realpath(fused_mlp.__file__), os.path.realpath(torch.__file__)
    if not library.startswith(env_dir + os.sep):
        raise AssertionError(f"fused_mlp from {library}, not from the commit's build in {env_dir}")
    if torch_dir.startswith(env_dir + os.sep):
        raise AssertionError(f"torch was installed into the environment ({torch_dir})")
    return 1.0
'''
SELECTED = r"^bench_where\.|^bench_device\.CopyCeiling\."


def _offline(env: dict) -> dict:
    closed = "http://127.0.0.1:9"  # discard port: any download attempt fails at once
    return {**env, "http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
            "PIP_INDEX_URL": closed + "/simple"}


@pytest.mark.slow
def test_readme_asv_commands_run_offline_with_torch_in_a_venv(tmp_path):
    assert sys.prefix != sys.base_prefix, "this test's point is a torch that lives in a venv"
    conf = asv_project(tmp_path)
    (tmp_path / "benchmarks" / "bench_where.py").write_text(WHERE_BENCHMARK)
    env = _offline(asv_env(tmp_path, "tiny"))
    commits = subprocess.run(["git", "-C", str(ROOT), "rev-list", "--first-parent", "-2", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.split()
    head, parent = commits[0], commits[1]
    outputs = []

    def run(*args, ok=(0,)):
        done = asv(conf, env, *args, timeout=600)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode in ok, f"asv {' '.join(args)}: exit {done.returncode}\n" + outputs[-1][-6000:]
        return done

    run("machine", "--yes", "--machine", "ci-plain")
    run("run", f"{parent}^..{head}", "--machine", "ci-plain", "-b", SELECTED)  # docs/suite.md: asv run A..B
    # continuous exits 1 on any significant change: on a shared CPU the copy timing moves by noise,
    # so it compares the constant check only (the run above timed both commits' copies)
    run("continuous", parent, head, "--machine", "ci-plain", "-b", r"^bench_where\.")
    compared = run("compare", parent, head, "--machine", "ci-plain")
    run("publish")
    results = tmp_path / "results" / "ci-plain"
    files = sorted(p.name for p in results.glob("*.json") if p.name != "machine.json")
    assert [f.split("-", 1)[0] for f in files] == sorted([parent[:8], head[:8]]), files
    for name in files:
        doc = json.loads((results / name).read_text())
        assert doc["env_name"].startswith("virtualenv-runner-site-py"), doc["env_name"]
        where = dict(zip(doc["result_columns"], doc["results"]["bench_where.track_library_is_the_commits_build"]))
        assert where["result"] == [1.0], where  # the check ran in the commit's environment and passed
        copy = dict(zip(doc["result_columns"], doc["results"]["bench_device.CopyCeiling.track_copy_seconds"]))
        assert copy["result"][1] > 0, copy  # the CPU size, timed with torch from the venv
    assert "bench_where.track_library_is_the_commits_build" in compared.stdout
    index = json.loads((tmp_path / "html" / "index.json").read_text())
    assert "bench_device.CopyCeiling.track_copy_seconds" in index["benchmarks"]
    assert not any("Connection refused" in o or "Retrying" in o for o in outputs), "something reached for a network"
