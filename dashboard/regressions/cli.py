"""python -m dashboard.regressions: list level changes per commit in an asv results folder; the CI gate."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from dashboard.data import ResultsDirError, load_results
from dashboard.regressions.findings import find_changes, since_filter
from dashboard.regressions.report import gate, render_json, render_markdown, render_text
from dashboard.regressions.statistics import DetectorSettings


def parse_threshold(text: str) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '5' -> 0.05 (a bare number >= 1 is a percentage)."""
    raw = text.strip()
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"threshold {text!r} is not a number or percentage like 5%") from None
    if raw.endswith("%") or value >= 1:
        value /= 100
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"threshold {text!r} must be a positive relative change")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dashboard.regressions",
        description="List level changes per commit in an asv results directory; exit 1 when a "
                    "regression is present at the newest commit (a CI gate).")
    parser.add_argument("--results", default="results", help="asv results directory (default: results)")
    parser.add_argument("--machine", help="only this machine (a directory under the results)")
    parser.add_argument("--threshold", type=parse_threshold, default=0.05, help="smallest relative change (default 5%%)")
    parser.add_argument("--since", help="only report changes at this commit (hash or prefix) or later")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--confirmed-only", action="store_true",
                        help="gate only on confirmed regressions (not on suspected ones at the last commits)")
    args = parser.parse_args(argv)

    try:
        loaded = load_results(args.results, machine=args.machine)
    except ResultsDirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    frame, report = loaded.frame, loaded.load_report
    for line in report.lines():
        print(f"warning: {line}", file=sys.stderr)
    if frame.empty:
        where = f"machine {args.machine!r} in " if args.machine else ""
        print(f"error: no usable asv results for {where}{args.results!r}", file=sys.stderr)
        return 2

    settings = DetectorSettings(threshold=args.threshold)
    findings = find_changes(frame, settings, benchmarks_meta=loaded.benchmarks)
    if args.since:
        try:
            findings = since_filter(findings, frame, args.since)
        except ValueError as exc:
            print(f"error: --since: {exc}", file=sys.stderr)
            return 2
    failing = gate(findings, args.confirmed_only)
    n_series = frame.groupby(["machine", "env_name", "benchmark", "params_key"], observed=True).ngroups
    header = (f"Level changes in {args.results} (threshold {settings.threshold:.0%}, {n_series} series, "
              f"{frame['commit_hash'].nunique()} commits"
              + (f", since {args.since}" if args.since else "") + ")")
    if args.format == "json":
        print(render_json(findings, report, header, failing, settings))
    elif args.format == "markdown":
        print(render_markdown(findings, report, header, failing))
    else:
        print(render_text(findings, report, header, failing))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
