"""Two runs' rows side by side (commit A against commit B): old -> new, ratio and asv's own
significance rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.data.metrics import CASE_FIELDS


def _stats_of(row) -> tuple[dict, list | None]:
    stats = {"ci_99_a": row.ci_99_a, "ci_99_b": row.ci_99_b, "repeat": row.repeat}
    samples = row.samples if isinstance(row.samples, list) else None
    return stats, samples


CASE_KEY = ("metric", "case", "impl", "mode")
SERIES_KEY = ("benchmark", "params_key")  # any asv results (generic mode)


def compare_rows(old: pd.DataFrame, new: pd.DataFrame, factor: float = 1.1, better: str | dict = "lower",
                 key=CASE_KEY, fields=CASE_FIELDS, samples=None) -> pd.DataFrame:
    """Every series present in either run: old -> new, ratio and asv's verdict.

    Significance is asv's own rule (``asv compare``: ``_is_result_better``): the two results
    must differ by more than ``factor`` AND ``asv._stats.is_different`` must hold — Mann-Whitney U
    on the samples (p < 0.002) when both runs recorded samples, else non-overlapping 99 % CIs.
    ``better``: "lower" / "higher" for every row, or a dict from the first ``key`` column's value
    (the benchmark, in generic mode) to it. ``key`` names a series; ``fields`` are carried along.
    ``samples``: for frames without a ``samples`` column, a function from their ``row`` numbers to
    asv's samples lists, called for the rows beyond the factor only (the others need none).
    """
    from asv.commands.compare import _is_result_better  # asv==0.6.6 pinned; the rule asv compare applies

    key, fields = list(key), list(fields)
    lazy = "samples" not in old.columns or "samples" not in new.columns
    keep = [*key, *fields, "value", "status", "ci_99_a", "ci_99_b", "repeat", "row" if lazy else "samples", "unit"]
    merged = old[keep].merge(new[keep], on=key, how="outer", suffixes=("_old", "_new"))
    lower_is_better = (np.full(len(merged), better == "lower") if isinstance(better, str)
                       else merged[key[0]].astype(str).map(better).fillna("lower").to_numpy() == "lower")
    for col in fields:
        merged[col] = merged[f"{col}_old"].astype(object).where(merged[f"{col}_old"].notna(),
                                                                merged[f"{col}_new"].astype(object))
    v_old = merged["value_old"].to_numpy(dtype=float)
    v_new = merged["value_new"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = v_new / v_old
    both = np.isfinite(v_old) & np.isfinite(v_new) & (v_old > 0) & (v_new > 0)
    # Only rows beyond the factor can be significant, so asv's test runs on those alone.
    candidates = both & ((ratio > factor) | (ratio < 1 / factor))
    change = np.full(len(merged), "", dtype=object)
    change[both & ~candidates] = "unchanged"
    if lazy:  # the samples of the rows that can be significant, fetched in one go
        merged["samples_old"], merged["samples_new"] = None, None
        chosen = np.flatnonzero(candidates)
        if len(chosen) and samples is not None:
            merged.iloc[chosen, merged.columns.get_loc("samples_old")] = pd.Series(
                samples(merged["row_old"].to_numpy()[chosen].astype(np.int64)), dtype=object).to_numpy()
            merged.iloc[chosen, merged.columns.get_loc("samples_new")] = pd.Series(
                samples(merged["row_new"].to_numpy()[chosen].astype(np.int64)), dtype=object).to_numpy()
    cols_old = merged[["ci_99_a_old", "ci_99_b_old", "repeat_old", "samples_old"]].set_axis(
        ["ci_99_a", "ci_99_b", "repeat", "samples"], axis=1)
    cols_new = merged[["ci_99_a_new", "ci_99_b_new", "repeat_new", "samples_new"]].set_axis(
        ["ci_99_a", "ci_99_b", "repeat", "samples"], axis=1)
    for i in np.flatnonzero(candidates):
        a_ss, b_ss = _stats_of(cols_old.iloc[i]), _stats_of(cols_new.iloc[i])
        o, n = v_old[i], v_new[i]
        lower_better = lower_is_better[i]
        if _is_result_better(n, o, b_ss, a_ss, factor):  # new smaller than old, significantly
            change[i] = "better" if lower_better else "worse"
        elif _is_result_better(o, n, a_ss, b_ss, factor):
            change[i] = "worse" if lower_better else "better"
        else:
            change[i] = "unchanged (not significant)"
    status_old = merged["status_old"].astype(object).fillna("absent")
    status_new = merged["status_new"].astype(object).fillna("absent")
    change = np.where(both, change, [f"{o} \u2192 {n}" for o, n in zip(status_old, status_new)])
    out = merged[key + fields].copy()
    out["old"], out["new"], out["ratio"] = v_old, v_new, np.where(both, ratio, np.nan)
    out["change"] = change
    out["significant"] = np.isin(change, ["better", "worse"])
    out["unit"] = merged["unit_old"].astype(object).where(merged["unit_old"].notna(), merged["unit_new"].astype(object))
    for col in key:
        out[col] = out[col].astype(str)
    return out.sort_values(["significant", "ratio"], ascending=[False, False], key=_abs_log_key).reset_index(drop=True)


def _abs_log_key(column: pd.Series):
    if column.name == "ratio":
        return np.abs(np.log(column.astype(float)))
    return column


def change_counts(table: pd.DataFrame) -> dict[str, int]:
    """Counts of a compare table's verdicts: better / worse / unchanged / other."""
    changes = table["change"].astype(str)
    return {"better": int((changes == "better").sum()), "worse": int((changes == "worse").sum()),
            "unchanged": int(changes.str.startswith("unchanged").sum()),
            "other": int((~changes.isin(["better", "worse"]) & ~changes.str.startswith("unchanged")).sum())}
