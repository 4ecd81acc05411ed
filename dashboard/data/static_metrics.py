"""Static compile metrics: the asv series of benchmarks/bench_compile.py (no Dash here).

What each kernel config the autotuner is offered costs on an architecture (sm_90, and one
compile-metrics machine each for sm_100, sm_120, gfx942, gfx950: registers, spill bytes, shared
memory, SASS instructions), read from the compiler by the library's compile check. asv stores
them like any benchmark, but nothing is timed: a value changes only when a kernel, its configs or
the compiler do. So they never share a view with timings; the Kernels page shows them, and the
other pages leave them out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workload.kernel_configs import arch_of_machine

BENCHMARK_PREFIX = "bench_compile.KernelResources."


@dataclass(frozen=True)
class StaticMetric:
    key: str  # the asv method: bench_compile.KernelResources.<key>
    label: str
    column: str  # its column in resources_at's table
    shown_unit: str  # what the table and the axis say, after dividing by ``scale``
    scale: float = 1.0

    def shown(self, values):
        return values / self.scale


# Shared memory in KiB, as the compile check and ptxas print it and the arch limits are stated.
METRICS = (
    StaticMetric("track_registers", "Registers per thread", "registers", "registers"),
    StaticMetric("track_spill_bytes", "Spill bytes per thread", "spill_bytes", "B"),
    StaticMetric("track_shared_memory", "Shared memory per block", "shared_bytes", "KiB", 1024.0),
    StaticMetric("track_sass_instructions", "SASS instructions", "sass_instructions", "instructions"),
)
METRIC_OF_KEY = {m.key: m for m in METRICS}
ROW_KEY = ["kernel", "variant", "config", "dtype"]


def is_static(benchmarks: pd.Series) -> np.ndarray:
    """Which of these benchmark names are static compile metrics."""
    return benchmarks.astype(str).str.startswith(BENCHMARK_PREFIX).to_numpy()


def metric_of(benchmark: str) -> StaticMetric | None:
    return METRIC_OF_KEY.get(str(benchmark).removeprefix(BENCHMARK_PREFIX))


def split_kernel_config(label: str) -> tuple[str, str, str]:
    """'linear_act/tile 128x128x64 w8 s3' -> ('linear_act', 'tile', '128x128x64 w8 s3'); a label
    of another shape stays whole in the config column rather than being guessed at."""
    head, _, config = str(label).partition(" ")
    kernel, slash, variant = head.partition("/")
    if not slash or not config:
        return "", "", str(label)
    return kernel, variant, config


def series_fields(series: pd.DataFrame) -> pd.DataFrame:
    """Per static series (index kept): metric key, kernel, variant, config and dtype."""
    out = pd.DataFrame(index=series.index)
    out["metric"] = series["benchmark"].map(lambda b: str(b).removeprefix(BENCHMARK_PREFIX))
    params = [dict(zip(n, v)) for n, v in zip(series["param_names"], series["param_values"])]
    parts = [split_kernel_config(p.get("kernel_config", "")) for p in params]
    out["kernel"] = [k for k, _, _ in parts]
    out["variant"] = [v for _, v, _ in parts]
    out["config"] = [c for _, _, c in parts]
    out["dtype"] = [str(p.get("dtype", "")) for p in params]
    return out


def resources_at(rows: pd.DataFrame, fields: pd.DataFrame) -> pd.DataFrame:
    """One commit's rows of the static series -> one row per kernel x variant x config x dtype
    that was compiled, a column per metric (NaN where not measured) and ``problem`` ("did not
    compile" when asv recorded a failure). Configs asv skipped for every metric (not offered for
    that dtype on sm_90, or a kernel the commit does not have) are left out."""
    columns = [*ROW_KEY, *(m.column for m in METRICS), "problem"]
    rows = rows.join(fields, on="series")
    rows = rows[rows["metric"].isin(METRIC_OF_KEY)].assign(status=rows["status"].astype(str))
    if rows.empty:
        return pd.DataFrame(columns=columns)
    values = rows.groupby([*ROW_KEY, "metric"])["value"].first().unstack("metric")
    values = values.reindex(columns=[m.key for m in METRICS]).set_axis([m.column for m in METRICS], axis=1)
    statuses = rows.groupby(ROW_KEY)["status"].agg(set).reindex(values.index)
    values["problem"] = ["did not compile" if "failed" in s else "" for s in statuses]
    compiled = [s != {"skipped"} for s in statuses]
    return values[compiled].reset_index()[columns]


def with_previous(current: pd.DataFrame, previous: pd.DataFrame) -> pd.DataFrame:
    """``current`` with each metric's change since ``previous`` (``<column>_change``, NaN when
    either side has no value) and ``changed``: whether any metric moved or a config came or went."""
    merged = current.merge(previous, on=ROW_KEY, how="outer", suffixes=("", "_previous"), indicator=True)
    changed = merged["_merge"] != "both"
    for m in METRICS:
        delta = merged[m.column] - merged[f"{m.column}_previous"]
        merged[f"{m.column}_change"] = delta
        changed |= delta.fillna(0).ne(0) | merged[m.column].isna().ne(merged[f"{m.column}_previous"].isna())
    merged["new_here"] = merged["_merge"] == "left_only"
    merged["gone_here"] = merged["_merge"] == "right_only"
    merged["changed"] = changed
    return merged.drop(columns="_merge")


# The device a compile-metrics machine's architecture stands for on the Kernels page.
ARCH_DEVICES = {"sm_90": "H200", "sm_100": "B200", "sm_120": "RTX 50", "gfx942": "MI300", "gfx950": "MI355X",
                "sm_80": "A100"}
# What tells configs apart across architectures: the tile, warps and persistent flags. The stage
# count and AMD's knobs (wpe2 nk16 kp2) are each backend's own form of the same config.
_BACKEND_FORM = re.compile(r"^(s\d+|wpe\d+|nk\d+|kp\d+)$")


def config_family(config: str) -> str:
    """'128x128x64 w8 s2 wpe2 nk16 kp2' and '128x128x64 w8 s3' -> '128x128x64 w8'."""
    return " ".join(token for token in str(config).split() if not _BACKEND_FORM.match(token))


def arch_column(machine: str, with_triton: bool = False) -> str | None:
    """'compile-gfx942-triton-3.6.0' -> 'MI300 (gfx942)', with_triton: 'MI300 (gfx942, Triton 3.6.0)';
    None for a machine of no known architecture."""
    arch = arch_of_machine(machine)
    if arch is None:
        return None
    triton = f", Triton {machine.rpartition('-triton-')[2]}" if with_triton else ""
    return f"{ARCH_DEVICES.get(arch, arch)} ({arch}{triton})"


def column_id(column: str) -> str:
    """'MI300 (gfx942)' -> 'gfx942', 'H200 (sm_90, Triton 3.6.0)' -> 'sm_90-triton-3.6.0' (its id in a table)."""
    return column.rpartition("(")[2].rstrip(")").replace(", Triton ", "-triton-")


def across_machines(newest: dict[str, pd.DataFrame], kernel: str, variant: str, family: str, dtype: str) -> pd.DataFrame:
    """One config on every architecture side by side: ``newest`` maps a machine to its table of
    resources_at at its newest commit that compiled the config; rows are the config label there
    and each metric (in its shown unit), columns the machines in ARCH_DEVICES order, one each:
    machines of one architecture (two Triton versions) are told apart by their Triton version."""
    order = {arch: i for i, arch in enumerate(ARCH_DEVICES)}
    per_arch = Counter(arch_of_machine(m) for m in newest)
    columns = {}
    for machine in sorted(newest, key=lambda m: (order.get(arch_of_machine(m), len(order)), m)):
        column, table = arch_column(machine, with_triton=per_arch[arch_of_machine(machine)] > 1), newest[machine]
        if column is None or table.empty:
            continue
        hit = table[(table["kernel"] == kernel) & (table["variant"] == variant) & (table["dtype"] == dtype)
                    & (table["config"].map(config_family) == family)]
        if hit.empty:
            continue
        row = hit.iloc[0]
        columns[column] = {"config": row["config"], **{m.label: m.shown(row[m.column]) for m in METRICS}}
    return pd.DataFrame(columns, index=["config", *(m.label for m in METRICS)])
