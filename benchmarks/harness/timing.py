"""Device timing: CUDA events with the L2 flushed before every sample, and device ceilings.

Why not triton.testing.do_bench: its signature and return modes moved between the Triton
versions this project must run on (3.6 on the GPU runner, newest on CPU machines), and the suite
needs the raw samples (asv computes median, CI and quartiles from them).
"""

import time
from collections.abc import Callable

import torch

from workload.cost import Ceilings, copy_gbps, matmul_tflops
from benchmarks.harness.tensors import TORCH_DTYPES

# Bigger than any GPU's L2 (H100/H200: 50 MB), so zeroing it evicts everything the timed call
# could otherwise find in cache: every sample is a cold-L2 sample.
_FLUSH_BYTES = 256 * 1024 * 1024


def latency_samples(fn: Callable[[], object], device, samples: int = 50, warmup: int = 10,
                    flush_l2: bool = True) -> list[float]:
    """Seconds per call of `fn`, one sample per call.

    On CUDA: CUDA events around each call, the L2 flushed (a 256 MB memset) before each one,
    outside the timed region. `warmup` calls run first (compiles, autotuning, allocator growth;
    the first samples after warm-up were seen to be outliers on the H200, so keep it >= 10).
    On the CPU: this process's CPU time per call, for the CPU smoke grid only, never for
    performance claims (on a shared CPU, wall-clock time measures the other tenants as much as
    the call: runs minutes apart differed 2x under load, and a bisect compares such runs).
    """
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        out = []
        for _ in range(samples):
            start = time.process_time()
            fn()
            out.append(time.process_time() - start)
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


def copy_samples(device, nbytes: int, samples: int = 20) -> list[float]:
    """Seconds per device-to-device copy of `nbytes` (each copy reads and writes nbytes)."""
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return latency_samples(lambda: dst.copy_(src), device, samples, warmup=3, flush_l2=False)


def matmul_samples(device, dtype: str, n: int, samples: int = 20) -> list[float]:
    """Seconds per dense n x n x n torch.matmul; fp32 follows torch's TF32 setting, as the fp32
    ops do."""
    a = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    return latency_samples(lambda: a @ b, device, samples, warmup=3)


COPY_BYTES = 2 * 1024**3
MATMUL_N = 8192


def measure_ceilings(device, dtypes=("bf16", "fp16", "fp32")) -> Ceilings:
    """This device's ceilings: copy bandwidth and matmul TFLOP/s per dtype."""
    return Ceilings(
        copy_gbps=copy_gbps(COPY_BYTES, median(copy_samples(device, COPY_BYTES))),
        matmul_tflops={d: matmul_tflops(MATMUL_N, median(matmul_samples(device, d, MATMUL_N))) for d in dtypes},
    )
