"""The gate's parts: failures as findings, accepted.json, what is judged, how numbers print."""

import json

import pandas as pd
import pytest

from asv_results.loading import load_results
from regressions import find_status_changes, load_accepted
from regressions.acceptance import Acceptance, AcceptedFileError, find_acceptance, plausible_commits
from regressions.formatting import format_change, format_p, format_value
from regressions.gate import judged_runs
from tests.asv_fixtures import SeriesSpec, write_history


def test_status_changes_name_every_start_and_end_of_failing(tmp_path):
    history = write_history(tmp_path, [SeriesSpec("b.S.track_latency", (1,), ("m",)),
                                       SeriesSpec("b.S.track_latency", (2,), ("m",), fail_prob=1.0)], 10, seed=1)
    machine_dir = tmp_path / history.machine

    def set_result(i, value):
        path = machine_dir / f"{history.commits[i][:8]}-{history.env_name}.json"
        doc = json.loads(path.read_text())
        doc["results"]["b.S.track_latency"][0][0] = value
        path.write_text(json.dumps(doc))

    for i in (4, 5, 6):
        set_result(i, None)  # m=1 fails at commits 4-6, is measured again from 7
    changes = find_status_changes(load_results(tmp_path).frame)
    by = {(c.params, c.commit_hash): c for c in changes}
    started = by[("m=1", history.commits[4])]
    assert (started.before, started.after, started.direction) == ("ok", "failed", "regression")
    assert started.previous_commit == history.commits[3] and started.commits_in_state == 3
    assert not started.present_at_newest and started.status() == "failed for 3 commits, not now"
    fixed = by[("m=1", history.commits[7])]
    assert (fixed.before, fixed.after, fixed.direction, fixed.present_at_newest) == ("failed", "ok", "improvement", True)
    always = by[("m=2", history.commits[0])]  # failing from its first result
    assert always.before == "" and always.summary() == "started failing (no earlier result)"
    assert always.status() == "failing for 10 commits" and len(changes) == 3


def test_accepted_entries_match_benchmark_params_machine_and_any_plausible_commit(tmp_path):
    path = tmp_path / "accepted.json"
    path.write_text(json.dumps({"accepted": [
        {"benchmark": "b.track_latency", "params": "m=1", "commit": "ABCDEF12", "who": "a", "why": "w"},
        {"benchmark": "b.track_tflops", "machine": "gpu", "commit": "1234567", "who": "b", "why": "v"}]}))
    exact, anywhere = load_accepted(path)
    assert exact == Acceptance("b.track_latency", "abcdef12", "a", "w", params="m=1")
    assert find_acceptance([exact, anywhere], "b.track_latency", "m=1", "x", ["abcdef1234"]) == exact
    assert find_acceptance([exact], "b.track_latency", "m=2", "x", ["abcdef1234"]) is None
    assert find_acceptance([anywhere], "b.track_tflops", "m=7", "gpu", ["ffff", "12345678"]) == anywhere
    assert find_acceptance([anywhere], "b.track_tflops", "m=7", "cpu", ["12345678"]) is None
    assert load_accepted(tmp_path / "missing.json") == []
    path.write_text(json.dumps({"version": 2, "accepted": []}))
    with pytest.raises(AcceptedFileError, match="unsupported version 2"):
        load_accepted(path)


@pytest.mark.parametrize("key, placeholder", [("who", "YOUR NAME"), ("why", "WHY THIS CHANGE IS ACCEPTED"),
                                              ("why", "<why this is acceptable>"), ("who", "<Your Name>")])
def test_legacy_placeholder_spellings_accept_nothing(tmp_path, key, placeholder):
    # Entries copied from the old Regressions page or the old gate still hold their spellings.
    path = tmp_path / "accepted.json"
    entry = {"benchmark": "b.track_latency", "commit": "abcdef12", "who": "a", "why": "w", key: placeholder}
    path.write_text(json.dumps({"accepted": [entry]}))
    with pytest.raises(AcceptedFileError, match=f"entry 1: '{key}' is still the placeholder"):
        load_accepted(path)


def test_plausible_commits_span_the_reported_interval():
    class Change:
        commit_hash, earliest_commit, latest_commit = "c", "b", "d"

    assert plausible_commits(Change(), ["a", "b", "c", "d", "e"]) == ["c", "b", "c", "d"]
    assert plausible_commits(Change(), []) == ["c"]


def test_judged_runs_are_the_newest_commit_or_every_commit_after_the_base(tmp_path):
    history = write_history(tmp_path, [SeriesSpec("b.S.track_latency", (1,), ("m",))], 8, seed=1)
    frame = load_results(tmp_path).frame
    (newest,) = judged_runs(frame)
    assert newest.commits == (history.commits[-1],) and newest.base_commit == history.commits[-2]
    (after,) = judged_runs(frame, history.commits[4])
    assert after.commits == tuple(history.commits[5:]) and after.base_commit == history.commits[4]
    assert judged_runs(frame, history.commits[-1])[0].commits == ()


@pytest.mark.parametrize("value, unit, text", [
    (1.234e-4, "seconds", "123 µs"), (2.5, "seconds", "2.5 s"), (3.2e9, "bytes", "3.2 GB"), (512, "bytes", "512 B"),
    (123.4, "TFLOP/s", "123 TFLOP/s"), (5.0, "unit", "5"), (2.0, "kernels", "2 kernels"), (2.5, None, "2.5"),
    (float("nan"), "seconds", "–"), (None, "seconds", "–"),
])
def test_values_print_in_their_unit_never_the_word_unit(value, unit, text):
    assert format_value(value, unit) == text


def test_the_gate_prints_numbers_with_the_pages_one_definition():
    """Once the gate printed asv's "123μs" and the pages "123 µs": one format_value, one format_change."""
    from asv_results import units

    assert format_value is units.format_value and format_change is units.format_change
    assert [format_change(r) for r in (0.2581, -0.031, float("nan"), None)] == ["+25.8%", "-3.1%", "–", "–"]


@pytest.mark.parametrize("p, text", [
    (0.0, "p<1e-6"), (1.2e-206, "p<1e-6"), (3e-7, "p<1e-6"), (3.2e-5, "p=3.2e-5"), (0.0012, "p=0.0012"),
    (0.21, "p=0.21"), (float("nan"), "p=n/a"),
])
def test_p_values_have_sensible_precision(p, text):
    assert format_p(p) == text


def test_status_changes_of_an_empty_frame():
    assert find_status_changes(pd.DataFrame()) == []


@pytest.mark.parametrize("history, failed", [(2, False), (7, True)])
def test_a_pull_request_judged_on_base_and_head_alone_says_it_cannot_judge_a_level_change(tmp_path, capsys,
                                                                                        history, failed):
    """pr-benchmarks.yml's shape: the head measured after the base. With the base alone before it
    a 2x slowdown cannot be judged (the detector needs 5 commits before a change), and the gate's
    summary says so instead of passing in silence; with the base's history measured too, it fails."""
    from regressions.cli import main as gate

    spec = SeriesSpec("bench_ops.LinearAct.track_latency", ("linear_act M=16 K=64 N=64 bf16 gelu_tanh bias", "fused"),
                      ("case", "impl"), run_noise=0.01, sample_noise=0.01, steps=((history - 1, 1.0),))
    made = write_history(tmp_path / "results", [spec], history, seed=3, n_samples=15)
    code = gate(["--results", str(made.results_dir), "--format", "json",
                 "--base", f"{made.commits[-2]}..{made.commits[-1]}"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert code == (1 if failed else 0)
    assert ("1 of 1 series have fewer than 6 commits: a level change cannot be judged there yet" in summary) != failed
