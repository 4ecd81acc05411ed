"""Device timing: CUDA events with the L2 flushed before every sample, and device ceilings.

Why not triton.testing.do_bench: its signature and return modes moved between the Triton
versions this project must run on (3.6 on the GPU runner, newest on CPU machines), and the suite
needs the raw samples (asv computes median, CI and quartiles from them).
"""

import time
from collections.abc import Callable

import torch

from .cost import Ceilings

# Bigger than any GPU's L2 (H100/H200: 50 MB), so zeroing it evicts everything the timed call
# could otherwise find in cache: every sample is a cold-L2 sample.
_FLUSH_BYTES = 256 * 1024 * 1024


def time_samples(fn: Callable[[], object], device, samples: int = 50, warmup: int = 10,
                 flush_l2: bool = True) -> list[float]:
    """Seconds per call of `fn`, one sample per call.

    On CUDA: CUDA events around each call, the L2 flushed (a 256 MB memset) before each one,
    outside the timed region. `warmup` calls run first (compiles, autotuning, allocator growth;
    the first samples after warm-up were seen to be outliers on the H200, so keep it >= 10).
    On the CPU: wall-clock per call, for the CPU smoke grid only, never for performance claims.
    """
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        out = []
        for _ in range(samples):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
        return out

    flush = torch.empty(_FLUSH_BYTES, dtype=torch.int8, device=device) if flush_l2 else None
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    torch.cuda.synchronize(device)
    for start, end in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]


def median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def measure_ceilings(device, copy_bytes: int = 2 * 1024**3, matmul_size: int = 8192,
                     dtypes=("bf16", "fp16", "fp32"), samples: int = 20) -> Ceilings:
    """This device's ceilings, measured: copy bandwidth (read + write bytes per second of a
    large device-to-device copy) and dense matmul TFLOP/s per dtype (an n^3 torch.matmul).
    fp32 follows torch's TF32 setting, as the fp32 ops do."""
    from .cases import DTYPES

    device = torch.device(device)
    src = torch.empty(copy_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    copy_s = median(time_samples(lambda: dst.copy_(src), device, samples, warmup=3, flush_l2=False))
    del src, dst
    tflops = {}
    for name in dtypes:
        a = torch.randn(matmul_size, matmul_size, device=device).to(DTYPES[name])
        b = torch.randn(matmul_size, matmul_size, device=device).to(DTYPES[name])
        t = median(time_samples(lambda: a @ b, device, samples, warmup=3))
        tflops[name] = 2 * matmul_size**3 / t / 1e12
    return Ceilings(copy_gbps=2 * copy_bytes / copy_s / 1e9, matmul_tflops=tflops)
