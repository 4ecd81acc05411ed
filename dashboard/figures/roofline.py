"""The roofline figure (pure): every implementation on one log-log plane under the measured roofs,
each fused point joined to its best unfused peer (same case, same intensity: a vertical segment
whose length is the speedup)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workload import cost
from workload.ops import OPS

from dashboard.figures.style import build_empty_figure, impl_color, impl_sort_key, layout_dict
from dashboard.figures.ticks import log_ticks

FUSED = "fused"
# One marker shape per op, in the registry's order (and a legend key for them).
_OP_SYMBOL = dict(zip(OPS, ("circle", "diamond", "square", "star", "triangle-up", "cross", "x", "pentagon")))
# One line style per distinct roof, highest peak first.
_ROOF_DASH = ("solid", "dash", "dot", "dashdot", "longdash")
_ROOF_COLOR = "#7f7f7f"
PAIR_COLOR = "rgba(127,127,127,0.55)"


def op_symbol(op) -> str:
    return _OP_SYMBOL.get(str(op), "circle")


def _roofs(ceilings: cost.Ceilings) -> list[tuple[float, list[str]]]:
    """(peak TFLOP/s, dtypes), highest first; dtypes whose peaks agree to 3 digits share a roof."""
    by_label: dict[str, tuple[float, list[str]]] = {}
    for dtype, peak in sorted(ceilings.matmul_tflops.items()):
        top, dtypes = by_label.setdefault(f"{peak:.3g}", (peak, []))
        by_label[f"{peak:.3g}"] = (max(top, peak), [*dtypes, dtype])
    return sorted(by_label.values(), reverse=True)


def _pairs(ok: pd.DataFrame) -> pd.DataFrame:
    """Per case with a fused point and an unfused one: intensity, fused and the best (highest
    TFLOP/s, i.e. fastest) unfused point."""
    fused = ok[ok["impl"].astype(str) == FUSED].groupby("case", observed=True)["tflops"].max()
    others = ok[ok["impl"].astype(str) != FUSED]
    if fused.empty or others.empty:
        return pd.DataFrame(columns=["case", "intensity", "fused", "best", "best_impl"])
    best_rows = others.loc[others.groupby("case", observed=True)["tflops"].idxmax()]
    best = best_rows.set_index(best_rows["case"].astype(str))
    fused.index = fused.index.astype(str)
    common = fused.index.intersection(best.index)
    return pd.DataFrame({"case": common, "intensity": best.loc[common, "intensity"].to_numpy(dtype=float),
                         "fused": fused.loc[common].to_numpy(dtype=float),
                         "best": best.loc[common, "tflops"].to_numpy(dtype=float),
                         "best_impl": best.loc[common, "impl"].astype(str).to_numpy()})


def build_roofline_figure(points: pd.DataFrame, ceilings: cost.Ceilings | None, theme: str = "light",
                          title: str = ""):
    """Achieved TFLOP/s against arithmetic intensity (log-log) under the roofs min(peak TFLOP/s of
    the dtype, intensity x copy bandwidth) measured in that run. Colour is the implementation,
    marker shape the op (keyed in the legend); a grey segment joins each fused point to the best
    unfused point of its case. Returns a figure dict (as dcc.Graph takes it)."""
    ok = points[np.isfinite(points["tflops"].to_numpy(dtype=float))] if len(points) else points
    if ok.empty:
        return build_empty_figure("No measured latency for this selection at this commit.", theme)
    traces = []
    x_all = ok["intensity"].to_numpy(dtype=float)
    x_lo, x_hi = x_all.min() / 2, x_all.max() * 2
    y_all = ok["tflops"].to_numpy(dtype=float)
    y_lo, y_hi = y_all.min() / 2, y_all.max() * 2
    if ceilings is not None:
        xs = np.geomspace(x_lo, x_hi, 200)
        for i, (peak, dtypes) in enumerate(_roofs(ceilings)):
            label = f"roof {'/'.join(dtypes)}: {peak:,.3g} TFLOP/s" + (
                f" · copy {ceilings.copy_gbps:,.0f} GB/s" if i == 0 else "")  # one slope, shared by all
            roof = np.minimum(peak, xs * ceilings.copy_gbps / 1e3)  # GB/s x FLOP/B = GFLOP/s
            traces.append(dict(type="scatter", x=xs, y=roof, mode="lines", name=label, legendgroup="roofs",
                               line=dict(dash=_ROOF_DASH[i % len(_ROOF_DASH)], width=1.5, color=_ROOF_COLOR),
                               hovertemplate=f"roof {'/'.join(dtypes)}: %{{y:.3s}} TFLOP/s at %{{x:.3s}} "
                                             "FLOP/B<extra></extra>"))
            y_hi = max(y_hi, peak * 1.6)
    pairs = _pairs(ok)
    if len(pairs):
        xs = np.repeat(pairs["intensity"].to_numpy(), 3)
        ys = np.column_stack([pairs["fused"], pairs["best"], np.full(len(pairs), np.nan)]).ravel()
        traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", name="fused ↔ its best unfused peer",
                           line=dict(color=PAIR_COLOR, width=2), hoverinfo="skip"))
    notes = _speedup_notes(pairs)
    ops, impls = ok["op"].astype(str).to_numpy(), ok["impl"].astype(str).to_numpy()
    present = set(ops)
    ordered_ops = [o for o in OPS if o in present] + sorted(present - set(OPS))
    for impl in sorted(set(impls), key=impl_sort_key):
        first = True
        for op in ordered_ops:
            rows = ok[(impls == impl) & (ops == op)]
            if rows.empty:
                continue
            fractions = rows["roofline"] if "roofline" in rows.columns else pd.Series(np.nan, index=rows.index)
            hover = [f"<b>{impl}</b> {c}<br>{t:.3g} TFLOP/s at {x:.3g} FLOP/B"
                     + (f"<br>{f:.0%} of roofline" if np.isfinite(f) else "")
                     + (notes.get(c, "") if impl == FUSED else "")
                     for c, t, x, f in zip(rows["case"].astype(str), rows["tflops"], rows["intensity"], fractions)]
            traces.append(dict(type="scatter", x=rows["intensity"].to_numpy(), y=rows["tflops"].to_numpy(),
                               mode="markers", name=impl, legendgroup=impl, showlegend=first,
                               marker=dict(color=impl_color(impl), size=10 if impl == FUSED else 8,
                                           symbol=op_symbol(op), line=dict(width=0.5, color="#333")),
                               text=hover, hovertemplate="%{text}<extra></extra>"))
            first = False
    for op in ordered_ops:  # the shape key
        traces.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=f"op: {op}", legendgroup="ops",
                           marker=dict(symbol=op_symbol(op), size=9, color="rgba(0,0,0,0)",
                                       line=dict(width=1.5, color=_ROOF_COLOR))))
    xt, xl = log_ticks(x_lo, x_hi)
    yt, yl = log_ticks(y_lo, y_hi)
    subtitle = "" if ceilings is not None else " — no ceilings measured in this run, no roof drawn"
    layout = layout_dict(
        theme, title=dict(text=(title or "Roofline") + subtitle), height=560,
        legend=dict(groupclick="toggleitem", tracegroupgap=10),
        xaxis=dict(type="log", title=dict(text="arithmetic intensity (FLOP / minimum byte)"), tickvals=xt,
                   ticktext=xl, range=[math.log10(x_lo), math.log10(x_hi)]),
        yaxis=dict(type="log", title=dict(text="achieved TFLOP/s"), tickvals=yt, ticktext=yl,
                   range=[math.log10(y_lo), math.log10(y_hi)]))
    return {"data": traces, "layout": layout}


def _speedup_notes(pairs: pd.DataFrame) -> dict[str, str]:
    """case -> what a fused point's hover says about its pair (the segment)."""
    return {c: f"<br>{f / b:.2f}× the best unfused ({i})"
            for c, f, b, i in zip(pairs["case"], pairs["fused"], pairs["best"], pairs["best_impl"])}
