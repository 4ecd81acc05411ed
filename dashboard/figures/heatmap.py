"""The Overview's speedup heatmap (pure)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.style import base_layout, build_empty_figure
from dashboard.metrics import sort_values_naturally

def _fmt_seconds(s: float) -> str:
    if not np.isfinite(s):
        return "–"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


# --------------------------------------------------------------------------- Overview


def build_speedup_heatmap_figure(speedups: pd.DataFrame, theme: str = "light", title: str = "") -> go.Figure:
    """Speedup of fused over the best unfused baseline: one heatmap per (op, dtype), rows =
    shapes, columns = activations. Colour is log2(speedup), centred on 1x (red = fused slower)."""
    if speedups.empty:
        return build_empty_figure("No case has a fused and a baseline latency at this commit.", theme)
    ops = sorted(speedups["op"].astype(str).unique())
    dtypes = sorted(speedups["dtype"].astype(str).unique())
    present = set(speedups.groupby(["op", "dtype"], observed=True).groups)
    # one row per op, one column per dtype; a row is as tall as its longest list of shapes
    heights = [max(speedups[speedups["op"] == op]["shape"].nunique(), 2) for op in ops]
    titles = [f"{op} · {dt}" if (op, dt) in present else "" for op in ops for dt in dtypes]
    fig = make_subplots(rows=len(ops), cols=len(dtypes), subplot_titles=titles, row_heights=heights,
                        horizontal_spacing=0.17 if len(dtypes) > 1 else 0.1, vertical_spacing=0.22 / len(ops))
    finite = speedups["speedup"].to_numpy(dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    span = max(float(np.abs(np.log2(finite)).max()) if len(finite) else 1.0, 0.25)
    for op, dt in sorted(present):
        sub = speedups[(speedups["op"] == op) & (speedups["dtype"] == dt)]
        shapes = sort_values_naturally(sub["shape"])
        acts = sorted(sub["activation"].astype(str).unique())
        grid = sub.set_index(["shape", "activation"])
        z, text, hover = [], [], []
        for shape in shapes:
            zr, tr, hr = [], [], []
            for act in acts:
                if (shape, act) in grid.index:
                    r = grid.loc[(shape, act)]
                    r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
                    s = float(r["speedup"])
                    zr.append(math.log2(s) if np.isfinite(s) and s > 0 else None)
                    tr.append(f"{s:.2f}×" if np.isfinite(s) else "no baseline")
                    hr.append(f"{op} {shape} {dt} {act}<br>fused {_fmt_seconds(r['fused'])}"
                              f"<br>best unfused: {r['baseline_impl'] or '–'} {_fmt_seconds(r['best_baseline'])}"
                              f"<br>speedup {tr[-1]}")
                else:
                    zr.append(None), tr.append(""), hr.append(f"{shape} {act}: not measured")
            z.append(zr), text.append(tr), hover.append(hr)
        fig.add_trace(go.Heatmap(z=z, x=acts, y=shapes, text=text, texttemplate="%{text}", customdata=hover,
                                 hovertemplate="%{customdata}<extra></extra>", coloraxis="coloraxis",
                                 xgap=2, ygap=2, name=f"{op} {dt}"),
                      row=ops.index(op) + 1, col=dtypes.index(dt) + 1)
    ticks = [v for v in (-3, -2, -1, 0, 1, 2, 3) if abs(v) <= span + 1e-9] or [0]
    fig.update_layout(coloraxis=dict(colorscale="RdBu", cmin=-span, cmax=span, cmid=0,
                                     colorbar=dict(title="speedup", tickvals=ticks,
                                                   ticktext=[f"{2.0 ** v:g}×" for v in ticks])))
    fig.update_yaxes(type="category", automargin=True, tickfont=dict(size=10))
    fig.update_xaxes(type="category")
    return base_layout(fig, theme, title=title or "Fused vs the best unfused baseline (t_baseline / t_fused)",
                   height=max(360, 140 + 24 * sum(heights) + 60 * len(ops)))

