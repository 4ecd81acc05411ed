"""This machine's ceilings, measured in every run, so throughput, bandwidth and the roofline can
be derived later from latency and the cost model against the device it ran on.

Stored as times (lower is better, with samples, like every other metric here, so asv compare and
continuous judge them the right way round); the dashboard turns them into GB/s and TFLOP/s with
workload.cost.copy_gbps / matmul_tflops and the size parameters. The GPU runs the large sizes; a
CPU run (pipeline smoke test) the small ones.
"""

import torch

from benchmarks.harness import timing

from benchmarks.common import skip

GPU_COPY_BYTES, CPU_COPY_BYTES = timing.COPY_BYTES, 256 * 1024**2
GPU_MATMUL_N, CPU_MATMUL_N = timing.MATMUL_N, 1024


def _check_size(size, gpu_size, cpu_size):
    on_gpu = torch.cuda.is_available()
    if size != (gpu_size if on_gpu else cpu_size):
        skip(f"this size is measured on {'a CPU' if on_gpu else 'a GPU'}")
    return "cuda" if on_gpu else "cpu"


class CopyCeiling:
    params = [[GPU_COPY_BYTES, CPU_COPY_BYTES]]
    param_names = ["bytes"]
    timeout = 300
    version = "1"

    def track_copy_seconds(self, nbytes):
        """One device-to-device copy of `bytes` (read + write), without L2 flush."""
        device = _check_size(nbytes, GPU_COPY_BYTES, CPU_COPY_BYTES)
        return {"samples": timing.copy_samples(device, nbytes, samples=20 if device == "cuda" else 5), "number": 1}

    track_copy_seconds.unit = "seconds"


class MatmulCeiling:
    params = [["bf16", "fp16", "fp32", "fp8"], [GPU_MATMUL_N, CPU_MATMUL_N]]  # fp8: e4m3 (harness/fp8.py)
    param_names = ["dtype", "n"]
    timeout = 300
    version = "1"

    def track_matmul_seconds(self, dtype, n):
        """One dense n^3 torch.matmul, cold L2."""
        device = _check_size(n, GPU_MATMUL_N, CPU_MATMUL_N)
        if dtype == "fp8":
            return _fp8_matmul(device, n)
        if device == "cpu" and dtype != "fp32":
            skip("the CPU run measures fp32 only")
        return {"samples": timing.matmul_samples(device, dtype, n, samples=20 if device == "cuda" else 3), "number": 1}

    track_matmul_seconds.unit = "seconds"


def _fp8_matmul(device: str, n: int):
    """The FP8 roof: an e4m3 n^3 torch._scaled_mm, skipped where the device has no FP8 matmul."""
    from benchmarks.harness import fp8

    reason = fp8.matmul_missing(device)
    if reason:
        skip(reason)
    return {"samples": fp8.matmul_samples(device, n), "number": 1}
