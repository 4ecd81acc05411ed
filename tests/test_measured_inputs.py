"""The GPU session's measured inputs: each measuring pass times its first call (benchmarks.harness
.first_calls) where the session asks, and benchmarks.measured_inputs turns those records and
setup's `measured:` line into one stages.tsv row per guessed input of the time model."""

import json

import pytest

from benchmarks import measured_inputs, run
from benchmarks.harness import first_calls
from workload.grids import GRID_ENV
from workload.case import Case

LINEAR = Case("linear_act", 8192, 4096, 14336, "bf16", "gelu_tanh", bias=True).key


def _record(impl, seconds, miss, hit, mode="forward", case=LINEAR):
    return {"benchmark": "B", "case": case, "impl": impl, "mode": mode, "seconds": seconds,
            "fxgraph_cache_miss": miss, "fxgraph_cache_hit": hit}


def test_a_first_call_is_filed_only_where_the_session_asks(tmp_path, monkeypatch):
    monkeypatch.delenv(first_calls.FIRST_CALLS_ENV, raising=False)
    assert first_calls.timed_first_call(lambda: 7, "B", LINEAR, "eager", "forward") == 7
    assert not list(tmp_path.iterdir())
    monkeypatch.setenv(first_calls.FIRST_CALLS_ENV, str(tmp_path))
    assert first_calls.timed_first_call(lambda: 8, "B", LINEAR, "eager", "forward") == 8
    (record,) = first_calls.collect(tmp_path)
    assert (record["impl"], record["case"]) == ("eager", LINEAR) and record["seconds"] >= 0
    assert {"fxgraph_cache_miss", "fxgraph_cache_hit"} <= set(record)  # torch 2.13 counts them


def test_compiles_are_told_cold_or_warm_per_graph_and_max_autotune_per_shape():
    records = [_record("compile", 20.0, 1, 0), _record("compile", 50.0, 2, 0, mode="full"),  # 25 s a graph
               _record("compile", 3.0, 0, 1), _record("compile", 0.5, 0, 0),  # warm; neither: not a compile
               _record("compile_max_autotune", 80.0, 1, 0), _record("eager", 0.1, 0, 0)]
    values = measured_inputs.derived(records)
    assert sorted(values["torch_compile_cold_s"]) == [20.0, 25.0]
    assert values["torch_compile_warm_s"] == [3.0]
    # linear_act's forward tunes one GEMM shape: 80 s less one cold graph (the median, 22.5 s)
    assert values["max_autotune_gemm_s"] == [pytest.approx(57.5)]


def test_setup_s_line_is_read_and_a_missing_input_says_so(tmp_path, monkeypatch, capsys):
    """benchmarks.run --prepare-only prints what benchmarks.measured_inputs reads."""
    monkeypatch.setattr(run, "check_python", lambda python: None)
    monkeypatch.setattr(run, "register_machine", lambda python, machine: 0)
    monkeypatch.setenv(GRID_ENV, "tiny")  # prepare_machine selects the grid for this process: put back after
    assert run.main(["--machine", "m", "--prepare-only"]) == 0
    log = tmp_path / "session.log"
    log.write_text("== setup\n" + capsys.readouterr().out)
    assert measured_inputs.main(["--log", str(log)]) == 0
    rows = {line.split("\t")[0]: line.split("\t") for line in capsys.readouterr().out.splitlines()}
    assert rows["measured:check_python_s"][1] == "1 value (0.00-0.00 s)"
    assert float(rows["measured:register_s"][2]) >= 0
    assert rows["measured:torch_compile_cold_s"][1:3] == ["not met", "-"]  # no first call filed: no guess passed off


def test_bad_paths_are_exit_2(tmp_path, capsys):
    for argv in (["--first-calls", str(tmp_path / "none")], ["--log", str(tmp_path / "none.log")]):
        with pytest.raises(SystemExit) as done:
            measured_inputs.main(argv)
        assert done.value.code == 2 and argv[0] in capsys.readouterr().err


def test_an_unreadable_record_is_left_out(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    (tmp_path / "b.json").write_text(json.dumps(_record("compile", 9.0, 1, 0)))
    assert [r["seconds"] for r in first_calls.collect(tmp_path)] == [9.0]
