"""benchmarks.harness.runner_state: the snapshot parsed from a fake NVML (only the NVML calls are
faked; the parsing, the files and the change detection are the real code), the CPU's "not
recorded", and benchmarks.run's companion files read back by the gate's recorded_state."""

import json
import sys
from types import SimpleNamespace

from benchmarks.harness import runner_state
from dashboard.regressions.classify import state_changes
from dashboard.regressions.recorded_state import comparable_state, recorded_states


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
    from dashboard.model import build_data
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
