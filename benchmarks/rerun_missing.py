"""Which machines' A/B re-runs are missing from the final verdict, said in its summary.

    python -m benchmarks.rerun_missing gate.json reruns/*.json

A machine with candidates (the first verdict's gate.json, as benchmarks.rerun chooses them) and
no entry in any re-run file (its re-run job failed, timed out or did not run) keeps the first
verdict for those findings; the final gate uses it without a word otherwise. Prints one
Markdown line per such machine, nothing when every machine re-ran. Torch-free (the final gate's
job has the dashboard's install only).

Exit status: 0 (whatever it found), 2 a file that cannot be read or is not what it should be.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from benchmarks.bisect import BisectInputError
from asv_results.safe_read import read_json

BAD_INPUT = 2


def missing(gate_doc: dict, rerun: set[str]) -> dict[str, list]:
    """{machine: its candidates} for the machines with candidates and none in ``rerun``."""
    from regressions.rerun_candidates import candidates

    out: dict[str, list] = {}
    for c in candidates(gate_doc, at_most=sys.maxsize):
        if c.machine not in rerun:
            out.setdefault(c.machine, []).append(c)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from regressions.rerun_verdict import RerunFileError, parse_reruns

    p = argparse.ArgumentParser(prog="python -m benchmarks.rerun_missing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gate", help="the first verdict's JSON (python -m regressions --format json)")
    p.add_argument("reruns", nargs="*", type=Path, help="the re-run files that came back (benchmarks.rerun --out)")
    args = p.parse_args(argv)
    try:
        gate, reason = read_json(Path(args.gate), Path(os.path.realpath(args.gate)).parent)
        if reason is not None:
            raise BisectInputError(f"{args.gate}: {reason}")
        rerun = set()
        for path in args.reruns:
            doc, reason = read_json(path, Path(os.path.realpath(path)).parent)
            try:
                if reason is not None:
                    raise RerunFileError(reason)
                rerun |= {r.machine for r in parse_reruns(doc)}
            except RerunFileError as exc:
                raise BisectInputError(f"{path}: {exc}") from None
        try:
            absent = missing(gate, rerun)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BisectInputError(f"{args.gate}: not the gate's JSON output: {type(exc).__name__} {exc}") from None
    except BisectInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    for machine, found in absent.items():
        print(f"- **No A/B re-run came back from {machine}** (its re-run job failed, timed out or did not run): "
              f"its {len(found)} candidate finding(s) keep the first verdict: "
              + ", ".join(f"`{c.benchmark}({c.params})` at {c.commit_hash[:12]}" for c in found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
