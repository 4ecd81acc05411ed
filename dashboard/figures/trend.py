"""The Trends figure: one metric against commits (pure)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from asv_results.data import STATUS_FAILED, STATUS_OK, STATUS_SKIPPED
from dashboard.figures.style import (IMPL_COLORS, IMPROVEMENT_COLOR, LINE_PALETTE, REGRESSION_COLOR, alpha,
                                     build_empty_figure, impl_sort_key, layout_dict)
from dashboard.figures.ticks import log_ticks
from dashboard.data.facet_filters import sort_values_naturally
from dashboard.data.metrics import METRICS
from asv_results.units import display_unit, format_change

# Where asv's stored value says a benchmark did not run; asv keeps no error message in its files.
FAILED_HOVER = "failed: asv stored null (the benchmark raised an error or timed out; asv keeps no message)"
SKIPPED_HOVER = "skipped: asv stored NaN (setup raised NotImplementedError / SkipNotImplemented)"
_STRIP_ROW = 0.05  # height of one line's row of failure markers, as a fraction of the plot


def build_trend_figure(series: pd.DataFrame, metric, changes: pd.DataFrame | None = None,
                       marked_commit: str | None = None, x_axis: str = "commit", log_y: bool = False,
                       theme: str = "light", title: str = "", axis_per_line: bool = False,
                       run_marks: dict[str, str] | None = None):
    """One metric against commits: a line per implementation (or parameter combination), its 99 % CI
    band, change markers, and a marker strip where a line failed or was skipped. A line is broken
    wherever a commit between two of its points has no value (failed, skipped or not in the
    results): it never bridges commits it did not measure.

    ``axis_per_line``: each line on a y axis of its own, stacked (values whose unit nobody recorded
    may be GB, seconds and counts: never on one axis).
    ``run_marks``: {commit hash: what was unusual about its run} (dashboard.data.run_marks: throttled,
    a driver / torch / triton / liger version other than the run before): those points get a
    marker of their own and the hover says what.

    ``series``: derived rows (derived_metrics.derive) with ``line`` (else ``impl``), position, commit_hash,
    date, y, y_lo, y_hi and ``status`` (asv's ok / skipped / failed).
    ``metric``: a name in metrics.METRICS or anything with ``label``, ``unit`` and ``better``.
    ``changes``: rows with line (else impl), commit_hash, direction, relative_change, confirmed.
    Returns a figure dict (what dcc.Graph takes; go.Figure(...) of it for attribute access).
    """
    spec = METRICS[metric] if isinstance(metric, str) else metric
    series = _with_line_and_status(series)
    ok = series[np.isfinite(series["y"].to_numpy(dtype=float))]
    not_run = series[series["status"].isin([STATUS_FAILED, STATUS_SKIPPED])]
    if ok.empty and not_run.empty:
        return build_empty_figure(f"No measured {spec.label.lower()} for this selection.", theme)
    shown = display_unit(spec.unit, ok["y"])
    ok = ok.assign(y=shown(ok["y"]), y_lo=shown(ok["y_lo"]), y_hi=shown(ok["y_hi"]))
    xcol = "date" if x_axis == "date" else "position"
    lines = ordered_lines(series["line"])
    colors = line_colors(lines)
    measured = [line for line in lines if (ok["line"] == line).any()]
    axis_of = _axes_of(measured, axis_per_line)
    traces, shapes, annotations = [], [], []
    for line in measured:
        rows = ok[ok["line"] == line].sort_values("position")
        color, axis = colors[line], axis_of[line]
        band = rows[np.isfinite(rows["y_lo"].to_numpy(dtype=float)) & np.isfinite(rows["y_hi"].to_numpy(dtype=float))]
        if len(band):
            band_x, band_y = _band_outline(band, xcol)
            traces.append(dict(type="scatter", x=band_x, y=band_y, mode="lines", line=dict(width=0), yaxis=axis,
                               fill="toself", fillcolor=alpha(color, 0.18), hoverinfo="skip",
                               name=f"{line} 99% CI", showlegend=False, legendgroup=line))
        x, (y, custom) = _broken_where_missing(rows, xcol, rows["y"].tolist(), _commit_custom(rows).tolist())
        traces.append(dict(
            type="scatter", x=x, y=y, mode="lines+markers", name=line, connectgaps=False, yaxis=axis,
            legendgroup=line, line=dict(color=color, width=2), marker=dict(size=5, color=color),
            customdata=custom,
            hovertemplate=(f"<b>{line}</b> %{{y:.4g}}{' ' + shown.symbol if shown.symbol else ''}<br>commit "
                           "%{customdata[3]} (#%{customdata[2]})<br>%{customdata[1]}%{customdata[4]}<extra></extra>")))
    if run_marks:
        _add_run_marks(traces, ok, run_marks, xcol, axis_of)
    layout = {}
    _add_not_run_markers(traces, layout, annotations, not_run, lines, colors, xcol, len(ok) > 0)
    if changes is not None and len(changes):
        _add_change_markers(traces, shapes, ok, _with_line_and_status(changes), xcol, spec.better, series, axis_of)
    if marked_commit:
        marked = series[series["commit_hash"].astype(str).str.startswith(marked_commit)]
        if len(marked):
            x = _x(marked.iloc[:1], xcol)[0]
            shapes.append(dict(type="line", x0=x, x1=x, y0=0, y1=1, xref="x", yref="paper",
                               line=dict(color="#888", dash="dash", width=1.5)))
            annotations.append(dict(x=x, y=1.0, xref="x", yref="paper", text=f"{marked_commit[:8]}", showarrow=False,
                                    yanchor="bottom", font=dict(size=11)))
    strip = layout.pop("strip", 0.0)
    panels = _add_value_axes(layout, ok, axis_of, shown.title, spec.label, log_y, shown.symbol, strip)
    layout.update(
        xaxis=dict(title=dict(text="commit (oldest → newest)" if xcol == "position" else "commit date"),
                   **({"type": "date"} if xcol == "date" else _commit_ticks(series)),
                   **({"anchor": "y2"} if strip else {"anchor": panels[-1]} if len(panels) > 1 else {})),
        shapes=shapes, annotations=annotations)
    return {"data": traces, "layout": layout_dict(theme, title=dict(text=title), hovermode="closest",
                                                  height=480 if len(panels) == 1 else 180 + 150 * len(panels),
                                                  **layout)}


def _add_value_axes(layout: dict, ok: pd.DataFrame, axis_of: dict[str, str], title, label: str, log_y: bool,
                    symbol: str, strip: float) -> list[str]:
    """The y axes of the values, into ``layout``: one, or one per line stacked (the first line's
    on top, each titled with its line), above the not-run strip when there is one. Returns the
    axes' names, top first."""
    panels = sorted(set(axis_of.values()), key=_axis_number) or ["y"]
    bottom = strip + 0.03 if strip else 0.0
    height = (1 - bottom) / len(panels)
    for k, axis in enumerate(panels):
        apart = len(panels) > 1
        top = 1 - k * height
        domain = [max(top - height + (0.04 if apart else 0), bottom), top] if (strip or apart) else None
        layout["yaxis" + axis[1:]] = _value_axis(
            ok[ok["line"].map(axis_of) == axis] if apart else ok,
            title(_line_of_axis(axis_of, axis) if apart else label), log_y, symbol, domain,
            anchor=None if axis == "y" else "x")
    return panels


def _axes_of(lines: list[str], axis_per_line: bool) -> dict[str, str]:
    """Each line's y axis: all on "y", or one each ("y", "y3", "y4", ...; "y2" is the strip's)."""
    if not axis_per_line or len(lines) < 2:
        return {line: "y" for line in lines}
    return {line: "y" if k == 0 else f"y{k + 2}" for k, line in enumerate(lines)}


def _axis_number(axis: str) -> int:
    return int(axis[1:] or 1)


def _line_of_axis(axis_of: dict[str, str], axis: str) -> str:
    return next(line for line, a in axis_of.items() if a == axis)


def _value_axis(rows: pd.DataFrame, title: str, log_y: bool, symbol: str, domain, anchor=None) -> dict:
    """One y axis of values: its range (see _trend_y_range) and, on a log scale, ticks with a
    label each (figures.ticks), not one on every minor tick."""
    value_range = _trend_y_range(rows, log_y)
    axis = dict(title=dict(text=title), type="log" if log_y else "linear",
                exponentformat="none" if symbol else "SI", range=value_range)
    if log_y and value_range:
        values, labels = log_ticks(10.0 ** value_range[0], 10.0 ** value_range[1])
        if values:
            axis.update(tickmode="array", tickvals=values, ticktext=labels)
    if domain:
        axis["domain"] = domain
    if anchor:
        axis["anchor"] = anchor
    return axis


def _commit_ticks(series: pd.DataFrame, max_labelled: int = 12) -> dict:
    """Commit positions are whole numbers: a few commits are labelled with their short hash, more
    get integer ticks at a 1-2-5 step (Plotly's own choice would tick 0.5, 1.5 ...)."""
    commits = series.drop_duplicates("position").sort_values("position")
    if len(commits) <= max_labelled:
        return dict(tickmode="array", tickvals=commits["position"].tolist(),
                    ticktext=commits["commit_hash"].astype(str).str[:8].tolist())
    span = float(commits["position"].max() - commits["position"].min())
    step = next(s for s in (m * 10 ** e for e in range(9) for m in (1, 2, 5)) if span / s <= 10)
    return dict(tick0=0, dtick=step)


def _x(rows: pd.DataFrame, xcol: str) -> list:
    """x values as Plotly reads them (dates as ISO text: a dict figure is not converted for us), as
    Python values: numpy integers in a list each go through the JSON encoder's fallback (0.5 s
    for a line of 5,000 commits and its band)."""
    if xcol == "date":
        return _date_text(rows)
    return rows["position"].tolist()


def date_texts(dates: pd.Series) -> np.ndarray:
    """Commit dates as the figure's text, "YYYY-MM-DD HH:MM:SS" (a page formats a run's once and
    passes them as ``date_text``: pandas' strftime costs ~17 ms per 5,000 dates)."""
    return dates.dt.strftime("%Y-%m-%d %H:%M:%S").to_numpy()


def _date_text(rows: pd.DataFrame) -> list[str]:
    """Each row's commit date as date_texts gives it: the ``date_text`` column where the page gave
    one (a figure needs each line's dates two or three times), else formatted here."""
    return (rows["date_text"] if "date_text" in rows.columns else date_texts(rows["date"])).tolist()


def _with_line_and_status(rows: pd.DataFrame) -> pd.DataFrame:
    """``line`` (the legend label; the implementation unless given) and ``status`` as str."""
    out = rows.assign(line=(rows["line"] if "line" in rows.columns else rows["impl"]).astype(str))
    if "status" in out.columns:
        return out.assign(status=out["status"].astype(str))
    return out.assign(status=STATUS_OK)


def ordered_lines(lines) -> list[str]:
    """Implementations in their usual order, then other labels (parameter combinations) with
    their numbers in numeric order ("size=1024" before "size=65536")."""
    names = {str(v) for v in lines}
    impls = sorted((n for n in names if n in IMPL_COLORS), key=impl_sort_key)
    return impls + sort_values_naturally(names - set(impls))


def line_colors(lines: list[str]) -> dict[str, str]:
    """Implementation colours for implementations, else a fixed palette by position (stable
    across processes and reloads, unlike a colour from hash())."""
    palette = LINE_PALETTE
    others = [line for line in lines if line not in IMPL_COLORS]
    return {line: IMPL_COLORS.get(line) or palette[others.index(line) % len(palette)] for line in lines}


def _band_outline(band: pd.DataFrame, xcol: str) -> tuple[list, list]:
    """The CI band as closed outlines, one per run of neighbouring commits (along y_hi, back along
    y_lo), separated by None: a band never spans commits without a value, as its line does not
    ("tonexty" between two broken lines fills across their gaps)."""
    positions = band["position"].to_numpy(dtype=float)
    x, hi, lo = _x(band, xcol), band["y_hi"].to_numpy(), band["y_lo"].to_numpy()
    starts = np.r_[0, np.flatnonzero(np.diff(positions) > 1) + 1]
    ends = np.r_[starts[1:], len(band)]
    out_x, out_y = [], []
    for a, b in zip(starts, ends):
        if out_x:
            out_x.append(None), out_y.append(None)
        out_x += list(x[a:b]) + list(x[a:b][::-1])
        out_y += list(hi[a:b]) + list(lo[a:b][::-1])
    return out_x, out_y


def _broken_where_missing(rows: pd.DataFrame, xcol: str, *columns: list) -> tuple[list, list[list]]:
    """x and each of ``columns`` (one value per row, in position order) with a gap (None) between
    two points whose commits are not next to each other in the run: the commits between have no
    value for this line (it failed, was skipped, or is not in their results)."""
    x, columns = _x(rows, xcol), [list(c) for c in columns]
    if len(rows) < 2:
        return x, columns
    positions = rows["position"].to_numpy(dtype=float)
    for i in np.flatnonzero(np.diff(positions) > 1)[::-1]:
        for values in (x, *columns):
            values.insert(i + 1, None)
    return x, columns


def _commit_custom(rows: pd.DataFrame) -> np.ndarray:
    """hash, date, position, short hash and "<br>" + the commit's subject (a ``subject`` column,
    from the repository, where the rows have one) per row, for the hover."""
    hashes = rows["commit_hash"].astype(str)
    subjects = (("<br>" + rows["subject"].fillna("").astype(str)).where(rows["subject"].fillna("") != "", "")
                if "subject" in rows.columns else pd.Series("", index=rows.index))
    minutes = np.array([text[:16] for text in _date_text(rows)], dtype=object)  # "YYYY-MM-DD HH:MM"
    return np.stack([hashes.to_numpy(), minutes,
                     rows["position"].astype(str).to_numpy(), hashes.str[:10].to_numpy(),
                     subjects.to_numpy(dtype=object)], axis=1)


def _add_not_run_markers(traces: list, layout: dict, annotations: list, not_run: pd.DataFrame, lines: list[str],
                         colors: dict, xcol: str, any_values: bool) -> None:
    """Failed (x) and skipped (open circle) commits of each line, one row per line on a strip of its
    own below the plot (axis y2), with a legend entry that says how often: a line that never ran
    still shows up, and the markers hide neither the values nor each other."""
    if not_run.empty:
        return
    rows_of = [line for line in lines if (not_run["line"] == line).any()]
    for k, line in enumerate(rows_of):
        for status, symbol, hover in ((STATUS_FAILED, "x", FAILED_HOVER),
                                      (STATUS_SKIPPED, "circle-open", SKIPPED_HOVER)):
            rows = not_run[(not_run["line"] == line) & (not_run["status"] == status)].sort_values("position")
            if rows.empty:
                continue
            traces.append(dict(
                type="scatter", x=_x(rows, xcol), y=np.full(len(rows), k), yaxis="y2", mode="markers",
                name=f"{line}: {status} at {len(rows)} commit{'s' if len(rows) != 1 else ''}", legendgroup=line,
                marker=dict(symbol=symbol, size=9, color=colors[line], line=dict(width=2, color=colors[line])),
                customdata=_commit_custom(rows), text=_why_not_run(rows, status, hover),
                hovertemplate=(f"<b>{line}</b> %{{text}}<br>commit %{{customdata[3]}} (#%{{customdata[2]}})"
                               "<br>%{customdata[1]}<extra></extra>")))
    strip = min(_STRIP_ROW * len(rows_of), 0.25)
    layout["yaxis2"] = dict(domain=[0, strip], range=[-0.7, len(rows_of) - 0.3], visible=False, fixedrange=True)
    layout["strip"] = strip  # the values' axis starts above it (set with the rest of the axes)
    if not any_values:
        annotations.append(dict(text="nothing measured: every point failed or was skipped", showarrow=False,
                                x=0.5, y=0.6, xref="paper", yref="paper", font=dict(size=13)))


RUN_MARK_COLOR = "#ff7f0e"


def _add_run_marks(traces: list, ok: pd.DataFrame, run_marks: dict[str, str], xcol: str,
                   axis_of: dict[str, str]) -> None:
    """An open diamond around every point whose run was throttled or ran on other software than
    the run before (one legend entry saying at how many commits); the hover says what changed."""
    points = ok[ok["commit_hash"].astype(str).isin(run_marks)].sort_values("position")
    if points.empty:
        return
    n = points["commit_hash"].nunique()
    axes = points["line"].map(axis_of).fillna("y").to_numpy()
    for k, axis in enumerate(sorted(set(axes), key=_axis_number)):
        mine = points[axes == axis]
        text = [f"<b>{line}</b> at commit {str(h)[:10]}: {run_marks[str(h)]}"
                for line, h in zip(mine["line"], mine["commit_hash"])]
        traces.append(dict(type="scatter", x=_x(mine, xcol), y=mine["y"].to_numpy(), mode="markers", yaxis=axis,
                           name=f"runner changed or throttled ({n} commit{'s' if n != 1 else ''})",
                           legendgroup="run-marks", showlegend=k == 0, text=text,
                           hovertemplate="%{text}<extra></extra>",
                           marker=dict(symbol="diamond-open", size=16, color=RUN_MARK_COLOR,
                                       line=dict(width=2, color=RUN_MARK_COLOR))))


def _why_not_run(rows: pd.DataFrame, status: str, unrecorded: str) -> list[str]:
    """Each not-run point's hover: the reason the suite recorded (a ``reason`` column, from
    results/reasons/), else what asv's stored value alone says."""
    reasons = rows["reason"].fillna("").astype(str) if "reason" in rows.columns else pd.Series("", index=rows.index)
    return [f"{status}: {html_text(r)}" if r else unrecorded for r in reasons]


def html_text(reason: str, limit: int = 200) -> str:
    """A recorded reason for a Plotly hover: its last line (a failure's is a traceback's tail),
    cut, with the characters Plotly's hover would read as markup escaped."""
    lines = [line.strip() for line in reason.strip().splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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


def change_symbol(direction: str, better: str) -> str:
    """A triangle pointing the way the plotted value moved: a regression of a higher-is-better
    metric (TFLOP/s) points down, one of a lower-is-better metric (latency) points up."""
    moved_up = (direction == "regression") == (better == "lower")
    return "triangle-up" if moved_up else "triangle-down"


def _add_change_markers(traces: list, shapes: list, ok: pd.DataFrame, changes: pd.DataFrame, xcol: str,
                        better: str, series: pd.DataFrame, axis_of: dict[str, str]) -> None:
    for direction, color in (("regression", REGRESSION_COLOR), ("improvement", IMPROVEMENT_COLOR)):
        chosen = changes[changes["direction"] == direction]
        if chosen.empty:
            continue
        points = chosen.drop(columns=[c for c in (xcol, "y") if c in chosen.columns]).merge(
            ok[["line", "commit_hash", xcol, "y"]].astype({"commit_hash": str}), on=["line", "commit_hash"],
            how="inner")
        if points.empty:
            continue
        notes = _position_notes(points)
        from regressions.findings import evidence_word  # the gate's words (its package: on first use)

        clear = points["clear"] if "clear" in points.columns else pd.Series(False, index=points.index)
        words = [evidence_word(bool(c), bool(k)) for c, k in zip(points["confirmed"], clear)]
        text = [f"{direction} in {i}: {format_change(r)}{f' ({w})' if w else ''}<br>commit {h[:10]}{n}"
                for i, r, w, h, n in zip(points["line"], points["relative_change"], words, points["commit_hash"],
                                         notes)]
        _shade_plausible_positions(shapes, series, points, xcol, color)
        axes = points["line"].map(axis_of).fillna("y").to_numpy()
        for k, axis in enumerate(sorted(set(axes), key=_axis_number)):  # one trace per axis, one legend entry
            on = axes == axis
            traces.append(dict(type="scatter", x=_x(points[on], xcol), y=points["y"].to_numpy()[on], mode="markers",
                               name=f"{direction}s", yaxis=axis, legendgroup=direction, showlegend=k == 0,
                               marker=dict(symbol=change_symbol(direction, better), size=15, color=color,
                                           line=dict(width=1, color="#000")),
                               text=[t for t, keep in zip(text, on) if keep], hovertemplate="%{text}<extra></extra>"))


def _position_notes(points: pd.DataFrame) -> list[str]:
    if "plausible_commits" not in points.columns:
        return [""] * len(points)
    from regressions import position_note  # the detector's package imports scipy: on first use

    notes = map(position_note, points["plausible_commits"], points["earliest_commit"], points["latest_commit"])
    return [f"<br>{note}" if note else "" for note in notes]


def _shade_plausible_positions(shapes: list, series: pd.DataFrame, points: pd.DataFrame, xcol: str,
                               color: str) -> None:
    """A faint band over the commits where a change that cannot be pinned to one may be
    (placed by commit, so also where an end commit has no plotted value)."""
    if "plausible_commits" not in points.columns:
        return
    x_of = dict(zip(series["commit_hash"].astype(str), _x(series, xcol)))
    for n, first, last in zip(points["plausible_commits"], points["earliest_commit"], points["latest_commit"]):
        x0, x1 = x_of.get(str(first)), x_of.get(str(last))
        if n > 1 and x0 is not None and x1 is not None:
            shapes.append(dict(type="rect", x0=x0, x1=x1, y0=0, y1=1, xref="x", yref="paper",
                               fillcolor=alpha(color, 0.12), line=dict(width=0), layer="below"))


