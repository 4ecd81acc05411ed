"""What every figure shares: themes, implementation colours and order, the base layout, the empty
figure (pure: plotly only)."""

from __future__ import annotations

import zlib
from functools import lru_cache

import plotly.graph_objects as go
import plotly.io as pio

THEMES = ("light", "dark")
_TEMPLATE = {"light": "plotly_white", "dark": "plotly_dark"}
_BACKGROUND = {"light": "#ffffff", "dark": "#1e2127"}  # matches assets/style.css --panel
IMPL_ORDER = ("fused", "eager", "compile", "cublaslt", "compile_max_autotune", "liger_mlp", "liger_glu")
IMPL_COLORS = {"fused": "#e4572e", "eager": "#4c78a8", "compile": "#54a24b", "cublaslt": "#b279a2",
               "compile_max_autotune": "#17becf", "liger_mlp": "#eeca3b", "liger_glu": "#9d755d"}
REGRESSION_COLOR, IMPROVEMENT_COLOR = "#d62728", "#2ca02c"
# Lines that are not implementations (another project's parameter combinations), by position.
LINE_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d",
                "#bab0ac", "#eeca3b", "#17becf", "#7f7f7f")


def impl_sort_key(impl: str):
    return (IMPL_ORDER.index(impl) if impl in IMPL_ORDER else len(IMPL_ORDER), impl)


def impl_color(impl: str) -> str:
    """An implementation's colour; another name gets a palette colour picked by a stable digest
    of the name (hash() differs from process to process)."""
    return IMPL_COLORS.get(impl) or LINE_PALETTE[zlib.crc32(impl.encode()) % len(LINE_PALETTE)]


def base_layout(fig: go.Figure, theme: str, **kwargs) -> go.Figure:
    theme = theme if theme in THEMES else "light"
    fig.update_layout(template=_TEMPLATE[theme], paper_bgcolor=_BACKGROUND[theme], plot_bgcolor=_BACKGROUND[theme],
                      margin=dict(l=60, r=20, t=60, b=50), font=dict(size=12), **kwargs)
    return fig


@lru_cache(maxsize=len(THEMES))
def template(theme: str) -> dict:
    """The theme's Plotly template as a plain dict, built once: a figure made of dicts skips the
    validation and deep copies a go.Figure does (tens of ms per figure at scale)."""
    return pio.templates[_TEMPLATE[theme if theme in THEMES else "light"]].to_plotly_json()


def layout_dict(theme: str, **kwargs) -> dict:
    """base_layout for a figure made of dicts."""
    theme = theme if theme in THEMES else "light"
    return {"template": template(theme), "paper_bgcolor": _BACKGROUND[theme], "plot_bgcolor": _BACKGROUND[theme],
            "margin": dict(l=60, r=20, t=60, b=50), "font": dict(size=12), **kwargs}


def build_empty_figure(message: str, theme: str = "light") -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                       font=dict(size=14))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return base_layout(fig, theme, height=300)


def alpha(hex_color: str, opacity: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{opacity})"

