"""The GPU runner's state around a run, read through NVML (nvidia-ml-py's ``pynvml``): recorded,
never changed. Nothing here sets a clock, a power limit or a mode.

    python -m benchmarks.harness.runner_state            # print a snapshot as JSON

A snapshot holds, per GPU: SM and memory clocks (current, maximum, application), power draw and
the enforced limit, temperature, the current throttle reasons, persistence and ECC mode, and
NVML's cumulative power and thermal violation counters (their growth from the snapshot before a
run to the one after it says whether the run was throttled at all, not only at the instant of a
snapshot); and the software: driver, the driver's CUDA version, the CUDA torch was built with,
cuBLAS, torch, Triton and Liger versions. Where NVML cannot be loaded (a CPU machine) the
snapshot says so: {"recorded": false, "reason": "not recorded: no NVML (...)"}.

benchmarks.run writes {"start": snapshot, "end": snapshot} per result file into its companion,
results/<machine>/runner-state/<result file's stem>.state (companion_files.py: a name asv does
not try to load; regressions/recorded_state.py reads it back and decides what counts
as a change).

Per benchmark too: where benchmarks.run sets $FUSED_MLP_RUNNER_STATE, every measuring pass
(common._MeasuredBenchmark, one per case x implementation, every metric of it) takes a GPU
snapshot (NVML queries only, no versions) before and after itself and files both into that
folder; benchmarks.run adds them to the run's file as "benchmarks": [{"benchmarks": [asv names],
"params": {...}, "start": ..., "end": ...}] (version 2), so a throttle during one benchmark is
tied to it. A later asv run of the same commit (one per class on the GPU runner) keeps the
entries it did not measure again. Version 1 files (no "benchmarks") stay readable.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import json
import sys
from pathlib import Path

from asv_results.companion_files import STATE_DIR, companion_file, readable_companion  # noqa: F401 (STATE_DIR re-exported)
from asv_results.safe_read import read_json
VERSION = 2  # 2: per-benchmark GPU snapshots ("benchmarks"); 1: the run's start and end only
# A folder where each measuring pass files its GPU snapshots (benchmarks.run sets it per asv run).
BENCHMARKS_ENV = "FUSED_MLP_RUNNER_STATE"
# NVML's throttle ("clocks event") reasons, by bit (pynvml's nvmlClocksThrottleReason* values).
THROTTLE_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
                    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
                    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
_CLOCK_SM, _CLOCK_MEM, _TEMPERATURE_GPU = 1, 2, 0  # pynvml's NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU
_POLICY_POWER, _POLICY_THERMAL = 0, 1  # NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL


def load_nvml():
    """pynvml, initialised, or (None, why not)."""
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError as e:
        return None, f"not recorded: no NVML (nvidia-ml-py is not installed: {e})"
    try:
        nvml.nvmlInit()
    except Exception as e:  # pynvml.NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None, f"not recorded: no NVML ({type(e).__name__}: {e})"
    return nvml, ""


def throttle_reasons(mask: int) -> list[str]:
    """The names of the bits set in an NVML throttle-reason mask (unknown bits by number)."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    rest = mask & ~sum(THROTTLE_REASONS)
    return names + ([f"0x{rest:x}"] if rest else [])


def _ask(fn, *args):
    """One NVML query; None where this GPU or driver does not support it (NVMLError)."""
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def gpu_state(nvml, index: int) -> dict:
    h = nvml.nvmlDeviceGetHandleByIndex(index)
    power = _ask(nvml.nvmlDeviceGetPowerUsage, h)
    limit = _ask(nvml.nvmlDeviceGetEnforcedPowerLimit, h)
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    reasons = _ask(reasons_fn, h)
    ecc = _ask(nvml.nvmlDeviceGetEccMode, h)
    persistence = _ask(nvml.nvmlDeviceGetPersistenceMode, h)
    state = {
        "index": index,
        "name": _text(_ask(nvml.nvmlDeviceGetName, h)),
        "sm_clock_mhz": _ask(nvml.nvmlDeviceGetClockInfo, h, _CLOCK_SM),
        "mem_clock_mhz": _ask(nvml.nvmlDeviceGetClockInfo, h, _CLOCK_MEM),
        "sm_clock_max_mhz": _ask(nvml.nvmlDeviceGetMaxClockInfo, h, _CLOCK_SM),
        "mem_clock_max_mhz": _ask(nvml.nvmlDeviceGetMaxClockInfo, h, _CLOCK_MEM),
        "sm_clock_app_mhz": _ask(nvml.nvmlDeviceGetApplicationsClock, h, _CLOCK_SM),
        "mem_clock_app_mhz": _ask(nvml.nvmlDeviceGetApplicationsClock, h, _CLOCK_MEM),
        "power_w": power / 1000 if power is not None else None,  # NVML reports milliwatts
        "power_limit_w": limit / 1000 if limit is not None else None,
        "temperature_c": _ask(nvml.nvmlDeviceGetTemperature, h, _TEMPERATURE_GPU),
        "throttle_reasons": throttle_reasons(int(reasons)) if reasons is not None else None,
        "persistence": None if persistence is None else ("on" if persistence else "off"),
        "ecc": None if ecc is None else ("on" if ecc[0] else "off"),  # (current, pending)
    }
    for name, policy in (("power", _POLICY_POWER), ("thermal", _POLICY_THERMAL)):
        violation = _ask(nvml.nvmlDeviceGetViolationStatus, h, policy)
        state[f"{name}_violation_ns"] = int(violation.violationTime) if violation is not None else None
    return state


def software_versions(nvml=None) -> dict:
    """Driver (from NVML), CUDA, cuBLAS, torch, Triton and Liger versions ('none' where absent)."""
    out = {"driver": "none", "cuda_driver": "none"}
    if nvml is not None:
        out["driver"] = str(_text(_ask(nvml.nvmlSystemGetDriverVersion)) or "unknown")
        cuda = _ask(nvml.nvmlSystemGetCudaDriverVersion)
        out["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else "unknown"
    out["torch"] = _dist_version("torch")
    out["cuda"] = _torch_cuda()
    out["triton"] = _dist_version("triton")
    out["liger"] = _dist_version("liger-kernel", "liger_kernel")
    # cuBLAS as installed beside torch (the nvidia-cublas wheel); a torch with its own copy says "bundled"
    out["cublas"] = next((v for v in (_dist_version(n) for n in ("nvidia-cublas-cu12", "nvidia-cublas-cu13",
                                                                  "nvidia-cublas")) if v != "none"),
                         "bundled" if out["cuda"] != "none" else "none")
    return out


def _torch_cuda() -> str:
    """The CUDA torch was built with, read from torch/version.py without importing torch (an
    import costs seconds per snapshot on the runner)."""
    return _torch_version_field("cuda")


def _torch_version_field(name: str) -> str:
    """torch/version.py's `name` ("cuda", "hip") without importing torch; 'none' if None or absent."""
    import importlib.util
    import re

    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            text = (Path(folder) / "version.py").read_text()
        except OSError:
            continue
        m = re.search(rf"^{name}\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
        return m.group(1) if m else "none"
    return "none"


def _dist_version(*names: str) -> str:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "none"


def _torch_hip() -> str:
    """The ROCm (HIP) version torch was built with, 'none' for a CUDA or CPU build (from
    torch/version.py, as _torch_cuda)."""
    return _torch_version_field("hip")


def _amd_snapshot(taken: str, versions: bool, amd_loader=None) -> dict:
    """A ROCm build's snapshot: AMD SMI's GPU state in the NVML snapshot's keys (amd_state)."""
    from benchmarks.harness import amd_state

    gpus, driver, why = amd_state.read(amd_loader or amd_state.load_amdsmi)
    out = {"recorded": gpus is not None, "taken_at": taken}
    if versions:
        out["software"] = {**software_versions(), "driver": driver or "none", "hip": _torch_hip()}
    return {**out, "gpus": gpus} if gpus is not None else {**out, "reason": why}


def snapshot(nvml_loader=load_nvml, amd_loader=None) -> dict:
    """This machine's state now (see the module docstring); on a ROCm build of torch through AMD
    SMI instead of NVML. ``nvml_loader``/``amd_loader``: the boundaries a test replaces."""
    taken = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if _torch_hip() != "none":
        return _amd_snapshot(taken, versions=True, amd_loader=amd_loader)
    nvml, why = nvml_loader()
    if nvml is None:
        return {"recorded": False, "reason": why, "taken_at": taken, "software": software_versions()}
    try:
        gpus = [gpu_state(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
        return {"recorded": True, "taken_at": taken, "software": software_versions(nvml), "gpus": gpus}
    except Exception as e:  # a driver that stops answering mid-way: say so, never fail the run
        return {"recorded": False, "reason": f"not recorded: NVML failed ({type(e).__name__}: {e})",
                "taken_at": taken, "software": software_versions()}
    finally:
        _ask(nvml.nvmlShutdown)


def gpu_snapshot(nvml_loader=None, amd_loader=None) -> dict:
    """The GPUs' state now, without the software versions (the run's snapshot has those): NVML
    (AMD SMI on a ROCm build) queries only, cheap enough around every measuring pass.
    {"recorded": false, "reason": ...} without them, as snapshot(). ``nvml_loader``: load_nvml
    (the boundary a test replaces)."""
    taken = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    if _torch_hip() != "none":
        return _amd_snapshot(taken, versions=False, amd_loader=amd_loader)
    nvml, why = (nvml_loader or load_nvml)()
    if nvml is None:
        return {"recorded": False, "reason": why, "taken_at": taken}
    try:
        return {"recorded": True, "taken_at": taken,
                "gpus": [gpu_state(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]}
    except Exception as e:  # as snapshot(): said, never raised into the benchmark
        return {"recorded": False, "reason": f"not recorded: NVML failed ({type(e).__name__}: {e})", "taken_at": taken}
    finally:
        _ask(nvml.nvmlShutdown)


def file_benchmark_state(folder: str | Path, name: str, benchmarks: list[str], params: dict,
                         start: dict, end: dict) -> Path:
    """One measuring pass's snapshots, filed whole or not at all (a killed process leaves no half file)."""
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"benchmarks": benchmarks, "params": params, "start": start, "end": end}))
    tmp.replace(path)
    return path


def collect_benchmark_states(folder: str | Path) -> list[dict]:
    """Every pass's entry filed into ``folder`` (file_benchmark_state); anything else is ignored."""
    entries = []
    for filed in sorted(Path(folder).glob("*.json")):
        doc, _ = read_json(filed, Path(folder))  # the one reader: a FIFO or a huge file is skipped, never waited on
        if _is_benchmark_entry(doc):
            entries.append(doc)
    return entries


def _is_benchmark_entry(doc) -> bool:
    return (isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list) and isinstance(doc.get("params"), dict)
            and isinstance(doc.get("start"), dict) and isinstance(doc.get("end"), dict))


def _entry_keys(entry: dict) -> set[tuple[str, str]]:
    params = json.dumps(entry["params"], sort_keys=True)
    return {(str(b), params) for b in entry["benchmarks"]}


def merge_benchmark_states(before: list, new: list[dict]) -> list[dict]:
    """The entries before, less those whose benchmarks this run measured again, plus ``new``."""
    again = set().union(*(_entry_keys(e) for e in new)) if new else set()
    kept = [e for e in before if _is_benchmark_entry(e) and not (_entry_keys(e) & again)]
    return kept + list(new)


def snapshot_with(python: str, cwd: Path | None = None) -> dict:
    """A snapshot taken by another Python (the one that runs the suite), or one that says why not."""
    import subprocess

    try:
        done = subprocess.run([python, "-m", "benchmarks.harness.runner_state"], capture_output=True, text=True,
                              timeout=120, cwd=cwd)
        doc = json.loads(done.stdout)
        if isinstance(doc, dict) and "recorded" in doc:
            return doc
        why = "its output is not a snapshot"
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        why = f"{type(e).__name__}: {e}"
    return {"recorded": False, "reason": f"not recorded: the snapshot failed ({why})"}


def recorded_run(run, python: str, machine_dir: Path, commit: str, cwd: Path | None = None,
                 benchmark_states: Path | None = None) -> int:
    """``run()`` (one asv run of ``commit``) between two snapshots, written beside the result
    files that commit has in ``machine_dir`` afterwards, with the per-benchmark snapshots the
    run's passes filed into ``benchmark_states`` (the folder in $FUSED_MLP_RUNNER_STATE);
    returns what run() returned."""
    start = snapshot_with(python, cwd)
    code = run()
    end = snapshot_with(python, cwd)
    entries = collect_benchmark_states(benchmark_states) if benchmark_states is not None else []
    write_companions(sorted(machine_dir.glob(f"{commit[:8]}-*.json")), start, end, entries)
    return code


def write_companions(result_files: list[Path], start: dict, end: dict,
                     benchmarks: list[dict] | None = None) -> list[Path]:
    """{"start", "end", "benchmarks"} beside each result file of the run
    (companion_files.companion_file); the benchmarks an earlier run of the commit recorded and
    this one did not measure again are kept."""
    written = []
    for result in result_files:
        path = readable_companion(result)  # an old-named one is read, then written under the new name
        path.parent.mkdir(parents=True, exist_ok=True)
        doc, _ = read_json(path, result.parent.parent)  # the one reader: an unreadable companion is replaced
        before = doc.get("benchmarks", []) if isinstance(doc, dict) else []
        entries = merge_benchmark_states(before if isinstance(before, list) else [], benchmarks or [])
        new = companion_file(result)
        tmp = new.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)  # a link left there is not written through
        tmp.write_text(json.dumps({"version": VERSION, "start": start, "end": end, "benchmarks": entries},
                                  indent=1) + "\n")
        tmp.replace(new)
        if path != new:
            path.unlink(missing_ok=True)
        written.append(new)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.harness.runner_state", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    print(json.dumps(snapshot(), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
