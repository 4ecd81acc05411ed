"""The Trends figure: one metric against commits (pure)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dashboard.figures.style import (IMPROVEMENT_COLOR, REGRESSION_COLOR, alpha, base_layout, build_empty_figure,
                                     impl_color, impl_sort_key)
from dashboard.metrics import METRICS
from dashboard.regressions import position_note

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
                                     fill="tonexty", fillcolor=alpha(color, 0.18), hoverinfo="skip",
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
    return base_layout(fig, theme, title=title, hovermode="closest", height=480)


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
            fig.add_vrect(x0=x0, x1=x1, fillcolor=alpha(color, 0.12), line_width=0, layer="below")


