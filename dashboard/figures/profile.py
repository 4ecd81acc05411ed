"""The Profile page's figures: kernels per call by implementation, and across commits (pure)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.figures.style import base_layout, build_empty_figure, impl_color, impl_sort_key


def build_profile_figure(rows: pd.DataFrame, theme: str = "light", title: str = "") -> go.Figure:
    """One stacked bar per implementation: time per call split by kernel (or CPU operator), with
    the launches per call written above each bar. rows: dashboard.data.profiles frame of one case and
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
    return base_layout(fig, theme, title=title or f"Time per call by {what}", height=480)


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
    return base_layout(fig, theme, title="Across commits", height=480)

