"""What a call launches on the device, from torch.profiler: kernel names, counts and device time."""

from collections import Counter, defaultdict
from dataclasses import dataclass

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

# Copies and fills show up as device events too, but are not kernel launches of the op.
_NOT_KERNELS = ("Memcpy", "Memset")


@dataclass(frozen=True)
class KernelStat:
    name: str
    launches_per_call: float
    device_seconds_per_call: float


def kernel_summary(fn, calls: int = 5, warmup: int = 3) -> list[KernelStat]:
    """Device kernels launched by `fn()` on CUDA, averaged over `calls` profiled calls (after
    `warmup` unprofiled ones, so compilation and autotuning are not in the picture)."""
    if not torch.cuda.is_available():
        raise RuntimeError("kernel_summary needs a CUDA device: device kernels are what it counts")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    counts: Counter[str] = Counter()
    device_us: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type != DeviceType.CUDA or event.name.startswith(_NOT_KERNELS):
            continue
        counts[event.name] += 1
        device_us[event.name] += event.device_time
    return [KernelStat(name, counts[name] / calls, device_us[name] / calls / 1e6) for name in counts]


def kernels_per_call(fn, calls: int = 5) -> float:
    return sum(k.launches_per_call for k in kernel_summary(fn, calls))
