"""The runner's state on an AMD GPU (a ROCm build of torch), read through AMD SMI's Python
package (``amdsmi``, shipped with ROCm), in the keys runner_state's NVML snapshot uses, so the
dashboard and the gate read both alike. Recorded, never changed. Where amdsmi is not installed
the snapshot says so ({"recorded": false, "reason": ...}): nothing is guessed.
"""

from __future__ import annotations

import importlib


def load_amdsmi():
    """amdsmi, initialised, or (None, why not)."""
    try:
        smi = importlib.import_module("amdsmi")
    except ImportError as e:
        return None, ("not recorded: a ROCm build of torch, and no AMD SMI (the amdsmi Python package, "
                      f"shipped with ROCm, is not installed: {e})")
    try:
        smi.amdsmi_init()
    except Exception as e:  # AmdSmiLibraryException: no driver, no permission
        return None, f"not recorded: AMD SMI did not start ({type(e).__name__}: {e})"
    return smi, None


def _ask(fn, *args):
    """One query; None where this GPU or driver does not answer it."""
    try:
        return fn(*args)
    except Exception:
        return None


def _field(info, *keys):
    """info[key] for the first key it has (amdsmi's dict keys moved between ROCm releases), as a
    number, or None ("N/A" and missing read as None)."""
    for key in keys:
        value = info.get(key) if isinstance(info, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    return None


def gpu_state(smi, index: int, handle) -> dict:
    """One GPU's clocks, power, temperature: runner_state.gpu_state's keys; NVML-only ones None."""
    gfx = _ask(smi.amdsmi_get_clock_info, handle, smi.AmdSmiClkType.GFX) or {}
    mem = _ask(smi.amdsmi_get_clock_info, handle, smi.AmdSmiClkType.MEM) or {}
    power = _ask(smi.amdsmi_get_power_info, handle) or {}
    asic = _ask(smi.amdsmi_get_gpu_asic_info, handle) or {}
    temperature = _ask(smi.amdsmi_get_temp_metric, handle, smi.AmdSmiTemperatureType.HOTSPOT,
                       smi.AmdSmiTemperatureMetric.CURRENT)
    limit = _field(power, "power_limit")
    return {
        "index": index,
        "name": asic.get("market_name") if isinstance(asic, dict) else None,
        "sm_clock_mhz": _field(gfx, "clk", "cur_clk"),
        "mem_clock_mhz": _field(mem, "clk", "cur_clk"),
        "sm_clock_max_mhz": _field(gfx, "max_clk"),
        "mem_clock_max_mhz": _field(mem, "max_clk"),
        "sm_clock_app_mhz": None,  # no application clocks on AMD
        "mem_clock_app_mhz": None,
        "power_w": _field(power, "current_socket_power", "average_socket_power"),
        "power_limit_w": limit / 1e6 if limit is not None and limit > 10_000 else limit,  # some releases: microwatts
        "temperature_c": temperature if isinstance(temperature, (int, float)) else None,
        "throttle_reasons": None,  # AMD SMI has no NVML-style reason mask
        "persistence": None,
        "ecc": None,
        "power_violation_ns": None,
        "thermal_violation_ns": None,
    }


def read(loader=load_amdsmi) -> tuple[list[dict] | None, str | None, str | None]:
    """(the GPUs' states, the driver version, None) or (None, None, why not). ``loader``: the
    boundary a test replaces with a fake amdsmi."""
    smi, why = loader()
    if smi is None:
        return None, None, why
    try:
        handles = smi.amdsmi_get_processor_handles()
        driver = _ask(smi.amdsmi_get_gpu_driver_info, handles[0]) if handles else None
        gpus = [gpu_state(smi, i, h) for i, h in enumerate(handles)]
        return gpus, (driver or {}).get("driver_version", "unknown"), None
    except Exception as e:  # a driver that stops answering: said, never raised into the run
        return None, None, f"not recorded: AMD SMI failed ({type(e).__name__}: {e})"
    finally:
        _ask(smi.amdsmi_shut_down)
