"""benchmarks.run's command line: bad input is exit 2 with a message (never a traceback, never a
folder outside results/), A..B is asv's first-parent range, and results/benchmarks.json keeps the
benchmarks a run did not list."""

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import run

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _grid_env_restored(monkeypatch):
    """run.main selects its grid in this process's environment (for the asv runs it starts):
    put it back after each test, or a later test module would see this one's tiny grid."""
    monkeypatch.setenv(run.GRID_ENV, os.environ.get(run.GRID_ENV, "default"))  # undone: unset again


def cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "benchmarks.run", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("machine", ["../evil", "/tmp/evil", "a/b", "..", ".hidden", "x" * 101, "name with space"])
def test_a_machine_name_that_is_not_one_folder_is_refused(machine):
    done = cli("--machine", machine, "--grid", "tiny")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a machine name is a folder under results/" in done.stderr and "Traceback" not in done.stderr
    assert not (ROOT / "evil").exists() and not Path("/tmp/evil").exists()


def test_plain_machine_names_pass():
    committed = [p.parent.name for p in (ROOT / "results").glob("*/machine.json")]  # the history's machines
    assert committed
    for name in ("h200-runner", "compile-sm_90-triton-3.6.0", "ci.cpu_1", *committed):
        assert run.check_machine_name(name) is None, name
    assert run.check_machine_name("h200/runner") is not None  # the same check does refuse


def test_a_python_without_the_suite_s_packages_is_exit_2_with_what_is_missing(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    fake.chmod(0o755)
    done = cli("--machine", "m", "--grid", "tiny", "--python", str(fake))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "No module named 'torch'" in done.stderr and "needs torch, triton and asv" in done.stderr
    assert "Traceback" not in done.stderr
    missing = cli("--machine", "m", "--python", str(tmp_path / "nosuch"))
    assert missing.returncode == 2 and "cannot be run" in missing.stderr and "Traceback" not in missing.stderr


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_a_range_is_first_parent_as_asv_reads_it(tmp_path):
    """main: A - M (merge of a side branch with 3 commits) - C. asv's A..C is M and C, not the side commits."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "A")
    start = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "side")
    for i in range(3):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"side {i}")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "--no-ff", "-m", "M", "side")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "C")
    assert len(_git(repo, "rev-list", f"{start}..main").split()) == 5  # what plain rev-list gives
    commits = run.resolve_commits(f"{start}..main", repo=repo)
    subjects = [_git(repo, "log", "-1", "--format=%s", c) for c in commits]
    assert subjects == ["M", "C"]


def test_benchmarks_json_keeps_what_the_run_did_not_list(tmp_path, monkeypatch):
    """A run of another grid must not hide committed series from `asv publish`."""
    results = tmp_path / "results"
    results.mkdir()
    config = tmp_path / "asv.conf.json"
    config.write_text('{\n  // a comment, as asv allows\n  "version": 1, "results_dir": "results"\n}\n')
    before = {"bench_compile.KernelResources.track_registers": {"params": [["a", "b"]], "version": "1"},
              "bench_ops.LinearAct.track_latency": {"params": [["default case"], ["fused"]], "version": "1"},
              "version": 2}
    (results / "benchmarks.json").write_text(json.dumps(before))

    asked = []

    def fake_asv(python, conf, machine, commit, library_path, extra):  # asv rewrites it with its own grid
        asked.append(extra)
        (results / "benchmarks.json").write_text(json.dumps(
            {"bench_ops.LinearAct.track_latency": {"params": [["tiny case"], ["fused"]], "version": "1"},
             "bench_ops.NarrowMLP.track_latency": {"params": [["n"], ["fused"]], "version": "1"}, "version": 2}))
        return 0

    _offline_run(monkeypatch, fake_asv)
    assert run.main(["--machine", "m", "--grid", "tiny", "--config", str(config)]) == 0
    after = json.loads((results / "benchmarks.json").read_text())
    assert after["bench_compile.KernelResources.track_registers"] == before["bench_compile.KernelResources.track_registers"]
    # this run's entry, with the values listed before kept
    assert after["bench_ops.LinearAct.track_latency"]["params"] == [["default case", "tiny case"], ["fused"]]
    assert "bench_ops.NarrowMLP.track_latency" in after and after["version"] == 2
    assert asked == [["-b", run.TIMINGS_ONLY]]  # no static compile metrics on a runner's time by default


def _offline_run(monkeypatch, fake_asv) -> None:
    """benchmarks.run with the suite check, the machine registration and asv itself replaced
    (``fake_asv`` stands for run_asv), on a clean tree."""
    monkeypatch.setattr(run, "check_python", lambda python: None)
    monkeypatch.setattr(run, "register_machine", lambda python, machine: 0)
    monkeypatch.setattr(run, "run_asv", fake_asv)
    monkeypatch.setattr(run, "uncommitted_code_changes", lambda: "")


@pytest.mark.parametrize("broken", ['{"bench_ops.LinearAct.track_latency": {', "[]"])
def test_an_unreadable_benchmarks_json_is_refused_and_left_as_it_is(tmp_path, monkeypatch, capsys, broken):
    """Read as {} it was never merged, and asv's list of this run alone replaced the history's."""
    results = tmp_path / "results"
    results.mkdir()
    config = tmp_path / "asv.conf.json"
    config.write_text('{"version": 1, "results_dir": "results"}')
    (results / "benchmarks.json").write_text(broken)
    ran = []

    def fake_asv(python, conf, machine, commit, library_path, extra):
        ran.append(commit)
        (results / "benchmarks.json").write_text(json.dumps({"bench_ops.NarrowMLP.track_latency": {}, "version": 2}))
        return 0

    _offline_run(monkeypatch, fake_asv)
    assert run.main(["--machine", "m", "--grid", "tiny", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{results / 'benchmarks.json'} cannot be read" in err and not ran
    assert (results / "benchmarks.json").read_text() == broken


def test_the_default_selection_is_every_timing_but_not_compile_metrics():
    import re

    pick = re.compile(run.TIMINGS_ONLY)
    assert pick.search("bench_ops.LinearAct.track_latency") and pick.search("bench_device.CopyCeiling.track_copy_seconds")
    assert pick.search("bench_training.Training.track_latency")
    assert not pick.search("bench_compile.KernelResources.track_registers")


def _empty_history(tmp_path, n: int):
    """A repository of n empty commits: (repo, its first-parent line oldest first, an empty
    results folder with machine folder m)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for i in range(n):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    line = _git(repo, "rev-list", "--first-parent", "--reverse", "main").split()
    results = tmp_path / "results"
    (results / "m").mkdir(parents=True)
    return repo, line, results


def test_new_is_every_commit_after_the_machine_s_newest_result(tmp_path):
    """What CI measures on a push: a run cancelled while pending leaves its commits to the next."""
    repo, line, results = _empty_history(tmp_path, 4)
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m") == line[-1:]  # none yet: HEAD
    (results / "m" / f"{line[1][:8]}-existing-py.json").write_text("{}")
    (results / "other").mkdir()
    (results / "other" / f"{line[2][:8]}-existing-py.json").write_text("{}")  # another machine's: not ours
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m") == line[2:]
    (results / "m" / f"{line[3][:8]}-existing-py.json").write_text("{}")
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m") == []


def test_run_asv_keeps_the_reasons_the_benchmarks_filed(tmp_path, monkeypatch):
    """The benchmark processes file into $FUSED_MLP_OUTCOMES; benchmarks.run merges it into
    results/reasons/<machine>/<commit>.reasons (benchmarks/skip_reasons.py)."""
    from benchmarks import skip_reasons
    from workload.grids import BENCH_ENV, OUTCOMES_ENV

    config = tmp_path / "asv.conf.json"
    config.write_text('{"version": 1, "results_dir": "results"}')
    seen = {}
    why = skip_reasons.entry("bench_ops.LinearAct.track_latency", {"case": "c", "impl": "cublaslt"}, "skipped", "no CUDA")

    def fake_asv(cmd, env, commit):  # one benchmark process filing a skip
        seen.update(env)
        Path(env[OUTCOMES_ENV], "x.json").write_text(json.dumps({"entries": [why], "measured": []}))
        return 0

    # the runner-state probe around the run (harness/runner_state.py) finds no NVML
    monkeypatch.setattr(run.subprocess, "run", lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, 1, "", "no NVML"))
    monkeypatch.setattr(run, "run_naming_commit", fake_asv)
    assert run.run_asv("python", config, "m", "a" * 40, ROOT, ["-b", "LinearAct"]) == 0
    assert seen[BENCH_ENV] == "LinearAct"
    doc = skip_reasons.read(tmp_path / "results" / "reasons" / "m" / f"{'a' * 40}.reasons")
    assert doc["entries"] == [why] and not Path(seen[OUTCOMES_ENV]).exists()  # the temporary folder is gone


# What asv 0.6.6 prints for a run in an existing environment: the config's branch head, whatever
# --set-commit-hash names (asv/commands/run.py: "For {project} commit {decorated hash}:").
FAKE_ASV = """#!/bin/sh
case "$*" in
  *"-m asv"*) echo "· Discovering benchmarks"; echo "· For fused-mlp commit 4d18c95f <main>:";
              echo "·· Benchmarking existing-py"; exit 0 ;;
  *) exit 1 ;;  # the runner-state probe: no NVML here
esac
"""


def test_each_commit_s_asv_log_line_names_that_commit(tmp_path, capsys):
    """asv's log named main's head for every commit of a --commits run; each now names its own."""
    python = tmp_path / "python"
    python.write_text(FAKE_ASV)
    python.chmod(0o755)
    config = tmp_path / "asv.conf.json"
    config.write_text('{"version": 1, "results_dir": "results"}')
    for sha in ("a" * 40, "b" * 40):
        assert run.run_asv(str(python), config, "m", sha, ROOT, ["-b", "LinearAct"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "commit" in line]
    assert lines == ["· For fused-mlp commit aaaaaaaa:", "· For fused-mlp commit bbbbbbbb:"], lines


def test_asv_s_other_lines_pass_unchanged():
    line = "·· For fused-mlp commit 4d18c95f <main> (round 1/2):\n"
    assert run.asv_log_line(line, "c" * 40) == "·· For fused-mlp commit cccccccc (round 1/2):\n"
    for other in ("· Running 3 total benchmarks (1 commits * 1 environments * 3 benchmarks)\n",
                  "bench_ops.LinearAct.track_latency  ok\n"):
        assert run.asv_log_line(other, "c" * 40) == other


def _graphed_series(html: Path, benchmark: str) -> int:
    """Parameter combinations of `benchmark` with at least one value in `asv publish`'s graphs,
    per machine (asv draws a machine whose parameters changed over its history, an OS update
    say, in one graph per parameter set: a combination in both counts once)."""
    graphed = set()
    for path in html.glob(f"graphs/arch-*/**/{benchmark}.json"):
        machine = next(part for part in path.parts if part.startswith("machine-"))
        points = json.loads(path.read_text())
        width = max((len(values) for _, values in points if isinstance(values, list)), default=0)
        graphed |= {(machine, i) for i in range(width)
                    if any(isinstance(values, list) and values[i] is not None for _, values in points)}
    return len(graphed)


def _stored_series(machine_dir: Path, benchmark: str) -> int:
    """Parameter combinations of `benchmark` with a value in some committed result file."""
    combos = set()
    for path in machine_dir.glob("*-*.json"):
        doc = json.loads(path.read_text())
        row = dict(zip(doc["result_columns"], doc["results"].get(benchmark) or []))
        params = row.get("params") or []
        values = row.get("result") or []
        combos.update(combo for combo, value in zip(itertools.product(*params), values)
                      if value is not None and value == value)  # neither failed (None) nor skipped (NaN)
    return len(combos)


def test_a_tiny_grid_listing_merged_into_the_committed_one_keeps_every_compile_series_graphed(tmp_path):
    """asv lists every benchmark it discovers with the current grid's params, so keeping only the
    benchmarks a run did not list kept nothing: after one tiny run `asv publish` graphed 16 of the
    committed compile history's 91 series. Merged per parameter value, all still show."""
    from workload import kernel_configs

    committed = json.loads((ROOT / "results" / "benchmarks.json").read_text())
    tiny = {}
    for name, entry in committed.items():  # what asv writes after a tiny run: the tiny grid's values
        if name == "version":
            tiny[name] = entry
        elif name.startswith("bench_compile.KernelResources."):
            tiny[name] = {**entry, "params": [[repr(v) for v in values] for values in kernel_configs.params("tiny")]}
        else:
            tiny[name] = {**entry, "params": [values[:1] + ["'a tiny-grid value'"] for values in entry["params"]]}
    merged = run.merge_benchmarks_json(committed, tiny)
    compared = 0
    for name, entry in committed.items():
        if name != "version":
            assert len(merged[name]["params"]) == len(entry["params"]), name
            for before, now in zip(entry["params"], merged[name]["params"]):
                assert now[:len(before)] == before, name  # every committed value, in its place
                compared += 1
    assert compared > 0
    assert "'a tiny-grid value'" in merged["bench_ops.LinearAct.track_latency"]["params"][0]

    shutil.copytree(ROOT / "results", tmp_path / "results")
    (tmp_path / "results" / "benchmarks.json").write_text(json.dumps(merged, indent=4))
    conf = tmp_path / "asv.conf.json"
    conf.write_text(json.dumps({"version": 1, "project": "fused-mlp", "repo": str(ROOT), "dvcs": "git",
                                "branches": ["HEAD"], "environment_type": "existing", "benchmark_dir": "benchmarks",
                                "results_dir": str(tmp_path / "results"), "html_dir": str(tmp_path / "html")}))
    machine_dirs = [p for p in (tmp_path / "results").iterdir() if (p / "machine.json").is_file()]
    assert machine_dirs
    done = subprocess.run([sys.executable, "-m", "asv", "--config", str(conf), "publish"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for metric in ("track_registers", "track_spill_bytes", "track_shared_memory", "track_sass_instructions"):
        benchmark = f"bench_compile.KernelResources.{metric}"
        stored = sum(_stored_series(d, benchmark) for d in machine_dirs)
        assert stored > len(kernel_configs.params("tiny")[0])  # the history has more than the tiny grid
        assert _graphed_series(tmp_path / "html", benchmark) == stored, metric


def test_a_missing_config_is_exit_2_before_anything_is_registered(tmp_path):
    """It printed asv's traceback and exited 1, after writing the machine into ~/.asv-machine.json."""
    done = cli("--machine", "m", "--commits", "HEAD", "--config", str(tmp_path / "missing.json"), env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--config" in done.stderr and "missing.json" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".asv-machine.json").exists()


def test_prepared_runs_skip_the_python_check_and_the_registration(tmp_path, monkeypatch):
    """session.sh checks the Python and registers the machine once (--prepare-only); each class's
    run (--prepared) then imports torch in asv's processes only."""
    results = tmp_path / "results"
    results.mkdir()
    config = tmp_path / "asv.conf.json"
    config.write_text('{"version": 1, "results_dir": "results"}')
    prepared = []
    monkeypatch.setattr(run, "check_python", lambda python: prepared.append("check") or None)
    monkeypatch.setattr(run, "register_machine", lambda python, machine: prepared.append("register") or 0)
    monkeypatch.setattr(run, "run_asv", lambda *args: 0)
    monkeypatch.setattr(run, "uncommitted_code_changes", lambda: "")
    assert run.main(["--machine", "m", "--config", str(config), "--prepare-only"]) == 0
    assert prepared == ["check", "register"]
    assert run.main(["--machine", "m", "--config", str(config), "--prepared", "--grid", "tiny"]) == 0
    assert prepared == ["check", "register"] and os.environ[run.GRID_ENV] == "tiny"


def test_new_looks_as_far_back_as_asked_and_fills_a_gap_oldest_first(tmp_path):
    repo, line, results = _empty_history(tmp_path, 8)
    (results / "m" / f"{line[1][:8]}-existing-py.json").write_text("{}")  # measured 6 commits back
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m", look_back=3) == line[-1:]
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m", look_back=10) == line[2:]
    assert run.resolve_commits("NEW", repo=repo, results=results, machine="m", look_back=10, oldest=2) == line[2:4]


def test_shards_registering_on_one_host_at_once_keep_each_other_s_machine(tmp_path, monkeypatch):
    """asv saves a machine by reading ~/.asv-machine.json, adding one entry and writing it back:
    two shards registering at once each dropped the other's entry (widened here by a slow read)."""
    import threading

    import asv.util

    from benchmarks.harness import environment

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(environment, "machine_identity", lambda: {"gpu": "fake"})
    read = asv.util.load_json

    def slow_read(*args, **kwargs):
        doc = read(*args, **kwargs)
        time.sleep(0.3)  # another shard reads the same file meanwhile
        return doc

    monkeypatch.setattr(asv.util, "load_json", slow_read)
    (tmp_path / ".asv-machine.json").write_text('{"version": 1}')
    shards = [threading.Thread(target=environment.register_asv_machine, args=(f"h200-a-gpu{i}",)) for i in range(3)]
    for shard in shards:
        shard.start()
    for shard in shards:
        shard.join(timeout=20)
    saved = json.loads((tmp_path / ".asv-machine.json").read_text())
    assert {f"h200-a-gpu{i}" for i in range(3)} <= set(saved), sorted(saved)
