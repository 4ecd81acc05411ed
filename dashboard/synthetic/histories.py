"""Generated asv histories in another project's shape (generic mode), for the Regressions page's
render benchmark (tools/measure_regressions_render.py) and its tests: a few ``track_``
benchmarks whose ``function=`` parameter names a dotted hierarchy (``step.forward.solve``), with
level steps planted at some commits and series that start failing. Synthetic, not measurements."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dashboard.synthetic.asv_history import History, SeriesSpec, write_history

MACHINE, ENV = "gpu-box", "virtualenv-py3.11"
BENCHMARKS = ("bench_model.Profile.track_time", "bench_model.Profile.track_memory",
              "bench_model.Solver.track_time", "bench_model.Solver.track_iterations")
UNITS = {"track_time": "seconds", "track_memory": "bytes", "track_iterations": "unit"}
PARTS = ("step", "forward", "backward", "solve", "update", "io", "reduce")


def _functions(n: int) -> list[str]:
    """``n`` dotted function names, parents before their children (step, step.forward, ...)."""
    names, depth = [], 1
    while len(names) < n:
        for combo in np.ndindex(*(len(PARTS),) * depth):
            names.append(".".join(PARTS[i] for i in combo))
            if len(names) == n:
                break
        depth += 1
    return names


def function_series(n_series: int, n_commits: int, step_commits: int, n_failing: int, steps_per_series: int = 1,
                    seed: int = 0, n_stepped: int | None = None) -> list[SeriesSpec]:
    """``n_series`` series spread over BENCHMARKS; the first ``n_failing`` start failing at one
    of ``step_commits`` commits drawn from the history, the next ``n_stepped`` (default: all the
    others) have ``steps_per_series`` steps of 15-40 % (up or down) at those commits."""
    rng = np.random.default_rng(seed)
    per = -(-n_series // len(BENCHMARKS))
    names = _functions(per)
    at = np.sort(rng.choice(np.arange(12, n_commits), size=min(step_commits, n_commits - 12), replace=False))
    out = []
    for k in range(n_series):
        benchmark, function = BENCHMARKS[k % len(BENCHMARKS)], names[k // len(BENCHMARKS)]
        unit = UNITS[benchmark.rsplit(".", 1)[1]]
        failing = k < n_failing
        flat = n_stepped is not None and k >= n_failing + n_stepped
        chosen = np.sort(rng.choice(at, size=min(steps_per_series, len(at)), replace=False))
        steps = () if failing or flat else tuple((int(c), float(rng.choice([-1, 1]) * rng.uniform(0.15, 0.4)))
                                        for c in chosen)
        out.append(SeriesSpec(benchmark, (function,), ("function",), unit, base=float(rng.uniform(1e-4, 1e-2)),
                              run_noise=0.01, sample_noise=0.01, steps=steps,
                              status_steps=((int(chosen[0]), "failed"),) if failing else ()))
    return out


def write_function_history(results_dir: str | Path, size: str = "real", seed: int = 0) -> History:
    """``real``: 76 commits, 280 series, 210 with a step at one of 29 commits, 12 that start
    failing (about 220 findings, the shape of another project's GPU history); ``large``: 500
    commits, 1,050 series with two steps each (about 2,000 findings)."""
    if size == "real":
        specs, n = function_series(280, 76, 29, 12, seed=seed, n_stepped=210), 76
    elif size == "large":
        specs, n = function_series(1050, 500, 250, 40, steps_per_series=2, seed=seed), 500
    else:
        raise ValueError(f"size {size!r}: expected 'real' or 'large'")
    return write_history(results_dir, specs, n, seed=seed, machine=MACHINE, env_name=ENV, n_samples=8,
                         machine_params={"cpu": "Example CPU", "gpu": "Example GPU"})
