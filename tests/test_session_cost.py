"""The first GPU call's model (benchmarks.session_cost) reads its stages, caps and classes from
tools/gpu_runner/session.sh and counts every process of it: the quick stage fits its cap on one
H200 because the Python check and the machine registration run once per session, not per class."""

from pathlib import Path

from benchmarks import session_cost

ROOT = Path(__file__).resolve().parents[1]
H200 = {name: value for name, (value, _) in session_cost.CONSTANTS.items()}


def _seconds(items) -> float:
    return sum(i.seconds for i in items)


def test_the_model_has_session_sh_s_stages_and_one_run_per_class():
    stages = session_cost.model("quick", H200)
    assert list(stages) == ["setup", *session_cost.session_stages()]
    classes, prepared = session_cost.quick_classes()
    assert prepared and len(classes) >= 6
    quick = {item.what.strip(): item.count for item in stages["quick"]}
    assert quick["asv run per class (discovery, forkserver)"] == len(classes)
    assert quick["runner-state snapshots (before and after each asv run)"] == 2 * len(classes)


def test_the_quick_stage_fits_its_cap_only_with_one_check_per_session(tmp_path):
    """Six benchmarks.run calls that each imported torch twice more (the check and the
    registration) came to more than the 240 s cap."""
    cap = session_cost.session_stages()["quick"]
    assert _seconds(session_cost.model("quick", H200)["quick"]) <= cap
    unprepared = tmp_path / "session.sh"
    unprepared.write_text(session_cost.SESSION.read_text().replace("benchmarks.run --prepared ", "benchmarks.run "))
    assert not session_cost.quick_classes(unprepared)[1]
    assert _seconds(session_cost.model("quick", H200, session=unprepared)["quick"]) > cap
