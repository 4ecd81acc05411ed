"""tools/measure_classification.py runs (a tiny table: the rates are the tool's to measure, not
this test's) and says what it simulated; bad arguments exit 2."""

import pytest

from tests.tool_modules import load_tool


def _tool():
    return load_tool("measure_classification")


def test_the_table_has_every_row_a_wilson_interval_and_says_the_rerun_is_simulated(capsys):
    assert _tool().main(["--seeds", "3", "4", "--reps", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("seed 3, 2 cases per row") == 1 and out.count("seed 4, 2 cases per row") == 1
    assert "re-run SIMULATED" in out and "within-session run noise 0.5 x the history's" in out
    for row in ("library 5%: fails within 3 commits", "library 10%: fails at its own commit",
                "environment 20%: wrongly blamed", "bimodal runner: false failures", "nothing planted: re-runs"):
        assert out.count(row) == 2, row
    lines = [line for line in out.splitlines() if line.startswith("| library")]
    assert all(line.count("[") == 2 for line in lines)  # an interval in both columns
    assert out.count("clean history, 31 fused series:") == 2 and out.count("bimodal runner history, 31") == 2
    assert "more than 5 asked for at" in out


def test_the_rerun_cost_a_push_scales_with_the_fused_series_a_push_judges(capsys):
    assert _tool().main(["--seeds", "3", "--reps", "2", "--fused-series", "62"]) == 0
    assert "clean history, 62 fused series:" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--reps", "0"], ["--session-share", "2"], ["--seeds"],
                                  ["--fused-series", "0"]])
def test_bad_arguments_exit_2(args):
    with pytest.raises(SystemExit) as exc:
        _tool().main(args)
    assert exc.value.code == 2
