"""TFLOP/s, GB/s and the roofline fraction of the rows in view, from their latency, the cost
model and the run's ceilings: derived here, never stored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workload import cost
from workload.case import Case

from dashboard.data.device_ceilings import ceilings_of
from dashboard.data.metrics import FORWARD, METRICS, STORED_METRICS


def _ceilings_per_row(rows: pd.DataFrame, ceilings: pd.DataFrame) -> list[cost.Ceilings | None]:
    runs = rows[["machine", "env_name", "commit_hash"]].astype(str).drop_duplicates()
    found = {tuple(r): ceilings_of(ceilings, *r) for r in runs.itertuples(index=False)}
    return [found[(m, e, c)] for m, e, c in zip(rows["machine"].astype(str), rows["env_name"].astype(str),
                                                  rows["commit_hash"].astype(str))]


def floor_seconds_per_row(rows: pd.DataFrame, ceilings: pd.DataFrame) -> np.ndarray:
    """cost.floor_seconds for each row's Case against its own run's ceilings (NaN if none).

    Called per distinct (case, run) in view, a few hundred at most.
    """
    per_row = _ceilings_per_row(rows, ceilings)
    memo: dict = {}
    out = np.full(len(rows), np.nan)
    for i, (key, ceil) in enumerate(zip(rows["case"].astype(str), per_row)):
        if ceil is None:
            continue
        memo_key = (key, id(ceil))
        if memo_key not in memo:
            case = Case.from_key(key)
            memo[memo_key] = cost.floor_seconds(case, ceil) if cost.roof_dtype(case) in ceil.matmul_tflops else np.nan
        out[i] = memo[memo_key]
    return out


def derive(rows: pd.DataFrame, metric: str, ceilings: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows of the metric's stored source with ``y`` (the metric) and ``y_lo``/``y_hi`` (99 % CI
    band) in the metric's units. Non-finite bounds become NaN, and so do the derived rates of a
    training mode (backward, full): the cost model's flops and bytes are a forward's."""
    spec = METRICS[metric]
    out = rows.copy()
    value = out["value"].to_numpy(dtype=float)
    bounds = {k: out[k].to_numpy(dtype=float) for k in ("ci_99_a", "ci_99_b")}
    if metric in STORED_METRICS:
        factor, invert = np.ones(len(out)), False
    elif metric == "tflops":
        factor, invert = out["flops"].to_numpy(dtype=float) / 1e12, True
    elif metric == "gbps":
        factor, invert = out["min_bytes"].to_numpy(dtype=float) / 1e9, True
    else:  # roofline fraction = floor / latency
        factor = floor_seconds_per_row(out, ceilings if ceilings is not None else pd.DataFrame(
            columns=["machine", "env_name", "commit_hash", "copy_gbps"]))
        invert = True
    if metric not in STORED_METRICS and "mode" in out.columns:
        # flops and bytes are the forward's (the cost model): a training step's rate is not derived
        factor = np.where(out["mode"].astype(str).to_numpy() == FORWARD, factor, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        def convert(x):
            y = factor / x if invert else factor * x
            return np.where(np.isfinite(y) & (y > 0) if invert else np.isfinite(y), y, np.nan)

        out["y"] = convert(value)
        lo, hi = convert(bounds["ci_99_a"]), convert(bounds["ci_99_b"])
    # dividing swaps the ends of an interval
    out["y_lo"], out["y_hi"] = (hi, lo) if invert else (lo, hi)
    out["better"] = spec.better
    return out
