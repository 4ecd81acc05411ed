"""Each distinct Case key of the series, parsed once (``Case.from_key``, the suite's torch-free
workload vocabulary in benchmarks/harness) into a small table and joined to the series (not to
every row): a view's rows get the Case fields through their series.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from workload import cost
from workload.ops import spec_of
from workload.case import Case

from dashboard.data.metrics import CASE_FIELDS, FORWARD, stored_metric_of


@lru_cache(maxsize=8192)
def _case_row(key: str) -> dict | None:
    try:
        case = Case.from_key(key)
    except ValueError:
        return None  # a foreign or retired key: the row keeps its key but gets no Case fields
    return {"op": case.op, "M": case.M, "K": case.K, "N": case.N, "dtype": case.dtype,
            "activation": case.activation, "shape": spec_of(case).shape_label(case), "flops": float(cost.flops(case)),
            "min_bytes": float(cost.min_bytes(case)), "intensity": cost.arithmetic_intensity(case)}


def case_table(keys) -> pd.DataFrame:
    """One row per distinct Case key (index), with its fields and cost-model numbers."""
    rows = {k: _case_row(k) for k in dict.fromkeys(keys) if isinstance(k, str)}
    good = {k: r for k, r in rows.items() if r is not None}
    table = pd.DataFrame.from_dict(good, orient="index")
    if table.empty:
        table = pd.DataFrame(columns=[*CASE_FIELDS, "flops", "min_bytes", "intensity"])
    table.index.name = "case"
    return table


CASE_COLUMNS = ("metric", "case", "impl", "mode", *CASE_FIELDS, "flops", "min_bytes", "intensity")


def case_series(series: pd.DataFrame) -> pd.DataFrame:
    """The series that are this suite's Case metrics, with what the views need of them:
    ``metric`` (latency, peak_memory, kernels), ``case`` (the Case key), ``impl``, ``mode``
    (forward, backward, full; "forward" for a benchmark without that parameter), the Case
    fields and the cost model's flops, minimum bytes and intensity. Indexed like ``series``
    (asv_results.table: benchmark, param_names, param_values per series).

    A series counts when its benchmark records a stored metric and has ``case`` and ``impl``
    parameters whose case key parses; any other series (the ceilings, another project's
    benchmarks, a retired case key) is not a Case series.
    """
    rows = {}
    for sid, bench, names, values in zip(series.index, series["benchmark"], series["param_names"],
                                         series["param_values"]):
        metric = stored_metric_of(bench)
        if metric is None or "case" not in names or "impl" not in names:
            continue
        case, impl = values[names.index("case")], values[names.index("impl")]
        mode = values[names.index("mode")] if "mode" in names else FORWARD
        if isinstance(case, str):
            rows[sid] = (metric, case, str(impl), str(mode))
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["metric", "case", "impl", "mode"])
    table = case_table(out["case"].unique() if len(out) else [])
    out = out[out["case"].isin(table.index)]
    out = out.join(table, on="case")
    out.index.name = series.index.name
    return out[list(CASE_COLUMNS)] if len(out) else pd.DataFrame(columns=list(CASE_COLUMNS))
