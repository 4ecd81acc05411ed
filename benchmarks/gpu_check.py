"""GPU check: correctness at real sizes for every op x dtype, then a first timing of each fused
op against its peers (eager, torch.compile, cuBLASLt), as ratios taken in one run.

    python -m benchmarks.gpu_check --out "$OUT"     # on the GPU runner
    python -m benchmarks.gpu_check --small          # tiny shapes; runs on the CPU under the
                                                    # interpreter, only to test this script

Prints a markdown table last and writes every row to gpu_check.json under --out. Exits 1 if any
fused result is wrong.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from .harness import implementations, timing  # modules, not names: asv takes any time_*/track_* name in the suite for a benchmark
from .harness.cost import floor_seconds
from .harness.references import TOLERANCE, mismatch, reference, rel_error
from .harness.tensors import make_inputs, torch_dtype
from .harness.workloads import Case

DTYPES = ("fp32", "fp16", "bf16")


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
    row = {"case": case.key, "op": case.op, "dtype": case.dtype}
    with torch.inference_mode():
        fused_out = implementations.get(case.op, "fused")(**inputs)
        ref = reference(case, inputs)
        row["rel_error"] = rel_error(fused_out, ref)
        row["tolerance"] = TOLERANCE[torch_dtype(case)]
        row["problem"] = mismatch(fused_out, ref, torch_dtype(case))
        row["correct"] = row["problem"] is None
        del fused_out, ref
        row["seconds"] = {}
        for impl in implementations.names(case.op):
            if implementations.unavailable_reason(case, impl, device):
                continue
            call = implementations.prepare(case, impl, inputs)
            start = time.perf_counter()
            times = timing.latency_samples(call, device, samples=samples)
            row["seconds"][impl] = {"median": timing.median(times), "samples": times,
                                    "wall_incl_warmup_s": time.perf_counter() - start}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for gpu_check.json")
    parser.add_argument("--small", action="store_true", help="tiny shapes (tests this script on a CPU)")
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args(argv)

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # before fused_mlp is imported: Triton picks the interpreter then
        os.environ.setdefault("TRITON_INTERPRET", "1")
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "torch": torch.__version__, "triton": __import__("triton").__version__, "rows": []}
    ceilings = timing.measure_ceilings(device) if device == "cuda" else None
    if ceilings:
        report["ceilings"] = {"copy_gbps": ceilings.copy_gbps, "matmul_tflops": ceilings.matmul_tflops}
    for dtype in DTYPES:
        for case in (small_cases if args.small else real_cases)(dtype):
            row = check_case(case, device, args.samples)
            if ceilings:
                row["floor_s"] = floor_seconds(case, ceilings)
            report["rows"].append(row)
            print(f"{case.key}: rel_error {row['rel_error']:.2e} {'ok' if row['correct'] else 'WRONG'}", flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1))

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
