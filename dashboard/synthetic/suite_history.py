"""Synthetic asv histories in the exact shape of this suite (numpy and the harness's torch-free
vocabulary only): ``bench_ops.<Class>.track_latency|track_peak_memory|track_kernels_per_call``
with params ``case`` (a ``Case`` key) and ``impl``, and the device ceilings
``bench_device.CopyCeiling.track_copy_seconds`` / ``bench_device.MatmulCeiling.track_matmul_seconds``.
Levels come from the cost model (latency = roofline floor x a per-implementation factor), so
derived TFLOP/s, GB/s and roofline fractions look like a real GPU's; they are synthetic, not
measurements. The tests (tests/suite_fixtures.py) and ``fused-mlp-dashboard --demo`` use them."""

from __future__ import annotations

from dashboard.synthetic.asv_history import SeriesSpec
from workload import cost
from workload.case import Case
from workload.fp8_dtypes import is_fp8
from workload.grids import benchmarked_ops, grid
from workload.ops import OPS, implementation_names

METRIC_UNITS = {"track_latency": "seconds", "track_peak_memory": "bytes", "track_kernels_per_call": "kernels"}
COPY_BENCHMARK = "bench_device.CopyCeiling.track_copy_seconds"
MATMUL_BENCHMARK = "bench_device.MatmulCeiling.track_matmul_seconds"
# Synthetic device (H200-like, DESIGN.md anchors) and how far above the floor each implementation sits.
# fp8: twice bf16, the datasheet ratio (as benchmarks.suite_cost assumes until the GPU measures it)
SYNTH_CEILINGS = cost.Ceilings(copy_gbps=4270.0, matmul_tflops={"bf16": 680.0, "fp16": 680.0, "fp32": 60.0, "fp8": 1360.0})
IMPL_FACTOR = {"fused": 1.15, "eager": 1.6, "compile": 1.45, "cublaslt": 1.35}
KERNELS = {"fused": {"linear_act": 1, "gated_mlp": 2, "narrow_mlp": 1},
           "eager": {"linear_act": 2, "gated_mlp": 5, "narrow_mlp": 10},
           "compile": {"linear_act": 2, "gated_mlp": 4, "narrow_mlp": 6},
           "cublaslt": {"linear_act": 1}}
# The implementations the pre-peer histories hold (write_dashboard_fixture, the scale history): the
# suite's before the fused peers and the training modes came. write_peer_fixture adds both.
FIXTURE_IMPLS = tuple(IMPL_FACTOR)
COPY_BYTES, MATMUL_N = 1 << 30, 8192
IDENTITY = {"gpu": "NVIDIA H200", "driver": "570.86.15", "cuda": "12.8", "torch": "2.11.0", "triton": "3.6.0"}


def benchmark_name(op: str, method: str) -> str:
    return f"bench_ops.{OPS[op].benchmark_class}.{method}"


def _impls(op: str) -> list[str]:
    return [i for i in implementation_names(op) if i in FIXTURE_IMPLS]


def case_series(cases: list[Case], *, ceilings: cost.Ceilings = SYNTH_CEILINGS, steps: dict | None = None,
                failing: set | None = None, methods=tuple(METRIC_UNITS), run_noise: float = 0.015) -> list[SeriesSpec]:
    """Series for every (case, impl, metric) of ``cases``.

    ``steps``: {(case_key, impl): ((commit_index, relative_change), ...)} planted in latency.
    ``failing``: {(case_key, impl)} whose latency fails (null) at every commit.
    cuBLASLt has only relu/gelu_tanh epilogues: other activations are skipped (NaN), as on a GPU.
    """
    steps, failing = steps or {}, failing or set()
    specs = []
    for case in cases:
        floor = cost.floor_seconds(case, ceilings)
        for impl in _impls(case.op):
            unsupported = impl == "cublaslt" and case.activation not in ("relu", "gelu_tanh")
            for method in methods:
                base = {"track_latency": floor * IMPL_FACTOR[impl],
                        "track_peak_memory": float(cost.min_bytes(case)) * (1.0 if impl == "fused" else 2.5),
                        "track_kernels_per_call": float(KERNELS[impl][case.op])}[method]
                latency = method == "track_latency"
                specs.append(SeriesSpec(
                    benchmark=benchmark_name(case.op, method), params=(case.key, impl), param_names=("case", "impl"),
                    unit=METRIC_UNITS[method], base=base, run_noise=run_noise if latency else 0.0,
                    sample_noise=0.01 if latency else 0.0,
                    steps=tuple(steps.get((case.key, impl), ())) if latency else (),
                    skip_prob=1.0 if unsupported else 0.0,
                    fail_prob=1.0 if latency and (case.key, impl) in failing else 0.0))
    return specs


def ceiling_series(ceilings: cost.Ceilings = SYNTH_CEILINGS) -> list[SeriesSpec]:
    """The device ceilings as the suite stores them: seconds for one copy / one n^3 matmul."""
    specs = [SeriesSpec(COPY_BENCHMARK, (COPY_BYTES,), ("bytes",), "seconds",
                        base=2 * COPY_BYTES / (ceilings.copy_gbps * 1e9), run_noise=0.005)]
    specs += [SeriesSpec(MATMUL_BENCHMARK, (dtype, MATMUL_N), ("dtype", "n"), "seconds",
                         base=2 * MATMUL_N**3 / (tflops * 1e12), run_noise=0.005)
              for dtype, tflops in sorted(ceilings.matmul_tflops.items())]
    return specs


def all_cases(grid_name: str = "default") -> list[Case]:
    # the float dtypes only: these histories predate the FP8 ones (tests/test_fp8_suite.py has theirs)
    return [c for op in benchmarked_ops() for c in grid(grid_name)[op] if not is_fp8(c.dtype)]
