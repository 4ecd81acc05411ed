"""The device ceilings each run measured (copy GB/s, matmul TFLOP/s per dtype), checked: a value
that cannot be a ceiling is left out with its reason (CeilingProblem).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workload import cost

from asv_results.data import STATUS_OK


COPY_BENCHMARK = "bench_device.CopyCeiling.track_copy_seconds"
MATMUL_BENCHMARK = "bench_device.MatmulCeiling.track_matmul_seconds"


@dataclass(frozen=True)
class CeilingProblem:
    """A stored ceiling that was left out, and why (the rest of the run's ceilings still count)."""

    machine: str
    env_name: str
    commit_hash: str
    what: str  # "copy (bytes=1073741824)", "matmul bf16 (n=8192)"
    reason: str

    def text(self) -> str:
        return f"{self.machine} / {self.env_name} commit {self.commit_hash[:8]}: {self.what} left out: {self.reason}"


def _positive_int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number > 0 and number == value else None


def ceilings_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[CeilingProblem]]:
    """Measured ceilings per run (machine, env_name, commit_hash, copy_gbps, tflops_<dtype>...)
    from the ceiling benchmarks' rows, and the stored values that could not be used.

    A time that is not a positive finite number (asv reads Infinity, 0, -1 as measured) or a
    size parameter that is not a positive integer is left out with its reason; the run keeps
    its other ceilings. A run without a usable copy bandwidth has no ceilings at all.
    """
    keys = ["machine", "env_name", "commit_hash"]
    ok = frame[(frame["status"] == STATUS_OK) & frame["benchmark"].isin([COPY_BENCHMARK, MATMUL_BENCHMARK])]
    problems: list[CeilingProblem] = []

    def usable(rows: pd.DataFrame, size_col: str, what) -> pd.DataFrame:
        sizes = rows[size_col].to_numpy(dtype=object)
        good_size = np.array([_positive_int(v) is not None for v in sizes], dtype=bool)
        seconds = rows["value"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            good_time = np.isfinite(seconds) & (seconds > 0)
        for i in np.flatnonzero(~(good_size & good_time)):  # the few bad ones, with their reasons
            row = rows.iloc[i]
            reason = (f"{size_col}={sizes[i]!r} is not a positive integer" if not good_size[i]
                      else f"stored time {seconds[i]!r} s is not a positive finite number")
            problems.append(CeilingProblem(str(row["machine"]), str(row["env_name"]), str(row["commit_hash"]),
                                           what(row), reason))
        return rows[good_size & good_time]

    columns: list[pd.Series] = []
    copy = ok[ok["benchmark"] == COPY_BENCHMARK]
    if len(copy) and "bytes" in copy.columns:
        copy = usable(copy, "bytes", lambda r: f"copy ceiling (bytes={r['bytes']})")
        gbps = [cost.copy_gbps(int(b), s) for b, s in zip(copy["bytes"], copy["value"])]
        if len(copy):
            columns.append(copy.assign(copy_gbps=gbps).groupby(keys, observed=True)["copy_gbps"].max())
    matmul = ok[ok["benchmark"] == MATMUL_BENCHMARK]
    if len(matmul) and {"dtype", "n"} <= set(matmul.columns):
        matmul = usable(matmul, "n", lambda r: f"matmul ceiling {r['dtype']} (n={r['n']})")
        tflops = [cost.matmul_tflops(int(n), s) for n, s in zip(matmul["n"], matmul["value"])]
        if len(matmul):
            per_dtype = (matmul.assign(tflops=tflops, dt=matmul["dtype"].astype(str))
                         .groupby([*keys, "dt"], observed=True)["tflops"].max().unstack("dt"))
            per_dtype.columns = [f"tflops_{d}" for d in per_dtype.columns]
            columns.extend(per_dtype[c] for c in per_dtype.columns)
    if not columns:
        return pd.DataFrame(columns=[*keys, "copy_gbps"]), problems
    table = pd.concat(columns, axis=1).reset_index()
    for col in keys:
        table[col] = table[col].astype(str)
    if "copy_gbps" not in table.columns:
        table["copy_gbps"] = np.nan
    return table, problems


def ceilings_by_run(table: pd.DataFrame) -> dict[tuple[str, str, str], cost.Ceilings]:
    """(machine, env_name, commit_hash) -> the Ceilings measured in that run (runs with a copy
    bandwidth only). Cached per table object: a table is built once per results set."""
    cached = _CEILINGS_CACHE.get(id(table))
    if cached is not None and cached[0] is table:
        return cached[1]
    out = {}
    tflops_cols = [c for c in table.columns if str(c).startswith("tflops_")]
    for row in table.to_dict("records"):
        copy = float(row.get("copy_gbps", np.nan))
        if not (np.isfinite(copy) and copy > 0):  # ceilings_table left it out (with its reason)
            continue
        matmul = {c.removeprefix("tflops_"): float(row[c]) for c in tflops_cols if np.isfinite(row[c]) and row[c] > 0}
        out[(row["machine"], row["env_name"], row["commit_hash"])] = cost.Ceilings(copy, matmul)
    _CEILINGS_CACHE.clear()  # one results set at a time
    _CEILINGS_CACHE[id(table)] = (table, out)
    return out


_CEILINGS_CACHE: dict[int, tuple] = {}


def ceilings_of(table: pd.DataFrame, machine: str, env: str, commit: str) -> cost.Ceilings | None:
    """The ceilings measured in one run, or None when that run measured no copy bandwidth."""
    return ceilings_by_run(table).get((str(machine), str(env), str(commit)))
