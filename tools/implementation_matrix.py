"""Which implementations run, skip (with the reason) or fail, per op and mode, on this machine's
grid: every combination goes through the suite's own measuring pass (common._CaseBenchmark's
measure_all, as asv runs it), so the table is what an asv run would record.

    TRITON_INTERPRET=1 python tools/implementation_matrix.py            # the CPU tiny grid
    python tools/implementation_matrix.py --grid quick                  # on a GPU

Prints a Markdown table: op, implementation, then one cell per mode: "runs" (with its median: on a CPU a pipeline check, never a performance number),
"skip: <reason>" or "FAIL: <first line>". Exit status 1 when any combination failed, else 0.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def outcome(filed: dict) -> str:
    """One table cell for what measure_all filed."""
    if "skip" in filed:
        return f"skip: {filed['skip'].splitlines()[0]}"
    if "failed" in filed:
        return f"FAIL: {filed['failed'].splitlines()[0]}"
    samples = sorted(filed["metrics"]["latency"]["samples"])
    return f"runs ({samples[len(samples) // 2] * 1e3:.3g} ms median of {len(samples)})"


def rows(benchmarks: dict) -> list[tuple[str, str, dict[str, str]]]:
    """(op, implementation, {mode: cell}) for every case of each op's forward and training class
    (benchmarks: {"forward": [classes], "training": [classes]})."""
    from benchmarks.harness import implementations

    table = {}
    for cls in benchmarks["forward"]:
        for case in cls.params[0]:
            for impl in cls.params[1]:
                table.setdefault((cls.op, impl), {})["forward"] = outcome(cls().measure_all(case, impl))
                implementations.reset_compiled()
    for cls in benchmarks["training"]:
        for case in cls.params[0]:
            for impl in cls.params[1]:
                for mode in cls.params[2]:
                    table.setdefault((cls.op, impl), {})[mode] = outcome(cls().measure_all(case, impl, mode))
                    implementations.reset_compiled()
    return [(op, impl, cells) for (op, impl), cells in table.items()]


def markdown(found: list[tuple[str, str, dict[str, str]]], modes=("forward", "backward", "full")) -> str:
    lines = ["| op | implementation | " + " | ".join(modes) + " |", "|---|---|" + "---|" * len(modes)]
    for op, impl, cells in found:
        lines.append(f"| {op} | {impl} | " + " | ".join(cells.get(m, "-").replace("|", "/") for m in modes) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", default="tiny", choices=("tiny", "quick", "default", "full"))
    args = parser.parse_args(argv)
    os.environ["FUSED_MLP_GRID"] = args.grid  # before the suite's classes read their params
    from benchmarks import bench_ops, bench_training

    forward = [bench_ops.LinearAct, bench_ops.GatedMLP, bench_ops.NarrowMLP]
    training = [bench_training.LinearActTraining, bench_training.GatedMLPTraining, bench_training.NarrowMLPTraining]
    found = rows({"forward": forward, "training": training})
    print(markdown(found))
    return 1 if any(cell.startswith("FAIL") for _, _, cells in found for cell in cells.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
