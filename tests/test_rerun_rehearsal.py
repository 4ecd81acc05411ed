"""The A/B re-run rehearsed on the CPU (the interpreter, the tiny case) with real asv runs, on
the measured history of tests/planted_history.py: the gate's first verdict fails on the planted
step at the newest commits on the evidence of two commits, and the re-run confirms it; a runner
blip (one commit measured on a machine made 2x slower for that run: $BISECT_TEST_DRIFT) fails
the first verdict too, and the re-run, on the same machine no longer slow, dismisses it.
The re-run measures the fused series alone here (--controls none): on the CPU the controls'
time is a tiny matmul's, mostly noise, while the fused call costs a fixed CPU time."""

import json

import pytest

from tests.planted_history import MACHINE, only_fused

RERUN = ("-m", "benchmarks.rerun", "--rounds", "2", "--controls", "none")


def _gate(history, *args):
    done = history.py("-m", "regressions", "--results", "results", "--format", "json", *args)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout)["gate"]


@pytest.mark.slow  # load-proof: its calls cost a fixed CPU time, whatever runs beside them
def test_the_rerun_confirms_the_planted_step_and_dismisses_a_runner_blip(measured_history, tmp_path):
    history = measured_history.copy_of(tmp_path)
    commits = history.commits
    results_before = sorted(p.name for p in (history.repo / "results" / MACHINE).rglob("*"))

    # the planted step: failing at the newest commits, clear on two commits' evidence
    (tmp_path / "gate.json").write_text(history.gate_json)
    done = history.py(*RERUN, "--from-gate", str(tmp_path / "gate.json"), "--out", str(tmp_path / "step.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (entry,) = json.loads((tmp_path / "step.json").read_text())["reruns"]
    assert (entry["commit_hash"], entry["base_commit"], entry["newest_commit"]) == (commits[-2], commits[5], commits[-1])
    assert [r["side"] for r in entry["rounds"]] == ["A", "B", "A", "B"] and entry["problem"] == ""
    # the history's results are as they were: the re-run's values went to its file only
    assert sorted(p.name for p in (history.repo / "results" / MACHINE).rglob("*")) == results_before
    code, gate = _gate(history, "--base", commits[5], "--rerun", str(tmp_path / "step.json"))
    assert code == 1 and [i["change"]["commit_hash"] for i in gate["failing"]] == [commits[-2]]
    assert gate["rerun"][0]["rerun"]["outcome"] == "confirmed" and "re-run confirmed" in gate["failing"][0]["note"]

    # a runner blip: the 7th commit measured on a machine 2x slower for that run
    done = history.py("-m", "benchmarks.run", "--machine", MACHINE, "--grid", "tiny", "--commits", commits[6],
                      "-b", only_fused(), BISECT_TEST_DRIFT="1.0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    judged = f"{commits[5]}..{commits[6]}"  # the push of that commit alone
    code, first = _gate(history, "--base", judged)
    assert code == 1 and [i["change"]["commit_hash"] for i in first["failing"]] == [commits[6]]
    (tmp_path / "blip-gate.json").write_text(json.dumps({"gate": first}))
    done = history.py(*RERUN, "--from-gate", str(tmp_path / "blip-gate.json"), "--out", str(tmp_path / "blip.json"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    code, final = _gate(history, "--base", judged, "--rerun", str(tmp_path / "blip.json"))
    assert code == 0 and final["failing"] == []
    (item,) = final["rerun"]
    assert item["category"] == "noise" and item["rerun"]["outcome"] == "dismissed" and "did not reproduce" in item["note"]
