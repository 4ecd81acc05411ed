"""Pure figure builders: ``build_*_figure(df, ...) -> go.Figure`` (no Dash, no I/O, no globals mutated).

Each takes the rows already selected and derived (dashboard.metrics) and a theme name.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchmarks.harness import cost
from benchmarks.harness.grids import benchmarked_ops
from benchmarks.harness.ops import OPS

from dashboard.metrics import METRICS, sort_values_naturally
from dashboard.regressions import position_note

THEMES = ("light", "dark")
_TEMPLATE = {"light": "plotly_white", "dark": "plotly_dark"}
_BACKGROUND = {"light": "#ffffff", "dark": "#1e2127"}  # matches assets/style.css --panel
IMPL_ORDER = ("fused", "eager", "compile", "cublaslt")
IMPL_COLORS = {"fused": "#e4572e", "eager": "#4c78a8", "compile": "#54a24b", "cublaslt": "#b279a2"}
REGRESSION_COLOR, IMPROVEMENT_COLOR = "#d62728", "#2ca02c"


def impl_sort_key(impl: str):
    return (IMPL_ORDER.index(impl) if impl in IMPL_ORDER else len(IMPL_ORDER), impl)


def impl_color(impl: str) -> str:
    palette = ["#f58518", "#72b7b2", "#9d755d", "#bab0ac"]
    return IMPL_COLORS.get(impl, palette[hash(impl) % len(palette)])


def _layout(fig: go.Figure, theme: str, **kwargs) -> go.Figure:
    theme = theme if theme in THEMES else "light"
    fig.update_layout(template=_TEMPLATE[theme], paper_bgcolor=_BACKGROUND[theme], plot_bgcolor=_BACKGROUND[theme],
                      margin=dict(l=60, r=20, t=60, b=50), font=dict(size=12), **kwargs)
    return fig


def build_empty_figure(message: str, theme: str = "light") -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return _layout(fig, theme, height=300)


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
    return _layout(fig, theme, title=title or "Fused vs the best unfused baseline (t_baseline / t_fused)",
                   height=max(360, 140 + 24 * sum(heights) + 60 * len(ops)))


# --------------------------------------------------------------------------- Trends


def build_trend_figure(series: pd.DataFrame, metric: str, changes: pd.DataFrame | None = None,
                       marked_commit: str | None = None, x_axis: str = "commit", log_y: bool = False,
                       theme: str = "light", title: str = "") -> go.Figure:
    """One metric against commits: a line per implementation, its 99 % CI band, change markers.

    ``series``: derived rows (metrics.derive) with impl, position, commit_hash, date, y, y_lo, y_hi.
    ``changes``: rows with impl, commit_hash, direction, relative_change, confirmed.
    """
    spec = METRICS[metric]
    ok = series[np.isfinite(series["y"].to_numpy(dtype=float))]
    if ok.empty:
        return build_empty_figure(f"No measured {spec.label.lower()} for this selection.", theme)
    xcol = "date" if x_axis == "date" else "position"
    fig = go.Figure()
    for impl in sorted(ok["impl"].astype(str).unique(), key=impl_sort_key):
        rows = ok[ok["impl"].astype(str) == impl].sort_values("position")
        color = impl_color(impl)
        x = rows[xcol]
        band = rows[np.isfinite(rows["y_lo"].to_numpy(dtype=float)) & np.isfinite(rows["y_hi"].to_numpy(dtype=float))]
        if len(band):
            fig.add_trace(go.Scatter(x=band[xcol], y=band["y_hi"], mode="lines", line=dict(width=0),
                                     hoverinfo="skip", showlegend=False, legendgroup=impl))
            fig.add_trace(go.Scatter(x=band[xcol], y=band["y_lo"], mode="lines", line=dict(width=0),
                                     fill="tonexty", fillcolor=_alpha(color, 0.18), hoverinfo="skip",
                                     name=f"{impl} 99% CI", showlegend=False, legendgroup=impl))
        hashes = rows["commit_hash"].astype(str)
        custom = np.stack([hashes.to_numpy(), rows["date"].dt.strftime("%Y-%m-%d %H:%M").to_numpy(),
                           rows["position"].astype(str).to_numpy(), hashes.str[:10].to_numpy()], axis=1)
        fig.add_trace(go.Scatter(
            x=x, y=rows["y"], mode="lines+markers", name=impl, legendgroup=impl,
            line=dict(color=color, width=2), marker=dict(size=5, color=color), customdata=custom,
            hovertemplate=(f"<b>{impl}</b> %{{y:.4s}}{spec.unit}<br>commit %{{customdata[3]}} "
                           "(#%{customdata[2]})<br>%{customdata[1]}<extra></extra>")))
    if changes is not None and len(changes):
        _add_change_markers(fig, ok, changes, xcol, spec, series)
    if marked_commit:
        marked = ok[ok["commit_hash"].astype(str).str.startswith(marked_commit)]
        if len(marked):
            fig.add_vline(x=marked[xcol].iloc[0], line=dict(color="#888", dash="dash", width=1.5))
            fig.add_annotation(x=marked[xcol].iloc[0], y=1.0, yref="paper", text=f"{marked_commit[:8]}",
                               showarrow=False, yanchor="bottom", font=dict(size=11))
    fig.update_yaxes(title=f"{spec.label} ({spec.unit})" if spec.unit else spec.label,
                     type="log" if log_y else "linear", exponentformat="SI", ticksuffix=spec.unit and f" {spec.unit}",
                     range=_trend_y_range(ok, log_y))
    fig.update_xaxes(title="commit (oldest → newest)" if xcol == "position" else "commit date")
    return _layout(fig, theme, title=title, hovermode="closest", height=480)


def _trend_y_range(ok: pd.DataFrame, log_y: bool) -> list[float] | None:
    """The measured values in full, the CI band only up to one data span beyond them: one run
    with a slow sample widens asv's 99 % CI many times, and autorange would then flatten a
    5 % step into the line."""
    def scale(v):
        v = np.asarray(v, dtype=float)
        v = v[np.isfinite(v) & (v > 0)] if log_y else v[np.isfinite(v)]
        return np.log10(v) if log_y else v

    y, lo, hi = scale(ok["y"]), scale(ok["y_lo"]), scale(ok["y_hi"])
    if not len(y):
        return None
    top, bottom = float(y.max()), float(y.min())
    span = top - bottom or abs(top) * 0.05 or 1.0
    if len(lo):
        bottom = min(bottom, max(float(lo.min()), bottom - span))
    if len(hi):
        top = max(top, min(float(hi.max()), top + span))
    pad = (top - bottom) * 0.05 or span  # a flat line with no band still gets a visible range
    return [bottom - pad, top + pad]


def _add_change_markers(fig, ok: pd.DataFrame, changes: pd.DataFrame, xcol: str, spec,
                        series: pd.DataFrame) -> None:
    for direction, color, symbol in (("regression", REGRESSION_COLOR, "triangle-up"),
                                     ("improvement", IMPROVEMENT_COLOR, "triangle-down")):
        chosen = changes[changes["direction"] == direction]
        if chosen.empty:
            continue
        points = chosen.merge(ok[["impl", "commit_hash", xcol, "y"]].astype({"impl": str, "commit_hash": str}),
                              on=["impl", "commit_hash"], how="inner")
        if points.empty:
            continue
        notes = _position_notes(points)
        text = [f"{direction} in {i}: {r:+.1%}{'' if c else ' (suspected)'}<br>commit {h[:10]}{n}"
                for i, r, c, h, n in zip(points["impl"], points["relative_change"], points["confirmed"],
                                         points["commit_hash"], notes)]
        _shade_plausible_positions(fig, series, points, xcol, color)
        fig.add_trace(go.Scatter(x=points[xcol], y=points["y"], mode="markers", name=f"{direction}s",
                                 marker=dict(symbol=symbol, size=15, color=color, line=dict(width=1, color="#000")),
                                 text=text, hovertemplate="%{text}<extra></extra>"))


def _position_notes(points: pd.DataFrame) -> list[str]:
    if "plausible_commits" not in points.columns:
        return [""] * len(points)
    notes = map(position_note, points["plausible_commits"], points["earliest_commit"], points["latest_commit"])
    return [f"<br>{note}" if note else "" for note in notes]


def _shade_plausible_positions(fig, series: pd.DataFrame, points: pd.DataFrame, xcol: str, color: str) -> None:
    """A faint band over the commits where a change that cannot be pinned to one may be
    (placed by commit, so also where an end commit has no plotted value)."""
    if "plausible_commits" not in points.columns:
        return
    x_of = dict(zip(series["commit_hash"].astype(str), series[xcol]))
    for n, first, last in zip(points["plausible_commits"], points["earliest_commit"], points["latest_commit"]):
        x0, x1 = x_of.get(str(first)), x_of.get(str(last))
        if n > 1 and x0 is not None and x1 is not None:
            fig.add_vrect(x0=x0, x1=x1, fillcolor=_alpha(color, 0.12), line_width=0, layer="below")


def _alpha(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


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
    return _layout(fig, theme, title=(title or "Roofline") + subtitle, height=540)


# One marker shape per op, in the registry's order.
_OP_SYMBOL = dict(zip(OPS, ("circle", "diamond", "square", "star", "triangle-up", "cross", "x", "pentagon")))


def _op_symbols(ops: pd.Series) -> list[str]:
    return [_OP_SYMBOL.get(str(o), "circle") for o in ops]


def build_profile_figure(rows: pd.DataFrame, theme: str = "light", title: str = "") -> go.Figure:
    """One stacked bar per implementation: time per call split by kernel (or CPU operator), with
    the launches per call written above each bar. rows: dashboard.profiles frame of one case and
    commit."""
    if rows.empty:
        return build_empty_figure("No profile for this case and commit.", theme)
    impls = sorted(rows["impl"].unique(), key=impl_sort_key)
    fig = go.Figure()
    for kernel, group in rows.dropna(subset=["kernel"]).groupby("kernel", sort=False):
        per_impl = group.groupby("impl")["seconds_per_call"].sum()
        launches = group.groupby("impl")["launches_per_call"].sum()
        fig.add_trace(go.Bar(
            x=impls, y=[per_impl.get(i, 0.0) * 1e6 for i in impls], name=str(kernel)[:60],
            customdata=[launches.get(i, 0.0) for i in impls],
            hovertemplate=f"{kernel}<br>%{{x}}: %{{y:.1f}} µs, %{{customdata:g}} per call<extra></extra>"))
    totals = rows.groupby("impl").agg(us=("seconds_per_call", "sum"), n=("launches_per_call", "sum"))
    for impl in impls:
        fig.add_annotation(x=impl, y=totals.loc[impl, "us"] * 1e6, yshift=12, showarrow=False,
                           text=f"{totals.loc[impl, 'n']:g} per call")
    device = rows["device"].iloc[0]
    what = "device kernels" if device == "cuda" else "CPU operators (no GPU in this run)"
    fig.update_layout(barmode="stack", showlegend=len(fig.data) <= 30)
    fig.update_yaxes(title=f"µs per call in {what}")
    return _layout(fig, theme, title=title or f"Time per call by {what}", height=480)


def build_profile_history_figure(rows: pd.DataFrame, theme: str = "light") -> go.Figure:
    """Launches per call and time in them per implementation, across the commits profiled."""
    if rows.empty:
        return build_empty_figure("No profiles of this case.", theme)
    per = (rows.groupby(["impl", "commit_hash", "date"], observed=True)
           .agg(launches=("launches_per_call", "sum"), seconds=("seconds_per_call", "sum"))
           .reset_index().sort_values("date"))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("launches per call", "µs per call in them"))
    label = lambda h, d: f"{h[:8]} · {d:%Y-%m-%d}"  # noqa: E731
    order = list(dict.fromkeys(label(h, d) for h, d in zip(per["commit_hash"], per["date"])))  # oldest first
    for impl in sorted(per["impl"].unique(), key=impl_sort_key):
        s = per[per["impl"] == impl]
        labels = [label(h, d) for h, d in zip(s["commit_hash"], s["date"])]
        style = dict(name=impl, legendgroup=impl, mode="lines+markers", line=dict(color=impl_color(impl)))
        fig.add_trace(go.Scatter(x=labels, y=s["launches"], showlegend=True,
                                 hovertemplate="%{x}: %{y:g} per call<extra>" + impl + "</extra>", **style),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=labels, y=s["seconds"] * 1e6, showlegend=False,
                                 hovertemplate="%{x}: %{y:.1f} µs<extra>" + impl + "</extra>", **style),
                      row=2, col=1)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order)
    fig.update_xaxes(title="commit (oldest → newest)", row=2, col=1)
    return _layout(fig, theme, title="Across commits", height=480)


def warm_up() -> None:
    """Build and encode small figures like the pages' own (a 3 x 3 heatmap grid, lines, bars).

    Plotly creates its property validators lazily, per layout key (xaxis2, xaxis3, ...), on the
    first figure that uses them: ~150 ms the first time the Overview is drawn. Doing it at
    start-up keeps that out of the first page a person opens.
    """
    rows = [dict(op=op, dtype=dt, shape="M=1", activation="relu", speedup=1.0, fused=1e-6,
                 best_baseline=1e-6, baseline_impl="eager")
            for op in benchmarked_ops() for dt in ("bf16", "fp16", "fp32")]
    build_speedup_heatmap_figure(pd.DataFrame(rows), "dark").to_json()
    fig = make_subplots(rows=2, cols=1)
    fig.add_trace(go.Scatter(x=[0], y=[0]), row=1, col=1)
    fig.add_trace(go.Bar(x=["a"], y=[1]), row=2, col=1)
    _layout(fig, "light").to_json()
