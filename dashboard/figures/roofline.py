"""The roofline figure (pure)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchmarks.harness import cost
from benchmarks.harness.ops import OPS

from dashboard.figures.style import base_layout, build_empty_figure, impl_color, impl_sort_key

# --------------------------------------------------------------------------- Roofline


def build_roofline_figure(points: pd.DataFrame, ceilings: cost.Ceilings | None, theme: str = "light",
                          title: str = "") -> go.Figure:
    """Achieved TFLOP/s against arithmetic intensity (log-log), fused | unfused side by side,
    under the roof min(peak TFLOP/s of the dtype, intensity x copy bandwidth) of that machine."""
    ok = points[np.isfinite(points["tflops"].to_numpy(dtype=float))] if len(points) else points
    if ok.empty:
        return build_empty_figure("No measured latency for this selection at this commit.", theme)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, shared_xaxes=True, horizontal_spacing=0.04,
                        subplot_titles=["fused", "unfused baselines"])
    x_all = ok["intensity"].to_numpy(dtype=float)
    x_lo, x_hi = x_all.min() / 2, x_all.max() * 2
    if ceilings is not None:
        xs = np.geomspace(min(x_lo, 0.1), max(x_hi, 1e4), 200)
        for dtype, peak in sorted(ceilings.matmul_tflops.items()):
            roof = np.minimum(peak, xs * ceilings.copy_gbps / 1e3)  # GB/s x FLOP/B = GFLOP/s
            for col in (1, 2):
                fig.add_trace(go.Scatter(x=xs, y=roof, mode="lines", name=f"roof {dtype}",
                                         line=dict(dash="dot", width=1.5, color="#888"), legendgroup=f"roof{dtype}",
                                         showlegend=col == 1,
                                         hovertemplate=f"roof {dtype}: %{{y:.3s}} TFLOP/s at %{{x:.3s}} FLOP/B"
                                                       "<extra></extra>"),
                              row=1, col=col)

    if ceilings is not None:  # one label per distinct peak (bf16 and fp16 often share one)
        by_peak: dict[str, list[str]] = {}
        for dtype, peak in sorted(ceilings.matmul_tflops.items()):
            by_peak.setdefault(f"{peak:.3g}", []).append(dtype)
        for i, (peak, dtypes) in enumerate(sorted(by_peak.items(), key=lambda kv: float(kv[0]))):
            fig.add_annotation(x=math.log10(max(x_hi, 1e4)), y=math.log10(float(peak)), row=1, col=2,
                               text=f"{'/'.join(dtypes)} {peak} TFLOP/s", showarrow=False, xanchor="right",
                               yanchor="top" if i % 2 else "bottom", font=dict(size=10))  # near peaks: above/below
        fig.add_annotation(x=math.log10(max(x_lo, 0.1)), y=1, xref="x", yref="paper", showarrow=False,
                           text=f"copy {ceilings.copy_gbps:,.0f} GB/s", xanchor="left", yanchor="top",
                           font=dict(size=10))
    for impl in sorted(ok["impl"].astype(str).unique(), key=impl_sort_key):
        rows = ok[ok["impl"].astype(str) == impl]
        hover = [f"<b>{impl}</b> {c}<br>{t:.3g} TFLOP/s at {x:.3g} FLOP/B"
                 + (f"<br>{f:.0%} of roofline" if np.isfinite(f) else "")
                 for c, t, x, f in zip(rows["case"].astype(str), rows["tflops"], rows["intensity"],
                                       rows.get("roofline", pd.Series(np.nan, index=rows.index)))]
        fig.add_trace(go.Scatter(x=rows["intensity"], y=rows["tflops"], mode="markers", name=impl,
                                 marker=dict(color=impl_color(impl), size=9, symbol=_op_symbols(rows["op"]),
                                             line=dict(width=0.5, color="#333")),
                                 text=hover, hovertemplate="%{text}<extra></extra>"),
                      row=1, col=1 if impl == "fused" else 2)
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP / byte)", range=[math.log10(x_lo), math.log10(x_hi)])
    fig.update_yaxes(type="log")
    fig.update_yaxes(title="achieved TFLOP/s", row=1, col=1)
    subtitle = ("" if ceilings is not None else " — no ceilings measured in this run, no roof drawn")
    return base_layout(fig, theme, title=(title or "Roofline") + subtitle, height=540)


# One marker shape per op, in the registry's order.
_OP_SYMBOL = dict(zip(OPS, ("circle", "diamond", "square", "star", "triangle-up", "cross", "x", "pentagon")))


def _op_symbols(ops: pd.Series) -> list[str]:
    return [_OP_SYMBOL.get(str(o), "circle") for o in ops]

