"""Overview: one commit of a machine at a glance. The headline answers "is fused faster, and did
anything get worse?": per op x dtype x mode the geometric-mean speedup of fused over the best
unfused implementation and over the best fused peer (named), in how many cases fused is faster
or slower beyond the noise, what changed since the previous commit (or a chosen one), each change
linking to its trend, and whether the set of implementations compared changed (one dropped out
or joined: the speedup then moves without fused moving). Below it one speedup heatmap per op x
dtype x mode (cells whose fused latency regressed are outlined), the device and its ceilings."""

from __future__ import annotations

import numpy as np
import pandas as pd
from dash import Input, Output, State, dcc, html

from dashboard.data import ab_compare, comparison_set, device_ceilings, facet_filters, metrics, na_reasons, speedup_tables
from dashboard.ui.callback_guards import guarded
from dashboard.ui.commit_choice import commit_of, commit_options
from dashboard.ui.facet_widgets import facet_controls, register_facet_counts
from regressions.gate_view import GateView, class_of
from dashboard.ui.notices import message, whole_folder_note
from dashboard.ui.run_selector import register_run_controls, run_controls, run_of
from dashboard.ui.widgets import dropdown, labelled, named_values
from dashboard.figures.heatmap import (FAILED, build_speedup_panel_figure, color_span, speedup_legend_stops,
                                       speedup_text)
from dashboard.data.dashboard_data import STATIC, SUITE, DashboardData
from dashboard.store.model import ResultsStore
from dashboard.pages import Page
from dashboard.pages._why_na import why_na_line
from asv_results.units import format_change, format_value
from dashboard.data.urlstate import SHELL, Query, link, qid

ID = "overview"
COMMITS = {"commit": 0}
FACETS = metrics.FACETS
FACTOR = 1.1  # asv compare's default factor: a change smaller than 10 % is not counted
MAX_LISTED_CHANGES = 12


def layout(data: DashboardData, query: Query):
    run = run_of(data, query)
    base = commit_of(run, query, "base", 1) if query.one("base") else None
    return html.Div([
        html.H1("Overview"),
        html.Div(run_controls(ID, data, query, COMMITS)
                 + [labelled("Changes since", dropdown(ID, "base", commit_options(run), base, clearable=True,
                                                       placeholder="the previous commit"), "15rem")],
                 className="controls"),
        html.Div(facet_controls(ID, run, query), className="controls"),
        html.P(["Speedup = t(best unfused) / t(fused) at the same commit, and t(best fused peer) / t(fused) over ",
                ", ".join(metrics.FUSED_PEERS), "; Implementation picks the ones compared, Mode the forward or "
                "training numbers. Faster / slower: the two 99 % confidence intervals do not overlap (asv's rule "
                "without samples). Changes: fused or unfused latency differs by more than ",
                f"{FACTOR:g}× and asv's test agrees (as Compare). Δ: the comparison set changed (an implementation "
                "dropped out or joined), so the speedup can move without fused moving. Kernels per call of "
                "compile_max_autotune (hover): 1 for linear_act means its GEMM template won with the activation "
                "fused as its epilogue."], className="hint"),
        dcc.Loading(html.Div(id="overview-headline"), delay_show=400),
        html.Div(id="overview-panels"),
        html.Div([html.Div(id="overview-changes", className="card"),
                  html.Div(id="overview-device", className="card")], className="cards"),
    ])


def update(data: DashboardData, machine, env, commit, base, op, dtype, activation, shape, impl, theme="light",
           mode=None, verdict=None):
    """(headline, heatmap panels, changes card, device card) for one run at one commit.
    ``verdict``: the gate's judgement of this commit against the base (gate_records.record_for):
    the cells' ⚠ marks and the card's classes are its, never judged here; None: not known yet."""
    run = data.run(machine, env)
    if run is None or commit not in set(run.commits["commit_hash"]):
        text = "Pick a machine, environment and commit."
        return message(text), [], "", ""
    selections = {"op": op, "dtype": dtype, "activation": activation, "shape": shape, "mode": mode}
    rows = facet_filters.apply_filters(run.at_commit(commit, samples=False), selections)
    latency = rows[rows["metric"] == "latency"]
    baselines = [i for i in (impl or []) if i != metrics.FUSED] or None
    table = speedup_tables.speedups(latency, baselines)
    unfiltered = baselines is None and not any(selections.values())
    newest = table if unfiltered and commit == run.commits["commit_hash"].iloc[-1] else None  # the scale's own
    table["autotune_kernels"] = _autotune_kernels(rows, table)
    base = base if base in set(run.commits["commit_hash"]) and base != commit else run.previous_commit(commit)
    changes = _changes(run, base, latency, selections)
    view = GateView(verdict)
    regressed, classified = _gate_marks(run, view, commit)
    set_changes = [c for c in comparison_set.changes(run, commit, base, set(_case_modes(table)))
                   if baselines is None or c.impl in baselines]
    common = {"machine": run.machine, "env": run.env_name, "theme": theme}
    failed = _failed_fused(data, run, latency, table)
    return (headline(table, changes, base, commit, common, selections, set_changes, baselines),
            panels(pd.concat([table, failed], ignore_index=True) if len(failed) else table, regressed, theme,
                   _set_notes(set_changes), run_color_span(data, run, newest), classified),
            gate_card(view, run, base, commit, data.results_dir) + change_card(changes, base, commit, common, failed)
            + why_na_line(data, run, rows, [commit], "overview-why-na"),
            device_panel(data, run.machine, run.env_name, commit))


def _failed_fused(data: DashboardData, run, latency, table) -> pd.DataFrame:
    """The cases whose fused latency failed at this commit (asv stored null), as speedup rows
    without numbers and with ``failed``: the reason the suite recorded (or "no reason recorded").
    They stay on the panels as failed cells instead of vanishing."""
    mine = latency[(latency["impl"].astype(str) == metrics.FUSED) & (latency["status"].astype(str) == "failed")]
    shown = set(_case_modes(table))
    mine = mine[[key not in shown for key in _case_modes(mine)]]
    if mine.empty:
        return pd.DataFrame(columns=[*speedup_tables.SPEEDUP_COLUMNS, FAILED])
    reasons = na_reasons.reason_column(mine, run.series, data.results_dir, run.machine)
    out = mine.drop_duplicates(["case", "mode"])[[c for c in speedup_tables.SPEEDUP_COLUMNS if c in mine.columns]]
    out = out.assign(**{c: np.nan for c in speedup_tables.SPEEDUP_COLUMNS if c not in out.columns})
    first = dict(zip(_case_modes(mine), reasons))
    out[FAILED] = [na_reasons._first_line(first.get(cell, "")) or "no reason recorded" for cell in _case_modes(out)]
    return out.astype({"case": str, "mode": str}).reset_index(drop=True)


def _case_modes(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(case, mode) of each row, as plain strings: iterating pandas' string columns goes through
    a Python call per element (35,000 of them made a fifth of an Overview call)."""
    return list(zip(frame["case"].astype(str).tolist(), frame["mode"].astype(str).tolist()))


def _autotune_kernels(rows, table) -> list:
    """compile_max_autotune's kernels per call for each speedup row (None where not measured)."""
    kernels = rows[(rows["metric"] == "kernels") & (rows["impl"].astype(str) == metrics.COMPILE_MAX_AUTOTUNE)
                   & (rows["status"] == "ok")]
    found = dict(zip(_case_modes(kernels), kernels["value"].tolist()))
    return [found.get(key) for key in _case_modes(table)]


def _set_notes(set_changes) -> dict[tuple[str, str], str]:
    """(case, mode) -> what changed in its comparison set ("compile failed since 1a2b3c4d")."""
    notes: dict[tuple[str, str], list[str]] = {}
    for c in set_changes:
        notes.setdefault((c.case, c.mode), []).append(c.text())
    return {k: "; ".join(v) for k, v in notes.items()}


def _changes(run, base: str | None, latency, selections: dict):
    """compare_rows of the latency rows at ``base`` -> at this commit (same filters, the cases
    of this commit), or None."""
    if base is None:
        return None
    old = facet_filters.apply_filters(run.at_commit(base, samples=False), selections)
    old = old[(old["metric"] == "latency") & old["case"].astype(str).isin(set(latency["case"].astype(str)))]
    return ab_compare.compare_rows(old, latency, FACTOR, metrics.METRICS["latency"].better, samples=run.table.samples)


def _gate_items(run, view: GateView, commit: str, fused_latency: bool = True) -> list[tuple[dict, str, str, str]]:
    """(gate item, case, impl, mode) of this run's findings the gate judged at this commit (not
    the ones from before it): fused latency only (the cells' marks), or every one (the card)."""
    out = []
    for item in view.items(run.machine):
        c = item["change"]
        if c["env_name"] != run.env_name or c["commit_hash"] != commit or item["category"] == "earlier":
            continue
        case, impl = run.series_of_params.get((c["benchmark"], c["params"]), (None, None))
        if fused_latency and (case is None or impl != metrics.FUSED
                              or metrics.stored_metric_of(c["benchmark"]) != "latency"):
            continue
        mode = run.mode_of_params.get((c["benchmark"], c["params"]), metrics.FORWARD)
        out.append((item, case or f"{c['benchmark']}({c['params']})", impl or "", mode))
    return out


def _gate_marks(run, view: GateView, commit: str) -> tuple[dict[tuple, str], dict[tuple, str]]:
    """({(case, mode): note} the gate fails at this commit (outlined ⚠), {(case, mode): note} it
    judged without failing: environment, noise, suspected, accepted), each note the gate's class
    and evidence. By mode too: a case fails the gate in the panel of the mode it failed in only."""
    failing, other = {}, {}
    for item, case, _, mode in _gate_items(run, view, commit):
        judged = class_of(item)
        said = f"{judged[0]}: {judged[1]}" if judged else item["note"]
        if view.is_failing(item):
            failing[(case, mode)] = f"fails the gate ({mode}): {said}"
        else:
            other[(case, mode)] = f"the gate: {item['category']} ({mode}), not failed: {said}"
    return failing, other


def gate_card(view: GateView, run, base, commit, results_dir) -> list:
    """The gate's verdict on this commit for this run, with each finding it judged there (the
    failing ones first) and its class and evidence, word for word."""
    since = f" --base {base[:8]}..{commit[:8]}" if base else ""
    command = f"python -m regressions --results {results_dir} --machine {run.machine}{since}"
    if not view.ready:
        return [html.H3("The gate"), html.P("The gate's verdict is not known yet (the detector is running).",
                                            className="hint")]
    if view.error:
        return [html.H3("The gate"), message(f"the gate cannot judge: {view.error}", "error")]
    items = []
    judged_here = sorted(_gate_items(run, view, commit, fused_latency=False),
                         key=lambda x: (not view.is_failing(x[0]), x[2] != metrics.FUSED))  # failing, fused first
    for item, case, impl, mode in judged_here:
        judged = class_of(item)
        metric = metrics.stored_metric_of(item["change"]["benchmark"]) or item["change"]["benchmark"]
        items.append(html.Li([html.Span(judged[0] if judged else item["category"],
                                        className=f"badge class-{judged[0] if judged else item['category']}"),
                              f" {impl} {metric} " if impl else " ", html.Code(case), f" ({mode}) ",
                              html.Span("fails the gate" if view.is_failing(item) else "not failed",
                                        className="bad" if view.is_failing(item) else "hint"),
                              html.Small(f" · {judged[1] if judged else item['note']}", className="evidence")]))
    return [*whole_folder_note(view, results_dir), html.H3(f"The gate: {view.word(run.machine)}", id="overview-gate"),
            html.P(["As ", html.Code(command), " judges it."], className="hint"),
            html.Ul(items, className="changes", id="overview-gate-list") if items
            else html.P("The gate judged no finding of this run at this commit.")]


def _compared_label(baselines, peers: bool) -> str:
    """What a speedup column compares with: "best unfused" unless Implementation narrows it."""
    if baselines is None:
        return "best fused peer" if peers else "best unfused"
    chosen = [b for b in baselines if metrics.is_fused_peer(b) == peers]
    return ("best of " + ", ".join(chosen)) if chosen else ("no fused peer chosen" if peers else "no unfused chosen")


def headline(table, changes, base, commit, common: dict, selections: dict, set_changes=(), baselines=None):
    """One row per op x dtype x mode (and one for all): cases, geomean speedup over the best
    unfused and the best fused peer (named), faster / slower / within noise, the fused and
    unfused changes since the baseline (linked to Compare) and the comparison set's changes."""
    if table.empty:
        return message("No case has a fused and a baseline latency at this commit (skipped, failed or filtered "
                       "out); Trends shows why per implementation.")
    summary = speedup_tables.speedup_summary(table)
    since = f"since {base[:8]}" if base else "since —"
    head = html.Tr([html.Th(h) for h in ("op · dtype · mode", "cases", f"fused vs {_compared_label(baselines, False)} "
                                         "(geomean)", f"fused vs {_compared_label(baselines, True)} (geomean)",
                                         "fused faster", "fused slower", "within noise", f"fused changes {since}",
                                         f"unfused changes {since}", "comparison set")])
    body = [_headline_row(r, table, changes, base, commit, common, set_changes) for _, r in summary.iterrows()]
    if len(summary) > 1:
        total = {"op": None, "dtype": None, "mode": None, "cases": len(table),
                 "geomean": speedup_tables.geomean(table["speedup"]), "peer_geomean": speedup_tables.geomean(table["peer_speedup"]),
                 "peer_impl": speedup_tables._most_common(table["peer_impl"]),
                 **{k: int(summary[k].sum()) for k in (speedup_tables.FASTER, speedup_tables.SLOWER, speedup_tables.WITHIN_NOISE)}}
        body.append(_headline_row(total, table, changes, base, commit, common, set_changes, css="total"))
    return html.Table([html.Thead(head), html.Tbody(body)], className="headline", id="overview-headline-table")


def _speedup_cell(mean, named=None):
    span = html.Span(speedup_text(mean), className="good" if mean > 1 else "bad" if mean < 1 else "")
    return html.Td([span, html.Span(f"vs {named}", className="hint peer-name")] if named and mean == mean else span,
                   className="num")


def _headline_row(r, table, changes, base, commit, common, set_changes, css=""):
    op, dtype, mode = r["op"], r["dtype"], r["mode"]
    label = f"{op} · {dtype} · {mode}" if op else "all"
    cells = [html.Td(html.B(label)), html.Td(str(r["cases"])), _speedup_cell(r["geomean"]),
             _speedup_cell(r["peer_geomean"], r["peer_impl"]),
             html.Td(str(r[speedup_tables.FASTER]), className="num good" if r[speedup_tables.FASTER] else "num"),
             html.Td(str(r[speedup_tables.SLOWER]), className="num bad" if r[speedup_tables.SLOWER] else "num"),
             html.Td(str(r[speedup_tables.WITHIN_NOISE]), className="num")]
    for fused in (True, False):
        cells.append(html.Td(_change_counts(changes, op, dtype, mode, fused, base, commit, common)))
    cells.append(html.Td(_set_summary(set_changes, table, op, dtype, mode)))
    row_id = ("headline-all" if not op else f"headline-{op}-{dtype}" if mode == metrics.FORWARD
              else f"headline-{op}-{dtype}-{mode}")
    return html.Tr(cells, className=css, id=row_id)


def _set_summary(set_changes, table, op, dtype, mode):
    """"compile failed since 1a2b3c4d (1 case)" per change in this row's cases, else "unchanged"."""
    cases = table if op is None else table[(table["op"] == op) & (table["dtype"] == dtype) & (table["mode"] == mode)]
    mine = set(_case_modes(cases))
    counts: dict[tuple[str, str], int] = {}
    for c in set_changes:
        if (c.case, c.mode) in mine:
            counts[(c.kind, c.text())] = counts.get((c.kind, c.text()), 0) + 1
    if not counts:
        return html.Span("unchanged", className="hint")
    return html.Span([html.Span(f"Δ {text} ({n} case{'s' if n != 1 else ''})",
                                className="set-change bad" if kind == comparison_set.DROPPED else "set-change")
                      for (kind, text), n in sorted(counts.items())], className="set-changes")


def _change_counts(changes, op, dtype, mode, fused: bool, base, commit, common):
    if changes is None:
        return "first commit"
    worse, better, dropped = _counts_by_panel(changes).get((op, dtype, mode, fused), (0, 0, 0))
    if not worse and not better and not dropped:
        return html.Span("none", className="hint")
    impls = [metrics.FUSED] if fused else sorted(set(changes["impl"]) - {metrics.FUSED})
    href = link("/compare", {**common, "a": base, "b": commit, "metric": "latency",
                             "sig": ["only"] if not dropped else None, "op": [op] if op else None,
                             "dtype": [dtype] if dtype else None, "mode": [mode] if mode else None, "impl": impls})
    parts = []
    if worse:
        parts.append(html.Span(f"{worse} slower", className="bad regressed"))
    if better:
        parts.append(html.Span(f"{better} faster", className="good"))
    if dropped:  # ran at the baseline, not now (failed, skipped, gone): never "none"
        parts.append(html.Span(f"{dropped} stopped running", className="bad dropped"))
    joined = [x for part in parts for x in (", ", part)][1:]
    return dcc.Link(joined, href=href)


def _counts_by_panel(changes) -> dict:
    """(op, dtype, mode, fused?) -> (worse, better, stopped running) counts, and (None, None,
    None, fused?) for all: once per table."""
    cached = changes.attrs.get("counts_by_panel")
    if cached is None:
        stopped = changes["change"].astype(str).str.startswith("ok \u2192 ")
        flags = changes.assign(fused=changes["impl"] == metrics.FUSED, worse=changes["change"] == "worse",
                               better=changes["change"] == "better", stopped=stopped, op=changes["op"].astype(str),
                               dtype=changes["dtype"].astype(str), mode=changes["mode"].astype(str))
        per = flags.groupby(["op", "dtype", "mode", "fused"])[["worse", "better", "stopped"]].sum()
        total = flags.groupby("fused")[["worse", "better", "stopped"]].sum()
        cached = {k: (int(w), int(b), int(d)) for k, (w, b, d) in per.iterrows()}
        cached.update({(None, None, None, f): (int(w), int(b), int(d)) for f, (w, b, d) in total.iterrows()})
        changes.attrs["counts_by_panel"] = cached
    return cached


def run_color_span(data: DashboardData, run, newest_latency_speedups: pd.DataFrame | None = None) -> float:
    """The colour scale's half-width for a run, the same at every commit so that colours compare
    across commits (symmetric in log around 1x): from the speedups over the best unfused at the
    run's newest commit, all cases and modes, within heatmap.color_span's limits. Kept per load;
    ``newest_latency_speedups``: those speedups, where the caller has them already."""
    def span() -> float:
        table = newest_latency_speedups
        if table is None:
            rows = run.at_commit(run.commits["commit_hash"].iloc[-1], samples=False)
            table = speedup_tables.speedups(rows[rows["metric"] == "latency"])
        return color_span(table["speedup"])

    return data.kept.get(("colour span", run.machine, run.env_name), span)


def panels(table, regressed: dict[str, str], theme: str, set_notes: dict | None = None, span: float | None = None,
           classified: dict[str, str] | None = None):
    """One heatmap per op x dtype x mode on one colour scale (``span``: the run's, else this
    table's), and the scale's legend."""
    if table.empty:
        return []
    span = color_span(table["speedup"]) if span is None else span
    graphs = []
    keys = sorted(table.groupby(["op", "dtype", "mode"], sort=False).groups,
                  key=lambda k: (str(k[0]), str(k[1]), metrics.mode_order(k[2])))
    groups = dict(list(table.groupby(["op", "dtype", "mode"], sort=False)))
    for op, dtype, mode in keys:
        panel = groups[(op, dtype, mode)]
        mean = speedup_tables.geomean(panel["speedup"])
        cells = _case_modes(panel)
        n_regressed = sum(cell in regressed for cell in cells)
        n_changed = sum(cell in (set_notes or {}) for cell in cells)
        title = (f"<b>{op} · {dtype} · {mode}</b><br><span style='font-size:11px'>geomean "
                 f"{speedup_text(mean)} · {len(panel)} case{'s' if len(panel) != 1 else ''}"
                 + (f" · <span style='color:#d62728'>⚠ {n_regressed} fail the gate</span>" if n_regressed else "")
                 + (f" · Δ {n_changed} with a changed comparison set" if n_changed else "")
                 + "</span>")
        figure = build_speedup_panel_figure(panel, span, theme, title, regressed, set_notes, classified)
        graphs.append(dcc.Graph(id={"type": "overview-panel", "op": str(op), "dtype": str(dtype), "mode": str(mode)},
                                figure=figure,
                                config={"displaylogo": False, "responsive": False,
                                        "toImageButtonOptions": {"format": "png", "scale": 2,
                                                                 "filename": f"fused-mlp-speedup-{op}-{dtype}-{mode}"}},
                                style={"width": f"{figure['layout']['width']}px",
                                       "height": f"{figure['layout']['height']}px"},
                                className="panel"))
    return [speedup_legend(span), html.Div(graphs, className="panels")]


def speedup_legend(span: float) -> html.Div:
    """The shared colour scale: a gradient with its ticks (slower ← 1× → faster)."""
    stops, ticks = speedup_legend_stops(span)
    gradient = ", ".join(f"{c} {p * 100:.0f}%" for p, c in stops)
    marks = [html.Span(label, className="tick", style={"left": f"{p * 100:.1f}%"}) for p, label in ticks]
    return html.Div([
        html.Span("fused slower", className="hint"),
        html.Div([html.Div(className="bar", style={"background": f"linear-gradient(to right, {gradient})"}),
                  html.Div(marks, className="ticks")], className="scale"),
        html.Span("fused faster", className="hint"),
        html.Span([html.Span("⚠", className="bad"), " outlined: fails the gate (or fused failed)"], className="hint"),
        html.Span("Δ: comparison set changed", className="hint"),
    ], className="speedup-legend", id="overview-legend")


def change_card(changes, base, commit, common: dict, failed=None):
    """The significant latency changes since ``base`` (fused first, largest first), each linking
    to its Trends view with this commit marked; first the fused cases that failed at this commit."""
    failed_part = _failed_list(failed, commit, common)
    if changes is None:
        return [html.H3("Changes"), *failed_part, html.P("This is the run's first commit: nothing to compare with.")]
    counts = ab_compare.change_counts(changes)
    significant = changes[changes["significant"]].copy()
    significant["fused_first"] = significant["impl"] != metrics.FUSED
    significant["size"] = (significant["ratio"] - 1).abs()
    significant = significant.sort_values(["fused_first", "size"], ascending=[True, False])
    items = []
    for r in significant.head(MAX_LISTED_CHANGES).itertuples(index=False):
        href = link("/trends", {**common, "case": r.case, "metric": "latency", "mode": r.mode, "commit": commit})
        items.append(html.Li([
            html.Span("slower" if r.change == "worse" else "faster",
                      className=f"badge {'bad' if r.change == 'worse' else 'good'}"),
            f" {r.impl} ", html.Code(r.case), f" {format_value(r.old, 'seconds')} → {format_value(r.new, 'seconds')} "
            f"({format_change(r.ratio - 1)}) ", dcc.Link("trend →", href=href, className="trend-link")]))
    more = len(significant) - len(items)
    compare_href = link("/compare", {**common, "a": base, "b": commit, "metric": "latency", "sig": ["only"]})
    return [html.H3(f"Latency since {base[:8]}"), *failed_part,
            html.P([html.Span(str(counts["worse"]), className="count bad", id="overview-slower"), " slower, ",
                    html.Span(str(counts["better"]), className="count good", id="overview-faster"), " faster, "
                    f"{counts['unchanged']} unchanged (within {FACTOR:g}× or not significant), {counts['other']} not "
                    "comparable (skipped, failed or new). Change = latency here / at ", base[:8], " − 1 (Compare's "
                    "ratio − 1)."]),
            (html.Ul(items, className="changes", id="overview-change-list") if items
             else html.P("No significant change.")),
            dcc.Link(f"{'and ' + str(more) + ' more ' if more > 0 else 'all '}in Compare →", href=compare_href)]


def _failed_list(failed, commit, common: dict) -> list:
    """"N fused case(s) failed at this commit", each with the reason the suite recorded."""
    if failed is None or not len(failed):
        return []
    items = [html.Li([html.Span("failed", className="badge bad"), " fused ", html.Code(r.case),
                      f" ({r.mode}): {getattr(r, FAILED)} ",
                      dcc.Link("trend →", href=link("/trends", {**common, "case": r.case, "metric": "latency",
                                                                "mode": r.mode, "commit": commit}),
                               className="trend-link")])
             for r in failed.itertuples(index=False)]
    return [html.P([html.Span(str(len(failed)), className="count bad", id="overview-failed"),
                    " fused case(s) failed at this commit (asv stored null):"]),
            html.Ul(items, className="changes", id="overview-failed-list")]


def device_panel(data: DashboardData, machine: str, env: str, commit: str):
    identity = data.machine_identity(machine)
    ceilings = device_ceilings.ceilings_of(data.ceilings, machine, env, commit)
    items = [html.Li([html.B(f"{k}: "), v]) for k, v in identity.items()] or [html.Li("no machine.json identity")]
    left_out = [p for p in data.ceiling_problems if (p.machine, p.env_name, p.commit_hash) == (machine, env, commit)]
    if ceilings is None:
        measured = [html.Li("no usable copy ceiling in this run (bench_device)" if left_out
                            else "no ceilings measured in this run (bench_device)")]
    else:
        measured = [html.Li([html.B("copy: "), f"{ceilings.copy_gbps:,.0f} GB/s"])]
        measured += [html.Li([html.B(f"matmul {d}: "), f"{t:,.3g} TFLOP/s"])
                     for d, t in sorted(ceilings.matmul_tflops.items())]
    measured += [html.Li(f"{p.what} left out: {p.reason}", className="bad") for p in left_out]
    return [html.H3(f"Device: {machine}"), html.Ul(items, className="kv"),
            html.H4("Measured ceilings (this run)"), html.Ul(measured, className="kv", id="overview-ceilings"),
            *runner_state_panel(data, machine, env, commit)]


def runner_state_panel(data: DashboardData, machine: str, env: str, commit: str):
    """The runner's recorded state in this run; what changed since the previous commit is marked."""
    from regressions.recorded_state import changed_keys

    run = data.run(machine, env)
    previous = run.previous_commit(commit) if run is not None else None
    now = _runner_state(data, machine, env, commit)
    changed = changed_keys(_runner_state(data, machine, env, previous), now) if previous else set()
    items = [html.Li([html.B(f"{k}: "), v, " (changed)" if k in changed else ""],
                     className="bad" if k in changed or (k == "throttled" and v not in ("none", "unknown")) else None)
             for k, v in now.items()] or [html.Li("not recorded")]
    return [html.H4("Runner state (this run)"), html.Ul(items, className="kv", id="overview-runner-state")]


def _runner_state(data: DashboardData, machine: str, env: str, commit: str) -> dict[str, str]:
    """One run's recorded state ({} when not recorded), once per load: the identity from the
    params the loader read, the rest from its runner-state companion."""
    from regressions.recorded_state import state_of_result

    def read() -> dict[str, str]:
        entry = data.table.file_of(machine, env, commit) if data.table is not None else None
        return {} if entry is None else state_of_result(data.results_dir, entry.path, entry.params)

    return data.kept.get(("runner state", machine, env, commit), read)


def register(app, store: ResultsStore):
    register_run_controls(app, store, ID, COMMITS)
    register_facet_counts(app, store, ID)
    theme = Input(qid(SHELL, "theme"), "value")

    @app.callback(Output(qid(ID, "base"), "options"), Output(qid(ID, "base"), "value"),
                  Input(qid(ID, "machine"), "value"), Input(qid(ID, "env"), "value"), State(qid(ID, "base"), "value"),
                  prevent_initial_call=True)
    def _base_options(machine, env, current):  # empty stays empty: "the previous commit"
        run = store.get().run(machine, env)
        hashes = set(run.commits["commit_hash"]) if run is not None else set()
        return commit_options(run), current if current in hashes else None

    @app.callback(Output("overview-headline", "children"), Output("overview-panels", "children"),
                  Output("overview-changes", "children"), Output("overview-device", "children"),
                  inputs=dict(named_values(ID, ("machine", "env", "commit", "base", *FACETS)), theme=theme))
    @guarded(lambda t: message(t, "error"), lambda t: [], lambda t: "", lambda t: "")
    def _update(**named):  # update's parameters by name: machine, env, commit, base, each facet, theme
        from regressions.gate_records import record_for

        data = store.get()
        verdict = record_for(store, data, named["machine"], named["env"], named["commit"], named["base"])
        return update(data, **named, verdict=verdict)


# Static compile metrics only: what there is to see is their history, the Kernels page.
PAGE = Page("/", "Overview", 0, layout, register, "fused vs unfused at one commit, and what changed",
            modes=(SUITE,), stand_ins=((STATIC, "/kernels"),))
