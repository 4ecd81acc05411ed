"""The demo history ``fused-mlp-dashboard --demo`` serves: suite-shaped and synthetic, so a
newcomer without a GPU sees every page. Two machines; on the main one a library step (one fused
case 25 % slower), a runner-wide step (every implementation slower, the runner's driver 570 ->
575 and power limit 700 -> 600 W recorded), and a failing baseline (compile fails for one case
at the newest commit). Written to a folder the caller names (a temporary one for the demo),
never into results/."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from dashboard.synthetic.asv_history import write_history
from dashboard.synthetic.runner_states import write_runner_states
from dashboard.synthetic.suite_history import IDENTITY, all_cases, case_series, ceiling_series

MAIN, SECOND, ENV = "h200-demo", "a100-demo", "existing-py3.12"
N_COMMITS = 40
LIBRARY_STEP, RUNNER_STEP = 28, 34  # commit indexes
NOTE = "demo data, synthetic"


def write_demo_history(results_dir: str | Path, seed: int = 3) -> Path:
    """Write the demo history into ``results_dir`` (created) and return it."""
    root = Path(results_dir)
    cases = all_cases("quick")
    library_case = next(c for c in cases if c.op == "gated_mlp")
    failing_case = next(c for c in cases if c.op == "linear_act")
    steps = {(c.key, impl): ((RUNNER_STEP, 0.15),) for c in cases for impl in ("fused", "eager", "compile", "cublaslt")}
    steps[(library_case.key, "fused")] = ((LIBRARY_STEP, 0.25), (RUNNER_STEP, 0.15))
    specs = [dataclasses.replace(s, status_steps=((N_COMMITS - 1, "failed"),))
             if s.benchmark.endswith("track_latency") and s.params == (failing_case.key, "compile") else s
             for s in case_series(cases, steps=steps)]
    history = write_history(root, specs + ceiling_series(), N_COMMITS, seed=seed, machine=MAIN, env_name=ENV,
                            machine_params=dict(IDENTITY), n_samples=12)
    write_runner_states(history, RUNNER_STEP)
    write_history(root, case_series(cases) + ceiling_series(), N_COMMITS, seed=seed, machine=SECOND, env_name=ENV,
                  machine_params={**IDENTITY, "gpu": "NVIDIA A100-SXM4-80GB"}, n_samples=12, merge_benchmarks=True)
    return root

