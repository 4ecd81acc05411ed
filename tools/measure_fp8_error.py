"""The quantization error of the suite's FP8 Cases, measured against the bf16 computation.

    python tools/measure_fp8_error.py [--grid default] [--rows 64]     # a markdown table

For every FP8 Case of the grid (and the per-tensor-scaled twin of each W8A8 one), the same
random bf16 inputs the suite draws are computed two ways in float64: as they are (the bf16
computation), and quantized to e4m3 as the Case quantizes them, then dequantized (what a
perfect FP8 kernel computes). The relative error ||fp8 - bf16|| / ||bf16|| is the price of the
quantization alone; the kernels are judged separately against the dequantized reference
(tests/test_fp8*.py, the suite's own check), and this number is never part of a tolerance.

Only the first --rows tokens are computed (scales are taken over all M tokens first, so a
per-tensor scale is the one the whole batch gets): the error is a per-token mean, so a few rows
measure it, and float64 GEMMs of 8192 tokens would take minutes on a CPU. The inputs are the
suite's N(0, 1)/sqrt(fan_in) tensors: real activations have outlier channels, which make
per-tensor scales worse than this shows.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from benchmarks.harness import fp8  # noqa: E402
from workload import fp8_cases  # noqa: E402
from workload.grids import GRIDS  # noqa: E402
from benchmarks.harness.ops import spec_of  # noqa: E402
from benchmarks.harness.references import rel_error  # noqa: E402
from benchmarks.harness.tensors import make_inputs  # noqa: E402


def cases_of(grid: str) -> list:
    """The grid's FP8 Cases, each W8A8 one followed by its per-tensor twin (deduplicated)."""
    out = []
    for op in fp8.FP8_OPS:
        for case in fp8_cases.cases(op, grid):
            twins = [case] + ([dataclasses.replace(case, dtype="fp8_tensor")] if case.dtype == "fp8" else [])
            out += [c for c in twins if c not in out]
    return out


def first_rows(inputs: dict, rows: int) -> dict:
    """The inputs with x (and per-token x scales) cut to the first `rows` tokens."""
    cut = dict(inputs)
    cut["x"] = inputs["x"][:rows]
    scale = inputs.get("x_scale")
    if scale is not None and scale.numel() > 1:
        cut["x_scale"] = scale[:rows]
    return cut


def measure(case, rows: int) -> float:
    """||fp8 - bf16|| / ||bf16|| on the first `rows` tokens of `case`'s inputs."""
    bf16_case = dataclasses.replace(case, dtype="bf16")
    plain = first_rows(make_inputs(bf16_case), rows)  # the same seed: the tensors fp8.make_inputs quantizes
    quantized = first_rows(make_inputs(case), rows)
    return rel_error(fp8.reference(case, quantized), spec_of(bf16_case).reference(**plain))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", choices=GRIDS, default="default")
    parser.add_argument("--rows", type=int, default=64, help="tokens computed per Case (default 64)")
    args = parser.parse_args(argv)
    if args.rows < 1:
        parser.error(f"--rows={args.rows}: expected a positive number of tokens")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    print("| case | form | scales | rel. error vs bf16 |")
    print("| --- | --- | --- | --- |")
    for case in cases_of(args.grid):
        start = time.perf_counter()
        err = measure(case, args.rows)
        form, granularity = fp8.FP8_DTYPES[case.dtype]
        scales = "per token / per channel" if granularity == "row" else "per tensor"
        if form == "w8a16":
            scales = "per channel (weights)"
        shape = f"{case.op} M={case.M} K={case.K} N={case.N} {case.activation}"
        print(f"| {shape} | {form.upper()} | {scales} | {err:.2e} |", flush=True)
        print(f"  ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
