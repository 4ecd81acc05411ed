"""Hot latency: what a model's decode loop sees, beside timing.py's cold-L2 device time.

Decode-size calls (M <= 16) run in 20-60 us on an H200, where the L2 flush and the launch are
most of what a user sees. Two numbers per call, both in seconds, lower is better:

- graph_replay_samples: ``calls`` back-to-back calls captured in one CUDA graph and replayed;
  one sample = one replay's device time (CUDA events) / calls. Hot L2, no launch cost: the
  device time a captured decode step pays (as tritonbench's --cudagraph times it).
- launch_overhead_samples: the host time to issue ``calls`` back-to-back calls without a graph
  and without waiting for them, / calls: the Python + launcher cost per call that a graph
  removes. ``calls`` stays far below the driver's launch queue (~1000 entries), so the host is
  never held up by a full queue and the number is the host's own.

Both need CUDA; on the CPU they raise NoCUDA with the reason (the suite records a skip). The
``cuda`` argument is the boundary the tests replace (torch.cuda by default).
"""

from __future__ import annotations

import time
from collections.abc import Callable

CALLS_PER_SAMPLE = 20  # back-to-back calls per graph replay / per host-timed burst
MAX_CALLS = 200  # well below the driver's launch queue depth


class NoCUDA(RuntimeError):
    """Hot latency needs a CUDA device (the message says why)."""


def check_counts(calls: int, samples: int, warmup: int) -> None:
    for name, value, low in (("calls", calls, 1), ("samples", samples, 1), ("warmup", warmup, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name}={value!r}: expected an integer >= {low}")
    if calls > MAX_CALLS:
        raise ValueError(f"calls={calls}: at most {MAX_CALLS}, or the launch queue fills and the host waits")


def per_call(totals: list[float], calls: int) -> list[float]:
    """Seconds per call from seconds per burst of ``calls`` calls."""
    return [t / calls for t in totals]


def _cuda(cuda):
    if cuda is None:
        import torch

        cuda = torch.cuda
    if not cuda.is_available():
        raise NoCUDA("hot latency (CUDA graph replay, launch overhead) needs a CUDA device")
    return cuda


def graph_replay_samples(fn: Callable[[], object], *, calls: int = CALLS_PER_SAMPLE, samples: int = 50,
                         warmup: int = 3, cuda=None) -> list[float]:
    """Seconds per call of ``fn`` replayed from a CUDA graph of ``calls`` back-to-back calls.

    Warm-up runs on a side stream first (capture requires it: allocator, autotuning, compiles
    all happen before capture, never inside it). The graph keeps its outputs in its own pool."""
    check_counts(calls, samples, warmup)
    cuda = _cuda(cuda)
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    with cuda.stream(side):
        for _ in range(max(warmup, 1)):
            fn()
    cuda.current_stream().wait_stream(side)
    cuda.synchronize()
    graph = cuda.CUDAGraph()
    with cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()  # one replay before timing: the first one uploads the graph
    cuda.synchronize()
    starts = [cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [cuda.Event(enable_timing=True) for _ in range(samples)]
    for start, end in zip(starts, ends):
        start.record()
        graph.replay()
        end.record()
    cuda.synchronize()
    totals = [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    del graph
    return per_call(totals, calls)


def launch_overhead_samples(fn: Callable[[], object], *, calls: int = CALLS_PER_SAMPLE, samples: int = 50,
                            warmup: int = 3, cuda=None, clock=time.perf_counter) -> list[float]:
    """Host seconds per call to issue ``calls`` back-to-back calls of ``fn`` (no graph, no wait;
    the device is drained before each burst, outside the timed region)."""
    check_counts(calls, samples, warmup)
    cuda = _cuda(cuda)
    for _ in range(warmup):
        fn()
    totals = []
    for _ in range(samples):
        cuda.synchronize()
        start = clock()
        for _ in range(calls):
            fn()
        totals.append(clock() - start)
    cuda.synchronize()
    return per_call(totals, calls)
