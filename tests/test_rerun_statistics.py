"""The statistics' pieces on planted cases at one fixed seed: the per-series noise model, the
covariate test of fused against its controls, the A/B re-run's judgement, the candidates and
the final verdict (not the rates: tools/measure_classification.py measures those)."""

import math
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from regressions.covariate import covariate_test
from regressions.findings import Finding
from regressions.gate import ACCEPTED, REGRESSION_ITEM, SUSPECTED, GateItem, GateVerdict, JudgedRun
from regressions.noise_model import robust_sigma, series_noise
from regressions.rerun_candidates import AT_MOST, candidates
from regressions.rerun_judgement import CONFIRMED, DISMISSED, INCONCLUSIVE, judge_rerun
from regressions.rerun_verdict import Rerun, RerunFileError, parse_reruns, with_reruns

SEED = 37


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


# --- noise model -------------------------------------------------------------------------

def test_the_noise_estimate_is_the_run_to_run_sigma_and_a_level_step_barely_moves_it(rng):
    x = rng.normal(0, 0.02, 200)
    stepped = x + np.r_[np.zeros(100), np.full(100, 0.3)]
    assert robust_sigma(x) == pytest.approx(0.02, rel=0.2)
    assert robust_sigma(stepped) == pytest.approx(robust_sigma(x), rel=0.05)
    assert math.isnan(robust_sigma(np.array([1.0, 2.0])))


def test_a_bimodal_runner_is_a_noise_class_and_explains_a_run_on_its_second_level(rng):
    high = rng.random(60) < 0.3
    x = rng.normal(0, 0.01, 60) + np.where(high, math.log(1.06), 0.0)
    noise = series_noise(x)
    assert noise.bimodal and noise.gap == pytest.approx(math.log(1.06), abs=0.015)
    assert noise.share == pytest.approx(high.mean(), abs=0.1)
    assert noise.explains(math.log(1.06)) and not noise.explains(math.log(1.15)) and not noise.explains(-0.06)
    plain = series_noise(rng.normal(0, 0.02, 60))
    assert not plain.bimodal and not plain.explains(0.06)


# --- covariate test ----------------------------------------------------------------------

def _three_series(rng, fused_step, control_steps, runner_wide=0.0, n=30, k=25):
    """Log values of fused and two controls, steps at k; ``runner_wide``: a shared move at k."""
    shift = np.r_[np.zeros(k), np.ones(n - k)]
    common = rng.normal(0, 0.01, n) + runner_wide * shift
    fused = common + rng.normal(0, 0.01, n) + fused_step * shift
    controls = np.array([common + rng.normal(0, 0.01, n) + s * shift for s in control_steps])
    return fused, controls, np.arange(k), np.arange(k, n)


def test_the_covariate_test_blames_a_fused_only_step_on_the_library(rng):
    fused, controls, before, after = _three_series(rng, 0.10, (0.0, 0.0))
    test = covariate_test(fused, controls, before, after, 0.10)
    assert not test.controls_explain and test.excess_z > 3


def test_a_runner_wide_move_cancels_in_the_difference(rng):
    fused, controls, before, after = _three_series(rng, 0.0, (0.0, 0.0), runner_wide=0.10)
    test = covariate_test(fused, controls, before, after, float(np.median(fused[after]) - np.median(fused[before])))
    assert test.controls_explain and abs(test.excess_z) < 3 and test.control_z > 2


def test_one_control_alone_moving_within_its_noise_does_not_excuse_the_library(rng):
    fused, controls, before, after = _three_series(rng, 0.10, (0.01, -0.01))
    assert not covariate_test(fused, controls, before, after, 0.10).controls_explain


def test_a_commit_where_every_control_is_missing_warns_nothing(rng):
    fused, controls, before, after = _three_series(rng, 0.10, (0.0, 0.0))
    controls[:, [3, 27]] = np.nan  # eager and compile both failed there: those commits do not enter
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test = covariate_test(fused, controls, before, after, 0.10)
    keep = np.setdiff1d(np.arange(len(fused)), [3, 27])
    again = covariate_test(fused[keep], controls[:, keep], np.arange(24), np.arange(24, 28), 0.10)
    assert test == again and not test.controls_explain


def test_no_control_either_side_gives_no_test(rng):
    fused, controls, before, after = _three_series(rng, 0.10, (0.0, 0.0))
    controls[:, after] = np.nan
    assert covariate_test(fused, controls, before, after, 0.10) is None


# --- the A/B re-run's judgement ----------------------------------------------------------

def _rounds(rng, fused_step, control_step=0.0, pairs=4, noise=0.005):
    out = []
    for _ in range(pairs):
        for side in ("A", "B"):
            moved = side == "B"
            out.append({"side": side, "values": {
                "fused": float(np.exp(rng.normal(0, noise) + (fused_step if moved else 0.0))),
                "eager": float(np.exp(rng.normal(0, noise) + (control_step if moved else 0.0))),
                "compile": float(np.exp(rng.normal(0, noise) + (control_step if moved else 0.0)))}})
    return out


def test_the_rerun_confirms_a_step_that_reproduces_in_the_session(rng):
    j = judge_rerun(_rounds(rng, math.log(1.10)), sign=1.0, threshold=0.05)
    assert j.outcome == CONFIRMED and j.effect == pytest.approx(0.10, abs=0.02)
    assert j.rounds == (4, 4) and j.controls == ("compile", "eager")


def test_the_rerun_dismisses_a_step_that_does_not_reproduce(rng):
    assert judge_rerun(_rounds(rng, 0.0), sign=1.0, threshold=0.05).outcome == DISMISSED


def test_the_rerun_judges_fused_relative_to_its_controls(rng):
    # everything 10 % slower at B in the session: not the library's
    assert judge_rerun(_rounds(rng, math.log(1.1), math.log(1.1)), 1.0, 0.05).outcome == DISMISSED


def test_the_rerun_is_direction_aware(rng):
    rounds = _rounds(rng, math.log(1.10))
    assert judge_rerun(rounds, sign=-1.0, threshold=0.05).outcome == DISMISSED  # the finding was a drop


def test_too_few_rounds_or_too_much_session_noise_is_inconclusive(rng):
    assert judge_rerun(_rounds(rng, math.log(1.1), pairs=1), 1.0, 0.05).outcome == INCONCLUSIVE
    assert judge_rerun(_rounds(rng, math.log(1.05), pairs=2, noise=0.08), 1.0, 0.05).outcome == INCONCLUSIVE


def test_a_rerun_without_controls_judges_the_series_alone(rng):
    rounds = [{"side": r["side"], "values": {"fused": r["values"]["fused"]}} for r in _rounds(rng, math.log(1.1))]
    j = judge_rerun(rounds, 1.0, 0.05)
    assert j.outcome == CONFIRMED and j.controls == ()


# --- candidates and the final verdict ----------------------------------------------------

def _finding(commit="b" * 40, impl="fused", confirmed=False, change=0.1, case="c", newest="n" * 40):
    return Finding("bench_ops.LinearAct.track_latency", f"case='{case}', impl='{impl}'", "m", "env", "seconds",
                   commit, "a" * 40, pd.Timestamp("2026-01-02", tz="UTC"), 1.0, 1.0 + change, change, "regression",
                   "lower", "step", confirmed, 1e-4, 5.0, True, newest, commit, commit, 1, True, "0" * 40)


def _doc(items, judged=("n" * 40,)):
    return {"gate": {"judged": [{"machine": "m", "env_name": "env", "base_commit": "a" * 40, "commits": list(judged)}],
                     "items": [{"category": cat, "change": {**f.__dict__, "commit_date": "x"}} for cat, f in items]}}


def test_candidates_are_thin_findings_of_series_measured_at_the_judged_commits_failing_ones_first():
    items = [("suspected", _finding(case="s", change=0.3)), ("regression", _finding(case="r1", change=0.1)),
             ("regression", _finding(case="r2", change=0.2)), ("environment", _finding(case="e")),
             ("regression", _finding(case="confirmed", confirmed=True)), ("regression", _finding(impl="eager")),
             ("regression", _finding(case="not measured now", newest="c" * 40)), ("accepted", _finding(case="acc")),
             ("regression", _finding(case="made clear", commit="c" * 40, change=0.05))]
    chosen = candidates(_doc(items))
    assert [c.params.split("'")[1] for c in chosen] == ["r2", "r1", "made clear", "s", "e"]
    # A: before the change's first plausible commit; B: the series' newest commit
    assert (chosen[0].base_commit, chosen[0].commit_hash, chosen[0].newest_commit) == ("0" * 40, "b" * 40, "n" * 40)
    many = [("regression", _finding(case=f"x{i}")) for i in range(9)]
    assert len(candidates(_doc(many))) == AT_MOST


def _session(finding, fused_step):
    rounds = _rounds(np.random.default_rng(SEED), fused_step)
    return Rerun(finding.benchmark, finding.params, finding.machine, finding.commit_hash, finding.previous_commit,
                 finding.series_last_commit, tuple(rounds), "")


def test_the_final_verdict_moves_what_the_rerun_judged_and_nothing_else():
    confirmed, blip, accepted, untouched = (_finding(case=c) for c in ("confirmed", "blip", "accepted", "untouched"))
    verdict = GateVerdict([JudgedRun("m", "env", "a" * 40, ("b" * 40,))], [
        GateItem(SUSPECTED, confirmed, "n"), GateItem(REGRESSION_ITEM, blip, "n"),
        GateItem(ACCEPTED, accepted, "n", acceptance=object()), GateItem(REGRESSION_ITEM, untouched, "n")])
    final = with_reruns(verdict, [_session(confirmed, math.log(1.1)), _session(blip, 0.0),
                                  _session(accepted, 0.0)], 0.05)
    cats = [i.category for i in final.items]
    assert cats == [REGRESSION_ITEM, "noise", ACCEPTED, REGRESSION_ITEM]
    assert final.items[0].rerun.outcome == CONFIRMED and "re-run confirmed" in final.items[0].note
    assert final.items[1].rerun.outcome == DISMISSED and "did not reproduce" in final.items[1].note
    assert final.items[2].rerun is None and final.items[3].rerun is None
    failed = with_reruns(verdict, [replace(_session(blip, 0.0), rounds=(), problem="asv failed")], 0.05)
    assert failed.items[1].category == REGRESSION_ITEM and "could not measure: asv failed" in failed.items[1].note


@pytest.mark.parametrize("doc, said", [([], "\"version\": 1"), ({"version": 1, "reruns": [3]}, "reruns[0] is int"),
                                       ({"version": 1, "reruns": [{"benchmark": "b"}]}, "reruns[0].params"),
                                       ({"version": 1, "reruns": [{k: "x" for k in ("benchmark", "params", "machine",
                                        "commit_hash", "base_commit", "newest_commit", "problem")} | {"rounds": [{"side": "C"}]}]},
                                        "rounds[0]")])
def test_a_rerun_file_of_another_shape_is_named(doc, said):
    with pytest.raises(RerunFileError, match=said.replace("[", r"\[").replace("]", r"\]")):
        parse_reruns(doc)
