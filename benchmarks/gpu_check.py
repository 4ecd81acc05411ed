"""GPU check: correctness at real sizes for every op x dtype, then a first timing of each fused
op against its peers (eager, torch.compile, cuBLASLt), as ratios taken in one run.

    python -m benchmarks.gpu_check --out "$OUT"     # on the GPU runner
    python -m benchmarks.gpu_check --small          # tiny shapes; runs on the CPU under the
                                                    # interpreter, only to test this script

bf16 runs first (the one dtype whose tensor-core dot the CPU interpreter cannot check), and
gpu_check.json under --out is rewritten after every case, so a session cut short by its time
limit still brings back what was checked. Every implementation is held to the same bound
(harness.tolerances: the dtype's storage term plus fp32 accumulation over K). Prints a markdown
table last. Exits 1 if any fused result is wrong, 2 for bad arguments (and on a machine without
CUDA unless --small: the real sizes under the interpreter would take hours).
"""

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from .harness import implementations, timing  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark
from .harness.cost import floor_seconds
from .harness.references import mismatch, reference, rel_error
from .harness.tensors import make_inputs, torch_dtype
from .harness.tolerances import tolerance
from .harness.workloads import Case

DTYPES = ("bf16", "fp16", "fp32")  # bf16 first: what only the GPU can check


def real_cases(dtype: str) -> list[Case]:
    return [
        Case("linear_act", 8192, 4096, 14336, dtype, "gelu_tanh", bias=True),
        Case("linear_act", 16, 4096, 14336, dtype, "gelu_tanh", bias=True),
        Case("gated_mlp", 8192, 4096, 14336, dtype, "silu"),
        Case("gated_mlp", 8192, 768, 3072, dtype, "gelu_tanh"),  # the seed article's GeGLU
        Case.from_widths("narrow_mlp", 2**20, (64,) * 6, dtype, "relu"),
        Case.from_widths("narrow_mlp", 2**20, (128,) * 6, dtype, "relu"),
    ]


def small_cases(dtype: str) -> list[Case]:
    return [
        Case("linear_act", 33, 40, 72, dtype, "gelu_tanh", bias=True),
        Case("gated_mlp", 33, 40, 72, dtype, "silu"),
        Case.from_widths("narrow_mlp", 100, (16, 32, 32, 16), dtype, "relu"),
    ]


def check_case(case: Case, device, samples: int) -> dict:
    implementations.reset_compiled()  # a fresh torch.compile graph per case (Dynamo's recompile limit)
    inputs = make_inputs(case, device)
    row = {"case": case.key, "op": case.op, "dtype": case.dtype, "tolerance": tolerance(case)}
    with torch.inference_mode():
        ref = reference(case, inputs)
        row["seconds"], row["rel_errors"], row["problems"] = {}, {}, {}
        for impl in implementations.names(case.op):
            if implementations.unavailable_reason(case, impl, device):
                continue
            call = implementations.prepare(case, impl, inputs)
            out = call()  # every implementation is held to the same bound
            row["rel_errors"][impl] = rel_error(out, ref)
            row["problems"][impl] = mismatch(out, ref, torch_dtype(case), tolerance=row["tolerance"])
            del out
            start = time.perf_counter()
            times = timing.latency_samples(call, device, samples=samples)
            row["seconds"][impl] = {"median": timing.median(times), "samples": times,
                                    "wall_incl_warmup_s": time.perf_counter() - start}
        del ref
    row["rel_error"] = row["rel_errors"].get("fused", math.nan)
    row["problem"] = row["problems"].get("fused", implementations.unavailable_reason(case, "fused", device))
    row["correct"] = "fused" in row["problems"] and row["problem"] is None
    return row


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def writable_folder(text: str) -> Path:
    """--out: a folder that exists or can be made (checked before any GPU time is spent)."""
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot make folder {text!r}: {e.strerror or e}") from None
    if not os.access(out, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {text!r} is not writable")
    return out


def write_report(out: Path, report: dict) -> None:
    """gpu_check.json, replaced whole (a cut-short session never leaves half a file)."""
    tmp = out / "gpu_check.json.tmp"
    tmp.write_text(json.dumps(report, indent=1))
    tmp.replace(out / "gpu_check.json")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=writable_folder, default=os.environ.get("OUT", "."),
                        help="folder for gpu_check.json")
    parser.add_argument("--small", action="store_true", help="tiny shapes (tests this script on a CPU)")
    parser.add_argument("--samples", type=positive_int, default=30, help="timed calls per implementation")
    args = parser.parse_args(argv)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" and not args.small:
        parser.error("no CUDA device: the real sizes under Triton's CPU interpreter would take hours; "
                     "run it on a GPU, or pass --small to test this script on the CPU")
    if device == "cpu":  # before fused_mlp is imported: Triton picks the interpreter then
        os.environ.setdefault("TRITON_INTERPRET", "1")
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "torch": torch.__version__, "triton": __import__("triton").__version__, "rows": [],
              "complete": False}
    ceilings = timing.measure_ceilings(device) if device == "cuda" else None
    if ceilings:
        report["ceilings"] = {"copy_gbps": ceilings.copy_gbps, "matmul_tflops": ceilings.matmul_tflops}
    for dtype in DTYPES:
        for case in (small_cases if args.small else real_cases)(dtype):
            row = check_case(case, device, args.samples)
            if ceilings:
                row["floor_s"] = floor_seconds(case, ceilings)
            report["rows"].append(row)
            write_report(args.out, report)
            wrong = [impl for impl, problem in row["problems"].items() if problem]
            print(f"{case.key}: rel_error {row['rel_error']:.2e} (bound {row['tolerance']:.1e}) "
                  f"{'ok' if row['correct'] else 'WRONG'}" + (f"; wrong: {', '.join(wrong)}" if wrong else ""),
                  flush=True)
    report["complete"] = True
    write_report(args.out, report)

    print(f"\n{report['device']}, torch {report['torch']}, triton {report['triton']}")
    if ceilings:
        print(f"ceilings: copy {ceilings.copy_gbps:.0f} GB/s, matmul TFLOP/s "
              + ", ".join(f"{k} {v:.0f}" for k, v in ceilings.matmul_tflops.items()))
    print("| case | correct (rel err) | fused us | peer / fused | fused / floor |")
    print("| --- | --- | --- | --- | --- |")
    for row in report["rows"]:
        fused = row["seconds"]["fused"]["median"]
        peers = ", ".join(f"{impl} {t['median'] / fused:.2f}x" for impl, t in row["seconds"].items() if impl != "fused")
        floor = f"{fused / row['floor_s']:.2f}x" if "floor_s" in row else "-"
        print(f"| {row['case']} | {'yes' if row['correct'] else 'NO'} ({row['rel_error']:.1e}) | "
              f"{fused * 1e6:.1f} | {peers} | {floor} |")
    return 0 if all(row["correct"] for row in report["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
