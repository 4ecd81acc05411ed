"""Controls classification (regressions.classify): a fused finding read beside the same
case's eager/compile controls, on synthetic histories written in asv's format; the gate's
--fail-on; the recorded runner state that names what changed (recorded_state.py)."""

import json

import numpy as np
import pytest

from asv_results.loading import load_results
from regressions import Finding, find_changes
from regressions.classify import (ENVIRONMENT, LIBRARY, NOISE, classify, impl_of, state_changes,
                                            with_impl)
from regressions.cli import main
from regressions.recorded_state import comparable_state, recorded_states, state_path, throttling
from tests.asv_fixtures import SeriesSpec, write_history

BENCH = "bench_ops.LinearAct.track_latency"
STEP_AT = 30


def _history(tmp_path, fused_steps=(), control_steps=(), n=40, seed=3, fused_noise=0.01, machine_params=None):
    case = "linear_act M=16 K=64 N=64 bf16 gelu_tanh bias"
    names = ("case", "impl")
    series = [SeriesSpec(BENCH, (case, "fused"), names, steps=fused_steps, run_noise=fused_noise)]
    series += [SeriesSpec(BENCH, (case, impl), names, steps=control_steps, run_noise=0.01) for impl in
               ("eager", "compile")]
    return write_history(tmp_path / "results", series, n, seed=seed, n_samples=15, machine_params=machine_params)


def _fused_regression(history):
    loaded = load_results(history.results_dir)
    found = [f for f in find_changes(loaded.frame) if impl_of(f.params) == "fused" and f.direction == "regression"]
    assert len(found) == 1, found
    return found[0], loaded.frame


def test_params_keys_name_their_implementation():
    key = "case='linear_act M=16 K=64, N=64 bf16 relu', impl='fused'"
    assert impl_of(key) == "fused" and impl_of("case='x'") is None
    assert with_impl(key, "eager") == "case='linear_act M=16 K=64, N=64 bf16 relu', impl='eager'"
    assert impl_of(with_impl("impl='fused', mode='backward'", "compile")) == "compile"


def test_a_step_only_the_fused_series_shows_is_the_library(tmp_path):
    finding, frame = _fused_regression(_history(tmp_path, fused_steps=((STEP_AT, 0.15),)))
    c = classify(finding, frame)
    assert c.kind == LIBRARY and "did not move as much" in c.evidence
    assert {m.impl for m in c.controls} == {"eager", "compile"} and not any(m.moved for m in c.controls)


def test_a_step_the_controls_share_is_the_environment_and_names_what_changed(tmp_path):
    history = _history(tmp_path, fused_steps=((STEP_AT, 0.15),), control_steps=((STEP_AT, 0.15),))
    finding, frame = _fused_regression(history)
    states = {(history.machine, c): {"driver": "570.86" if i < STEP_AT else "575.51"}
              for i, c in enumerate(history.commits)}
    c = classify(finding, frame, states)
    assert c.kind == ENVIRONMENT and any(m.moved for m in c.controls)
    assert c.state_changes == ("driver 570.86 -> 575.51",) and "driver 570.86 -> 575.51" in c.evidence


def test_a_control_that_moved_less_than_half_the_fused_step_does_not_excuse_it(tmp_path):
    finding, frame = _fused_regression(_history(tmp_path, fused_steps=((STEP_AT, 0.30),),
                                                control_steps=((STEP_AT, 0.06),)))
    assert classify(finding, frame).kind == LIBRARY


def _finding_at(history, frame, index, before, after):
    """The Finding a detector would report at commit ``index`` of the fused series."""
    commits = history.commits
    return Finding(BENCH, frame.loc[frame["params_key"].str.contains("fused"), "params_key"].iloc[0], history.machine,
                   history.env_name, "seconds", commits[index], commits[index - 1],
                   frame.loc[frame["commit_hash"] == commits[index], "date"].min(), before, after, after / before - 1,
                   "regression", "lower", "step", True, 1e-4, 5.0, True, commits[-1], commits[index], commits[index])


def _scale_fused(history, factors):
    """Multiply the fused value of commit i by factors[i] (the fused combination is column 0)."""
    for commit, factor in zip(history.commits, factors):
        path = history.results_dir / history.machine / f"{commit[:8]}-{history.env_name}.json"
        doc = json.loads(path.read_text())
        doc["results"][BENCH][0][0] *= factor
        path.write_text(json.dumps(doc))


@pytest.mark.parametrize("spread, kind", [(True, NOISE), (False, LIBRARY)])
def test_a_spread_that_grew_without_a_level_is_noise(tmp_path, spread, kind):
    # From STEP_AT on, the fused runs land 25 % high or 15 % low at random (a bistable runner:
    # spread, no level); or all land 8 % high (a level). The same +8 % finding is read in both.
    history = _history(tmp_path, n=40)
    rng = np.random.default_rng(1)
    after = [rng.choice([1.25, 0.85]) if spread else 1.08 for _ in history.commits[STEP_AT:]]
    _scale_fused(history, [1.0] * STEP_AT + after)
    frame = load_results(history.results_dir).frame
    c = classify(_finding_at(history, frame, STEP_AT, 1e-4, 1.08e-4), frame)
    assert c.kind == kind, c.evidence


def test_series_without_controls_and_control_series_themselves(tmp_path):
    spec = SeriesSpec("bench.Other.track_x", (16,), ("m",), steps=((STEP_AT, 0.2),), run_noise=0.01)
    history = write_history(tmp_path / "other", [spec], 40, seed=2, n_samples=15)
    loaded = load_results(history.results_dir)
    (finding,) = [f for f in find_changes(loaded.frame) if f.direction == "regression"]
    assert classify(finding, loaded.frame).kind == LIBRARY  # nothing to compare with: judged as before
    history = _history(tmp_path, control_steps=((STEP_AT, 0.2),))
    loaded = load_results(history.results_dir)
    eager = [f for f in find_changes(loaded.frame) if impl_of(f.params) == "eager"]
    assert eager and classify(eager[0], loaded.frame).kind == ENVIRONMENT


def _gate(history, *extra):
    return main(["--results", str(history.results_dir), "--base", history.commits[STEP_AT - 1], *extra])


def test_the_gate_fails_only_on_library_findings_unless_told(tmp_path, capsys):
    environment = _history(tmp_path / "env", fused_steps=((STEP_AT, 0.2),), control_steps=((STEP_AT, 0.2),))
    assert _gate(environment) == 0
    out = capsys.readouterr().out
    assert "ENVIRONMENT (the controls moved too" in out and "class environment: the controls moved too" in out
    assert _gate(environment, "--fail-on", "all") == 1
    capsys.readouterr()
    library = _history(tmp_path / "lib", fused_steps=((STEP_AT, 0.2),))
    assert _gate(library, "--format", "json") == 1
    doc = json.loads(capsys.readouterr().out)
    (item,) = doc["gate"]["failing"]
    assert item["classification"]["class"] == LIBRARY and "did not move" in item["classification"]["evidence"]


def test_the_gate_rejects_an_unknown_fail_on(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--results", str(tmp_path), "--fail-on", "everything"])
    assert exc.value.code == 2


# --- recorded state -----------------------------------------------------------------------

def _snapshot(power_ns=0, thermal_ns=0, limit=700.0, driver="570.86"):
    return {"recorded": True, "software": {"driver": driver, "torch": "2.11.0", "cublas": "12.8.4"},
            "gpus": [{"name": "NVIDIA H200", "power_limit_w": limit, "sm_clock_mhz": 1980, "temperature_c": 41,
                      "power_violation_ns": power_ns, "thermal_violation_ns": thermal_ns}]}


def test_throttling_is_what_the_violation_counters_grew_by_over_the_run():
    assert throttling(_snapshot(), _snapshot()) == "none"
    assert throttling(_snapshot(power_ns=5), _snapshot(power_ns=9)) == "power"
    assert throttling(_snapshot(), _snapshot(power_ns=1, thermal_ns=2)) == "power+thermal"
    assert throttling({"recorded": False, "reason": "not recorded: no NVML"}, None) == "unknown"


def test_comparable_state_leaves_out_what_moves_with_the_load():
    state = comparable_state({"torch": "2.11.0", "os": "Linux"}, {"start": _snapshot(), "end": _snapshot()})
    assert state["gpu0 power_limit_w"] == "700.0" and state["throttled"] == "none" and state["driver"] == "570.86"
    assert not any("sm_clock_mhz" in k or "temperature" in k for k in state) and "os" not in state
    cpu = comparable_state({}, {"start": {"recorded": False, "reason": "not recorded: no NVML"}, "end": None})
    assert cpu == {"runner state": "not recorded: no NVML"}


def test_state_changes_name_each_key_that_changed():
    assert state_changes({"driver": "570", "throttled": "none"}, {"driver": "575", "throttled": "power"}) == [
        "driver 570 -> 575", "throttled none -> power"]
    assert state_changes(None, {"driver": "575"}) == []


def test_recorded_states_read_the_companion_files_beside_the_results(tmp_path):
    history = _history(tmp_path, machine_params={"driver": "570.86", "torch": "2.11.0"})
    first = history.results_dir / history.machine / f"{history.commits[0][:8]}-{history.env_name}.json"
    state_path(first).parent.mkdir()
    state_path(first).write_text(json.dumps({"start": _snapshot(limit=600.0), "end": _snapshot(limit=600.0)}))
    states = recorded_states(history.results_dir)
    assert states[(history.machine, history.commits[0])]["gpu0 power_limit_w"] == "600.0"
    assert states[(history.machine, history.commits[1])] == {"gpu": "Synthetic GPU", "driver": "570.86", "torch": "2.11.0"}
    assert len(load_results(history.results_dir).load_report.skipped) == 0  # the loader does not read them


def test_the_regressions_page_shows_each_regressions_class_and_evidence(tmp_path):
    from dashboard.store.load_data import build_data
    from dashboard.pages import regressions as page
    from tests.judged import judged_state

    history = _history(tmp_path, fused_steps=((STEP_AT, 0.2),), control_steps=((STEP_AT, 0.2),))
    data = build_data(history.results_dir)
    findings = find_changes(data.rows_frame())
    children, _ = page.inbox(data, judged_state(history.results_dir, findings), None, "regression", [])
    text = str(children)
    assert "class-environment" in text and "the controls moved too" in text
