"""python -m benchmarks.rerun and the gate's --rerun: bad input exits 2 with a message naming it;
the session interleaves A B A B within its budget (fake measurements; the real asv run is in
tests/test_rerun_rehearsal.py)."""

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import rerun
from benchmarks.bisect import Options, Target, series_values
from regressions import cli
from regressions.rerun_candidates import Candidate
from tests.asv_fixtures import SeriesSpec, write_history

FUSED = "case='linear_act M=64 K=128 N=256 fp32 gelu_tanh bias', impl='fused'"


def _candidate():
    return Candidate("bench_ops.LinearAct.track_latency", FUSED, "m", "env", "a" * 40, "c" * 40, "b" * 40, "suspected",
                     0.1)


def test_a_session_interleaves_base_and_newest_and_stops_within_its_budget():
    now = [0.0]
    calls = []

    def measure(commit):
        calls.append(commit[0])
        now[0] += 10.0  # 10 s per side: a pair takes 20 s
        return {"fused": 1.0, "eager": 1.0}

    out = rerun.session(_candidate(), measure, seconds=60, rounds=5, clock=lambda: now[0])
    assert calls == list("abababab"[:6])  # a fourth pair would end at 80 s > 60 s
    assert [r["side"] for r in out["rounds"]] == list("ABABAB") and out["problem"] == "" and out["seconds"] == 60


def test_two_pairs_always_run_one_pair_has_no_spread_to_judge_against():
    now = [0.0]

    def measure(commit):
        now[0] += 25.0  # a pair takes 50 s: a second one overruns a 60 s budget, and still runs
        return {"fused": 1.0}

    out = rerun.session(_candidate(), measure, seconds=60, rounds=4, clock=lambda: now[0])
    assert [r["side"] for r in out["rounds"]] == list("ABAB") and out["seconds"] == 100


def test_a_side_without_a_fused_value_ends_the_session_and_says_why():
    out = rerun.session(_candidate(), lambda commit: {} if commit.startswith("b") else {"fused": 1.0}, 60, 4)
    assert out["problem"].startswith("no value for the fused series at bbbbbbbbbbbb") and len(out["rounds"]) == 1


def _history(results, base):
    spec = SeriesSpec("bench_ops.LinearAct.track_latency", ("linear_act M=64 K=128 N=256 fp32 gelu_tanh bias", "fused"),
                      ("case", "impl"), base=base)
    return write_history(results, [spec], 4, seed=3, n_samples=5)


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.mark.parametrize("asv_ran", [True, False])
def test_a_side_has_this_sessions_value_or_none_never_the_historys(tmp_path, monkeypatch, asv_ran):
    history = _history(tmp_path / "results", 1e-4)
    fresh = _history(tmp_path / "fresh", 2e-4)  # what asv writes when it runs: the same commits, new values
    folder = history.results_dir / history.machine
    kept = _files(folder)

    def suite_runner(target, options, regex):
        def run(commits):
            for c in commits if asv_ran else ():
                for f in (fresh.results_dir / fresh.machine).glob(f"{c[:8]}-*.json"):
                    shutil.copy(f, folder / f.name)
            return 0 if asv_ran else 1
        return run

    monkeypatch.setattr(rerun.bisect, "suite_runner", suite_runner)
    a = history.commits[0]
    c = Candidate("bench_ops.LinearAct.track_latency", FUSED, history.machine, history.env_name, a,
                  history.commits[2], history.commits[-1], "suspected", 0.1)
    measure = rerun.measure_candidate(c, Options(history.results_dir, Path("asv.conf.json"), "python", None), ())
    now = series_values(fresh.results_dir, Target(c.benchmark, FUSED, fresh.machine, "", ""))[a]
    assert now != series_values(history.results_dir, Target(c.benchmark, FUSED, history.machine, "", ""))[a]
    assert measure(a) == ({"fused": now} if asv_ran else {})
    assert _files(folder) == kept  # the history's files are back as they were, the run's dropped


def test_the_controls_are_the_same_case_with_another_impl():
    assert rerun.series_of(FUSED) == {"fused": FUSED, "eager": FUSED.replace("'fused'", "'eager'"),
                                      "compile": FUSED.replace("'fused'", "'compile'")}
    assert rerun.series_of("size=3") == {"fused": "size=3"}
    assert rerun.series_of(FUSED, ()) == {"fused": FUSED}


@pytest.mark.parametrize("args, said", [
    (["--at-most", "9"], "--at-most 9: expected 1 to 5"),
    (["--seconds", "0"], "--seconds 0: expected more than 0 and at most 60"),
    (["--seconds", "90"], "--seconds 90"),
    (["--rounds", "1"], "--rounds 1: expected at least 2"),
    (["--controls", "eager,peer"], "--controls 'eager,peer': expected some of eager,compile, or none"),
])
def test_bad_arguments_exit_2_with_the_reason(tmp_path, capsys, args, said):
    with pytest.raises(SystemExit) as exc:
        rerun.main(["--from-gate", "g.json", "--out", str(tmp_path / "r.json"), *args])
    assert exc.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize("content, said", [('{"summary": "x"}', "not the gate's JSON output"),
                                           ("[1, 2]", "top level is list"), ("{", "")])
def test_a_gate_file_that_is_not_the_gates_json_exits_2(tmp_path, capsys, content, said):
    (tmp_path / "gate.json").write_text(content)
    code = rerun.main(["--from-gate", str(tmp_path / "gate.json"), "--out", str(tmp_path / "r.json"),
                       "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --from-gate") and said in err and "Traceback" not in err
    assert not (tmp_path / "r.json").exists()


def test_a_missing_results_folder_exits_2(tmp_path, capsys):
    code = rerun.main(["--from-gate", "g.json", "--out", str(tmp_path / "r.json"), "--results", str(tmp_path / "no")])
    assert code == 2 and "no such folder" in capsys.readouterr().err


def test_no_candidates_writes_an_empty_rerun(tmp_path):
    (tmp_path / "gate.json").write_text(json.dumps({"gate": {"judged": [], "items": []}}))
    assert rerun.main(["--from-gate", str(tmp_path / "gate.json"), "--out", str(tmp_path / "r.json"),
                       "--results", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "r.json").read_text()) == {"version": 1, "reruns": []}


@pytest.mark.parametrize("content, said", [("{}", "expected benchmarks.rerun's JSON"), ("", "empty")])
def test_the_gate_refuses_a_rerun_file_it_cannot_read(tmp_path, capsys, content, said):
    (tmp_path / "rerun.json").write_text(content)
    assert cli.main(["--results", str(tmp_path), "--rerun", str(tmp_path / "rerun.json")]) == 2
    err = capsys.readouterr().err
    assert f"--rerun {tmp_path / 'rerun.json'}" in err and said in err


def _gate_doc(machines_and_changes):
    """The gate's JSON with one failing, unconfirmed fused finding per (machine, change)."""
    judged = [{"machine": m, "env_name": "env", "commits": ["n" * 40]} for m in dict.fromkeys(m for m, _ in
                                                                                               machines_and_changes)]
    items = [{"category": "regression", "change": {
        "benchmark": "bench_ops.LinearAct.track_latency", "params": FUSED.replace("bias", f"bias {i}"), "machine": m,
        "env_name": "env", "before": 1.0, "confirmed": False, "series_last_commit": "n" * 40,
        "before_earliest": "a" * 40, "previous_commit": "a" * 40, "commit_hash": "b" * 40, "relative_change": change}}
        for i, (m, change) in enumerate(machines_and_changes)]
    return {"gate": {"judged": judged, "items": items}}


def _rerun_main(tmp_path, doc, *args, measure_for=None):
    (tmp_path / "gate.json").write_text(json.dumps(doc))
    measured = []

    def fake(candidate, options, controls):
        measured.append(candidate.machine)
        return lambda commit: {"fused": 1.0}

    code = rerun.main(["--from-gate", str(tmp_path / "gate.json"), "--results", str(tmp_path), "--rounds", "2",
                       *args], measure_for=measure_for or fake)
    return code, measured


def test_the_cap_is_per_machine_after_the_machine_filter(tmp_path):
    # the larger changes, all on b200, came first in the global order: h200's one was dropped
    doc = _gate_doc([("b200-a-gpu0", 0.3)] * 6 + [("h200-a-gpu0", 0.1)])
    out = tmp_path / "r.json"
    code, measured = _rerun_main(tmp_path, doc, "--machine", "h200-a-gpu0", "--out", str(out))
    assert code == 0 and measured == ["h200-a-gpu0"]
    assert [r["machine"] for r in json.loads(out.read_text())["reruns"]] == ["h200-a-gpu0"]
    code, measured = _rerun_main(tmp_path, doc, "--machine", "b200-a-gpu0", "--out", str(out))
    assert code == 0 and measured == ["b200-a-gpu0"] * 5  # 5 a machine a push
    code, measured = _rerun_main(tmp_path, doc, "--out", str(out))  # every machine: 5 each still
    assert code == 0 and measured == ["b200-a-gpu0"] * 5 + ["h200-a-gpu0"]


@pytest.mark.parametrize("out, said", [("{tmp}", "is a folder"), ("{tmp}/gate.json/r.json", "gate.json is not a folder")])
def test_an_out_that_cannot_be_written_exits_2_before_measuring(tmp_path, capsys, out, said):
    def refuse(*args):
        raise AssertionError("measured although --out cannot be written")

    with pytest.raises(SystemExit) as exc:
        _rerun_main(tmp_path, _gate_doc([("m", 0.1)]), "--out", out.format(tmp=tmp_path), measure_for=refuse)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"--out {out.format(tmp=tmp_path)}: " in err and said in err


def test_an_out_in_a_folder_not_made_yet_is_written(tmp_path):
    out = tmp_path / "not" / "yet" / "r.json"
    code, measured = _rerun_main(tmp_path, _gate_doc([("m", 0.1)]), "--out", str(out))
    assert code == 0 and measured == ["m"] and len(json.loads(out.read_text())["reruns"]) == 1


def _missing(tmp_path, capsys, doc, reruns):
    from benchmarks import rerun_missing

    (tmp_path / "gate.json").write_text(json.dumps(doc))
    files = []
    for i, content in enumerate(reruns):
        files.append(str(tmp_path / f"rerun-{i}.json"))
        Path(files[-1]).write_text(content if isinstance(content, str) else json.dumps(content))
    code = rerun_missing.main([str(tmp_path / "gate.json"), *files])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_final_gate_names_a_machine_whose_rerun_is_missing(tmp_path, capsys):
    doc = _gate_doc([("b200-a-gpu0", 0.3), ("b200-a-gpu0", 0.2), ("h200-a-gpu0", 0.1), ("h200-b-gpu0", 0.1)])
    h200 = {"version": 1, "reruns": [{"benchmark": "b", "params": "p", "machine": "h200-a-gpu0", "commit_hash": "b" * 40,
                                      "base_commit": "a" * 40, "newest_commit": "n" * 40, "rounds": [], "problem": "x"}]}
    code, out, _ = _missing(tmp_path, capsys, doc, [h200, {"version": 1, "reruns": []}])
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2 and "h200-a-gpu0" not in out
    assert "No A/B re-run came back from b200-a-gpu0" in lines[0] and "its 2 candidate finding(s) keep the first verdict" in lines[0]
    assert "from h200-b-gpu0" in lines[1]
    assert _missing(tmp_path, capsys, _gate_doc([("h200-a-gpu0", 0.1)]), [h200])[:2] == (0, "")  # all came back


@pytest.mark.parametrize("rerun_file, said", [("{", "rerun-0.json: "), ({"reruns": []}, "expected benchmarks.rerun's JSON")])
def test_a_rerun_file_it_cannot_read_exits_2_naming_it(tmp_path, capsys, rerun_file, said):
    code, _, err = _missing(tmp_path, capsys, _gate_doc([("m", 0.1)]), [rerun_file])
    assert code == 2 and err.startswith("error: ") and said in err and "Traceback" not in err


def test_the_missing_rerun_check_runs_without_torch(tmp_path):
    """The final gate's job installs the dashboard alone (no torch, triton, fused_mlp)."""
    import subprocess
    import sys

    from tests.test_layering import WITHOUT_TORCH  # torch, triton and fused_mlp not importable

    (tmp_path / "gate.json").write_text(json.dumps(_gate_doc([("m", 0.1)])))
    blocker = WITHOUT_TORCH[:WITHOUT_TORCH.index("from tests.suite_fixtures")]
    code = blocker + "from benchmarks import rerun_missing\nsys.exit(rerun_missing.main(sys.argv[1:]))\n"
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "gate.json")], cwd=Path(__file__).parents[1], capture_output=True,
                          text=True)
    assert done.returncode == 0 and "No A/B re-run came back from m" in done.stdout, done.stderr[-3000:]
