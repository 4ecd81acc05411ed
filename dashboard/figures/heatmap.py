"""The Overview's speedup panels (pure): one small heatmap per op x dtype, rows = shapes, columns
= activations, colour = log2(t_best_unfused / t_fused) on one scale shared by every panel.

Each panel is its own figure sized by its cells (26 px a row, 86 px a column), so a panel of one
case stays small and one of 40 stays readable; the page lays them out side by side. One scale,
its ticks and its colours are defined here and drawn once on the page (speedup_legend_stops).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from plotly.colors import sample_colorscale

from dashboard.figures.style import REGRESSION_COLOR
from dashboard.data.facet_filters import sort_values_naturally
from asv_results.units import format_value

# Red: fused slower than the best unfused implementation; blue: faster; light grey: even. Light
# enough at both ends for dark cell text.
COLORSCALE = [[0.0, "#ca4b3c"], [0.25, "#f4a582"], [0.5, "#f2f2f2"], [0.75, "#92c5de"], [1.0, "#3f8fc4"]]
NICE_SPEEDUPS = (1 / 8, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 8.0)
MIN_SPAN, MAX_SPAN = math.log2(1.25), 3.0  # the scale shows at least 0.8x-1.25x, at most 1/8x-8x
ROW_PX, COL_PX, TOP_PX, BOTTOM_PX = 26, 86, 70, 44
REGRESSED_MARK = "⚠ "
SET_CHANGED_MARK = "Δ "  # an implementation compared dropped out or joined
# (text colour, background) per theme: the colours of plotly_white / plotly_dark and style.css
PANEL_THEMES = {"light": ("#2a3f5f", "#ffffff"), "dark": ("#f2f5fa", "#1e2127")}


def color_span(speedups) -> float:
    """Half-width of the colour scale in log2 units: the largest |log2(speedup)|, kept within
    0.8x-1.25x and 1/8x-8x so small differences look small and large ones still fit."""
    s = np.asarray(speedups, dtype=float)
    s = s[np.isfinite(s) & (s > 0)]
    span = float(np.abs(np.log2(s)).max()) if len(s) else MIN_SPAN
    return min(max(span, MIN_SPAN), MAX_SPAN)


def speedup_ticks(span: float) -> list[float]:
    """Speedups to label on the scale: 1x, then nice values outwards at least a quarter of the
    half-scale apart (so labels never crowd), mirrored on the slower side."""
    chosen, last = [1.0], 0.0
    candidates = (2.0, 4.0, 8.0) if span >= 1.5 else NICE_SPEEDUPS  # a wide scale reads best in doublings
    for v in (v for v in candidates if v > 1 and math.log2(v) <= span + 1e-9):
        if math.log2(v) - last >= span / 4 - 1e-9:
            chosen.append(v)
            last = math.log2(v)
    return sorted({*chosen, *(1 / v for v in chosen)})


def speedup_label(v: float) -> str:
    """A tick of the scale: "0.8×", "1×", "1.25×"."""
    return f"{v:.2g}×" if v < 1 else f"{v:.3g}×"


def speedup_text(v: float) -> str:
    """A measured speedup: "1.17×", "0.00016×" (never a flat "0.00×"), "–" when there is none."""
    if not np.isfinite(v):
        return "–"
    return f"{v:.2f}×" if v >= 0.1 else f"{v:.2g}×"


def speedup_legend_stops(span: float) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """For a legend drawn outside the figures: (position 0-1, colour) stops of the gradient and
    (position 0-1, label) of each tick."""
    positions = np.linspace(0, 1, 9)
    colors = sample_colorscale(COLORSCALE, list(positions))
    ticks = [((math.log2(v) + span) / (2 * span), speedup_label(v)) for v in speedup_ticks(span)]
    return list(zip(positions.tolist(), colors)), ticks


def panel_size(n_rows: int, n_cols: int, longest_label: int) -> tuple[int, int]:
    """(width, height) in px of a panel with these cells and row labels."""
    label_px = 7 * longest_label + 16
    return label_px + COL_PX * max(n_cols, 2) + 24, TOP_PX + ROW_PX * n_rows + BOTTOM_PX


def _peer_line(r) -> str:
    """The hover's fused-peer line: the best peer's time and fused's speedup over it."""
    peer = getattr(r, "peer_impl", None)
    if not isinstance(peer, str):
        return "<br>best fused peer: – (none ran)"
    s = float(r.peer_speedup)
    verdict = getattr(r, "peer_verdict", None)
    return (f"<br>best fused peer: {peer} {format_value(r.best_peer, 'seconds')}"
            f"<br>speedup over it {speedup_text(s)}" + (f" (fused {verdict})" if isinstance(verdict, str) else ""))


def _kernels_line(r) -> str:
    k = getattr(r, "autotune_kernels", None)
    if k is None or not np.isfinite(k):
        return ""
    note = " (GEMM template with the epilogue fused)" if k == 1 else ""
    return f"<br>compile_max_autotune: {k:g} kernel{'s' if k != 1 else ''} per call{note}"


FAILED = "failed"  # a speedup row's column: why fused failed in that case (pages.overview); absent or NaN: it ran


def build_speedup_panel_figure(panel: pd.DataFrame, span: float, theme: str = "light", title: str = "",
                               changed: dict[str, str] | None = None, set_notes: dict | None = None,
                               classified: dict[str, str] | None = None) -> dict:
    """One op x dtype x mode: ``panel`` is its rows of speedup_tables.speedups (case, mode, shape,
    activation, fused, best_baseline, baseline_impl, speedup, verdict, the best_peer columns, and
    optionally autotune_kernels). ``changed``: (case, mode) -> the gate's note for cells it fails
    at this commit (outlined and marked ⚠). ``set_notes``: (case, mode) -> what changed in the
    cell's comparison set (marked Δ, said in the hover). ``classified``: (case, mode) -> the gate's
    class of a change it judged without failing (the hover says it).

    A plain figure dict, not a go.Figure: a page draws one per op x dtype, and building each as a
    validated go.Figure with a copied template cost ~25 ms apiece."""
    changed, set_notes, classified = changed or {}, set_notes or {}, classified or {}
    shapes = sort_values_naturally(panel["shape"])
    acts = sort_values_naturally(panel["activation"])
    cells = {}
    for r in panel.itertuples(index=False):  # the first row of a cell wins, as a lookup by label would
        cells.setdefault((str(r.shape), str(r.activation)), r)
    z, text, hover, marks = [], [], [], []
    for i, shape in enumerate(shapes):
        zr, tr, hr = [], [], []
        for j, act in enumerate(acts):
            r = cells.get((shape, act))
            if r is None:
                zr.append(None), tr.append(""), hr.append(f"{shape} {act}: not measured")
                continue
            failed = getattr(r, FAILED, None)
            if isinstance(failed, str) and failed:  # fused failed here: a cell that says so, never a gap
                zr.append(None), tr.append(REGRESSED_MARK + "fused failed")
                hr.append(f"<b>{r.case}</b>" + (f" · {r.mode}" if hasattr(r, "mode") else "")
                          + f"<br><b>fused failed</b>: {failed}")
                marks.append((j, i))
                continue
            s = float(r.speedup)
            cell = (str(r.case), str(getattr(r, "mode", "")))
            note = changed.get(cell)
            set_note = set_notes.get(cell)
            zr.append(math.log2(s) if np.isfinite(s) and s > 0 else None)
            label = speedup_text(s) if np.isfinite(s) else "no baseline"
            tr.append((REGRESSED_MARK if note else "") + (SET_CHANGED_MARK if set_note else "") + label)
            hr.append(f"<b>{r.case}</b>" + (f" · {r.mode}" if hasattr(r, "mode") else "")
                      + f"<br>fused {format_value(r.fused, 'seconds')}"
                      f"<br>best unfused: {r.baseline_impl if isinstance(r.baseline_impl, str) else '–'} "
                      f"{format_value(r.best_baseline, 'seconds')}"
                      f"<br>speedup {label}" + (f" (fused {r.verdict})" if isinstance(r.verdict, str) else "")
                      + (_peer_line(r) if hasattr(r, "peer_impl") else "") + _kernels_line(r)
                      + (f"<br><b>{note}</b>" if note else "")
                      + (f"<br>{classified[cell]}" if cell in classified else "")
                      + (f"<br><b>comparison set changed: {set_note}</b>" if set_note else ""))
            if note:
                marks.append((j, i))
        z.append(zr), text.append(tr), hover.append(hr)
    width, height = panel_size(len(shapes), len(acts), max(map(len, shapes)))
    text_color, background = PANEL_THEMES.get(theme, PANEL_THEMES["light"])
    axis = dict(type="category", tickfont=dict(size=11), fixedrange=True, showgrid=False, zeroline=False)
    return {
        "data": [dict(type="heatmap", z=z, x=acts, y=shapes, text=text, texttemplate="%{text}",
                      textfont=dict(color="#111", size=11), customdata=hover,
                      hovertemplate="%{customdata}<extra></extra>", colorscale=COLORSCALE, zmin=-span, zmax=span,
                      zmid=0, showscale=False, xgap=2, ygap=2)],
        "layout": dict(
            width=width, height=height, font=dict(size=12, color=text_color), paper_bgcolor=background,
            plot_bgcolor=background, margin=dict(l=10, r=10, t=TOP_PX - 6, b=BOTTOM_PX - 12),
            title=dict(text=title, font=dict(size=13), x=0.01, xanchor="left", y=1, yanchor="top", yref="container",
                       pad=dict(t=14)),
            xaxis=axis, yaxis=dict(axis, automargin=True, autorange="reversed"),
            shapes=[dict(type="rect", x0=x - 0.5, x1=x + 0.5, y0=y - 0.5, y1=y + 0.5,
                         line=dict(color=REGRESSION_COLOR, width=3)) for x, y in marks]),
    }
