"""Hostile or unlucky results folders, caches and inputs (issue 26): each defect has its test here,
written to fail before its fix. What must keep holding (FIFOs, /dev/zero, symlinks out of results/
skipped with a reason; nothing written into results/) is tested beside the features it guards."""

import os

import pytest

from dashboard import profiles
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
