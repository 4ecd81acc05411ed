"""benchmarks.harness.runner_state: the snapshot parsed from a fake NVML (only the NVML calls are
faked; the parsing, the files and the change detection are the real code), the CPU's "not
recorded", benchmarks.run's companion files read back by the gate's recorded_state, and the
snapshots around each measuring pass that tie a throttle to its benchmark."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.harness import runner_state
from asv_results.companion_files import companion_file
from regressions.classify import state_changes
from regressions.recorded_state import (benchmark_states, benchmark_states_of_run, comparable_state,
                                                  pass_state, read_state_file, recorded_states)

ROOT = Path(__file__).resolve().parents[1]


class NVMLError(Exception):
    pass


def fake_nvml(driver="570.86.15", limit_mw=700_000, reasons=0x4, power_violation=5_000, ecc_supported=True):
    """pynvml's functions this module calls, answering as an H200 would (values as NVML gives them)."""
    calls = []

    def unsupported(*_):
        raise NVMLError("Not Supported")

    def ecc(h):
        if not ecc_supported:
            raise NVMLError("Not Supported")
        return (1, 1)

    nvml = SimpleNamespace(
        nvmlInit=lambda: calls.append("init"), nvmlShutdown=lambda: calls.append("shutdown"),
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda i: f"handle{i}",
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetClockInfo=lambda h, t: {1: 1980, 2: 3201}[t],
        nvmlDeviceGetMaxClockInfo=lambda h, t: {1: 1980, 2: 3201}[t],
        nvmlDeviceGetApplicationsClock=lambda h, t: {1: 1755, 2: 3201}[t],
        nvmlDeviceGetPowerUsage=lambda h: 412_345, nvmlDeviceGetEnforcedPowerLimit=lambda h: limit_mw,
        nvmlDeviceGetTemperature=lambda h, t: 47,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
        nvmlDeviceGetPersistenceMode=lambda h: 1, nvmlDeviceGetEccMode=ecc,
        nvmlDeviceGetViolationStatus=lambda h, policy: SimpleNamespace(
            referenceTime=0, violationTime=power_violation if policy == 0 else 0),
        nvmlSystemGetDriverVersion=lambda: driver, nvmlSystemGetCudaDriverVersion=lambda: 12080,
        # what a set-up call would be: this module must never reach for one
        nvmlDeviceSetApplicationsClocks=unsupported, nvmlDeviceSetPowerManagementLimit=unsupported,
        nvmlDeviceSetPersistenceMode=unsupported)
    return nvml, calls


def test_a_snapshot_reads_clocks_power_throttling_and_versions():
    nvml, calls = fake_nvml(ecc_supported=False)
    snap = runner_state.snapshot(lambda: (nvml, ""))
    assert snap["recorded"] and calls == ["shutdown"]  # nvmlInit is the loader's; nothing was set
    (gpu,) = snap["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["sm_clock_mhz"] == 1980 and gpu["sm_clock_app_mhz"] == 1755
    assert gpu["power_w"] == 412.345 and gpu["power_limit_w"] == 700.0 and gpu["temperature_c"] == 47
    assert gpu["throttle_reasons"] == ["sw_power_cap"] and gpu["persistence"] == "on"
    assert gpu["ecc"] is None  # not supported on this GPU: said as unknown, not as off
    assert gpu["power_violation_ns"] == 5_000 and gpu["thermal_violation_ns"] == 0
    assert snap["software"]["driver"] == "570.86.15" and snap["software"]["cuda_driver"] == "12.8"
    assert {"torch", "triton", "liger", "cuda", "cublas"} <= set(snap["software"])


def test_throttle_reason_bits_are_named():
    assert runner_state.throttle_reasons(0) == []
    assert runner_state.throttle_reasons(0x1 | 0x40) == ["gpu_idle", "hw_thermal_slowdown"]
    assert runner_state.throttle_reasons(0x4000) == ["0x4000"]


def test_without_nvml_the_snapshot_says_not_recorded():
    snap = runner_state.snapshot()  # this machine: no GPU, nvidia-ml-py absent or no driver
    assert snap["recorded"] is False and snap["reason"].startswith("not recorded: no NVML")


def test_an_nvml_that_fails_mid_way_is_said_not_raised():
    nvml, _ = fake_nvml()
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(NVMLError("GPU is lost"))
    snap = runner_state.snapshot(lambda: (nvml, ""))
    assert snap["recorded"] is False and "GPU is lost" in snap["reason"]


def test_a_run_writes_its_state_beside_its_results_and_a_change_is_detected(tmp_path, monkeypatch):
    machine = tmp_path / "results" / "h200"
    machine.mkdir(parents=True)
    runs = {"a" * 40: fake_nvml(), "b" * 40: fake_nvml(driver="575.51.03", limit_mw=600_000)}
    for commit, (nvml, _) in runs.items():
        before = {"recorded": False}

        def snapshot_with(python, cwd=None, nvml=nvml):
            snap = runner_state.snapshot(lambda: (nvml, ""))
            if before["recorded"]:  # the end of the run: the power counter grew by 1 ms
                snap["gpus"][0]["power_violation_ns"] += 1_000_000
            before["recorded"] = True
            return snap

        monkeypatch.setattr(runner_state, "snapshot_with", snapshot_with)
        result = {"commit_hash": commit, "env_name": "existing", "params": {"torch": "2.11.0"}}

        def asv_run(commit=commit, result=result):
            (machine / f"{commit[:8]}-existing.json").write_text(json.dumps(result))
            return 0

        assert runner_state.recorded_run(asv_run, sys.executable, machine, commit) == 0
    states = recorded_states(tmp_path / "results")
    a, b = states[("h200", "a" * 40)], states[("h200", "b" * 40)]
    assert a["throttled"] == "power" and a["torch"] == runner_state.software_versions()["torch"]
    assert state_changes(a, b) == ["driver 570.86.15 -> 575.51.03", "gpu0 power_limit_w 700.0 -> 600.0"]


def test_snapshot_with_another_python_reads_its_json(tmp_path):
    snap = runner_state.snapshot_with(sys.executable)
    assert snap["recorded"] is False and "no NVML" in snap["reason"]
    broken = runner_state.snapshot_with(str(tmp_path / "no-python"))
    assert broken["recorded"] is False and "the snapshot failed" in broken["reason"]


def test_a_cpu_run_is_recorded_as_not_recorded():
    state = comparable_state({"torch": "2.13.0"}, {"start": runner_state.snapshot(), "end": None})
    assert state["runner state"].startswith("not recorded: no NVML") and state["torch"] == "2.13.0"


def test_the_device_card_shows_the_runner_state_and_marks_what_changed(tmp_path):
    from dashboard.store.load_data import build_data
    from dashboard.pages.overview import runner_state_panel
    from tests.asv_fixtures import SeriesSpec, write_history

    spec = SeriesSpec("bench_ops.LinearAct.track_latency", ("linear_act M=16 K=64 N=64 bf16 gelu_tanh bias", "fused"),
                      ("case", "impl"))
    history = write_history(tmp_path / "results", [spec], 8, seed=1, n_samples=5)
    machine = history.results_dir / history.machine
    for i, commit in enumerate(history.commits[-2:]):
        nvml, _ = fake_nvml(driver="570.86.15" if i == 0 else "575.51.03")
        snap = runner_state.snapshot(lambda: (nvml, ""))
        runner_state.write_companions([machine / f"{commit[:8]}-{history.env_name}.json"], snap, snap)
    data = build_data(history.results_dir)
    text = str(runner_state_panel(data, history.machine, history.env_name, history.commits[-1]))
    assert "575.51.03" in text and "(changed)" in text and "throttled" in text
    first = str(runner_state_panel(data, history.machine, history.env_name, history.commits[0]))
    assert "(changed)" not in first


def test_the_device_card_takes_the_identity_from_the_load_and_reads_only_the_companion(tmp_path, monkeypatch):
    """The params asv copied into each result file are kept by the loader (and its cache), so the
    card does not parse a 2 MB result file again for them (~25 ms each at 10,000 series)."""
    from dashboard.store.load_data import build_data
    from dashboard.pages.overview import runner_state_panel
    from regressions import recorded_state
    from tests.asv_fixtures import SeriesSpec, write_history

    spec = SeriesSpec("bench_ops.LinearAct.track_latency", ("linear_act M=16 K=64 N=64 bf16 gelu_tanh bias", "fused"),
                      ("case", "impl"))
    history = write_history(tmp_path / "results", [spec], 4, seed=1, n_samples=5,
                            machine_params={"gpu": "NVIDIA H200", "torch": "2.11.0"})
    newest = history.results_dir / history.machine / f"{history.commits[-1][:8]}-{history.env_name}.json"
    nvml, _ = fake_nvml(driver="575.51.03")
    snap = runner_state.snapshot(lambda: (nvml, ""))
    runner_state.write_companions([newest], snap, snap)
    build_data(history.results_dir, cache_dir=tmp_path / "cache")
    data = build_data(history.results_dir, cache_dir=tmp_path / "cache")
    assert data.files_parsed == 0  # the params come from the cache
    read, real = [], recorded_state.read_json
    monkeypatch.setattr(recorded_state, "read_json", lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    text = str(runner_state_panel(data, history.machine, history.env_name, history.commits[-1]))
    assert "NVIDIA H200" in text and "575.51.03" in text  # the params' gpu, the companion's driver
    assert read and not any(name.endswith(".json") for name in read), read  # the companion (.state) only
    read.clear()
    runner_state_panel(data, history.machine, history.env_name, history.commits[-1])
    assert read == []  # kept for this load


# --- per benchmark: a GPU snapshot around every measuring pass ------------------------------

def _violating_nvml():
    """A fake NVML whose power violation counter grows only when told (a throttle happening)."""
    nvml, _ = fake_nvml()
    counter = {"ns": 5_000}
    nvml.nvmlDeviceGetViolationStatus = lambda h, policy: SimpleNamespace(
        referenceTime=0, violationTime=counter["ns"] if policy == 0 else 0)
    return nvml, counter


def _pass_classes(counter):
    from benchmarks import common
    from workload.grids import grid

    key = grid("tiny")["linear_act"][0].key

    class Calm(common._CaseBenchmark):
        params = ([key], ["eager"])
        samples = 2

    class Throttled(Calm):
        def prepared_call(self, case, impl, inputs):
            real = super().prepared_call(case, impl, inputs)

            def call():
                counter["ns"] += 1_000_000  # the GPU hit its power cap while this benchmark ran
                return real()

            return call

    return key, Calm, Throttled


def test_each_measuring_pass_is_tied_to_its_own_snapshots(tmp_path, monkeypatch):
    nvml, counter = _violating_nvml()
    monkeypatch.setattr(runner_state, "load_nvml", lambda: (nvml, ""))  # the boundary: NVML itself
    states = tmp_path / "states"
    monkeypatch.setenv(runner_state.BENCHMARKS_ENV, str(states))
    key, Calm, Throttled = _pass_classes(counter)
    (tmp_path / "cache").mkdir()  # asv's per-run folder (setup_cache)
    for cls in (Calm, Throttled):
        cls().setup(str(tmp_path / "cache"), key, "eager")
    entries = runner_state.collect_benchmark_states(states)
    assert len(entries) == 2  # one per pass, whatever the number of metrics

    machine = tmp_path / "results" / "h200"
    machine.mkdir(parents=True)
    result = machine / f"{'a' * 8}-existing.json"
    result.write_text(json.dumps({"commit_hash": "a" * 40, "params": {}}))
    run = runner_state.snapshot(lambda: (nvml, ""))
    runner_state.write_companions([result], run, run, entries)
    got = benchmark_states_of_run(tmp_path / "results", "h200", "existing", "a" * 40)
    params = f"case={key!r}, impl='eager'"
    for metric in ("track_latency", "track_peak_memory", "track_kernels_per_call"):
        assert got[(f"test_runner_state.Throttled.{metric}", params)]["throttled"] == "power"
        assert got[(f"test_runner_state.Calm.{metric}", params)]["throttled"] == "none"
    calm = got[("test_runner_state.Calm.track_latency", params)]
    assert calm["sm clock MHz"] == "1980 -> 1980" and calm["throttle reasons"] == "sw_power_cap -> sw_power_cap"
    assert recorded_states(tmp_path / "results")[("h200", "a" * 40)]["throttled"] == "none"  # the run's own, as before


def test_a_pass_records_nothing_without_the_folder_and_nothing_for_a_skip(tmp_path, monkeypatch):
    from benchmarks import common
    from workload.grids import grid

    monkeypatch.setattr(runner_state, "load_nvml", lambda: pytest.fail("NVML asked outside benchmarks.run"))
    monkeypatch.delenv(runner_state.BENCHMARKS_ENV, raising=False)
    key, Calm, _ = _pass_classes({"ns": 0})
    (tmp_path / "cache").mkdir()
    Calm().setup(str(tmp_path / "cache"), key, "eager")  # a plain asv run: no snapshot at all

    class CublasltOnly(common._CaseBenchmark):
        params = ([grid("tiny")["linear_act"][0].key], ["cublaslt"])

    monkeypatch.setenv(runner_state.BENCHMARKS_ENV, str(tmp_path / "states"))
    monkeypatch.setattr(runner_state, "load_nvml", lambda: (None, "not recorded: no NVML (test)"))
    with pytest.raises(NotImplementedError, match="needs a CUDA device"):
        CublasltOnly().setup(str(tmp_path / "cache"), key, "cublaslt")
    assert runner_state.collect_benchmark_states(tmp_path / "states") == []  # a skip ran nothing on the GPU


def test_without_nvml_a_pass_says_not_recorded():
    snap = runner_state.gpu_snapshot(lambda: (None, "not recorded: no NVML (x)"))
    assert snap["recorded"] is False
    assert pass_state(snap, snap) == {"runner state": "not recorded: no NVML (x)"}
    nvml, _ = fake_nvml()
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(NVMLError("GPU is lost"))
    assert "GPU is lost" in runner_state.gpu_snapshot(lambda: (nvml, ""))["reason"]


def test_a_later_run_of_the_commit_keeps_the_benchmarks_it_did_not_measure_again(tmp_path):
    result = tmp_path / "h200" / "aaaaaaaa-existing.json"
    result.parent.mkdir()
    result.write_text("{}")
    snap = runner_state.snapshot(lambda: (fake_nvml()[0], ""))
    gpu = runner_state.gpu_snapshot(lambda: (fake_nvml()[0], ""))

    def entry(cls, impl, temperature):
        end = json.loads(json.dumps(gpu))
        end["gpus"][0]["temperature_c"] = temperature
        return {"benchmarks": [f"bench_ops.{cls}.track_latency"], "params": {"case": "c", "impl": impl},
                "start": gpu, "end": end}

    runner_state.write_companions([result], snap, snap, [entry("GatedMLP", "fused", 50), entry("LinearAct", "fused", 51)])
    runner_state.write_companions([result], snap, snap, [entry("LinearAct", "fused", 60)])  # LinearAct's run again
    got = benchmark_states(read_state_file(result))
    assert got[("bench_ops.GatedMLP.track_latency", "case='c', impl='fused'")]["temperature C"] == "47 -> 50"
    assert got[("bench_ops.LinearAct.track_latency", "case='c', impl='fused'")]["temperature C"] == "47 -> 60"
    assert json.loads(companion_file(result).read_text())["version"] == runner_state.VERSION == 2


def test_a_version_1_file_still_reads(tmp_path):
    result = tmp_path / "h200" / "aaaaaaaa-existing.json"
    result.parent.mkdir()
    result.write_text(json.dumps({"commit_hash": "a" * 40, "params": {"torch": "2.11.0"}}))
    snap = runner_state.snapshot(lambda: (fake_nvml()[0], ""))
    path = tmp_path / "h200" / runner_state.STATE_DIR / result.name
    path.parent.mkdir()
    path.write_text(json.dumps({"version": 1, "start": snap, "end": snap}))
    assert benchmark_states(read_state_file(result)) == {}
    assert recorded_states(tmp_path)[("h200", "a" * 40)]["throttled"] == "none"
    runner_state.write_companions([result], snap, snap)  # rewritten by a later run: version 2, no entries
    assert benchmark_states(read_state_file(result)) == {}
    assert not path.exists() and companion_file(result).is_file()  # moved to the name asv does not load


def test_benchmarks_run_gives_each_asv_run_a_folder_and_keeps_what_its_passes_filed(tmp_path, monkeypatch):
    from benchmarks import run

    config = tmp_path / "asv.conf.json"
    config.write_text('{"version": 1, "results_dir": "results"}')
    filed = {"benchmarks": ["bench_ops.LinearAct.track_latency"], "params": {"case": "c", "impl": "fused"},
             "start": {"recorded": False, "reason": "not recorded: no NVML (test)"},
             "end": {"recorded": False, "reason": "not recorded: no NVML (test)"}}

    def fake_asv(cmd, env, commit):  # asv run: one result file, one measuring pass filing its state
        assert "asv" in cmd
        (tmp_path / "results" / "m").mkdir(parents=True)
        (tmp_path / "results" / "m" / f"{'a' * 8}-existing-py.json").write_text("{}")
        runner_state.file_benchmark_state(env[runner_state.BENCHMARKS_ENV], "x.json", filed["benchmarks"],
                                          filed["params"], filed["start"], filed["end"])
        return 0

    # the run's own snapshot probes find no NVML
    monkeypatch.setattr(run.subprocess, "run", lambda cmd, **kwargs: subprocess.CompletedProcess(cmd, 1, "", "no NVML"))
    monkeypatch.setattr(run, "run_naming_commit", fake_asv)
    assert run.run_asv("python", config, "m", "a" * 40, ROOT, ["-b", "LinearAct"]) == 0
    doc = read_state_file(tmp_path / "results" / "m" / f"{'a' * 8}-existing-py.json")
    assert doc["benchmarks"] == [filed]


def test_the_gate_names_a_throttle_during_the_finding_s_own_benchmark(tmp_path):
    """The per-benchmark snapshots reach the gate's evidence: the series that stepped had its own
    pass throttled at that commit (the run-level state does not say which benchmark)."""
    from asv_results.loading import load_results
    from regressions import find_changes
    from regressions.classify import classify, impl_of
    from tests.asv_fixtures import SeriesSpec, write_history

    bench, case = "bench_ops.LinearAct.track_latency", "linear_act M=16 K=64 N=64 bf16 gelu_tanh bias"
    series = [SeriesSpec(bench, (case, impl), ("case", "impl"), steps=((30, 0.15),) if impl == "fused" else (),
                         run_noise=0.01) for impl in ("fused", "eager", "compile")]
    history = write_history(tmp_path / "results", series, 40, seed=3, n_samples=15)
    nvml, counter = _violating_nvml()
    quiet = runner_state.gpu_snapshot(lambda: (nvml, ""))
    counter["ns"] += 2_000_000
    hot = runner_state.gpu_snapshot(lambda: (nvml, ""))
    run = runner_state.snapshot(lambda: (nvml, ""))
    for i, commit in enumerate(history.commits[29:31]):
        entries = [{"benchmarks": [bench], "params": {"case": case, "impl": impl}, "start": quiet,
                    "end": hot if (i == 1 and impl == "fused") else quiet} for impl in ("fused", "eager")]
        runner_state.write_companions([history.results_dir / history.machine / f"{commit[:8]}-{history.env_name}.json"],
                                      run, run, entries)
    frame = load_results(history.results_dir).frame
    (finding,) = [f for f in find_changes(frame) if impl_of(f.params) == "fused" and f.direction == "regression"]
    assert finding.commit_hash == history.commits[30]
    evidence = classify(finding, frame, recorded_states(history.results_dir, frame, per_benchmark=True)).evidence
    assert f"this benchmark's own pass was throttled at {history.commits[30][:8]} (power)" in evidence
    assert "own pass" not in classify(finding, frame, recorded_states(history.results_dir, frame)).evidence


def test_companions_are_kept_where_asv_does_not_load_them_and_old_ones_move(tmp_path):
    """Named like result files, the companions made `asv publish` and `asv compare` print
    "Skipping results: could not load .../runner-state/machine.json"; an old one is moved, not lost."""
    import shutil

    from asv_results.companion_files import move_old_companions

    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "results", tmp_path / "results")
    machine_dir = next(p for p in (tmp_path / "results").iterdir() if (p / "machine.json").is_file())
    shutil.rmtree(machine_dir / runner_state.STATE_DIR, ignore_errors=True)  # the copy's own companions: none here
    first, second = sorted(p for p in machine_dir.glob("*-*.json"))[:2]
    snap = runner_state.snapshot(lambda: (fake_nvml()[0], ""))
    runner_state.write_companions([first], snap, snap)
    old = machine_dir / runner_state.STATE_DIR / second.name  # as benchmarks.run wrote them before
    old.write_text(json.dumps({"version": 1, "start": snap, "end": snap}))
    assert move_old_companions(machine_dir) == [companion_file(second)] and not old.exists()
    assert read_state_file(second)["version"] == 1 and read_state_file(first)["version"] == runner_state.VERSION
    conf = tmp_path / "asv.conf.json"
    conf.write_text(json.dumps({"version": 1, "project": "fused-mlp", "repo": str(root), "dvcs": "git",
                                "branches": ["HEAD"], "environment_type": "existing", "benchmark_dir": "benchmarks",
                                "results_dir": str(tmp_path / "results"), "html_dir": str(tmp_path / "html")}))
    done = subprocess.run([sys.executable, "-m", "asv", "--config", str(conf), "publish"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "Skipping results" not in done.stdout + done.stderr, done.stdout + done.stderr
