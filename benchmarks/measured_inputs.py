"""The measured value of each input the GPU session's time model guesses, from what a session
filed (tools/gpu_runner/session.sh runs this at its end and appends the rows to stages.tsv), so
the next session can replace guesses with measurements:

    python -m benchmarks.measured_inputs --first-calls $OUT/first_calls --log $OUT/session.log

- torch_compile_cold_s / torch_compile_warm_s: the first call of a `compile` combination (its
  wall time, per graph: a training step compiles two) with Inductor's FX-graph cache missed
  (cold) or only hit (warm; benchmarks.harness.first_calls counts both);
- max_autotune_gemm_s: a cold `compile_max_autotune` first call less its graphs' cold compile
  (the median above), per GEMM shape it tunes (suite_cost._gemm_shapes);
- check_python_s, register_s: setup's Python check (the session's first `import torch`) and
  machine registration, from the `measured:` line benchmarks.run --prepare-only prints.

Each row: `measured:NAME`, how many values (and their range), the median seconds, the model's
value. An input the session did not meet is a row too ("not met"), never a guess passed off.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

from benchmarks.harness import first_calls
from benchmarks.harness.implementations import COMPILE, COMPILE_MAX_AUTOTUNE
from workload.modes import FORWARD
from workload.case import Case
from benchmarks.suite_cost import INPUTS, _gemm_shapes, value

SETUP_LINE = re.compile(r"^measured: (.*)$", re.M)
SETUP_INPUTS = ("check_python_s", "register_s")


def _graphs(record: dict) -> float:
    return 1.0 if record.get("mode", FORWARD) == FORWARD else value("training_graphs")


def _cold(record: dict) -> bool:
    return record.get("fxgraph_cache_miss", 0) > 0


def derived(records: list[dict]) -> dict[str, list[float]]:
    """{input: its measured values} from first-call records (harness.first_calls)."""
    out: dict[str, list[float]] = {"torch_compile_cold_s": [], "torch_compile_warm_s": [], "max_autotune_gemm_s": []}
    for r in records:
        if r.get("impl") == COMPILE and "fxgraph_cache_miss" in r:
            warm = not _cold(r) and r.get("fxgraph_cache_hit", 0) > 0
            if _cold(r) or warm:
                out["torch_compile_warm_s" if warm else "torch_compile_cold_s"].append(r["seconds"] / _graphs(r))
    cold_compile = statistics.median(out["torch_compile_cold_s"]) if out["torch_compile_cold_s"] else None
    for r in records:
        if r.get("impl") == COMPILE_MAX_AUTOTUNE and _cold(r) and cold_compile is not None:
            try:
                shapes = len(_gemm_shapes(Case.from_key(r["case"]), r.get("mode", FORWARD) != FORWARD))
            except (KeyError, ValueError):
                continue
            out["max_autotune_gemm_s"].append(max(0.0, r["seconds"] - _graphs(r) * cold_compile) / shapes)
    return out


def setup_values(log: str) -> dict[str, list[float]]:
    """{input: [seconds]} from the `measured: name=seconds ...` lines of a session's log."""
    out: dict[str, list[float]] = {name: [] for name in SETUP_INPUTS}
    for line in SETUP_LINE.findall(log):
        for name, seconds in re.findall(r"(\w+)=([0-9.]+)", line):
            if name in out:
                out[name].append(float(seconds))
    return out


def rows(values: dict[str, list[float]], model: dict[str, float]) -> list[str]:
    lines = []
    for name, got in values.items():
        if got:
            what = f"{len(got)} value{'s' if len(got) > 1 else ''} ({min(got):.2f}-{max(got):.2f} s)"
            lines.append(f"measured:{name}\t{what}\t{statistics.median(got):.2f}\tmodel {model.get(name, '-')}")
        else:
            lines.append(f"measured:{name}\tnot met\t-\tmodel {model.get(name, '-')}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.measured_inputs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first-calls", type=Path, help="the folder the measuring passes filed into ($FUSED_MLP_FIRST_CALLS)")
    parser.add_argument("--log", type=Path, help="the session's log (setup's `measured:` line)")
    args = parser.parse_args(argv)
    for flag, path, kind in (("--first-calls", args.first_calls, "dir"), ("--log", args.log, "file")):
        if path is not None and not (path.is_dir() if kind == "dir" else path.is_file()):
            parser.error(f"{flag} {path}: no such {'folder' if kind == 'dir' else 'file'}")
    from benchmarks.session_cost import CONSTANTS

    model = {**{n: v for n, (v, _) in INPUTS.items()}, **{n: v for n, (v, _) in CONSTANTS.items()}}
    values = derived(first_calls.collect(args.first_calls) if args.first_calls else [])
    values.update(setup_values(args.log.read_text(errors="replace") if args.log else ""))
    print("\n".join(rows(values, model)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
