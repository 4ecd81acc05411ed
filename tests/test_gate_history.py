"""The gate judges a bounded history (regressions/history.py): on a history longer than the
window, a change inside it gets the full history's verdict; the frame holds only the window's
rows; the report says what was left out; a window too short for the detector is refused."""

import pytest

import regressions.judgement as judgement
from regressions.cli import main
from regressions.history import HISTORY, min_history
from regressions.judgement import CannotJudge, judge_folder
from tests.asv_fixtures import SeriesSpec, write_history

N_COMMITS = 90


def make(tmp_path, steps):
    spec = SeriesSpec("bench.Mlp.track_latency", (16, "fused"), ("m", "impl"), steps=steps, run_noise=0.01)
    quiet = SeriesSpec("bench.Mlp.track_latency", (16, "eager"), ("m", "impl"), run_noise=0.01)
    return write_history(tmp_path / "results", [spec, quiet], N_COMMITS, seed=5, n_samples=15)


def verdict(results, **kw) -> dict:
    """The gate's decisions: failed, the judged commits, and per item its category, note, class and
    change (commit, benchmark, parameters, direction, clear, confirmed). Not the p-values and
    scores: those come from the noise estimated over the history read, which a window changes."""
    gate = judge_folder(results, **kw).document()["gate"]
    kept = ("commit_hash", "benchmark", "params", "direction", "clear", "confirmed", "present_at_newest")
    items = [(i["category"], i["note"], (i.get("classification") or {}).get("class"),
              tuple(i["change"].get(k) for k in kept)) for i in gate["items"]]
    return {"failed": gate["failed"], "judged": gate["judged"], "items": items}


# a step at the newest commit (fails at once), and one 12 commits back (an earlier, still open one)
CHANGES = {"at the newest commit": ((N_COMMITS - 1, 0.3),), "12 commits back": ((N_COMMITS - 12, 0.3),)}


@pytest.mark.parametrize("where", CHANGES)
@pytest.mark.parametrize("history", [min_history(), 60])
def test_a_change_inside_the_window_gets_the_full_historys_verdict(tmp_path, where, history):
    made = make(tmp_path, CHANGES[where])
    full = verdict(made.results_dir, history=None)
    assert full["items"], "the planted change must be an item of the full history's verdict"
    assert verdict(made.results_dir, history=history) == full


def test_a_window_shorter_than_the_detector_needs_changes_the_verdict(tmp_path, monkeypatch):
    """What makes the equality above worth checking: cut below min_history, the same history is
    judged otherwise (which is why the gate refuses such a window). (The step at the newest commit
    keeps its verdict down to 6 commits: the newest-commit rule needs only min_before before it.)"""
    made = make(tmp_path, CHANGES["12 commits back"])
    full = verdict(made.results_dir, history=None)
    monkeypatch.setattr(judgement, "min_history", lambda: 1)
    assert verdict(made.results_dir, history=12) != full


def test_the_frame_holds_only_the_windows_rows(tmp_path, monkeypatch):
    made = make(tmp_path, CHANGES["at the newest commit"])
    sizes = []
    real = judgement.load_results

    def spy(*args, rows, **kw):
        table = {}
        loaded = real(*args, rows=lambda t: table.setdefault("rows", rows(t)) if not table.update(t=t) else None, **kw)
        sizes.append((table["t"].n_rows, len(loaded.frame), loaded.frame["commit_hash"].nunique()))
        return loaded

    monkeypatch.setattr(judgement, "load_results", spy)
    judge_folder(made.results_dir, history=40)
    assert sizes == [(2 * N_COMMITS, 2 * 40, 40)]


def test_with_a_base_the_window_covers_every_judged_commit_and_the_history_before_it(tmp_path, monkeypatch):
    made = make(tmp_path, CHANGES["12 commits back"])
    base = made.commits[N_COMMITS - 20]
    windowed = verdict(made.results_dir, history=min_history(), base=base)
    assert len(windowed["judged"][0]["commits"]) == 19
    assert windowed == verdict(made.results_dir, history=None, base=base)
    assert any(category == "regression" for category, *_ in windowed["items"])  # the step came after the base


def test_the_report_says_what_history_it_judged(tmp_path, capsys):
    made = make(tmp_path, CHANGES["at the newest commit"])
    cut = judge_folder(made.results_dir, history=40).header
    assert ("Judged on the newest 40 commits of each run up to the judged ones (--history 40; 50 older commits "
            "of 1 run not read, of up to 90): a regression older than that, even one still open, is not seen") in cut
    assert "Judged on the newest" not in judge_folder(made.results_dir, history=None).header
    assert "Judged on the newest" not in judge_folder(made.results_dir, history=N_COMMITS).header
    assert HISTORY >= N_COMMITS  # the default reads the whole of a history this short
    assert main(["--results", str(made.results_dir), "--history", "40"]) == 1
    assert "Judged on the newest 40 commits" in capsys.readouterr().out


@pytest.mark.parametrize("value, said", [("5", f"need at least {min_history()} commits"),
                                         ("many", "is not a number of commits or 'all'")])
def test_a_history_too_short_or_not_a_number_is_exit_2(tmp_path, capsys, value, said):
    made = make(tmp_path, ())
    with pytest.raises(SystemExit) as exc:
        main(["--results", str(made.results_dir), "--history", value])
    assert exc.value.code == 2 and said in capsys.readouterr().err
    with pytest.raises(CannotJudge, match="need at least"):
        judge_folder(made.results_dir, history=5)
    assert main(["--results", str(made.results_dir), "--history", "all"]) == 0
