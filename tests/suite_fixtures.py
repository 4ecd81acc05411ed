"""Synthetic asv histories in the exact shape of OUR suite, for the dashboard's tests and scale runs.

Built on tests/asv_fixtures.write_history (asv's exact on-disk format). Benchmark names, params
and units are the suite's: ``bench_ops.<Class>.track_latency|track_peak_memory|
track_kernels_per_call`` with params ``case`` (a ``Case`` key) and ``impl``; device
ceilings ``bench_device.CopyCeiling.track_copy_seconds`` (``bytes``) and
``bench_device.MatmulCeiling.track_matmul_seconds`` (``dtype``, ``n``).

Levels come from the cost model: latency = roofline floor x a per-implementation factor, so
derived TFLOP/s, GB/s and roofline fractions look like a real GPU's; they are synthetic, not
measurements.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import fp8, implementations

from workload import cost
from workload.grids import benchmarked_ops, grid
from benchmarks.harness.ops import OPS
from workload.case import Case

from dashboard.synthetic.suite_history import (  # noqa: F401 (re-exported for the tests)
    COPY_BENCHMARK, COPY_BYTES, FIXTURE_IMPLS, IDENTITY, IMPL_FACTOR, KERNELS, MATMUL_BENCHMARK, MATMUL_N, METRIC_UNITS,
    SYNTH_CEILINGS, _impls, all_cases, benchmark_name, case_series, ceiling_series)
from tests.asv_fixtures import History, SeriesSpec, write_history

PEER_FACTOR = {"compile_max_autotune": 1.3, "liger_mlp": 1.22, "liger_glu": 1.4}
PEER_KERNELS = {"liger_mlp": {"gated_mlp": 2}, "liger_glu": {"gated_mlp": 4}}
# How far above the forward's floor each training mode sits (a backward runs two GEMMs per forward one).
MODE_FACTOR = {"forward": 1.0, "backward": 2.0, "full": 3.0}


@dataclass
class DashboardFixture:
    results_dir: Path
    main: History  # newest part of the main machine's history
    old_grid_cases: list[Case]
    new_grid_cases: list[Case]
    regressed: tuple[str, str]  # (case key, impl) with a planted +30 % latency step
    regression_commit: str
    failing: tuple[str, str]
    broken_files: list[str]


MAIN_MACHINE, MAIN_ENV = "h200-runner", "virtualenv-py3.12"
SECOND_MACHINE, SECOND_ENV = "a100-runner", "virtualenv-py3.12"
OTHER_ENV = "existing-py_usr_bin_python3"


def write_dashboard_fixture(results_dir: str | Path, seed: int = 7) -> DashboardFixture:
    """A small results dir in our suite's shape, with everything a dashboard meets in practice:

    - two machines (different GPU identity and ceilings) and a second env on the main machine;
    - a grid that grew: the first 8 commits of the main machine lack some cases;
    - skipped (NaN: cuBLASLt without that epilogue) and failed (null) values;
    - a planted +30 % fused-latency regression at global commit 16;
    - a truncated result file and a foreign JSON file (both must be listed as skipped).
    """
    root = Path(results_dir)
    # the default grid, plus a SiLU linear_act (the full grid's): cuBLASLt has no SiLU epilogue,
    # so its values there are skips
    new_cases = all_cases("default") + [Case("linear_act", 2048, 4096, 14336, "bf16", "silu", bias=True)]
    old_cases = [c for c in new_cases if c.op != "narrow_mlp" and c.M != 128]
    regressed_case = next(c for c in new_cases if c.op == "gated_mlp")
    regressed = (regressed_case.key, "fused")
    failing = (next(c for c in new_cases if c.op == "linear_act" and c.activation == "silu").key, "compile")
    ident = dict(IDENTITY)
    write_history(root, case_series(old_cases, failing={failing}) + ceiling_series(), 8, seed=seed,
                  machine=MAIN_MACHINE, env_name=MAIN_ENV, machine_params=ident, n_samples=12)
    main = write_history(root, case_series(new_cases, steps={regressed: ((8, 0.30),)}, failing={failing})
                         + ceiling_series(), 16, seed=seed, first_commit=8, machine=MAIN_MACHINE,
                         env_name=MAIN_ENV, machine_params=ident, n_samples=12, merge_benchmarks=True)
    write_history(root, case_series(new_cases[:10]) + ceiling_series(), 4, seed=seed, first_commit=20,
                  machine=MAIN_MACHINE, env_name=OTHER_ENV, machine_params=ident, merge_benchmarks=True)
    a100 = cost.Ceilings(copy_gbps=1700.0, matmul_tflops={"bf16": 290.0, "fp16": 290.0, "fp32": 19.0})
    write_history(root, case_series(all_cases("quick"), ceilings=a100) + ceiling_series(a100), 10, seed=seed,
                  first_commit=14, machine=SECOND_MACHINE, env_name=SECOND_ENV,
                  machine_params={**IDENTITY, "gpu": "NVIDIA A100-SXM4-80GB"}, merge_benchmarks=True)
    machine_dir = root / MAIN_MACHINE
    sample = sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json")[0]
    truncated = machine_dir / "0badf00d-truncated.json"
    truncated.write_text(sample.read_text()[:5000])
    foreign = machine_dir / "notes.json"
    foreign.write_text(json.dumps({"note": "not an asv result"}))
    return DashboardFixture(root, main, old_cases, new_cases, regressed, main.commits[8], failing,
                            [str(truncated), str(foreign)])


def scale_cases(n_series: int) -> list[Case]:
    """Cases of the full grid, families interleaved, until they make ``n_series`` series
    (every impl x latency, peak memory, kernels), ceilings included. The full grid has ~4,300
    series; beyond it the same shapes come again at token counts the grid does not use."""
    full = grid("full")
    extra_tokens = (32, 64, 256, 512, 1024, 4096, 16384, 32768)
    pools = [list(full[op]) + [dataclasses.replace(c, M=m) for m in extra_tokens for c in full[op]
                               if dataclasses.replace(c, M=m) not in full[op]]
             for op in benchmarked_ops()]
    chosen, seen, total = [], set(), len(ceiling_series())
    while total < n_series and any(pools):
        for pool in pools:
            while pool and pool[0].key in seen:
                pool.pop(0)
            if pool and total < n_series:
                case = pool.pop(0)
                seen.add(case.key)
                chosen.append(case)
                total += len(_impls(case.op)) * len(METRIC_UNITS)
    return chosen


def write_scale_history(results_dir: str | Path, n_commits: int = 500, n_series: int = 2000, seed: int = 0) -> History:
    """One machine, ``n_commits`` commits x about ``n_series`` series in our suite's shape."""
    cases = scale_cases(n_series)
    steps = {(c.key, "fused"): ((n_commits // 2 + i % 50, 0.2),) for i, c in enumerate(cases[::25])}
    return write_history(results_dir, case_series(cases, steps=steps) + ceiling_series(), n_commits, seed=seed,
                         machine=MAIN_MACHINE, env_name=MAIN_ENV, machine_params=dict(IDENTITY), n_samples=10)


def copy_results(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# --------------------------------------------------------------------------- peers and modes


def training_benchmark_name(op: str, method: str) -> str:
    return f"bench_training.{OPS[op].benchmark_class}Training.{method}"


def autotune_kernels(case: Case) -> int:
    """Kernels per call of compile_max_autotune in these histories: for linear_act 1 (the
    template with its epilogue won) at 8192 tokens, 2 (cuBLAS + a pointwise kernel) below."""
    return {"linear_act": 1 if case.M >= 8192 else 2, "gated_mlp": 4, "narrow_mlp": 6}[case.op]


def peer_series(cases: list[Case], modes=("forward", "backward", "full"), *, status_steps: dict | None = None,
                steps: dict | None = None, ceilings: cost.Ceilings = SYNTH_CEILINGS) -> list[SeriesSpec]:
    """Series of every implementation the suite has now (fused, the unfused ones and the fused
    peers) for every mode, as bench_ops (forward: params case, impl) and bench_training
    (backward, full: params case, impl, mode) store them.

    ``status_steps``: {(case_key, impl, mode): ((commit_index, status), ...)} on latency
    (a baseline that starts failing, a peer that appears). ``steps`` as in case_series, keyed
    (case_key, impl, mode). Liger's peers are gated only and take SwiGLU (silu) only, as the suite's
    adapters do; cuBLASLt trains nowhere here and has relu/gelu_tanh epilogues only.
    """
    status_steps, steps = status_steps or {}, steps or {}
    specs = []
    for case in cases:
        floor = cost.floor_seconds(case, ceilings)
        for impl in implementations.names(case.op):
            if impl not in fp8.FP8_IMPLEMENTATIONS and fp8.is_fp8(case.dtype) or (
                    impl in (fp8.SCALED_MM, fp8.SCALED_MM_COMPILE) and not fp8.is_fp8(case.dtype)):
                continue  # the FP8 peers run FP8 Cases only, as the suite's do
            factor = IMPL_FACTOR.get(impl) or PEER_FACTOR[impl]
            for mode in modes:
                unsupported = ((impl == "cublaslt" and (mode != "forward" or case.activation not in ("relu", "gelu_tanh")))
                               or (impl == "liger_mlp" and case.activation != "silu"))
                kernels = (autotune_kernels(case) if impl == "compile_max_autotune"
                           else (KERNELS.get(impl) or PEER_KERNELS[impl]).get(case.op, 1))
                for method in METRIC_UNITS:
                    latency = method == "track_latency"
                    base = {"track_latency": floor * factor * MODE_FACTOR[mode],
                            "track_peak_memory": float(cost.min_bytes(case)) * (1.0 if impl == "fused" else 2.5)
                            * MODE_FACTOR[mode],
                            "track_kernels_per_call": float(kernels * (1 if mode == "forward" else 2))}[method]
                    forward = mode == "forward"
                    specs.append(SeriesSpec(
                        benchmark=(benchmark_name if forward else training_benchmark_name)(case.op, method),
                        params=(case.key, impl) if forward else (case.key, impl, mode),
                        param_names=("case", "impl") if forward else ("case", "impl", "mode"),
                        unit=METRIC_UNITS[method], base=base, run_noise=0.015 if latency else 0.0,
                        sample_noise=0.01 if latency else 0.0,
                        steps=tuple(steps.get((case.key, impl, mode), ())) if latency else (),
                        skip_prob=1.0 if unsupported else 0.0,
                        status_steps=tuple(status_steps.get((case.key, impl, mode), ())) if latency else ()))
    return specs


@dataclass
class PeerFixture:
    results_dir: Path
    history: History
    cases: list[Case]
    dropped: tuple[str, str, str]  # (case key, impl, mode) of a baseline that starts failing
    dropped_at: str  # the first commit it fails at
    appeared: tuple[str, str, str]  # (case key, impl, mode) of a peer that starts running
    appeared_at: str
    flaky: tuple[str, str, str]  # (case key, impl, mode) that fails at one commit, then runs again
    flaky_failed_at: str
    flaky_fixed_at: str


PEER_COMMITS, DROP_INDEX, APPEAR_INDEX, FLAKY_FROM, FLAKY_UNTIL = 12, 8, 5, 2, 3


def write_peer_fixture(results_dir: str | Path, seed: int = 11) -> PeerFixture:
    """A suite-shaped history with the fused peers and the training modes: the default grid's
    training cases (plus a SwiGLU one for Liger's fused MLP) in forward, backward and full, on one
    machine with its ceilings, over 12 commits. Planted: default torch.compile, the best unfused
    implementation of the GeGLU case, starts failing in its forward at commit 8 (the baseline that
    drops out of the comparison set: the case's speedup jumps),
    liger_mlp starts running (skipped before: not installed) for the SwiGLU case's forward at
    commit 5, and eager's backward of a linear_act case fails at commit 2 only (ok -> failed -> ok)."""
    root = Path(results_dir)
    cases = [Case.from_key(k) for k in ("linear_act M=4096 K=4096 N=14336 bf16 gelu_tanh bias",
                                        "linear_act M=8192 K=4096 N=14336 bf16 gelu_tanh bias",
                                        "gated_mlp M=8192 K=768 N=3072 bf16 gelu_tanh",
                                        "gated_mlp M=8192 K=4096 N=14336 bf16 silu")]
    dropped = (cases[2].key, "compile", "forward")
    appeared = (cases[3].key, "liger_mlp", "forward")
    flaky = (cases[1].key, "eager", "backward")
    status_steps = {dropped: ((DROP_INDEX, "failed"),), appeared: ((0, "skipped"), (APPEAR_INDEX, "ok")),
                    flaky: ((FLAKY_FROM, "failed"), (FLAKY_UNTIL, "ok"))}
    history = write_history(root, peer_series(cases, status_steps=status_steps) + ceiling_series(), PEER_COMMITS,
                            seed=seed, machine=MAIN_MACHINE, env_name=MAIN_ENV, machine_params=dict(IDENTITY),
                            n_samples=12)
    return PeerFixture(root, history, cases, dropped, history.commits[DROP_INDEX], appeared,
                       history.commits[APPEAR_INDEX], flaky, history.commits[FLAKY_FROM], history.commits[FLAKY_UNTIL])

