"""tools/gpu_runner/session.sh under a time limit: every stage has its own timeout, the quick asv
run and the bf16 check come first, and the exit trap packs whatever exists when stages are cut
short. A fake python3 stands in for asv and the GPU check (they hang), so this runs in seconds."""

import json
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAKE_PYTHON = r'''#!/bin/bash
echo "$*" >> "$OUT/calls.txt"
case "$*" in
  *--prepare-only*) echo "asv machine 'm': torch=fake, triton=fake" ;;
  *benchmarks.run*) mkdir -p results/m && echo '{}' > results/m/partial.json; sleep 60 ;;
  *benchmarks.gpu_check*) echo '{"rows": [{"case": "gated_mlp bf16"}], "complete": false}' > "$OUT/gpu_check.json"; sleep 60 ;;
  *) exit 0 ;;
esac
'''


def _device_copy(tmp_path, fake_python=FAKE_PYTHON):
    """A git checkout of tools/ (what session.sh needs) and a bin folder with the fake python3."""
    work = tmp_path / "device"
    shutil.copytree(REPO / "tools", work / "tools")
    for args in (["init", "-q"], ["add", "tools"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(fake_python)
    (bin_dir / "python3").chmod(0o755)
    return work, bin_dir


def test_stages_cut_short_still_bring_back_results_and_the_stage_table(tmp_path):
    work, bin_dir = _device_copy(tmp_path)
    out = tmp_path / "out"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path),
           "STAGE_CAP_quick": "3", "STAGE_MIN_quick": "1", "STAGE_CAP_check": "3", "STAGE_MIN_check": "1",
           "STAGE_CAP_profile": "2", "STAGE_MIN_profile": "1",
           "SESSION_RESERVE_S": "1"}
    done = subprocess.run(["bash", "tools/gpu_runner/session.sh", "--machine", "m", "--grid", "quick",
                           "--budget", "30"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stdout + done.stderr  # gpu_check did not finish
    calls = (out / "calls.txt").read_text().splitlines()
    first_run = next(i for i, c in enumerate(calls) if "benchmarks.run" in c and "--prepare-only" not in c)
    first_check = next(i for i, c in enumerate(calls) if "benchmarks.gpu_check" in c)
    assert first_run < first_check and "--grid quick" in calls[first_run] and "bench_device" in calls[first_run]
    stages = [line.split("\t") for line in (out / "stages.tsv").read_text().splitlines()[1:]]
    # the first call's stages (session.sh first_call_stages): the native tests go with part 3
    assert [s[0] for s in stages] == ["setup", "quick", "check", "profile"]
    stages = stages[1:]
    assert stages[0][1] == "cut at 3s" and stages[1][1] == "cut at 3s" and stages[2][1] == "ok"
    # seconds to a tenth: whole seconds are +-1 s, 20 % of a 5 s setup
    assert all(re.fullmatch(r"\d+\.\d", s[2]) for s in stages) and 3.0 <= float(stages[0][2]) < 10, stages
    assert json.loads((out / "gpu_check.json").read_text())["rows"]  # what was checked came back
    with tarfile.open(out / "results.tgz") as packed:
        assert "results/m/partial.json" in packed.getnames()
    assert "packed results/" in done.stdout


def test_a_failed_setup_has_its_own_exit_status_not_a_wrong_fused_result(tmp_path):
    # exit 1 is gpu_check's "a wrong fused result"; a setup that could not run the suite measured nothing
    work, bin_dir = _device_copy(tmp_path, FAKE_PYTHON.replace(
        """echo "asv machine 'm': torch=fake, triton=fake" ;;""", "echo 'no module named asv' >&2; exit 1 ;;"))
    out = tmp_path / "out"
    done = subprocess.run(["bash", "tools/gpu_runner/session.sh", "--machine", "m", "--budget", "30"], cwd=work,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 4, done.stdout + done.stderr
    assert (out / "stages.tsv").read_text().splitlines()[1].split("\t")[:2] == ["setup", "exit 1"]
    assert "benchmarks.gpu_check" not in (out / "calls.txt").read_text()


def test_bad_arguments_are_exit_2(tmp_path):
    for args in (["--machine"], ["--machine", "m", "--budget", "soon"], ["--machine", "m", "--stages", "all"],
                 ["--grid", "quick"], ["--machine", "m", "--part", "9"], ["--machine", "m", "--part", "two"],
                 ["--machine", "m", "--commits", "HEAD"]):  # the first call has no rest stage to run them
        done = subprocess.run(["bash", str(REPO / "tools/gpu_runner/session.sh"), *args], capture_output=True,
                              text=True, timeout=30, env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "o")})
        assert done.returncode == 2 and done.stderr.strip(), (args, done.stderr)


# Each class's run writes its result file and ends, but LinearAct's hangs, with a child in a
# process group of its own (as asv starts its forkserver) that writes its pid down.
KILLED_PYTHON = r'''#!/bin/bash
echo "$*" >> "$OUT/calls.txt"
case "$*" in
  *--prepare-only*) echo "asv machine 'm': torch=fake" ;;
  *benchmarks.run*)
    while [ $# -gt 0 ] && [ "$1" != --bench ]; do shift; done
    class=$(printf '%s' "$2" | tr -cd 'A-Za-z')
    if [ "$class" = benchopsLinearAct ]; then
      set -m; sleep 300 & echo $! > "$OUT/forkserver.pid"; set +m
      echo $$ > "$OUT/run.pid"; sleep 300
    fi
    mkdir -p results/m && echo '{}' > "results/m/$class.json" ;;
  *) exit 0 ;;
esac
'''


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_kill_of_the_whole_call_keeps_every_finished_class_and_leaves_no_process(tmp_path):
    """`timeout -s KILL` on the session runs no exit trap: the classes that finished are already
    in $OUT, and the running stage (its timeout, benchmarks.run, asv's forkserver) ends too."""
    work, bin_dir = _device_copy(tmp_path, KILLED_PYTHON)
    out = tmp_path / "out"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path), "SESSION_RESERVE_S": "1"}
    done = subprocess.run(["timeout", "-s", "KILL", "6", "bash", "tools/gpu_runner/session.sh", "--machine", "m",
                           "--grid", "quick", "--budget", "600"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode in (137, -9), done.stdout + done.stderr  # timeout kills its own group, itself too
    pids = [int((out / name).read_text()) for name in ("run.pid", "forkserver.pid")]
    deadline = time.monotonic() + 10
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(map(_alive, pids)), "the stage's processes outlived the call"
    finished = sorted(p.name for p in (out / "results" / "m").glob("*.json"))
    assert finished == ["benchdevice.json", "benchopsGatedMLP.json", "benchopsNarrowMLP.json"], finished


def test_a_native_stage_cut_short_keeps_each_finished_test_s_verdict(tmp_path):
    """-q left a cut run three lines of dots; each test's verdict is now in the log as it finishes."""
    real = shutil.which("python3", path=str(Path(sys.executable).parent)) or sys.executable
    work, bin_dir = _device_copy(tmp_path, FAKE_PYTHON.replace('  *) exit 0 ;;', f'  *"-m pytest"*) exec {real} "$@" ;;\n  *) exit 0 ;;'))
    tests = tmp_path / "native_tests"
    tests.mkdir()
    (tests / "test_kernels.py").write_text("import time\n\ndef test_first_kernel():\n    pass\n\n"
                                           "def test_second_kernel_hangs():\n    time.sleep(60)\n")
    out = tmp_path / "out"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path), "SESSION_RESERVE_S": "1",
           "STAGE_CAP_native": "10", "STAGE_MIN_native": "1", "NATIVE_TESTS": str(tests / "test_kernels.py"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(["bash", "tools/gpu_runner/session.sh", "--machine", "m", "--stages", "native",
                           "--budget", "60"], cwd=work, env=env, capture_output=True, text=True, timeout=30)
    stages = [line.split("\t") for line in (out / "stages.tsv").read_text().splitlines()[1:]]
    assert stages[0][0] == "setup" and stages[1][:2] == ["native", "cut at 10s"], (stages, done.stdout + done.stderr)
    log = (out / "native_tests.log").read_text()
    assert "test_kernels.py::test_first_kernel PASSED" in log, log


QUICK_PYTHON = r'''#!/bin/bash
echo "$*" >> "$OUT/calls.txt"
case "$*" in
  *--prepare-only*) echo "measured: check_python_s=4.2 register_s=3.1" ;;
esac
exit 0
'''


def _later_call(tmp_path, part: int, files=()):
    """The calls that session.sh `--part K` makes (a fake python3), with `files` made in the
    device copy first: calls.txt's lines, and the stages it ran."""
    work, bin_dir = _device_copy(tmp_path, QUICK_PYTHON)
    for name in files:
        (work / name).write_text("")
    out = tmp_path / "out"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "OUT": str(out), "HOME": str(tmp_path), "SESSION_RESERVE_S": "1"}
    done = subprocess.run(["bash", "tools/gpu_runner/session.sh", "--machine", "m", "--part", str(part),
                           "--budget", "200"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    stages = [line.split("\t")[0] for line in (out / "stages.tsv").read_text().splitlines()[1:]
              if not line.startswith("measured:")]
    return out, [c for c in (out / "calls.txt").read_text().splitlines() if "--prepared" in c], stages


def _bench_args(calls) -> list[str]:
    return [c.split("--bench ")[1].split()[0] for c in calls]


def test_a_later_call_runs_one_part_of_the_default_grid(tmp_path):
    """`--part K`: only the Kth of session.sh's rest_parts, each class its own run."""
    from benchmarks import session_cost

    out, calls, stages = _later_call(tmp_path, 2)
    assert _bench_args(calls) == session_cost.rest_parts()[1] and all("--grid default" in c for c in calls)
    assert stages == ["setup", *session_cost.call_stages(2)]
    assert (out / "first_calls").is_dir()  # where the measuring passes file their first calls


def test_a_part_s_regexes_reach_asv_as_written_not_as_globs(tmp_path):
    """Part 3 selects GatedMLPTraining's implementations but max-autotune with `[^,]` and `(?!`:
    split at spaces, never expanded, even where a file's name would match them as a glob."""
    from benchmarks import session_cost

    # what bash would expand part 3's first regex to as a glob (\w is w, [^,] one character, ? any)
    _, calls, _ = _later_call(tmp_path, 3, ["bench_training.GatedMLPTraining.w+(Wx+,s(x!Wcompile_max_autotuneW)"])
    runs = _bench_args(calls)
    assert runs == session_cost.rest_parts()[2] and "(?!" in runs[0]


def test_the_part_3_call_runs_the_native_tests_first_then_its_part(tmp_path):
    """session.sh's part_stages: `--part 3` runs the native kernel tests (moved out of the first
    call), then its part of the grid, the stages the model counts for that call."""
    from benchmarks import session_cost

    out, _, stages = _later_call(tmp_path, 3)
    assert stages == ["setup", "native", "rest"] == ["setup", *session_cost.call_stages(3)]
    calls = (out / "calls.txt").read_text().splitlines()
    pytest_at = next(i for i, c in enumerate(calls) if "-m pytest" in c)
    assert pytest_at < next(i for i, c in enumerate(calls) if "--prepared" in c)
