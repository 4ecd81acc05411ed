"""The A/B re-run's own candidate screen (rerun_screen.py), its place among the candidates and in
the final verdict, and the dismissal rule for a finding that failed at once, on planted cases
at one fixed seed (not the rates: tools/measure_classification.py measures those)."""

import math

import numpy as np
import pandas as pd
import pytest

from regressions.gate import REGRESSION_ITEM, SUSPECTED, GateItem, GateVerdict, JudgedRun
from regressions.rerun_candidates import AT_MOST, candidates
from regressions.rerun_judgement import CONFIRMED, DISMISSED, INCONCLUSIVE
from regressions.rerun_screen import SCREENED, WINDOWS, Z, screen, screen_z
from regressions.rerun_verdict import Rerun, with_reruns
from tests.test_rerun_statistics import SEED, _doc, _finding, _rounds

N = 30


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def _history(rng, step=0.0, control_step=0.0, noise=0.02):
    fused = rng.normal(0, noise, N)
    fused[-1] += step
    controls = rng.normal(0, noise, (2, N))
    controls[:, -1] += control_step
    return fused, controls


def test_a_10_percent_step_at_its_own_commit_is_screened_and_a_clean_newest_run_is_not(rng):
    fused, controls = _history(rng, math.log(1.10))
    z, covariate, window = screen_z(fused, controls, 1.0)
    assert z > Z and covariate > Z and window == 1
    clean, controls = _history(rng)
    assert screen_z(clean, controls, 1.0)[0] < Z


def test_the_screen_is_one_sided_the_way_a_regression_goes(rng):
    fused, controls = _history(rng, math.log(1.10))
    assert screen_z(fused, controls, -1.0)[0] < 0  # higher is better: a rise is no regression


def test_a_runner_wide_move_is_screened_but_ranks_last_by_the_covariate_z(rng):
    wide = np.array([screen_z(*_history(rng, math.log(1.10), math.log(1.10), 0.01), 1.0)[:2] for _ in range(20)])
    library = np.array([screen_z(*_history(rng, math.log(1.10), noise=0.01), 1.0)[:2] for _ in range(20)])
    seen = np.isfinite(wide[:, 0])  # -inf: a history the noise model took for bimodal (20 values can look so)
    assert seen.sum() >= 15 and (wide[seen, 0] > Z).all()  # the fused series itself moved: screened
    assert np.median(wide[seen, 1]) < 1.0 < Z < np.median(library[:, 1])  # the controls cancel it


def test_a_bimodal_history_or_control_is_not_screened(rng):
    high = rng.random(N) < 0.3
    bimodal = rng.normal(0, 0.005, N) + np.where(high, math.log(1.06), 0.0)
    bimodal[-1] = math.log(1.10)
    assert screen_z(bimodal, rng.normal(0, 0.005, (2, N)), 1.0)[0] == -math.inf
    fused, _ = _history(rng, math.log(1.10), noise=0.005)
    assert screen_z(fused, np.array([bimodal, rng.normal(0, 0.005, N)]), 1.0)[0] == -math.inf


def test_too_short_a_history_is_not_screened(rng):
    fused, controls = _history(rng, math.log(1.5))
    assert screen_z(fused[-8:], controls[:, -8:], 1.0)[0] == -math.inf


# --- screen() over a results frame ---------------------------------------------------------

def _frame(rng, steps):
    """One case per entry of steps {case: fused log step at the newest commit}, fused and two controls."""
    commits = [f"{i:040x}" for i in range(N)]
    rows = []
    for case, step in steps.items():
        for impl in ("fused", "eager", "compile"):
            logs = rng.normal(0, 0.01, N)
            logs[-1] += step if impl == "fused" else 0.0
            for i, (c, v) in enumerate(zip(commits, np.exp(logs))):
                rows.append({"machine": "m", "env_name": "env", "benchmark": "bench_ops.LinearAct.track_latency",
                             "params_key": f"case='{case}', impl='{impl}'", "commit_hash": c, "status": "ok",
                             "value": 1e-4 * v, "unit": "seconds",
                             "date": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(hours=i)})
    return pd.DataFrame(rows), commits


def test_screen_picks_fused_series_without_a_gate_item_and_names_the_commits_to_rerun(rng):
    frame, commits = _frame(rng, {"stepped": math.log(1.10), "has an item": math.log(1.10), "clean": 0.0})
    item = GateItem(SUSPECTED, _finding(case="has an item"), "n")
    verdict = GateVerdict([JudgedRun("m", "env", commits[-2], (commits[-1],))], [item])
    picked = screen(frame, verdict)
    assert [f.params for f, _ in picked] == ["case='stepped', impl='fused'"]
    f, covariate = picked[0]
    assert f.kind == SCREENED and not f.clear and f.direction == "regression" and covariate > Z
    assert f.relative_change == pytest.approx(0.10, abs=0.03) and f.score > Z
    # A lies before the largest window, B is the newest commit
    assert (f.commit_hash, f.before_earliest, f.series_last_commit) == (commits[-1], commits[-1 - max(WINDOWS)],
                                                                         commits[-1])
    not_judged = GateVerdict([JudgedRun("m", "env", commits[-1], ())], [])
    assert screen(frame, not_judged) == []


# --- the screened ones among the candidates and in the final verdict -----------------------

def test_screened_series_come_after_the_gates_items_largest_covariate_z_first_within_the_cap():
    doc = _doc([("suspected", _finding(case="item"))])
    doc["gate"]["screened"] = [{"change": {**_finding(case=f"s{z}").__dict__, "commit_date": "x"}, "z": z}
                               for z in (1.0, 3.0, 2.0)]
    chosen = candidates(doc)
    assert [c.params.split("'")[1] for c in chosen] == ["item", "s3.0", "s2.0", "s1.0"]
    assert [c.category for c in chosen] == ["suspected", SCREENED, SCREENED, SCREENED]
    doc["gate"]["screened"] *= 3
    assert len(candidates(doc)) == AT_MOST


def _session(finding, fused_step, noise=0.005):
    rounds = _rounds(np.random.default_rng(SEED), fused_step, noise=noise)
    return Rerun(finding.benchmark, finding.params, finding.machine, finding.commit_hash, finding.before_earliest,
                 finding.series_last_commit, tuple(rounds), "")


def test_a_confirmed_screened_series_fails_and_a_dismissed_or_unrun_one_fails_nothing():
    confirmed, dismissed, unrun = (_finding(case=c) for c in ("confirmed", "dismissed", "unrun"))
    verdict = GateVerdict([JudgedRun("m", "env", "a" * 40, ("b" * 40,))], [],
                          screened=[(confirmed, 3.0), (dismissed, 2.5), (unrun, 2.0)])
    assert not verdict.failed  # the screen alone fails nothing
    final = with_reruns(verdict, [_session(confirmed, math.log(1.1)), _session(dismissed, 0.0)], 0.05)
    assert [(i.change.params.split("'")[1], i.category) for i in final.items] == [
        ("confirmed", REGRESSION_ITEM), ("dismissed", "noise")]
    assert final.items[0].rerun.outcome == CONFIRMED and "re-run's screen" in final.items[0].note
    assert final.items[1].rerun.outcome == DISMISSED and [i.change for i in final.failing] == [confirmed]


def test_a_finding_that_failed_at_once_is_dismissed_only_when_the_rerun_rules_out_half_its_step():
    # a 6 % finding; the session shows +3 %: under the 5 % threshold, not clear of half the step (2.9 %)
    finding = _finding(change=0.06)
    rerun = _session(finding, math.log(1.03), noise=0.002)
    runs = [JudgedRun("m", "env", "a" * 40, ("b" * 40,))]
    failed_at_once = with_reruns(GateVerdict(runs, [GateItem(REGRESSION_ITEM, finding, "n")]), [rerun], 0.05)
    assert failed_at_once.items[0].rerun.outcome == INCONCLUSIVE
    assert failed_at_once.items[0].category == REGRESSION_ITEM  # the first verdict stands
    suspected = with_reruns(GateVerdict(runs, [GateItem(SUSPECTED, finding, "n")]), [rerun], 0.05)
    assert suspected.items[0].rerun.outcome == DISMISSED
    nothing = with_reruns(GateVerdict(runs, [GateItem(REGRESSION_ITEM, finding, "n")]), [_session(finding, 0.0)], 0.05)
    assert nothing.items[0].rerun.outcome == DISMISSED and not nothing.failed
