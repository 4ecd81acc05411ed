"""Print what each implementation launches for one Case, side by side (the seed article's view),
or store a profile pass over a grid under results/profiles/.

    python -m benchmarks.profile --op gated --dtype bf16 --M 8192 --K 768 --N 3072 --activation gelu_tanh
    python -m benchmarks.profile --op linear --M 16 --K 4096 --N 14336 --impl fused,cublaslt --trace traces/
    python -m benchmarks.profile --op narrow --M 2097152 --widths 64x64x64x64x64x64 --dtype fp16 --activation relu
    python -m benchmarks.profile --grid quick --machine h200-runner --save results/profiles [--trace]

On the CPU the tables list operators (aten::...), not device kernels; the Triton kernels are
profiled on CUDA only.
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.checkout import uncommitted_code_changes
from benchmarks.harness import implementations
from workload import cost
from benchmarks.harness.environment import machine_identity
from workload.grids import GRID_ENV, GRIDS, grid
from benchmarks.harness.ops import OPS
from benchmarks.harness.profiling import ProfileSummary, profile_call
from benchmarks.harness.tensors import make_inputs
from workload.case import Case

OP_ALIASES = {**{spec.short_name: op for op, spec in OPS.items() if spec.short_name}, **{op: op for op in OPS}}


def _case_from_args(args) -> Case:
    """The Case the arguments describe; ValueError naming what is missing or wrong."""
    op = OP_ALIASES[args.op]
    if OPS[op].layered:
        if not args.widths:
            raise ValueError(f"--op {args.op} needs --widths, e.g. --widths 64x64x64x64x64x64")
        try:
            widths = [int(w) for w in args.widths.split("x")]
        except ValueError:
            raise ValueError(f"--widths {args.widths!r}: expected integers joined by 'x', e.g. 64x64x64") from None
        return Case.from_widths(op, args.M, widths, args.dtype, args.activation, bias=args.bias)
    if args.K is None or args.N is None:
        raise ValueError(f"--op {args.op} needs --K and --N")
    return Case(op, args.M, args.K, args.N, args.dtype, args.activation, args.bias)


def device_memory_bytes(device: str) -> int:
    """What the device holds: the GPU's memory, or the machine's physical memory."""
    if device == "cuda":
        return torch.cuda.get_device_properties(0).total_memory
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def memory_problem(case: Case, device: str) -> str | None:
    """Why the Case cannot fit on the device (its inputs, weights and output alone), or None."""
    need, have = cost.min_bytes(case), device_memory_bytes(device)
    if need > have:
        return (f"{case.key} needs at least {need / 2**30:,.1f} GiB for its inputs, weights and output; "
                f"the {device} has {have / 2**30:,.1f} GiB")
    return None


def folder_problem(flag: str, folder: str) -> str | None:
    """Why files cannot be written into ``folder`` (created if missing, as the run would), or None."""
    above = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), None)
    if above is not None and not above.is_dir():
        return f"{flag} {folder}: {above} is not a folder"
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"{flag} {folder}: cannot write there ({exc.strerror or exc})"
    return None


def _is_out_of_memory(exc: BaseException) -> bool:
    return isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "can't allocate memory" in str(exc)


def profile_case(case: Case, impls: list[str], device: str, trace_dir: str | None = None,
                 seconds: dict[str, float] | None = None) -> dict[str, ProfileSummary | str]:
    """impl -> its summary, or the reason it was not profiled; `seconds`, where given, gets each
    impl's wall time (the check whether it runs here, which may import its library, then its
    inputs, torch.compile or autotuning and the profiled call)."""
    out: dict[str, ProfileSummary | str] = {}
    inputs = None
    implementations.reset_compiled()  # a fresh graph per case: a pass over a grid must not hit the recompile limit
    for impl in impls:
        start = time.perf_counter()
        reason = implementations.unavailable_reason(case, impl, device)
        if impl == "fused" and device == "cpu":
            reason = "the Triton kernels are profiled on CUDA only"
        if reason:
            out[impl] = reason
            if seconds is not None:
                seconds[impl] = time.perf_counter() - start
            continue
        if inputs is None:
            inputs = make_inputs(case, device)
        trace = str(Path(trace_dir) / f"{case.key.replace(' ', '_')}-{impl}.json.gz") if trace_dir else None
        with torch.inference_mode():
            out[impl] = profile_call(implementations.prepare(case, impl, inputs), device, trace_path=trace)
        if seconds is not None:
            seconds[impl] = time.perf_counter() - start
    return out


def format_profiles(case: Case, profiles: dict[str, ProfileSummary | str]) -> str:
    lines = [f"# {case.key}"]
    what, whats = "kernel", "kernels"
    for impl, summary in profiles.items():
        if isinstance(summary, str):
            lines.append(f"\n## {impl}: not profiled ({summary})")
            continue
        what, whats = ("kernel", "kernels") if summary.device == "cuda" else ("CPU op", "CPU ops")
        overhead = ("" if summary.launch_overhead_seconds_per_call is None
                    else f", launch API {summary.launch_overhead_seconds_per_call * 1e6:.1f} us")
        lines.append(f"\n## {impl}: {summary.launches_per_call:g} {whats} per call, "
                     f"{summary.seconds_per_call * 1e6:.1f} us in them; host {summary.host_seconds_per_call * 1e6:.1f} us per call{overhead}")
        lines.append(f"| {what} | per call | us |")
        lines.append("| --- | --- | --- |")
        for k in summary.kernels:
            lines.append(f"| {k.name[:90]} | {k.launches_per_call:g} | {k.seconds_per_call * 1e6:.1f} |")
        if summary.trace:
            lines.append(f"trace: {summary.trace}")
    done = {i: s for i, s in profiles.items() if not isinstance(s, str)}
    if done:
        lines.append(f"\n| impl | {whats} per call | us in them | host us per call |")
        lines.append("| --- | --- | --- | --- |")
        for impl, s in done.items():
            lines.append(f"| {impl} | {s.launches_per_call:g} | {s.seconds_per_call * 1e6:.1f} | {s.host_seconds_per_call * 1e6:.1f} |")
    return "\n".join(lines)


def _git(*args) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()


def save_profile_pass(grid_name: str, machine: str, save_dir: str, device: str, force: bool = False,
                      traces: bool = False) -> Path:
    """Profile every Case of a grid with every implementation; write one JSON per machine and
    commit: <save_dir>/<machine>/<commit>.json (with traces: gzipped Chrome traces under
    <save_dir>/<machine>/<commit>/, each named in its summary relative to save_dir, those over
    the size cap dropped). Never overwrites an existing pass unless force."""
    if uncommitted_code_changes():
        raise SystemExit("the working tree has uncommitted changes: a profile filed under HEAD would describe other code")
    commit = _git("rev-parse", "HEAD")
    path = Path(save_dir) / machine / f"{commit}.json"
    if path.exists() and not force:
        raise SystemExit(f"{path} exists; pass --force to replace it")
    trace_dir = path.parent / commit if traces else None
    entries = []
    started = time.perf_counter()
    before = os.environ.get(GRID_ENV)
    os.environ[GRID_ENV] = grid_name  # the grid's own rules (grids.left_out) say what its pass runs, as in its asv run
    try:
        for family_cases in grid(grid_name).values():
            for case in family_cases:
                seconds: dict[str, float] = {}  # what the GPU session's time model reads (session_cost)
                for impl, summary in profile_case(case, implementations.names(case.op), device, trace_dir,
                                                  seconds).items():
                    entry = {"case": case.key, "impl": impl, **({"seconds": seconds[impl]} if impl in seconds else {})}
                    if isinstance(summary, str):
                        entry["skipped"] = summary
                    else:
                        if summary.trace:
                            summary = dataclasses.replace(summary, trace=os.path.relpath(summary.trace, save_dir))
                        entry["summary"] = summary.to_dict()
                    entries.append(entry)
    finally:
        if before is None:
            os.environ.pop(GRID_ENV, None)
        else:
            os.environ[GRID_ENV] = before
    doc = {"version": 1, "machine": machine, "commit_hash": commit,
           "date": int(_git("log", "-1", "--format=%at", commit)) * 1000, "grid": grid_name,
           "machine_info": machine_identity(), "profiles": entries,
           "seconds": time.perf_counter() - started}  # the whole pass (the GPU session's time model reads it)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)  # never leave a half-written file behind
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--op", choices=sorted(OP_ALIASES))
    parser.add_argument("--M", type=int, default=8192)
    parser.add_argument("--K", type=int)
    parser.add_argument("--N", type=int)
    parser.add_argument("--widths", help="narrow MLP widths, e.g. 64x64x64")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--activation", default="gelu_tanh")
    parser.add_argument("--bias", action="store_true")
    parser.add_argument("--impl", default="all", help="comma-separated implementations, or all")
    parser.add_argument("--trace", metavar="DIR", nargs="?", const="",
                        help="keep gzipped Chrome traces (open in Perfetto) in DIR; with --save, beside the pass")
    parser.add_argument("--grid", choices=sorted(GRIDS), help="profile pass over a grid (with --save)")
    parser.add_argument("--machine", help="machine name for --save")
    parser.add_argument("--save", metavar="DIR", help="store the pass as DIR/<machine>/<commit>.json")
    parser.add_argument("--force", action="store_true", help="replace an existing stored pass")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    if args.grid or args.save or args.machine:
        if not (args.grid and args.save and args.machine):
            parser.error("a profile pass needs --grid, --machine and --save together")
        from benchmarks.run import check_machine_name  # the rule benchmarks.run applies to results/<machine>/

        problem = check_machine_name(args.machine)
        if problem:
            parser.error(problem.replace("under results/", "under --save"))
        if args.trace:
            parser.error("--trace takes no folder with --save: a pass keeps its traces beside it")
        problem = folder_problem("--save", args.save)
        if problem:
            parser.error(problem)
        print(f"wrote {save_profile_pass(args.grid, args.machine, args.save, device, args.force, args.trace is not None)}")
        return 0
    if not args.op:
        parser.error("--op is required (or --grid/--machine/--save for a profile pass)")
    if args.trace == "":
        parser.error("--trace needs a folder here (only a profile pass with --save keeps traces beside it)")
    try:
        case = _case_from_args(args)
        impls = implementations.names(case.op) if args.impl == "all" else args.impl.split(",")
        for impl in impls:
            implementations.check_name(case.op, impl)
    except ValueError as e:
        parser.error(str(e))
    problem = memory_problem(case, device) or (args.trace and folder_problem("--trace", args.trace))
    if problem:
        parser.error(problem)
    try:
        profiles = profile_case(case, impls, device, args.trace or None)
    except (RuntimeError, MemoryError) as exc:
        if not _is_out_of_memory(exc):
            raise
        parser.exit(2, f"{parser.prog}: error: {case.key} does not fit in the {device}'s memory "
                       f"({str(exc).splitlines()[0][:200]})\n")
    print(format_profiles(case, profiles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
