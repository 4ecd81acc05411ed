"""The filters the pages share (op, dtype, activation, shape, impl, mode): applying them, the
counts each choice would leave, the catalog they count, and natural sort order of values.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dashboard.data.metrics import CASE_FIELDS, FACETS


def empty_catalog() -> pd.DataFrame:
    return pd.DataFrame(columns=["case", "impl", "mode", *CASE_FIELDS])


def apply_filters(rows: pd.DataFrame, selections: dict[str, list | None]) -> pd.DataFrame:
    """Rows whose facet values are in each non-empty selection (an empty selection = all)."""
    mask = np.ones(len(rows), dtype=bool)
    for facet, chosen in selections.items():
        if chosen:
            mask &= rows[facet].astype(str).isin([str(c) for c in chosen]).to_numpy()
    return rows[mask]


def facet_counts(catalog: pd.DataFrame, selections: dict[str, list | None]) -> dict[str, dict[str, int]]:
    """For each facet, how many distinct cases each value has given the OTHER facets' selections.

    ``catalog`` has one row per (case, impl) with the case fields, e.g. from :func:`case_catalog`.
    """
    out = {}
    for facet in FACETS:
        others = {f: v for f, v in selections.items() if f != facet}
        rows = apply_filters(catalog, others)
        counts = rows.groupby(rows[facet].astype(str), observed=True)["case"].nunique()
        out[facet] = {str(k): int(v) for k, v in counts.items()}
    return out


def case_catalog(rows: pd.DataFrame) -> pd.DataFrame:
    """Distinct (case, impl, mode) with their Case fields (what filters count)."""
    cols = ["case", "impl", "mode", *CASE_FIELDS]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    return rows[cols].drop_duplicates(["case", "impl", "mode"]).astype(
        {c: str for c in ("case", "impl", "mode", "op", "dtype", "activation", "shape")})


def sort_values_naturally(values) -> list[str]:
    """Values in a readable order: numbers inside them compare as numbers ("M=16" before "M=128",
    "size=1024, ..." before "size=65536, ..."), the rest as text."""
    def key(v: str):  # text and digit runs alternate, so the parts always compare like with like
        return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"(\d+)", v))]
    return sorted({str(v) for v in values}, key=key)
