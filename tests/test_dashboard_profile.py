"""The Profile page: stored profile passes -> loader -> figures -> callbacks -> browser."""

import json
import os
import shutil
import subprocess
import time
from types import SimpleNamespace
from urllib.parse import quote_plus

import pytest

from dashboard.data import profiles
from dashboard.app import create_app
from dashboard.pages import profile as profile_page
from dashboard.data.urlstate import Query
from benchmarks import profile as profile_cli
from workload.case import Case

from tests.browser_support import IN_CI, MISSING, browser_on, figure_value, poll, severe_logs
from tests.suite_fixtures import write_dashboard_fixture

CASES = [Case("gated_mlp", 16, 32, 48, "fp32", "gelu_tanh"), Case("linear_act", 8, 16, 32, "fp32", "relu")]


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def passes(tmp_path_factory):
    """Two real profile passes (two commits) on this CPU, with traces, plus a broken file."""
    tmp = tmp_path_factory.mktemp("profiles")
    repo, save = tmp / "repo", tmp / "results" / "profiles"
    repo.mkdir()
    _git(repo, "init", "-q")
    old_cwd, old_grid = os.getcwd(), profile_cli.grid
    profile_cli.grid = lambda name: {"all": CASES}
    commits = []
    try:
        os.chdir(repo)
        for i in range(2):
            _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
            profile_cli.save_profile_pass("tiny", "cpu-box", str(save), "cpu", traces=True)
            commits.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                          text=True, check=True).stdout.strip())
            time.sleep(1.1)  # distinct commit dates (seconds)
    finally:
        os.chdir(old_cwd)
        profile_cli.grid = old_grid
    (save / "cpu-box" / "broken.json").write_text('{"version": 1, "profiles": [')
    return tmp / "results", commits


def test_loader_reads_every_pass_and_reports_broken_files(passes):
    results, commits = passes
    loaded = profiles.load_profiles(results)
    assert [p.endswith("broken.json") for p, _ in loaded.skipped] == [True]
    frame = loaded.frame
    assert set(frame["commit_hash"]) == set(commits)
    eager_gated = frame[(frame["case"] == CASES[0].key) & (frame["impl"] == "eager") & (frame["commit_hash"] == commits[0])]
    assert dict(zip(eager_gated["kernel"], eager_gated["launches_per_call"])) == {
        "aten::linear": 3, "aten::gelu": 1, "aten::mul": 1}
    reasons = loaded.not_profiled
    # fused and cuBLASLt need CUDA; the scaled_mm peers run FP8 Cases only
    assert set(reasons[reasons["case"] == CASES[1].key]["impl"]) == {"fused", "cublaslt", "scaled_mm", "scaled_mm_compile"}


def test_one_bad_value_is_left_out_with_its_reason_and_the_rest_shows(passes, tmp_path):
    results, commits = passes
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    machine_dir = copy / "profiles" / "cpu-box"
    good = json.loads(next(p for p in sorted(machine_dir.glob("*.json")) if p.name != "broken.json").read_text())
    # a third pass whose date is Infinity (json writes and reads it): once it hid every profile
    (machine_dir / "infinite-date.json").write_text(
        json.dumps({**good, "commit_hash": "f" * 40}).replace(f'"date": {good["date"]}', '"date": Infinity'))
    # a fourth whose first kernel entry has an infinite time: only that entry goes
    entries = [dict(e) for e in good["profiles"]]
    first = next(i for i, e in enumerate(entries) if "summary" in e and e["summary"]["kernels"])
    entries[first] = json.loads(json.dumps(entries[first]).replace(
        f'"seconds_per_call": {entries[first]["summary"]["kernels"][0]["seconds_per_call"]}',
        '"seconds_per_call": Infinity', 1))
    (machine_dir / "one-bad-entry.json").write_text(json.dumps({**good, "commit_hash": "e" * 40,
                                                                  "profiles": entries}))
    loaded = profiles.load_profiles(copy)
    reasons = dict(loaded.skipped)
    assert "date" in reasons[str(machine_dir / "infinite-date.json")]
    assert "seconds_per_call" in reasons[str(machine_dir / "one-bad-entry.json")]
    frame = loaded.frame
    assert set(commits) | {"e" * 40} == set(frame["commit_hash"])  # every good pass, and the rest of the 4th
    bad = entries[first]
    fourth = frame[frame["commit_hash"] == "e" * 40]
    assert not ((fourth["case"] == bad["case"]) & (fourth["impl"] == bad["impl"])).any()
    assert len(fourth) == len(frame[frame["commit_hash"] == good["commit_hash"]]) - sum(
        1 for _ in bad["summary"]["kernels"])
    page = json.dumps(profile_page.layout(SimpleNamespace(results_dir=copy), Query("")).to_plotly_json(), default=str)
    assert "No profile passes" not in page and "3 profile file(s) or entries left out" in page


def test_update_builds_both_figures_and_trace_links(passes):
    results, commits = passes
    at, history, details = profile_page.update(results, "cpu-box", CASES[0].key, commits[1])
    # compile and compile_max_autotune compile the same eager function: Dynamo's second compile of
    # that frame is region 0/1
    assert {bar.name for bar in at.data} == {"aten::gelu", "aten::linear", "aten::mul",
                                             "Torch-Compiled Region: 0/0", "Torch-Compiled Region: 0/1",
                                             "TorchDynamo Cache Lookup"}
    assert any("5 per call" in a.text for a in at.layout.annotations)
    assert {t.name for t in history.data} == {"eager", "compile", "compile_max_autotune"}
    assert len(history.data[0].x) == 2  # both commits
    text = json.dumps([d.to_plotly_json() for d in details], default=str)
    assert "Not profiled" in text and profile_page.TRACE_ROUTE in text


def test_trace_route_serves_only_files_inside_profiles(passes):
    results, commits = passes
    app = create_app(results_dir_with_asv(passes))
    client = app.server.test_client()
    rel = profiles.load_profiles(results).frame.dropna(subset=["trace"])["trace"].iloc[0]
    response = client.get(profile_page.TRACE_ROUTE + rel)
    body = response.data
    response.close()  # send_file's open file is closed by the WSGI server, here by us (else a ResourceWarning)
    assert response.status_code == 200 and body[:2] == b"\x1f\x8b"  # gzip
    assert client.get(profile_page.TRACE_ROUTE + "../../etc/passwd").status_code == 404
    assert client.get(profile_page.TRACE_ROUTE + "cpu-box/nothing.json.gz").status_code == 404
    app.server.config["FUSED_MLP_STORE"].close()


def results_dir_with_asv(passes):
    """The pages render only over asv results: put the passes beside a synthetic suite history."""
    results, _ = passes
    if not (results / "benchmarks.json").exists():
        write_dashboard_fixture(results.parent / "asv")
        for item in (results.parent / "asv").iterdir():
            shutil.move(str(item), results / item.name)
    return results


def test_layout_without_passes_says_how_to_make_them(tmp_path):
    fx = write_dashboard_fixture(tmp_path / "results")
    app = create_app(fx.results_dir)
    data = app.server.config["FUSED_MLP_STORE"].get()
    text = json.dumps(profile_page.layout(data, profile_page.Query("")).to_plotly_json(), default=str)
    assert "python -m benchmarks.profile" in text
    app.server.config["FUSED_MLP_STORE"].close()


@pytest.mark.slow
@pytest.mark.skipif(MISSING is not None and not IN_CI, reason=str(MISSING))
def test_profile_page_in_a_browser(passes, tmp_path):
    results, commits = passes
    with browser_on(results_dir_with_asv(passes), tmp_path) as duo:
        duo.driver.get(duo.server_url + f"/profile?machine=cpu-box&case={quote_plus(CASES[1].key)}&commit={commits[0]}")
        duo.wait_for_text_to_equal("#page h1", "Profile", timeout=20)
        title = poll(lambda: figure_value(duo, "profile-figure", "g.layout.title.text"), what="profile figure")
        assert CASES[1].key in title and commits[0][:8] in title
        frame = profiles.load_profiles(results).frame
        profiled = set(frame[frame["case"] == CASES[1].key]["impl"])  # eager and the compiled ones
        assert {"eager", "compile"} <= profiled
        # two traces per implementation: launches and time
        assert poll(lambda: figure_value(duo, "profile-history", "g.data.length"), what="history") == 2 * len(profiled)
        links = poll(lambda: duo.driver.find_elements("css selector", "#profile-details a"), what="trace links")
        assert {a.text for a in links} == profiled
        assert severe_logs(duo) == []
