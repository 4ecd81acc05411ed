"""Does the persistent TMA variant of linear_act_fp8 (W8A8) pay? Every config of both variants
offered on this GPU for the launch, forced past the autotuner, timed on the same inputs.

    python tools/measure_fp8_variants.py [--samples 20] [--json FILE]   # on an sm_90 GPU
    python tools/measure_fp8_variants.py --small                        # CPU interpreter: tests this script

Shapes: Llama-3-8B's up projection (4096 -> 14336) at 16, 128, 1024 and 8192 tokens and its down
projection (14336 -> 4096) at 8192, per-token and per-channel scales, bf16 out, gelu_tanh and a
bias. Each config's output is held to the float64 reference of the dequantized inputs before it
is timed (a wrong config is reported, never timed). Prints, per shape, every config's median
(CUDA events, L2 flushed: harness.timing) and the best tile against the best persistent one: the
persistent variant pays where its best beats the tile variant's best. The persistent configs held
back from the autotuner (fused_mlp/ops/_fp8_common.py: the default grid's compile budget) are
timed too, so the answer says which of them to offer. The autotuner picks per shape at run time;
this says by how much, and for which shapes.
Exit 1 if a config is wrong, 2 for bad arguments (or no sm_90 GPU without --small).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

SHAPES = [(16, 4096, 14336), (128, 4096, 14336), (1024, 4096, 14336), (8192, 4096, 14336), (8192, 14336, 4096)]
SMALL_SHAPES = [(33, 48, 72), (3, 64, 40)]


def configs_to_time(x, w, out) -> list[tuple[object, bool]]:
    """(config, offered) for this launch: on a GPU, every candidate of both variants that this
    device and TMA_OK allow, the persistent ones held back from the autotuner included (offered
    False); under the interpreter, one of each variant."""
    from fused_mlp.ops import _fp8_common, _tuning, fp8_linear
    from fused_mlp.ops._gemm_launch import tma_ok

    if _tuning.INTERPRETER:
        return [(_tuning.INTERPRETER_CONFIGS["tile"], True), (_tuning.INTERPRETER_CONFIGS["persistent"], True)]
    configs = _fp8_common.candidates("w8a8") + _fp8_common.persistent_candidates()
    qualifies = tma_ok(x, w, out)
    offered = _tuning.device_pruner(fp8_linear._SHARED, "x_ptr", fp8_linear._EXCLUDED)(configs, {"x_ptr": x},
                                                                                          TMA_OK=qualifies)
    rules = tuple(e for e in fp8_linear._EXCLUDED if e.why != _fp8_common.HELD_BACK)
    allowed = _tuning.device_pruner(fp8_linear._SHARED, "x_ptr", rules)(configs, {"x_ptr": x}, TMA_OK=qualifies)
    return [(c, c in offered) for c in allowed]


def measure_shape(M: int, K: int, N: int, device: str, samples: int) -> list[dict]:
    """One row per config timed: variant, offered, config, median seconds (None when wrong), error."""
    import fused_mlp
    from benchmarks.harness import timing
    from benchmarks.harness.references import mismatch, rel_error
    from fused_mlp.aot.build import config_dict, config_label
    from fused_mlp.ops._gemm_launch import force_config
    from fused_mlp.ops._tuning import is_persistent
    from fused_mlp.quantize import dequantize_fp8, quantize_fp8

    g = torch.Generator(device=device).manual_seed(M + K + N)
    x, xs = quantize_fp8(torch.randn(M, K, generator=g, device=device), "row")
    w, ws = quantize_fp8(torch.randn(N, K, generator=g, device=device) / K**0.5, "row")
    bias = torch.randn(N, generator=g, device=device).to(torch.bfloat16)
    z = dequantize_fp8(x, xs, torch.float64) @ dequantize_fp8(w, ws, torch.float64).T + bias.double()
    ref = torch.nn.functional.gelu(z, approximate="tanh")
    del z
    rows = []
    for config, offered in configs_to_time(x, w, torch.empty(M, N, dtype=torch.bfloat16, device=device)):
        def call():
            return fused_mlp.linear_act_fp8(x, w, ws, bias, "gelu_tanh", x_scale=xs, check_scales=False)

        variant = "persistent" if is_persistent(config) else "tile"
        with force_config(config) as ran:
            out = call()
            row = {"M": M, "K": K, "N": N, "variant": variant, "config": config_label(config_dict(config)),
                   "offered": offered,
                   "ran": ran[0], "rel_error": rel_error(out, ref),
                   "problem": mismatch(out, ref, torch.bfloat16) or (None if ran[0] == variant else f"ran {ran[0]}")}
            seconds = timing.latency_samples(call, device, samples) if row["problem"] is None else None
        row["median_s"] = timing.median(seconds) if seconds else None
        rows.append(row)
    return rows


def best(rows: list[dict], variant: str, offered_only: bool = True) -> dict | None:
    timed = [r for r in rows if r["variant"] == variant and r["median_s"] is not None
             and (r["offered"] or not offered_only)]
    return min(timed, key=lambda r: r["median_s"]) if timed else None


def summary_line(rows: list[dict]) -> str:
    """| shape | best tile | best persistent offered | best persistent of all | tile / each |"""
    M, K, N = rows[0]["M"], rows[0]["K"], rows[0]["N"]
    flops = 2 * M * K * N

    def cell(r):
        return f"{r['config']} {r['median_s'] * 1e6:.1f} us ({flops / r['median_s'] / 1e12:.0f} TFLOP/s)" if r else "-"

    tile, offered, any_persistent = best(rows, "tile"), best(rows, "persistent"), best(rows, "persistent", False)
    ratios = " / ".join(f"{tile['median_s'] / r['median_s']:.2f}x" if tile and r else "-" for r in (offered, any_persistent))
    return f"| {M}x{K}->{N} | {cell(tile)} | {cell(offered)} | {cell(any_persistent)} | {ratios} |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", action="store_true", help="tiny shapes under the CPU interpreter")
    parser.add_argument("--samples", type=int, default=20, help="timed calls per config (at least 1)")
    parser.add_argument("--json", type=Path, help="write every row to this file")
    args = parser.parse_args(argv)
    if args.samples < 1:
        parser.error(f"--samples {args.samples}: at least 1")
    if args.small:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before fused_mlp is imported
        device = "cpu"
    elif not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        parser.error("the persistent variant runs on sm_90 or newer (TMA); pass --small to test this script on a CPU")
    else:
        device = "cuda"
    if args.small:
        print("CPU interpreter: the times below say nothing about a GPU (this run tests the script)")
    rows = []
    for M, K, N in SMALL_SHAPES if args.small else SHAPES:
        shape_rows = measure_shape(M, K, N, device, args.samples)
        for r in shape_rows:
            time_text = f"{r['median_s'] * 1e6:.1f} us" if r["median_s"] is not None else f"NOT TIMED: {r['problem']}"
            print(f"{M}x{K}->{N} {r['variant']:10} {r['config']:28} {'' if r['offered'] else '(held back) '}"
                  f"{time_text} (rel err {r['rel_error']:.1e})",
                  flush=True)
        rows.append(shape_rows)
    print("\n| shape | best tile | best persistent offered | best persistent (held back too) | tile / each |\n"
          "| --- | --- | --- | --- | --- |")
    for shape_rows in rows:
        print(summary_line(shape_rows))
    flat = [r for shape_rows in rows for r in shape_rows]
    if args.json:
        args.json.write_text(json.dumps(flat, indent=1))
    return 1 if any(r["problem"] for r in flat) else 0


if __name__ == "__main__":
    sys.exit(main())
