"""One verdict everywhere: the gate's judgement (regressions.judgement) is what the gate prints
and what the Regressions page renders, on the same folders; nothing on the page judges again."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from regressions import gate_records
from dashboard.store.detection import detect_in_worker, FindingsState
from regressions.gate_view import GateView, class_of
from dashboard.store.load_data import build_data
from dashboard.pages import overview
from dashboard.pages import regressions as page
from regressions.cli import main as gate
from dashboard.synthetic.histories import write_function_history
from dashboard.synthetic.runner_states import write_runner_states
from tests.asv_fixtures import SeriesSpec, write_history
from tests.test_dashboard import _walk, texts

REPO_RESULTS = Path(__file__).resolve().parents[1] / "results"

BENCH = "bench_ops.LinearAct.track_latency"
CASE = "linear_act M=16 K=64 N=64 bf16 gelu_tanh bias"
N = 30
NEWEST = N - 1


def _suite(tmp_path, fused=None, controls=None, failing=()):
    """fused, eager and compile of one case; ``fused`` / ``controls``: steps; ``failing``: impls
    that fail from the newest commit on."""
    names = ("case", "impl")
    series = [SeriesSpec(BENCH, (CASE, impl), names, run_noise=0.01, sample_noise=0.01,
                         steps=(fused if impl == "fused" else controls) or (),
                         status_steps=((NEWEST, "failed"),) if impl in failing else ())
              for impl in ("fused", "eager", "compile")]
    return write_history(tmp_path / "results", series, N, seed=5, n_samples=15)


DATA_SETS = {
    "library step at the newest commit": lambda p: _suite(p, fused=((NEWEST, 0.4),)),
    "runner-wide step": lambda p: write_runner_states(h := _suite(p, fused=((NEWEST, 0.3),), controls=((NEWEST, 0.3),)),
                                                 NEWEST) or h,
    "compile failing at the newest commit": lambda p: _suite(p, failing=("compile",)),
    "fused failing at the newest commit": lambda p: _suite(p, failing=("fused",)),
    "the 76-commit generic history": lambda p: write_function_history(p / "results"),
    "the repository's results": lambda p: SimpleNamespace(results_dir=REPO_RESULTS, machine=sorted(
        d.name for d in REPO_RESULTS.iterdir() if (d / "machine.json").is_file())[0]),
}


def _gate_json(results, capsys, *extra) -> tuple[int, dict]:
    code = gate(["--results", str(results), "--format", "json", *extra])
    return code, json.loads(capsys.readouterr().out)


def _page(results):
    data = build_data(results)
    findings, verdict = detect_in_worker(str(results), None, data.project.commit_rank)
    state = FindingsState("done", 0.0, findings, 1.0, verdict=verdict)
    return data, state


@pytest.mark.parametrize("name", DATA_SETS)
def test_the_regressions_page_shows_the_gates_verdict_and_nothing_else(name, tmp_path, capsys):
    history = DATA_SETS[name](tmp_path)
    code, doc = _gate_json(history.results_dir, capsys)
    data, state = _page(history.results_dir)
    assert state.verdict["document"]["gate"] == doc["gate"]  # the same object, not judged again
    view = GateView(state.verdict)
    assert view.failed() == (code == 1) == doc["gate"]["failed"]
    children, _ = page.inbox(data, state, None, "regression", [])
    text = texts(children)
    verdict = texts(children[0])  # the page opens on the gate's verdict
    assert f"Gate on the newest commit: {doc['gate']['verdict']}" in verdict
    assert ("fails" if code == 1 else "passes") in verdict
    for item in doc["gate"]["failing"]:  # every failing finding in the panel, with the gate's reason
        assert f"gate: {item['note']}" in verdict and item["change"]["commit_hash"][:10] in text
    findings_shown = [c for c in _walk(children) if getattr(c, "className", None) in ("finding", "finding accepted")]
    for item in doc["gate"]["items"]:
        judged = class_of(item)
        if judged is not None:  # the class and evidence, word for word, on the finding's own line
            assert any(judged[1] in texts(li) and any(getattr(b, "className", None) == f"badge class-{judged[0]}"
                                                      for b in _walk(li.children)) for li in findings_shown), judged
    ids = [json.dumps(c.id, sort_keys=True) for c in _walk(children) if getattr(c, "id", None) is not None]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})  # Dash refuses a page with twice one id
    if name == "the 76-commit generic history":
        return  # one machine: its verdict is the folder's (and a third judgement of it costs 4 s)
    machine_code, machine_doc = _gate_json(history.results_dir, capsys, "--machine", history.machine)
    mine = texts(page.inbox(data, state, history.machine, "regression", [])[0][0])
    assert f"Gate on the newest commit: {machine_doc['gate']['verdict']}" in mine and machine_code == code


def test_a_fused_series_that_starts_failing_renders_as_failing_in_every_view(tmp_path, capsys):
    history = DATA_SETS["fused failing at the newest commit"](tmp_path)
    data, state = _page(history.results_dir)
    for direction in ("regression", "all"):
        for only in ([], ["present"], ["open"]):
            text = texts(page.inbox(data, state, None, direction, only)[0])
            assert "started failing" in text and "AttributeError" not in text


def test_a_failing_control_is_failing_never_environment(tmp_path, capsys):
    history = DATA_SETS["compile failing at the newest commit"](tmp_path)
    code, doc = _gate_json(history.results_dir, capsys)
    assert code == 1  # the gate's rule: every ok -> failed fails, whatever the implementation
    data, state = _page(history.results_dir)
    children, _ = page.inbox(data, state, None, "regression", [])
    html = str(children)
    assert "class-failing" in html and "compile started failing" in texts(children)
    assert not any(f"class-{c}" in html for c in ("library", "environment", "noise"))


def test_the_runner_state_evidence_is_the_gates_word_for_word(tmp_path, capsys):
    history = DATA_SETS["runner-wide step"](tmp_path)
    code, doc = _gate_json(history.results_dir, capsys)
    (item,) = [i for i in doc["gate"]["items"] if "impl='fused'" in i["change"]["params"]]
    evidence = item["classification"]["evidence"]
    assert item["classification"]["class"] == "environment" and code == 0
    assert "driver 570.86 -> 575.51" in evidence and "power_limit_w 700.0 -> 600.0" in evidence
    data, state = _page(history.results_dir)
    assert evidence in texts(page.inbox(data, state, None, "regression", [])[0])


def test_trends_marks_a_change_the_gate_fails_on_in_the_gates_words():
    import numpy as np
    import pandas as pd
    import plotly.graph_objects as go

    from dashboard.figures import build_trend_figure

    series = pd.DataFrame({"impl": "fused", "position": range(6), "commit_hash": [f"c{i}" for i in range(6)],
                           "date": pd.date_range("2026-01-01", periods=6, tz="UTC"),
                           "y": [1.0, 1.0, 1.0, 1.0, 1.0, 1.4], "y_lo": np.nan, "y_hi": np.nan})
    change = {"impl": "fused", "commit_hash": "c5", "direction": "regression", "relative_change": 0.4,
              "confirmed": False, "plausible_commits": 1, "earliest_commit": "c5", "latest_commit": "c5"}

    def hover(**flags):
        fig = go.Figure(build_trend_figure(series, "latency", pd.DataFrame([{**change, **flags}])))
        return next(t for t in fig.data if t.name == "regressions").text[0]

    assert "(clear, not yet confirmed)" in hover(clear=True) and "suspected" not in hover(clear=True)
    assert "(suspected)" in hover(clear=False)


def _accept(results, **entry):
    (results / "accepted.json").write_text(json.dumps({"version": 1, "accepted": [entry]}))


def test_an_offered_entry_committed_unchanged_accepts_nothing(tmp_path, capsys):
    history = DATA_SETS["library step at the newest commit"](tmp_path)
    code, doc = _gate_json(history.results_dir, capsys)
    (item,) = doc["gate"]["failing"]
    data, state = _page(history.results_dir)
    buttons = [c for c in _walk(page.inbox(data, state, None, "regression", [])[0])
               if isinstance(getattr(c, "id", None), dict) and c.id.get("type") == page.ACCEPT]
    offered = [json.loads(texts(c)) for c in _walk([page.accept_box(state.findings, b.id["index"]) for b in buttons])
               if getattr(c, "className", "") == "accept-entry"]
    from regressions.report import acceptance_entry
    from regressions.findings import Finding

    finding = next(f for f in state.findings if f.commit_hash == item["change"]["commit_hash"])
    assert isinstance(finding, Finding) and offered[0] == acceptance_entry(finding)  # one spelling
    _accept(history.results_dir, **offered[0])
    assert gate(["--results", str(history.results_dir)]) == 2
    err = capsys.readouterr().err
    assert "entry 1: 'who' is still the placeholder '<your name>'" in err
    data, state = _page(history.results_dir)
    text = texts(page.inbox(data, state, None, "regression", [])[0])
    assert "nothing is shown as accepted" in text and "still the placeholder" in text and "accepted by" not in text
    _accept(history.results_dir, **{**offered[0], "who": "alice"})
    assert gate(["--results", str(history.results_dir)]) == 2
    assert "'why' is still the placeholder" in capsys.readouterr().err


def test_accepted_json_version_true_and_a_missing_accepted_path_are_refused(tmp_path, capsys):
    history = DATA_SETS["library step at the newest commit"](tmp_path)
    (history.results_dir / "accepted.json").write_text(json.dumps({"version": True, "accepted": []}))
    assert gate(["--results", str(history.results_dir)]) == 2
    assert "unsupported version True" in capsys.readouterr().err
    missing = tmp_path / "nosuch.json"
    assert gate(["--results", str(history.results_dir), "--accepted", str(missing)]) == 2
    assert f"--accepted {missing}: no such file" in capsys.readouterr().err


# --- the Overview: the gate's marks and classes, and a failed fused case stays -----------------

def _suite_history(tmp_path, steps=None, fail_newest=()):
    import dataclasses

    from tests.suite_fixtures import IDENTITY, all_cases, case_series, ceiling_series

    cases = all_cases("quick")[:3]
    specs = case_series(cases, steps=steps)
    specs = [dataclasses.replace(s, status_steps=((NEWEST, "failed"),))
             if s.benchmark.endswith("track_latency") and (s.params[0], s.params[1]) in fail_newest else s
             for s in specs]
    history = write_history(tmp_path / "results", specs + ceiling_series(), N, seed=9, machine="h200-runner",
                            env_name="virtualenv-py3.12", machine_params=dict(IDENTITY), n_samples=12)
    return history, cases


def _overview(history, verdict, base=None):

    data = build_data(history.results_dir)
    newest = history.commits[-1]
    return overview.update(data, history.machine, history.env_name, newest, base, None, None, None, None, None,
                           verdict=verdict)


def _cells(panels) -> list[str]:
    return [t for p in _walk(panels) if getattr(p, "figure", None) for row in p.figure["data"][0]["text"] for t in row]


class _Store:  # what gate_records.record_for asks of a ResultsStore
    asv_conf = None

    def __init__(self, state):
        self.state = state

    def findings(self):
        return self.state


def test_the_overview_marks_a_runner_wide_step_as_the_gate_classifies_it(tmp_path, capsys):
    from regressions.gate_records import record_for

    from tests.suite_fixtures import all_cases

    everything = {(c.key, i): ((NEWEST, 0.3),) for c in all_cases("quick")[:3]
                  for i in ("fused", "eager", "compile", "cublaslt")}
    history, cases = _suite_history(tmp_path, steps=everything)
    write_runner_states(history, NEWEST)
    code, doc = _gate_json(history.results_dir, capsys)
    data, state = _page(history.results_dir)
    verdict = record_for(_Store(state), data, history.machine, history.env_name, history.commits[-1], None)
    assert verdict is state.verdict and code == 0
    _, panels, card, _ = _overview(history, verdict)
    assert not any(t.startswith("⚠") for t in _cells(panels))  # not blamed on the library
    text = texts(card)
    assert f"The gate: {doc['gate']['verdict']}" in text
    fused = [i for i in doc["gate"]["items"] if "impl='fused'" in i["change"]["params"]
             and i["change"]["benchmark"].endswith("track_latency")]
    assert fused and all(i["classification"]["class"] == "environment" for i in fused)
    for i in fused:  # the gate's evidence, word for word, driver and power limit included
        assert i["classification"]["evidence"] in text and "driver 570.86 -> 575.51" in i["classification"]["evidence"]
    # against a chosen commit: the gate's verdict with --base that commit
    chosen = history.commits[NEWEST - 3]
    record = record_for(_Store(state), data, history.machine, history.env_name, history.commits[-1], chosen)
    _, doc_base = _gate_json(history.results_dir, capsys, "--machine", history.machine, "--base",
                             f"{chosen}..{history.commits[-1]}")
    assert record["document"]["gate"] == doc_base["gate"]


def test_the_overview_keeps_a_failed_fused_case_as_a_failed_cell_and_counts_it(tmp_path, capsys):
    history, cases = _suite_history(tmp_path)
    clean = _overview(history, None)
    history2, _ = _suite_history(tmp_path / "b", fail_newest={(cases[0].key, "fused")})
    data, state = _page(history2.results_dir)
    _, panels, card, _ = _overview(history2, state.verdict)
    assert len(_cells(panels)) == len(_cells(clean[1]))  # the case did not vanish
    assert sum(t == "⚠ fused failed" for t in _cells(panels)) == 1
    text = texts(card)
    assert "1  fused case(s) failed at this commit" in text and cases[0].key in text
    assert "fused started failing" in text  # the gate fails it, and the card says so


def test_the_first_response_is_bounded_and_every_finding_stays_reachable(tmp_path):
    """Point 2's bound on the 76-commit, 280-series generic history (about 220 findings): the
    first response is at most 100 KiB and 1,500 elements; paging reaches every finding; the
    gate's failing findings are on the first page."""
    import plotly

    history = write_function_history(tmp_path / "results")
    data, state = _page(history.results_dir)
    assert 200 <= len(state.findings) <= 240
    first, _ = page.inbox(data, state, None, "all", [])
    assert len(json.dumps(first, cls=plotly.utils.PlotlyJSONEncoder)) <= 100 * 1024
    assert _elements(first) <= 1500
    view = GateView(state.verdict)
    assert view.failing() and all(f"gate: {i['note']}" in texts(first[0]) for i in view.failing())
    seen, number = set(), 1
    while True:
        children, _ = page.inbox(data, state, None, "all", [], page=number)
        links = {c.href for c in _walk(children) if getattr(c, "href", "").startswith("/trends")}
        if number > 1 and links <= seen:
            break
        seen |= links
        number += 1
    wanted = {(f.benchmark, f.commit_hash) for f in state.findings}
    reached = {(q.split("benchmark=")[1].split("&")[0], q.split("commit=")[1].split("&")[0]) for q in seen}
    assert wanted <= reached


def _elements(component) -> int:
    if isinstance(component, (list, tuple)):
        return sum(_elements(c) for c in component)
    if hasattr(component, "to_plotly_json"):
        return 1 + _elements(getattr(component, "children", None))
    return 0


# --- the demo ---------------------------------------------------------------------------------

def test_the_demo_serves_a_generated_history_marked_synthetic_and_never_writes_results(tmp_path):
    import os
    import re
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from tests.ports import free_port

    before = sorted(p.relative_to(REPO_RESULTS) for p in REPO_RESULTS.rglob("*"))
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "dashboard", "--demo", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "HOME": str(tmp_path)})
    try:
        layout = None
        end = time.monotonic() + 30
        while time.monotonic() < end and layout is None:
            try:
                layout = urllib.request.urlopen(f"http://127.0.0.1:{port}/_dash-layout", timeout=2).read().decode()
            except OSError:
                time.sleep(0.3)
        assert layout is not None and "demo data, synthetic" in layout  # in the header of every page
    finally:
        server.send_signal(signal.SIGTERM)
        err = server.communicate(timeout=30)[1]
    folder = Path(re.search(r"written to (\S+)", err).group(1))
    assert "fused-mlp-demo-" in str(folder) and not folder.exists()  # a temporary folder, removed at exit
    assert sorted(p.relative_to(REPO_RESULTS) for p in REPO_RESULTS.rglob("*")) == before


def test_the_demo_history_has_a_library_step_a_runner_wide_step_a_failing_baseline_and_two_machines(tmp_path,
                                                                                                    capsys):
    from dashboard.synthetic.demo import MAIN, SECOND, write_demo_history

    results = write_demo_history(tmp_path / "results")
    assert {d.name for d in results.iterdir() if d.is_dir()} == {MAIN, SECOND}
    from asv_results.companion_files import companion_file
    from asv_results.loading import load_results

    states = results / MAIN / "runner-state"  # named as benchmarks.run names them (issue 32), not the old way
    written = sorted(p.name for p in states.iterdir())
    assert written and not [n for n in written if n.endswith(".json")]
    assert written == sorted(companion_file(p).name for p in (results / MAIN).glob("*.json") if p.name != "machine.json")

    frame = load_results(results, machine=MAIN).frame
    first = str(frame.sort_values("date")["commit_hash"].iloc[0])
    code, doc = _gate_json(results, capsys, "--machine", MAIN, "--base", first)  # every commit after the first
    classes = {i["classification"]["class"] for i in doc["gate"]["items"] if i.get("classification")}
    failing = [i for i in doc["gate"]["failing"] if i["change"]["kind"] == "status"]
    assert {"library", "environment"} <= classes and failing and "impl='compile'" in failing[0]["change"]["params"]
    assert any("driver 570.86 -> 575.51" in i["classification"]["evidence"] for i in doc["gate"]["items"]
               if i.get("classification", {}).get("class") == "environment")


def test_hierarchy_carried_in_a_parameter_nests_like_hierarchy_in_the_name():
    import dataclasses

    import pandas as pd

    from regressions.findings import Finding
    from regressions.report import nested

    base = Finding(benchmark="bench_model.Profile.track_time", params="function='step'", machine="m", env_name="e",
                   unit="seconds", commit_hash="c" * 40, previous_commit="b" * 40,
                   commit_date=pd.Timestamp("2026-01-01", tz="UTC"), before=1.0, after=1.3, relative_change=0.3,
                   direction="regression", better="lower", kind="step", confirmed=True, p_value=1e-6, score=9.0,
                   present_at_newest=True, series_last_commit="c" * 40)
    child = dataclasses.replace(base, params="function='step.forward'", relative_change=0.35)
    grandchild = dataclasses.replace(base, params="function='step.forward.solve'", relative_change=0.4)
    other = dataclasses.replace(base, params="function='stepper'", relative_change=0.5)
    depth = {c.params: d for c, d in nested([grandchild, other, child, base])}
    assert depth == {"function='step'": 0, "function='step.forward'": 1, "function='step.forward.solve'": 2,
                     "function='stepper'": 0}


def test_a_case_that_fails_the_gate_in_one_mode_is_marked_in_that_mode_s_panel_only():
    import pandas as pd

    row = dict(case="gated_mlp M=8 K=16 N=32 bf16 silu", op="gated_mlp", dtype="bf16", shape="M=8 K=16 N=32",
               activation="silu", speedup=1.2, fused=1e-5, best_baseline=1.2e-5, baseline_impl="eager",
               verdict="faster")
    table = pd.DataFrame([{**row, "mode": mode} for mode in ("forward", "backward")])
    failing = {(row["case"], "forward"): "fails the gate (forward): library: ..."}
    graphs = {g.id["mode"]: g.figure for g in _walk(overview.panels(table, failing, "light"))
              if getattr(g, "figure", None)}
    marked = {mode: [t for r in f["data"][0]["text"] for t in r if t.startswith("⚠")] for mode, f in graphs.items()}
    assert len(marked["forward"]) == 1 and marked["backward"] == []
    assert "1 fail the gate" in graphs["forward"]["layout"]["title"]["text"]
    assert "fail the gate" not in graphs["backward"]["layout"]["title"]["text"]


def test_a_bug_in_the_gate_is_said_on_the_pages_not_a_blank_page(tmp_path, monkeypatch, caplog):
    from regressions import judgement

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(judgement, "judge_folder", broken)
    record = judgement.verdict_record(tmp_path)
    assert record == {"error": "the gate failed (ZeroDivisionError: division by zero); the server's log has the "
                               "traceback"}
    assert "ZeroDivisionError" in caplog.text  # the traceback, logged
    panel = texts(page.verdict_panel(SimpleNamespace(results_dir=tmp_path), GateView(record), [], None, "light"))
    assert "cannot judge" in panel and "ZeroDivisionError" in panel


def test_an_accepted_regression_gone_by_the_newest_commit_shows_as_accepted_not_open(tmp_path, capsys):
    """The gate judges only what is present at the newest commit; an older regression that
    accepted.json accepts is still the gate's to call accepted (its report lists it), and the page
    shows it so: not open, not counted as open."""
    history = _suite(tmp_path, fused=((12, 0.4), (22, -0.3)))  # up at 12, down again at 22
    code, doc = _gate_json(history.results_dir, capsys)
    stepped = next(f for c in doc["commits"] for f in c["changes"]
                   if f["commit_hash"] == history.commits[12] and "impl='fused'" in f["params"])
    entry = {"benchmark": stepped["benchmark"], "params": stepped["params"], "machine": stepped["machine"],
             "commit": history.commits[12][:12], "who": "t", "why": "a known trade-off"}
    (history.results_dir / "accepted.json").write_text(json.dumps({"version": 1, "accepted": [entry]}))
    _, doc = _gate_json(history.results_dir, capsys)
    assert [a["change"]["commit_hash"] for a in doc["gate"]["accepted_elsewhere"]] == [history.commits[12]]
    data, state = _page(history.results_dir)
    children, _ = page.inbox(data, state, None, "regression", [])
    assert "accepted by t: a known trade-off" in texts(children)
    assert "0 open regression(s), 1 accepted" in texts(children)
    opened, _ = page.inbox(data, state, None, "regression", ["open"])
    assert history.commits[12][:10] not in texts(opened[1:])  # the "open" filter leaves it out


def test_the_overview_s_records_for_chosen_bases_are_kept_within_a_bound(monkeypatch):
    from regressions import gate_records
    from regressions import judgement

    judged = []
    monkeypatch.setattr(judgement, "verdict_record",
                        lambda results, conf, base, machine: judged.append(base) or {"base": base, "machine": machine})
    gate_records._judged.cache_clear()
    for i in range(gate_records.RECORDS_KEPT + 8):
        assert gate_records._judged("sig", "results", None, "m", f"b{i}..head") == {"base": f"b{i}..head", "machine": "m"}
    assert gate_records._judged("sig", "results", None, "m", f"b{gate_records.RECORDS_KEPT + 7}..head")  # kept
    assert len(judged) == gate_records.RECORDS_KEPT + 8 and gate_records._judged.cache_info().currsize == \
        gate_records.RECORDS_KEPT
    gate_records._judged.cache_clear()


def test_a_machine_the_whole_folder_cannot_be_judged_for_shows_its_own_verdict(tmp_path, capsys):
    """Machine b's newest result file is cut: the gate over every machine cannot judge (exit 2),
    `--machine a` can, and the page filtered to a shows a's verdict, saying why the whole cannot."""
    results = tmp_path / "results"
    write_history(results, [SeriesSpec(BENCH, (CASE, "fused"), ("case", "impl"), steps=((NEWEST, 0.4),))],
                  N, seed=5, machine="a")
    b = write_history(results, [SeriesSpec(BENCH, (CASE, "fused"), ("case", "impl"))], N, seed=6, machine="b",
                      merge_benchmarks=True)
    newest_of_b = next((results / "b").glob(f"{b.commits[NEWEST][:8]}*.json"))
    newest_of_b.write_text(newest_of_b.read_text()[:100])
    assert gate(["--results", str(results), "--format", "json"]) == 2
    assert "cannot be placed before the judged commits" in capsys.readouterr().err
    machine_code, machine_doc = _gate_json(results, capsys, "--machine", "a")
    assert machine_code == 1
    data, state = _page(results)
    asked = []

    def machine_record(machine, why):
        asked.append(machine)
        return gate_records.machine_record(_Store(state), data, machine, why)

    whole = texts(page.inbox(data, state, None, "regression", [], machine_record=machine_record)[0])
    assert "Gate: cannot judge" in whole and asked == []  # no machine chosen: the folder's verdict
    mine = texts(page.inbox(data, state, "a", "regression", [], machine_record=machine_record)[0])
    assert asked == ["a"] and "The gate over every machine cannot judge: " + state.verdict["error"] in mine
    assert f"Gate on the newest commit: {machine_doc['gate']['verdict']}" in mine and "--machine a" in mine
    # the Overview of machine a: its own verdict too, under the same note
    run = data.runs[("a", next(env for m, env in data.runs if m == "a"))]
    record = gate_records.record_for(_Store(state), data, "a", run.env_name, run.commits["commit_hash"].iloc[-1], None)
    assert record["document"]["gate"] == machine_doc["gate"]
    card = texts(overview.gate_card(GateView(record), run, None, run.commits["commit_hash"].iloc[-1], results))
    assert "The gate over every machine cannot judge" in card and f"The gate: {machine_doc['gate']['verdict']}" in card
