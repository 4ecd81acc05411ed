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
from . import ACTIVATIONS, DTYPES, SUBSETS, check, plan, subset, task_config, unavailable
from .build import config_dict, config_label


# (heading, width) of the table's columns; the last one (status) is not padded
# smem KB: shared memory (NVIDIA) or LDS (AMD); tc: tensor-core instructions (wgmma, tcgen05,
# mma.sync or MFMA) and the most used one; instrs: SASS or AMDGCN instructions.
COLUMNS = (("kernel", 10), ("variant", 9), ("arch", 6), ("dtype", 5), ("activation", 10), ("config", 29),
           ("regs", 4), ("spill B", 7), ("smem KB", 7), ("tc", 4), ("tensor-core instruction", 23), ("instrs", 6),
           ("s", 5), ("", 0))


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
                  f"{r.shared_bytes / 1024:.0f}" if compiled else dash,
                  r.tensor_core_instructions if compiled else dash, short_instruction(r.matrix_instruction),
                  r.sass_instructions if compiled else dash, f"{r.compile_seconds or 0:.1f}", status))


def short_instruction(name: str | None) -> str:
    """The tensor-core instruction as the table shows it: 'mma.m16n8k16.bf16' for
    'mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32', MFMA names whole."""
    if not name:
        return "-"
    if name.startswith("v_mfma"):
        return name
    parts = name.split(".")
    shape = next((p for p in parts if p.startswith("m") and "n" in p and "k" in p), "")
    kind = next((p.split("::")[1] for p in parts if p.startswith("kind::")), parts[-2] if len(parts) > 2 else "")
    return ".".join(p for p in (parts[0], shape, kind) if p)


def format_unavailable(kernel: str, variant: str, arch: str, why: str) -> str:
    """A kernel variant that does not run on an arch: no compile, the reason."""
    return _line((kernel, variant, arch, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", f"(not built: {why})"))


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
    parser.add_argument("--subset", choices=sorted(SUBSETS),
                        help="only a few compiles per arch that stand for the plan (ci: what .ci/run compiles)")
    parser.add_argument("--list", action="store_true", help="print the plan (what would compile, offered or why "
                        "not) and compile nothing")
    args = parser.parse_args(argv)
    problem = args.json and _unwritable(args.json)
    if problem:  # before the compiles (minutes), not after them
        parser.error(f"--json {args.json}: {problem}")
    if INTERPRETER:
        print("error: TRITON_INTERPRET is set; the compile check compiles for a GPU, unset it", file=sys.stderr)
        return 2
    # Without --full or --dtype, fp16 is not compiled where bf16 stands for it (see STANDS_FOR).
    lean = not args.full and not args.dtype
    archs = tuple(args.arch or ["sm_90"])
    kernels, variants = (tuple(args.kernel) if args.kernel else None), (tuple(args.variant) if args.variant else None)
    try:
        tasks = _planned(args, archs, kernels, variants, lean)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        return _print_plan(tasks, archs, kernels, variants)
    start = time.perf_counter()
    if lean:
        print("fp16: where its configs are bf16's, bf16's compile stands for it (--full or --dtype fp16 compiles it)")
    print(_line(name for name, _ in COLUMNS), flush=True)
    try:
        for row in unavailable(archs, kernels, variants):
            print(format_unavailable(*row), flush=True)
        records = check(archs, tuple(args.dtype or DTYPES), args.full, args.candidates, kernels, args.jobs,
                        on_record=lambda r: print(format_row(r), flush=True),
                        activations=tuple(args.activation) if args.activation else None, lean=lean,
                        variants=variants, subset_name=args.subset)
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


def _planned(args, archs, kernels, variants, lean) -> list:
    """The compiles the arguments ask for (--subset's only); a ValueError when they select none:
    a check of nothing would pass and say nothing."""
    tasks = plan(archs, tuple(args.dtype or DTYPES), args.full, args.candidates, kernels,
                 tuple(args.activation) if args.activation else None, lean, variants)
    if args.subset:
        tasks = subset(tasks, args.subset)
    if not tasks:
        selects = f"subset {args.subset}" if args.subset else "the plan"
        raise ValueError(f"{selects} selects nothing with these filters (arch {', '.join(archs)})")
    return tasks


def _print_plan(tasks, archs, kernels, variants) -> int:
    """--list: one line per planned compile (kernel variant arch dtype activation config, then
    offered or why not) and per kernel variant an arch does not run; nothing compiles."""
    from ..ops import KERNELS

    for kernel, variant, arch, why in unavailable(archs, kernels, variants):
        print(f"{kernel}/{variant}  {arch}  not built: {why}")
    for t in tasks:
        spec = KERNELS[t.kernel_index]
        print(f"{spec.name}/{spec.variant}  {t.arch}  {t.dtype}  {t.activation}  {config_label(config_dict(task_config(t)))}"
              f"  {'offered' if t.offered else 'not offered: ' + str(t.not_offered_because)}")
    print(f"\n{len(tasks)} compiles planned ({sum(t.offered for t in tasks)} offered); nothing compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
