"""The GPU session's model (benchmarks.session_cost) reads its stages, caps, classes, the default
grid's parts and the stages each call runs from tools/gpu_runner/session.sh and counts every
process of it: the first call's quick stage fits its cap because the Python check and the machine
registration run once per session, and every call, the first (`session.sh --machine M`) and each
later one (`--part K`), fits 80 % of a 600 s call with cold caches and the pessimistic compile
guesses of benchmarks.suite_cost, while every stage still runs in some call."""

import itertools
import json
import re
import types
from pathlib import Path

import pytest

from benchmarks import session_cost, suite_cost
from workload.ops import OPS  # what the grids read

ROOT = Path(__file__).resolve().parents[1]
H200 = {name: value for name, (value, _) in session_cost.CONSTANTS.items()}
CALL_SHARE_S = session_cost.CALL_SHARE * session_cost.CALL_S


def _seconds(items) -> float:
    return sum(i.seconds for i in items)


def test_the_model_has_the_first_call_s_stages_and_one_run_per_class():
    stages = session_cost.model("quick", H200)
    assert list(stages) == ["setup", *session_cost.call_stages()] and "quick" in stages
    # the default grid runs by part, in the later calls
    assert "rest" not in stages
    classes, prepared = session_cost.quick_classes()
    assert prepared and len(classes) >= 6
    quick = {item.what.strip(): item.count for item in stages["quick"]}
    assert quick["asv run per class (discovery, forkserver)"] == len(classes)
    assert quick["runner-state snapshots (before and after each asv run)"] == 2 * len(classes)


def test_the_quick_stage_fits_its_cap_only_with_one_check_per_session(tmp_path):
    """Six benchmarks.run calls that each imported torch twice more (the check and the
    registration) came to more than the quick stage's cap."""
    cap = session_cost.session_stages()["quick"]
    assert _seconds(session_cost.model("quick", H200)["quick"]) <= cap
    unprepared = tmp_path / "session.sh"
    unprepared.write_text(session_cost.SESSION.read_text().replace("benchmarks.run --prepared ", "benchmarks.run "))
    assert not session_cost.quick_classes(unprepared)[1]
    assert _seconds(session_cost.model("quick", H200, session=unprepared)["quick"]) > cap


def _call_seconds(part: int | None, session=session_cost.SESSION) -> float:
    return sum(_seconds(items) for items in session_cost.model("quick", H200, part=part, session=session).values())


CALLS = [None, *range(1, len(session_cost.rest_parts()) + 1)]  # the first call, then `--part K`


@pytest.mark.parametrize("part", CALLS, ids=lambda k: "first call" if k is None else f"--part {k}")
def test_every_call_fits_80_percent_of_a_call_cold(part):
    """Setup (the wheels, the check, the registration) and the stages the call runs (the first
    call's, or the part's classes and what goes with them), caches cold, the compile guesses at
    their pessimistic ends: what one call must hold, the first as much as the later ones."""
    assert _call_seconds(part) <= CALL_SHARE_S, (
        f"{'the first call' if part is None else f'--part {part}'}: move a stage to a call with room "
        "(session.sh first_call_stages, part_stages) or split the grid again (rest_parts)")


def test_every_stage_runs_in_some_call_and_every_part_call_runs_its_part():
    """Fitting by dropping a stage is no fit: each of session.sh's stages is in the first call's
    list or a part's, and each part's call runs the rest stage (its part of the default grid)."""
    assert session_cost.part_stage_lists() == len(session_cost.rest_parts())
    planned = set(session_cost.call_stages())
    for part in CALLS[1:]:
        assert "rest" in session_cost.call_stages(part), part
        planned |= set(session_cost.call_stages(part))
    assert planned == set(session_cost.session_stages())


def test_the_native_tests_back_in_the_first_call_break_it(tmp_path):
    """The first call as it was (quick, check, native, profile: 562 s, native cut at 83 s of the
    540 s budget) does not fit 80 % of a call."""
    text = session_cost.SESSION.read_text()
    first = re.search(r'^first_call_stages="([^"]*)"', text, re.M).group(0)
    with_native = tmp_path / "session.sh"
    with_native.write_text(text.replace(first, 'first_call_stages="quick,check,native,profile"'))
    assert "native" in session_cost.call_stages(None, with_native)
    assert _call_seconds(None, with_native) > CALL_SHARE_S


def test_a_call_listing_a_stage_session_sh_has_not_is_an_error(tmp_path):
    text = session_cost.SESSION.read_text()
    first = re.search(r'^first_call_stages="([^"]*)"', text, re.M).group(0)
    bad = tmp_path / "session.sh"
    bad.write_text(text.replace(first, 'first_call_stages="quick,checks"'))
    with pytest.raises(ValueError, match="checks"):
        session_cost.call_stages(None, bad)


def _default_benchmarks() -> list[str]:
    """asv's name of every metric and combination of the default grid's timing classes."""
    with suite_cost._grid_selected("default"):
        return [name for cls in suite_cost.timing_classes("default") for combo in itertools.product(*cls.params)
                for name in suite_cost.benchmark_names(cls, combo)]


def _patterns():
    return [(k, pattern) for k, patterns in enumerate(session_cost.rest_parts(), 1) for pattern in patterns]


def test_every_combination_of_the_default_grid_is_in_exactly_one_part():
    """asv -b matches a parameterized benchmark as name(params): each metric of each combination
    is selected by exactly one regex of one part, none dropped, none run twice."""
    patterns = _patterns()
    names = _default_benchmarks()
    assert names and all("(" in name for name in names)
    for name in names:
        holding = [(k, p) for k, p in patterns if re.search(p, name)]
        assert len(holding) == 1, (name, holding)


def test_trained_max_autotune_is_a_part_of_its_own():
    """GatedMLPTraining is split by implementation: its max-autotune combinations in one part,
    the rest of the class in another."""
    parts = {}
    for name in _default_benchmarks():
        if name.startswith("bench_training.GatedMLPTraining."):
            impl = name.split("(")[1].split(", ")[1]
            parts.setdefault(impl == "'compile_max_autotune'", set()).update(
                k for k, p in _patterns() if re.search(p, name))
    assert len(parts[True]) == len(parts[False]) == 1 and parts[True] != parts[False], parts


def test_asv_itself_selects_for_each_regex_what_the_model_counts():
    """asv's own -b filter (asv.benchmarks.Benchmarks, params as asv_runner reprs them) picks, for
    each part's regex, exactly the GatedMLPTraining combinations the model's names match."""
    from asv.benchmarks import Benchmarks
    from asv_runner.benchmarks._base import _repr_no_address

    with suite_cost._grid_selected("default"):
        from benchmarks.bench_training import GatedMLPTraining as cls
        combos = list(itertools.product(*cls.params))
        names = [suite_cost.benchmark_names(cls, combo) for combo in combos]
        metrics = suite_cost._metrics(cls)
    params = [[_repr_no_address(value) for value in values] for values in cls.params]
    found = [{"name": f"bench_training.GatedMLPTraining.{metric}", "params": params} for metric in metrics]
    conf = types.SimpleNamespace(benchmark_dir="benchmarks")
    picked = []
    for _, pattern in _patterns():
        by_asv = {(name, i) for name, idx in Benchmarks(conf, found, regex=pattern).benchmark_selection.items()
                  for i in idx or ()}
        by_model = {(f"bench_training.GatedMLPTraining.{metric}", i) for i, combo in enumerate(names)
                    for metric, name in zip(metrics, combo) if re.search(pattern, name)}
        assert by_asv == by_model, pattern
        picked += by_asv
    assert sorted(picked) == sorted((f"bench_training.GatedMLPTraining.{m}", i) for m in metrics
                                    for i in range(len(combos)))


def test_a_class_split_across_parts_is_modelled_once():
    """The two parts' runs of GatedMLPTraining count its processes and measured combinations once
    between them, as the whole grid's model does; its 4 trained max-autotune shapes in one part."""
    name = "benchmarks.bench_training.GatedMLPTraining"
    whole = suite_cost.model("default", False)[name]
    split = [costs[name] for part in session_cost.rest_parts()
             for costs in session_cost.pattern_costs(part).values() if name in costs]
    assert len(split) == 2
    assert sum(c.measured for c in split) == whole.measured and sum(c.processes for c in split) == whole.processes
    assert sorted(c.max_autotune_gemms for c in split) == [0, 4]


def test_a_class_that_grows_breaks_its_part(monkeypatch):
    """The default grid with linear_act's full product: its part no longer fits its call."""
    spec = OPS["linear_act"]
    real = type(spec).cases
    linear = next(name for name in _default_benchmarks() if name.startswith("bench_ops.LinearAct."))
    monkeypatch.setattr(type(spec), "cases", lambda self, g: real(self, "full") if g == "default" else real(self, g))
    part = next(k for k, patterns in enumerate(session_cost.rest_parts(), 1) if session_cost._matches(patterns)(linear))
    assert _call_seconds(part) > CALL_SHARE_S


def test_a_stage_is_limited_by_its_cap_or_what_is_left_of_the_budget():
    item = lambda s: [session_cost.Item("x", 1, s)]  # noqa: E731
    rows = session_cost.fitted({"setup": item(20), "a": item(300), "b": item(100), "c": item(50)},
                               {"a": 250, "b": 200, "c": 100}, budget=400, reserve=15)
    # a is cut at its cap (250); b gets what is left (400 - 15 - 20 - 250 = 115) and uses 100; c the last 15
    assert [(r[0], r[2], r[3]) for r in rows] == [("setup", None, None), ("a", 250, -50), ("b", 115, 15), ("c", 15, -35)]


def test_a_stages_tsv_s_measured_rows_are_not_stages(tmp_path):
    tsv = tmp_path / "stages.tsv"
    tsv.write_text("stage\tstatus\tseconds\tlimit_s\nsetup\tok\t12\t-\nquick\tcut at 280s\t280\t280\n"
                   "measured:torch_compile_cold_s\tnot met\t-\tmodel 30.0\n"
                   "measured:check_python_s\t1 value (5.26-5.26 s)\t5.26\tmodel 6.0\n")
    assert session_cost.read_stages_tsv(tsv) == {"setup": (12.0, "ok"), "quick": (280.0, "cut at 280s")}
    # the session's own measures of the model's inputs, for the rehearsal's table: those it met
    assert session_cost.read_measured_inputs(tsv) == {"check_python_s": 5.26}


def test_the_profile_pass_counts_its_compiles_from_the_runs_caches():
    """After the quick stage, the profile pass's torch.compile of the gated MLP's forward finds
    Inductor's cache warm: no cold compile; from cold caches it pays one."""
    after_quick = suite_cost._Session(warm=False)
    suite_cost.model("quick", False, session=after_quick)
    warm = suite_cost.profile_pass("quick", after_quick)
    cold = suite_cost.profile_pass("quick", suite_cost._Session(warm=False))
    assert warm.measured == cold.measured > 0
    assert warm.torch_compiles == 0 < cold.torch_compiles and warm.max_autotune_gemms == cold.max_autotune_gemms == 0
    assert warm.seconds < cold.seconds


def test_bad_arguments_are_exit_2(capsys):
    for argv in (["--part", "9"], ["--stages-tsv", "/nonexistent/stages.tsv"], ["--profiles", "/nonexistent"],
                 ["--stages", "quick,all"]):
        with pytest.raises(SystemExit) as done:
            session_cost.main(argv)
        assert done.value.code == 2
        assert argv[0] in capsys.readouterr().err


def test_asv_durations_share_a_benchmark_s_duration_among_its_combinations(tmp_path):
    """asv records one duration per benchmark: a regex that selects some of its combinations
    gets their share (a CPU rehearsal of a part that splits a class)."""
    (tmp_path / "m").mkdir()
    row = {"duration": 6.0, "params": [["'c'"], ["'eager'", "'compile'", "'compile_max_autotune'"]]}
    doc = {"result_columns": list(row), "results": {"bench_x.C.track_t": list(row.values()), "bench_x.D.track_t": [2.0, []]}}
    (tmp_path / "m" / "abc-env.json").write_text(json.dumps(doc))
    durations = session_cost.asv_durations(tmp_path)
    assert durations["bench_x.C.track_t('c', 'compile')"] == pytest.approx(2.0)
    assert durations["bench_x.D.track_t"] == pytest.approx(2.0) and sum(durations.values()) == pytest.approx(8.0)
    assert session_cost._class_work(r"C\.\w+\(\W[^,]+,\s\Wcompile", durations, {}) == pytest.approx(4.0)


def test_profile_durations_sum_the_pass_s_recorded_seconds(tmp_path):
    (tmp_path / "m").mkdir()
    entries = [{"case": "c", "impl": "eager", "seconds": 1.5}, {"case": "c", "impl": "compile", "seconds": 4.0},
               {"case": "c", "impl": "fused", "skipped": "on CUDA only"}]
    (tmp_path / "m" / f"{'a' * 40}.json").write_text(json.dumps({"version": 1, "profiles": entries}))
    assert session_cost.profile_durations(tmp_path) == pytest.approx(5.5)
    # a pass that records its own seconds (the cases' set-up between entries too) is counted whole
    (tmp_path / "m" / f"{'a' * 40}.json").write_text(json.dumps({"version": 1, "profiles": entries, "seconds": 8.0}))
    assert session_cost.profile_durations(tmp_path) == pytest.approx(8.0)


def test_a_rehearsal_s_setup_is_also_shown_with_the_session_s_own_check_and_registration(tmp_path, capsys):
    """Setup is two Python processes that import torch, and little else: on a shared CPU their
    times follow the load of the moment, so the table shows them as the session itself timed them
    (stages.tsv's measured: rows) beside the constants, and setup recomputed with them."""
    constants = tmp_path / "c.json"
    constants.write_text(json.dumps({"python_s": 0.05, "run_module_s": 0.25, "git_s": 0.0,
                                     "check_python_s": 2.0, "register_s": 2.5}))
    tsv = tmp_path / "stages.tsv"
    tsv.write_text("stage\tstatus\tseconds\tlimit_s\nsetup\tok\t10.0\t-\n"
                   "measured:check_python_s\t1 value (5.00-5.00 s)\t5.00\tmodel 6.0\n"
                   "measured:register_s\t1 value (4.50-4.50 s)\t4.50\tmodel 7.0\n")
    assert session_cost.main(["--grid", "tiny", "--constants", str(constants), "--stages-tsv", str(tsv),
                              "--stages", "profile"]) == 0
    out = capsys.readouterr().out
    assert "| setup | 4.9 | - | - | 10.0 (ok) | -51% |" in out  # 0.3 + 2.05 + 2.55 with the constants
    assert "| check_python_s | 5.00 | 2.00 | -60% |" in out
    assert "setup with the session's own check_python_s, register_s: 9.9 s against the measured 10.0 s (-1%)" in out
