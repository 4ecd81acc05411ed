"""Pure figure builders: ``build_*_figure(df, ...) -> go.Figure`` (no Dash, no I/O, no globals mutated).

Each takes the rows already selected and derived (dashboard.data.metrics) and a theme name. One module
per page's figure; the shared look (themes, colours, the base layout) is in ``style``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.io.json import to_json_plotly
from plotly.subplots import make_subplots

from workload.grids import benchmarked_ops

from dashboard.figures.heatmap import build_speedup_panel_figure, color_span, speedup_legend_stops
from dashboard.figures.profile import build_profile_figure, build_profile_history_figure
from dashboard.figures.roofline import build_roofline_figure
from dashboard.figures.style import THEMES, base_layout, build_empty_figure, impl_color, impl_sort_key
from dashboard.figures.trend import build_trend_figure

__all__ = ["THEMES", "build_empty_figure", "build_profile_figure", "build_profile_history_figure",
           "build_roofline_figure", "build_speedup_panel_figure", "build_trend_figure", "color_span", "impl_color",
           "impl_sort_key", "speedup_legend_stops", "warm_up"]


def warm_up() -> None:
    """Build and encode small figures like the pages' own (a heatmap panel, lines, bars).

    Plotly creates its property validators lazily, per layout key, on the first figure that
    uses them: ~150 ms the first time the Overview is drawn. Doing it at start-up keeps that out
    of the first page a person opens.
    """
    panel = pd.DataFrame([dict(case=f"{op} x", op=op, dtype="bf16", shape="M=1", activation="relu", speedup=1.0,
                               fused=1e-6, best_baseline=1e-6, baseline_impl="eager", verdict="within noise")
                          for op in benchmarked_ops()])
    marked = {(panel["case"].iloc[0], ""): "note"}  # a ⚠ cell (no mode column: mode ""), its outline too
    to_json_plotly(build_speedup_panel_figure(panel, 1.0, "dark", "warm-up", marked))
    fig = make_subplots(rows=2, cols=1)
    fig.add_trace(go.Scatter(x=[0], y=[0]), row=1, col=1)
    fig.add_trace(go.Bar(x=["a"], y=[1]), row=2, col=1)
    base_layout(fig, "light").to_json()
