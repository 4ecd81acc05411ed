"""What one call of an implementation launches, from torch.profiler (the seed article's view).

On CUDA: every device kernel's name, launches per call and device time, the total, and the
host time spent in kernel-launch API calls. On the CPU (no device kernels): the operators one
call dispatches (aten::linear, aten::gelu, ...) with their CPU time, so the tooling and its
tests run anywhere; those are operator counts, not kernels.
"""

import gzip
import os
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

# Copies and fills are device events too, but not kernel launches of the op.
_NOT_KERNELS = ("Memcpy", "Memset")
_LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx")
_CALL_MARK = "harness.profiled_call"
TRACE_CAP_BYTES = 4 * 1024 * 1024  # a gzipped trace bigger than this is not kept


@dataclass(frozen=True)
class KernelStat:
    name: str
    launches_per_call: float
    seconds_per_call: float  # device time on CUDA, CPU time of the operator on the CPU


@dataclass(frozen=True)
class ProfileSummary:
    device: str  # "cuda" (device kernels) or "cpu" (operators)
    kernels: tuple[KernelStat, ...]
    host_seconds_per_call: float  # wall time per call, synchronised
    launch_overhead_seconds_per_call: float | None  # host time in launch API calls (CUDA only)
    trace: str | None = field(default=None)  # path of the gzipped Chrome trace, when kept

    @property
    def launches_per_call(self) -> float:
        return sum(k.launches_per_call for k in self.kernels)

    @property
    def seconds_per_call(self) -> float:
        return sum(k.seconds_per_call for k in self.kernels)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ProfileSummary":
        return cls(
            device=d["device"],
            kernels=tuple(KernelStat(**k) for k in d["kernels"]),
            host_seconds_per_call=d["host_seconds_per_call"],
            launch_overhead_seconds_per_call=d["launch_overhead_seconds_per_call"],
            trace=d.get("trace"),
        )


def _sync(device: str):
    if device == "cuda":
        torch.cuda.synchronize()


def profile_call(fn, device, calls: int = 5, warmup: int = 3, trace_path: str | None = None) -> ProfileSummary:
    """Profile `calls` calls of `fn()` after `warmup` unprofiled ones (compilation and
    autotuning stay out of the picture). `trace_path` (ending .json.gz) keeps a Chrome trace
    that opens in Perfetto, unless it is over TRACE_CAP_BYTES."""
    device = torch.device(device).type
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device='cuda' but CUDA is not available")
    for _ in range(warmup):
        fn()
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        for _ in range(calls):
            with record_function(_CALL_MARK):
                fn()
        _sync(device)
        host_seconds = (time.perf_counter() - start) / calls

    counts: Counter[str] = Counter()
    seconds: dict[str, float] = defaultdict(float)
    launch_us = 0.0
    for event in prof.events():
        if device == "cuda":
            # Our own record_function range also appears on the GPU timeline (a user annotation
            # spanning the call's kernels); it is not a kernel.
            if getattr(event, "is_user_annotation", False) or event.name == _CALL_MARK:
                continue
            if event.device_type == DeviceType.CUDA and not event.name.startswith(_NOT_KERNELS):
                counts[event.name] += 1
                seconds[event.name] += event.device_time / 1e6
            elif event.device_type == DeviceType.CPU and event.name in _LAUNCH_CALLS:
                launch_us += event.cpu_time_total
        elif event.cpu_parent is not None and event.cpu_parent.name == _CALL_MARK:
            counts[event.name] += 1
            seconds[event.name] += event.cpu_time_total / 1e6
    kernels = tuple(sorted((KernelStat(n, counts[n] / calls, seconds[n] / calls) for n in counts),
                           key=lambda k: -k.seconds_per_call))
    return ProfileSummary(
        device=device,
        kernels=kernels,
        host_seconds_per_call=host_seconds,
        launch_overhead_seconds_per_call=launch_us / 1e6 / calls if device == "cuda" else None,
        trace=_keep_trace(prof, trace_path) if trace_path else None,
    )


def _keep_trace(prof, trace_path: str) -> str | None:
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        packed = os.path.join(tmp, "trace.json.gz")
        with open(raw, "rb") as src, gzip.open(packed, "wb") as dst:
            shutil.copyfileobj(src, dst)
        if os.path.getsize(packed) > TRACE_CAP_BYTES:
            return None
        os.makedirs(os.path.dirname(os.path.abspath(trace_path)), exist_ok=True)
        shutil.move(packed, trace_path)
    return trace_path


def kernels_per_call(fn, calls: int = 5) -> float:
    """Device kernels one call of `fn()` launches (CUDA only)."""
    if not torch.cuda.is_available():
        raise RuntimeError("kernels_per_call counts device kernels and needs CUDA")
    return profile_call(fn, "cuda", calls).launches_per_call
