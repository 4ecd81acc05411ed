"""Fused against the best unfused implementation and the best fused peer: per case at a commit,
across commits (with the band the two 99 % CIs give), and summarised per op x dtype x mode.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from asv_results.data import STATUS_OK
from dashboard.data.metrics import CASE_FIELDS, FORWARD, FUSED, Metric, is_fused_peer, mode_order


FASTER, SLOWER, WITHIN_NOISE = "faster", "slower", "within noise"
SPEEDUP_COLUMNS = ["case", "mode", *CASE_FIELDS, "fused", "best_baseline", "baseline_impl", "speedup", "verdict",
                   "best_peer", "peer_impl", "peer_speedup", "peer_verdict"]


def _verdicts(fused: pd.DataFrame, other: pd.DataFrame, index) -> np.ndarray:
    """asv's rule without samples: faster / slower when the two 99 % CIs do not overlap."""
    with np.errstate(invalid="ignore"):
        f_lo, f_hi = (fused[c].reindex(index).to_numpy(dtype=float) for c in ("ci_99_a", "ci_99_b"))
        b_lo, b_hi = (other[c].reindex(index).to_numpy(dtype=float) for c in ("ci_99_a", "ci_99_b"))
        faster = f_hi < b_lo  # NaN and the infinite CIs of too few samples compare False
        slower = f_lo > b_hi
    out = np.where(faster, FASTER, np.where(slower, SLOWER, WITHIN_NOISE)).astype(object)
    out[other["value"].reindex(index).isna().to_numpy()] = None
    return out


def speedups(latency_rows: pd.DataFrame, baselines: list[str] | None = None) -> pd.DataFrame:
    """Fused vs the best (fastest) unfused implementation and vs the best fused peer
    (FUSED_PEERS), per case x mode, from latency rows of ONE run.

    Returns one row per case x mode with a measured fused time: case fields, fused,
    best_baseline, baseline_impl, speedup = t_best_unfused / t_fused (NaN when no unfused one
    ran), best_peer, peer_impl, peer_speedup likewise over the fused peers, and ``verdict`` /
    ``peer_verdict``: whether fused is faster or slower beyond the noise, by asv's rule without
    samples (the two 99 % confidence intervals of the medians do not overlap), else "within noise".
    ``baselines``: only these implementations compete (None: all).
    """
    ok = latency_rows[(latency_rows["status"] == STATUS_OK) & np.isfinite(latency_rows["value"])]
    if ok.empty or FUSED not in set(ok["impl"].astype(str)):
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    mode = ok["mode"].astype(str) if "mode" in ok.columns else FORWARD
    ok = ok.assign(impl=ok["impl"].astype(str), case=ok["case"].astype(str), mode=mode)
    fastest = ok.sort_values("value", kind="stable").drop_duplicates(["case", "mode", "impl"])
    fused = fastest[fastest["impl"] == FUSED].set_index(["case", "mode"])
    others = fastest[(fastest["impl"] != FUSED) & (fastest["impl"].isin(baselines) if baselines is not None else True)]
    peer = others["impl"].map(is_fused_peer).astype(bool)
    out = fused[list(CASE_FIELDS)].astype(object)
    out["fused"] = fused["value"]
    for pool, value, impl, speedup, verdict in ((others[~peer], "best_baseline", "baseline_impl", "speedup", "verdict"),
                                                (others[peer], "best_peer", "peer_impl", "peer_speedup",
                                                 "peer_verdict")):
        best = pool.drop_duplicates(["case", "mode"]).set_index(["case", "mode"])  # sorted: the first is fastest
        out[value] = best["value"].reindex(out.index)
        out[impl] = best["impl"].reindex(out.index).astype(object)
        out[speedup] = out[value] / out["fused"]
        out[verdict] = _verdicts(fused, best, out.index)
    return out.reset_index()[SPEEDUP_COLUMNS]


SPEEDUP = Metric("speedup", "Speedup of fused", "×", "track_latency")  # Trends only: from several impls' rows
OVER_UNFUSED, OVER_PEER = "over best unfused", "over best fused peer"


def speedup_history(latency_rows: pd.DataFrame, baselines: list[str] | None = None) -> pd.DataFrame:
    """Fused's speedup over the best unfused implementation and over the best fused peer at each
    commit, from the latency rows of one case and mode of ONE run (every commit): one row per
    (commit, line) with line (OVER_UNFUSED / OVER_PEER), commit_hash, date, position (if the rows
    have it), y = t_best / t_fused, its band y_lo = best's CI low / fused's CI high and y_hi the
    other way round (NaN where a CI is not finite), the implementation that was best
    (``best_impl``) and status "ok". ``baselines``: only these compete (None: all)."""
    columns = ["line", "commit_hash", "date", "position", "y", "y_lo", "y_hi", "best_impl", "status"]
    ok = latency_rows[(latency_rows["status"] == STATUS_OK) & np.isfinite(latency_rows["value"])]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    ok = ok.assign(impl=ok["impl"].astype(str), commit_hash=ok["commit_hash"].astype(str))
    if "position" not in ok.columns:
        ok = ok.assign(position=np.nan)
    fastest = ok.sort_values("value", kind="stable").drop_duplicates(["commit_hash", "impl"])
    fused = fastest[fastest["impl"] == FUSED].set_index("commit_hash")
    others = fastest[(fastest["impl"] != FUSED) & (fastest["impl"].isin(baselines) if baselines is not None else True)]
    peer = others["impl"].map(is_fused_peer).astype(bool)
    parts = []
    for line, pool in ((OVER_UNFUSED, others[~peer]), (OVER_PEER, others[peer])):
        best = pool.drop_duplicates("commit_hash").set_index("commit_hash")
        common = fused.index.intersection(best.index)
        if not len(common):
            continue
        f, b = fused.loc[common], best.loc[common]
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = b["ci_99_a"].to_numpy(dtype=float) / f["ci_99_b"].to_numpy(dtype=float)
            hi = b["ci_99_b"].to_numpy(dtype=float) / f["ci_99_a"].to_numpy(dtype=float)
        finite = lambda v: np.where(np.isfinite(v) & (v > 0), v, np.nan)  # noqa: E731
        parts.append(pd.DataFrame({"line": line, "commit_hash": common, "date": f["date"].to_numpy(),
                                   "position": f["position"].to_numpy(), "y": (b["value"] / f["value"]).to_numpy(),
                                   "y_lo": finite(lo), "y_hi": finite(hi), "best_impl": b["impl"].to_numpy(),
                                   "status": STATUS_OK}))
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def geomean(values) -> float:
    """Geometric mean of the finite positive values (NaN when there are none)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")


def _most_common(values) -> str | None:
    """The distinct names, most frequent first ("liger_mlp, compile_max_autotune"), or None."""
    counts = pd.Series([v for v in values if isinstance(v, str)], dtype=object).value_counts(sort=False)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(str(k) for k, _ in ordered) if ordered else None


SUMMARY_COLUMNS = ["op", "dtype", "mode", "cases", "geomean", FASTER, SLOWER, WITHIN_NOISE, "no_baseline",
                   "peer_geomean", "peer_cases", "peer_impl", "peer_" + FASTER, "peer_" + SLOWER]


def speedup_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per op x dtype x mode of a speedups() table: cases, the geometric mean speedup over the
    best unfused implementation and how many cases fused is faster, slower or within noise of
    it; the same over the best fused peer (peer_*), with the peer that was best most often."""
    rows = []
    table = table if "mode" in table.columns else table.assign(mode=FORWARD)
    for (op, dtype, mode), group in table.groupby(["op", "dtype", "mode"], sort=True):
        verdicts = group["verdict"].value_counts()
        peer = group["peer_verdict"].value_counts() if "peer_verdict" in group else pd.Series(dtype=int)
        peer_speedup = group["peer_speedup"] if "peer_speedup" in group else pd.Series(dtype=float)
        rows.append({"op": op, "dtype": dtype, "mode": mode, "cases": len(group), "geomean": geomean(group["speedup"]),
                     FASTER: int(verdicts.get(FASTER, 0)), SLOWER: int(verdicts.get(SLOWER, 0)),
                     WITHIN_NOISE: int(verdicts.get(WITHIN_NOISE, 0)),
                     "no_baseline": int(group["verdict"].isna().sum()),
                     "peer_geomean": geomean(peer_speedup), "peer_cases": int(peer_speedup.notna().sum()),
                     "peer_impl": _most_common(group["peer_impl"]) if "peer_impl" in group else None,
                     "peer_" + FASTER: int(peer.get(FASTER, 0)), "peer_" + SLOWER: int(peer.get(SLOWER, 0))})
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    order = [(op, dtype, mode_order(mode)) for op, dtype, mode in zip(out["op"], out["dtype"], out["mode"])]
    return out.iloc[sorted(range(len(out)), key=order.__getitem__)].reset_index(drop=True)
