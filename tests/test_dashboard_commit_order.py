"""One commit order for the dashboard, its detector worker and the gate: the repository's (asv's
rule) where asv.conf.json names a readable one, else the stored dates; each says which."""

import io
import json
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from asv_results.commit_order import ORDER, commit_order, with_order
from asv_results.loading import load_results
from dashboard.store.detection import detect_in_worker
from dashboard.store.load_data import build_data
from regressions.cli import main as gate_main
from tests.generic_fixtures import ENV, MACHINE, STEP_AT, write_generic_history

N_COMMITS = 30
# Stored dates out of the repository's order around the planted step (a rebase, a runner's
# clock): by date the newest commit is another one, and the step's commit moves.
DATE_OF = list(range(N_COMMITS))
DATE_OF[15:N_COMMITS] = [29, 16, 27, 18, 25, 15, 23, 21, 19, 28, 17, 26, 22, 24, 20]


def _git(repo, *args, date=None):
    env = {**os.environ, **({"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date} if date else {})}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A git repository with 30 commits, asv.conf.json naming it, and a generic history of those
    commits whose stored dates disagree with the repository's order."""
    repo = tmp_path_factory.mktemp("ordered") / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    hashes = []
    for i in range(N_COMMITS):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}", date=f"2026-01-01T{i // 2:02d}:{(i % 2) * 30:02d}:00")
        hashes.append(_git(repo, "rev-parse", "HEAD"))
    gx = write_generic_history(repo / "results", n_commits=N_COMMITS)
    for i, (old, new) in enumerate(zip(gx.history.commits, hashes)):
        path = next((repo / "results" / MACHINE).glob(f"{old[:8]}-*.json"))
        doc = json.loads(path.read_text())
        doc["commit_hash"], doc["date"] = new, 1_790_000_000_000 + DATE_OF[i] * 3_600_000
        path.unlink()
        (path.parent / f"{new[:8]}-{ENV}.json").write_text(json.dumps(doc))
    (repo / "asv.conf.json").write_text(json.dumps({"version": 1, "project": "p", "repo": ".",
                                                   "results_dir": "results"}))
    return repo, hashes, gx


def _gate(*args) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = gate_main([*args, "--format", "json"])
    return code, json.loads(out.getvalue())


def test_the_gate_judges_the_commit_the_dashboard_shows_as_newest(project):
    repo, hashes, _ = project
    data = build_data(repo / "results")
    assert data.run(MACHINE, ENV).commits["commit_hash"].tolist() == hashes  # the repository's order
    code, report = _gate("--results", str(repo / "results"))
    (judged,) = report["gate"]["judged"]
    assert judged["commits"] == [hashes[-1]] and judged["base_commit"] == hashes[-2]
    assert "order of the repository" in report["summary"]
    by_date = [hashes[i] for i in np.argsort(DATE_OF, kind="stable")]
    assert by_date[-1] != hashes[-1]  # the dates alone would judge another commit
    _, dated = _gate("--results", str(repo / "results"), "--asv-conf", str(repo / "missing.json"))
    assert dated["gate"]["judged"][0]["commits"] == [by_date[-1]] and "dates asv stored" in dated["summary"]


def test_a_base_range_follows_the_repository_order(project):
    repo, hashes, _ = project
    code, report = _gate("--results", str(repo / "results"), "--base", f"{hashes[20][:10]}..{hashes[24][:10]}")
    (judged,) = report["gate"]["judged"]
    assert judged["commits"] == hashes[21:25] and judged["base_commit"] == hashes[20]


def test_the_detector_worker_and_the_gate_find_the_step_at_the_same_commit(project):
    repo, hashes, gx = project
    data = build_data(repo / "results")
    worker = detect_in_worker(str(repo / "results"), None, data.project.commit_rank)[0]
    stepped = [f for f in worker if (f.benchmark, f.params) == gx.stepped]
    assert [f.commit_hash for f in stepped] == [hashes[STEP_AT]]
    _, report = _gate("--results", str(repo / "results"))
    at = {c["commit_hash"] for c in report["commits"] for x in c["changes"]
          if (x["benchmark"], x["params"]) == gx.stepped}
    assert at == {hashes[STEP_AT]}


def test_with_order_numbers_each_runs_commits_as_the_dashboard_does(project):
    repo, hashes, _ = project
    data = build_data(repo / "results")
    frame = with_order(load_results(repo / "results").frame, data.project.commit_rank)
    positions = frame.groupby("commit_hash", observed=True)[ORDER].first()
    assert [positions[h] for h in hashes] == list(range(N_COMMITS))
    assert commit_order({"a": 2, "b": 1}, None) == ["b", "a"] and commit_order({"a": 2, "b": 1}, {"a": 0, "b": 1}) == [
        "a", "b"]


def test_every_page_says_which_order_it_uses(project):
    from dashboard.app import render_page
    from dashboard.store.model import ResultsStore
    from tests.every_page import every_page
    from tests.test_dashboard import _walk, texts

    repo, _, _ = project
    for conf, said in ((None, "order of the repository"), (repo / "missing.json", "dates asv stored")):
        store = ResultsStore(repo / "results", conf, detect_in_background=False)
        pages = every_page()
        for page in pages:
            shown = render_page(store, pages, page.path, "")
            note = next(c for c in _walk(shown) if getattr(c, "id", None) == "commit-order-note")
            assert said in texts(note), page.path
        store.close()


def test_a_duplicate_result_file_is_reported_and_resolved_by_one_rule_in_dashboard_and_gate(tmp_path):
    """A copy of the newest commit's file, dated earlier, once merged into
    that commit (two rows per series) and moved it back in the order; now it is left out, said in
    the load report, by the same rule in the dashboard and the gate."""
    gx = write_generic_history(tmp_path / "results", n_commits=8)
    newest = gx.history.commits[-1]
    original = next((tmp_path / "results" / MACHINE).glob(f"{newest[:8]}-*.json"))
    doc = json.loads(original.read_text())
    doc["date"] = gx.history.dates_ms[2] - 1  # dated before most of the history
    copy = original.parent / "0-copy-of-newest.json"  # sorts before asv's own name
    copy.write_text(json.dumps(doc))
    data = build_data(tmp_path / "results")
    run = data.run(MACHINE, ENV)
    assert run.commits["commit_hash"].iloc[-1] == newest  # the copy's date moves nothing
    said = [p for p in data.report.problems if str(copy) in p]
    assert len(said) == 1 and str(original) in said[0] and newest[:8] in said[0]
    clean = load_results(tmp_path / "results").frame
    assert (clean["commit_hash"] == newest).sum() == len(run.at_commit(newest))  # one file's rows, not two
    assert not clean.duplicated(["machine", "env_name", "commit_hash", "benchmark", "params_key"]).any()
    code, report = _gate("--results", str(tmp_path / "results"))
    assert report["gate"]["judged"][0]["commits"] == [newest]
    assert any(str(copy) in p for p in report["load_report"]["problems"])
    assert code == 0  # judged (and nothing regressed): a left-out copy is not a file the gate could not read


def test_the_regressions_list_shows_each_commits_subject(project):
    from dashboard.store.detection import FindingsState
    from dashboard.pages import regressions as inbox_page
    from tests.test_dashboard import texts

    repo, hashes, gx = project
    data = build_data(repo / "results")
    found = detect_in_worker(str(repo / "results"), None, data.project.commit_rank)[0]
    children, _ = inbox_page.inbox(data, FindingsState("done", 0.0, found, 1.0), None, "regression", [])
    group = next(g for g in _walk_groups(children) if hashes[STEP_AT][:10] in texts(g.children[0]))
    assert _subjects(group) == [f"c{STEP_AT}"]  # the commit's subject, from git log
    no_repo = build_data(repo / "results", asv_conf=repo / "missing.json")
    bare, _ = inbox_page.inbox(no_repo, FindingsState("done", 0.0, found, 1.0), None, "regression", [])
    assert all(_subjects(g) == [] for g in _walk_groups(bare))  # no repository: hashes only


def _subjects(group) -> list[str]:
    from tests.test_dashboard import _walk

    return [c.children for c in _walk(group) if getattr(c, "className", "") == "commit-subject"]


def _walk_groups(children):
    from tests.test_dashboard import _walk

    return [g for g in _walk(children) if getattr(g, "className", "") == "card inbox-group"]


def test_a_trend_hover_shows_the_commits_subject(project):
    import plotly.graph_objects as go

    from dashboard.pages import _generic_trends

    repo, hashes, gx = project
    data = build_data(repo / "results")
    figure = go.Figure(_generic_trends.update(data, MACHINE, ENV, gx.stepped[0], {}, "commit", [], None)[0])
    line = next(t for t in figure.data if t.mode == "lines+markers")
    assert "customdata[4]" in line.hovertemplate
    assert [c[4] for c in line.customdata if c is not None][:3] == ["<br>c0", "<br>c1", "<br>c2"]
    bare = build_data(repo / "results", asv_conf=repo / "missing.json")  # no repository: no subjects
    plain = go.Figure(_generic_trends.update(bare, MACHINE, ENV, gx.stepped[0], {}, "commit", [], None)[0])
    assert {c[4] for c in next(t for t in plain.data if t.mode == "lines+markers").customdata if c is not None} == {""}
