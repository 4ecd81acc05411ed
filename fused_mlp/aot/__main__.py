"""python -m fused_mlp.aot: the compile check (see fused_mlp/aot/__init__.py).

Exit status: 0 when every offered config is fine on every arch checked, 1 when one breaks a
rule (or does not compile), 2 when the check itself could not run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .._arch import ARCHS
from .._triton_compat import INTERPRETER
from . import ACTIVATIONS, DTYPES, check


# (heading, width) of the table's columns; the last one (status) is not padded
COLUMNS = (("kernel", 10), ("variant", 9), ("arch", 5), ("dtype", 5), ("activation", 10), ("config", 19),
           ("regs", 4), ("spill B", 7), ("smem KB", 7), ("wgmma", 5), ("mma", 4), ("SASS", 6), ("s", 5), ("", 0))


def _line(cells) -> str:
    return "  ".join(str(cell).ljust(width) for cell, (_, width) in zip(cells, COLUMNS)).rstrip()


def format_row(r) -> str:
    compiled = r.registers is not None
    status = "ok" if r.ok else f"NOT OK: {r.problem}"
    if not r.offered:
        status = f"(not offered: {r.not_offered_because})" + ("" if r.ok else f" {status}")
    dash = "-"
    return _line((r.kernel, r.variant, r.arch, r.dtype, r.activation, r.config_label,
                  r.registers if compiled else dash, r.spill_bytes if compiled else dash,
                  f"{r.shared_bytes / 1024:.0f}" if compiled else dash, r.tensor_core_ops.get("wgmma", dash),
                  r.tensor_core_ops.get("mma", dash), r.sass_instructions if compiled else dash,
                  f"{r.compile_seconds or 0:.1f}", status))


def _unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written, found by opening it for appending (a file this creates is
    removed again), or None."""
    if path.is_dir():
        return "is a folder"
    above = next((p for p in path.parents if p.exists()), None)
    if above is not None and not above.is_dir():
        return f"{above} is not a folder"
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a"):
            pass
    except OSError as exc:
        return f"cannot write there ({exc.strerror or exc})"
    if not existed:
        path.unlink()
    return None


def _processes(text: str) -> int:
    """--jobs: a count of processes (0 or -3 once meant every core or one, silently)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1 compile process")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fused_mlp.aot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", action="append", choices=sorted(ARCHS), help="repeatable; default sm_90")
    parser.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable; default all")
    parser.add_argument("--kernel", action="append", help="only this kernel (repeatable), e.g. linear_act")
    parser.add_argument("--variant", action="append",
                        help="only this variant of the kernels (repeatable), e.g. tile-train")
    parser.add_argument("--activation", action="append", choices=ACTIVATIONS, help="only this epilogue (repeatable)")
    parser.add_argument("--full", action="store_true", help="every activation for every config, every dtype")
    parser.add_argument("--candidates", action="store_true",
                        help="also compile the configs not offered on an arch, and say why they are not")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every record to FILE as a JSON list")
    parser.add_argument("--jobs", type=_processes, help="compile processes (default: every core)")
    args = parser.parse_args(argv)
    problem = args.json and _unwritable(args.json)
    if problem:  # before the compiles (minutes), not after them
        parser.error(f"--json {args.json}: {problem}")
    if INTERPRETER:
        print("error: TRITON_INTERPRET is set; the compile check compiles for a GPU, unset it", file=sys.stderr)
        return 2
    # Without --full or --dtype, fp16 is not compiled where bf16 stands for it (see STANDS_FOR).
    lean = not args.full and not args.dtype
    start = time.perf_counter()
    if lean:
        print("fp16: where its configs are bf16's, bf16's compile stands for it (--full or --dtype fp16 compiles it)")
    print(_line(name for name, _ in COLUMNS), flush=True)
    try:
        records = check(tuple(args.arch or ["sm_90"]), tuple(args.dtype or DTYPES), args.full, args.candidates,
                        tuple(args.kernel) if args.kernel else None, args.jobs,
                        on_record=lambda r: print(format_row(r), flush=True),
                        activations=tuple(args.activation) if args.activation else None, lean=lean,
                        variants=tuple(args.variant) if args.variant else None)
    except Exception as exc:
        print(f"error: the compile check could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    bad = [r for r in records if r.offered and not r.ok]
    import triton

    print(f"\n{len(records)} compiles ({sum(r.offered for r in records)} offered) with Triton {triton.__version__} "
          f"in {time.perf_counter() - start:.0f} s; {len(bad)} offered config(s) not ok")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([r.to_dict() for r in records], indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
