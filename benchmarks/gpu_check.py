"""GPU check: correctness at real sizes for every op x dtype, then a first timing of each fused
op against its peers (eager, torch.compile, cuBLASLt), as ratios taken in one run.

    python -m benchmarks.gpu_check --out "$OUT"     # on the GPU runner
    python -m benchmarks.gpu_check --small          # tiny shapes; runs on the CPU under the
                                                    # interpreter, only to test this script

bf16 runs first (the one dtype whose tensor-core dot the CPU interpreter cannot check), then
the FP8 dtypes (W8A8 per token and channel, W8A16, W8A8 per tensor: their e4m3 wgmma code has
run only under the interpreter), then fp16 and fp32. gpu_check.json under --out is rewritten
after every case, so a session cut short by its time limit still brings back what was checked.
Every implementation is held to the same bound (harness.tolerances: the dtype's storage term plus
fp32 accumulation over K); an FP8 case's reference is float64 from its dequantized inputs, as in
tests/test_fp8.py. W8A8 cases are skipped, with the reason, on a GPU without FP8 tensor cores
(below sm_89): a skipped case is neither correct nor wrong, and is shown as skipped. Prints a
markdown table last. Exits 1 if any fused result is wrong, 2 for bad arguments (and on a machine
without CUDA unless --small: the real sizes under the interpreter would take hours).
"""

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from benchmarks.harness import fp8, implementations, timing  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark
from workload.cost import Ceilings, floor_seconds, matmul_tflops, roof_dtype
from benchmarks.harness.references import mismatch, reference, rel_error
from benchmarks.harness.tensors import make_inputs, torch_dtype
from benchmarks.harness.tolerances import tolerance
from workload.case import Case

# bf16 first: what only the GPU can check; then the FP8 forms, never yet run natively
DTYPES = ("bf16", "fp8", "w8a16", "fp8_tensor", "fp16", "fp32")


def real_cases(dtype: str) -> list[Case]:
    if fp8.is_fp8(dtype):
        return fp8_real_cases(dtype)
    return [
        Case("linear_act", 8192, 4096, 14336, dtype, "gelu_tanh", bias=True),
        Case("linear_act", 16, 4096, 14336, dtype, "gelu_tanh", bias=True),
        Case("gated_mlp", 8192, 4096, 14336, dtype, "silu"),
        Case("gated_mlp", 8192, 768, 3072, dtype, "gelu_tanh"),  # the seed article's GeGLU
        Case.from_widths("narrow_mlp", 2**20, (64,) * 6, dtype, "relu"),
        Case.from_widths("narrow_mlp", 2**20, (128,) * 6, dtype, "relu"),
    ]


def fp8_real_cases(dtype: str) -> list[Case]:
    """W8A8 at prefill and one decode size, W8A16 at decode (its form: the weights' bytes are the
    cost there) and once at prefill; per-tensor scales on the two prefill shapes."""
    def up(M, activation="gelu_tanh"):  # Llama-3-8B's up projection
        return Case("linear_act", M, 4096, 14336, dtype, activation, bias=True)

    def swiglu(M):  # Llama-3-8B's MLP
        return Case("gated_mlp", M, 4096, 14336, dtype, "silu")

    if dtype == "fp8":
        return [up(8192), up(16), swiglu(8192), Case("gated_mlp", 8192, 768, 3072, dtype, "gelu_tanh")]
    if dtype == "w8a16":
        return [up(1, "silu"), up(16), swiglu(16), up(8192)]
    return [up(8192), swiglu(8192)]


def small_cases(dtype: str) -> list[Case]:
    if fp8.is_fp8(dtype):  # K and N multiples of 16: the W8A8 launches may take the TMA variant
        linear = [Case("linear_act", 33, 48, 72, dtype, "gelu_tanh", bias=True)]
        return linear if dtype == "fp8_tensor" else linear + [Case("gated_mlp", 33, 48, 72, dtype, "silu")]
    return [
        Case("linear_act", 33, 40, 72, dtype, "gelu_tanh", bias=True),
        Case("gated_mlp", 33, 40, 72, dtype, "silu"),
        Case.from_widths("narrow_mlp", 100, (16, 32, 32, 16), dtype, "relu"),
    ]


def skip_reason(case: Case, device) -> str | None:
    """Why this GPU cannot run `case` at all (W8A8 below sm_89: no FP8 tensor cores), or None.
    Only a missing capability skips; a commit without the op is a failure (check_case)."""
    if fp8.is_fp8(case.dtype) and fp8.form(case.dtype) == "w8a8":
        return fp8.fp8_tensor_cores_missing(str(torch.device(device)))
    return None


def check_case(case: Case, device, samples: int) -> dict:
    row = {"case": case.key, "op": case.op, "dtype": case.dtype, "tolerance": tolerance(case)}
    row["skipped"] = skip_reason(case, device)
    if row["skipped"]:
        return {**row, "seconds": {}, "rel_errors": {}, "problems": {}, "rel_error": math.nan,
                "problem": None, "correct": None}
    implementations.reset_compiled()  # a fresh torch.compile graph per case (Dynamo's recompile limit)
    inputs = make_inputs(case, device)
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
    ceilings = measure_ceilings(device) if device == "cuda" else None
    if ceilings:
        report["ceilings"] = {"copy_gbps": ceilings.copy_gbps, "matmul_tflops": ceilings.matmul_tflops}
    for dtype in DTYPES:
        for case in (small_cases if args.small else real_cases)(dtype):
            row = check_case(case, device, args.samples)
            if ceilings and roof_dtype(case) in ceilings.matmul_tflops and not row.get("skipped"):
                row["floor_s"] = floor_seconds(case, ceilings)
            report["rows"].append(row)
            write_report(args.out, report)
            print(progress_line(row), flush=True)
    report["complete"] = True
    write_report(args.out, report)

    print(f"\n{report['device']}, torch {report['torch']}, triton {report['triton']}")
    if ceilings:
        print(f"ceilings: copy {ceilings.copy_gbps:.0f} GB/s, matmul TFLOP/s "
              + ", ".join(f"{k} {v:.0f}" for k, v in ceilings.matmul_tflops.items()))
    print("| case | correct (rel err) | fused us | peer / fused | fused / floor |")
    print("| --- | --- | --- | --- | --- |")
    for row in report["rows"]:
        print(table_line(row))
    return 0 if all(row["correct"] or row.get("skipped") for row in report["rows"]) else 1


def measure_ceilings(device) -> Ceilings:
    """Copy and bf16/fp16/fp32 matmul ceilings, and the FP8 one (an e4m3 _scaled_mm) where the
    GPU has FP8 tensor cores: the W8A8 floors need it (without it they are left out)."""
    ceilings = timing.measure_ceilings(device)
    if fp8.matmul_missing(device) is None:
        seconds = timing.median(fp8.matmul_samples(device, timing.MATMUL_N))
        ceilings.matmul_tflops["fp8"] = matmul_tflops(timing.MATMUL_N, seconds)
    return ceilings


def progress_line(row: dict) -> str:
    if row.get("skipped"):
        return f"{row['case']}: skipped ({row['skipped']})"
    wrong = [impl for impl, problem in row["problems"].items() if problem]
    return (f"{row['case']}: rel_error {row['rel_error']:.2e} (bound {row['tolerance']:.1e}) "
            f"{'ok' if row['correct'] else 'WRONG'}" + (f"; wrong: {', '.join(wrong)}" if wrong else ""))


def table_line(row: dict) -> str:
    """A row of the closing table; a skipped case says why, a case without a fused time has none."""
    if row.get("skipped"):
        return f"| {row['case']} | skipped: {row['skipped']} | - | - | - |"
    fused = row["seconds"].get("fused", {}).get("median")
    if fused is None:  # the fused implementation could not run here (its reason is the problem)
        return f"| {row['case']} | NO ({row['problem']}) | - | - | - |"
    peers = ", ".join(f"{impl} {t['median'] / fused:.2f}x" for impl, t in row["seconds"].items() if impl != "fused")
    floor = f"{fused / row['floor_s']:.2f}x" if "floor_s" in row else "-"
    return (f"| {row['case']} | {'yes' if row['correct'] else 'NO'} ({row['rel_error']:.1e}) | "
            f"{fused * 1e6:.1f} | {peers} | {floor} |")


if __name__ == "__main__":
    sys.exit(main())
