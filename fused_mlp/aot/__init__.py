"""The compile check: every Triton kernel of the library, compiled for a GPU this machine need
not have, with the specialisation a launch uses, and what each config costs there.

    python -m fused_mlp.aot --arch sm_90 --arch sm_80 [--json FILE] [--full] [--candidates]

For each kernel x variant x offered config x dtype it records registers, spill bytes, shared
memory, tensor-core instructions and SASS size (read from the cubin by the cuobjdump inside
Triton's wheel), and whether the config breaks a rule (aot/rules.py). Activation: the costliest
epilogue for every config, every activation for each kernel's first config; fp16 only where its
configs differ from bf16's (they compile alike, see STANDS_FOR); --full compiles the whole
product. --candidates adds the configs that are not offered on an arch, with why.

The interpreter checks what kernels compute; this checks that they compile for real GPUs and fit
them, before any GPU time is spent. Nothing is launched.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os

from .._arch import ARCHS
from ..activations import ACTIVATIONS as LIBRARY_ACTIVATIONS
from .._triton_compat import INTERPRETER
from .build import Record, Task, compile_task, config_dict, config_label, worker_init

DTYPES = ("bf16", "fp16", "fp32", "tf32", "fp8")  # fp8: e4m3 x and W (the W8A8 kernels)
ACTIVATIONS = tuple(LIBRARY_ACTIVATIONS)  # every epilogue the library offers
# The epilogue that costs the most registers (measured: erf-GELU over tanh-GELU and SiLU).
COSTLIEST_ACTIVATION = "gelu"
# fp16 compiles like bf16: the same tiles, shared memory and tensor-core instruction shapes.
# Measured over 117 config x epilogue pairs (Triton 3.6 and 3.9, sm_90 and sm_80): the same spill
# bytes, shared memory and verdict, registers within 4. The lean plan lets bf16 stand for fp16.
STANDS_FOR = {"fp16": "bf16"}


def plan(archs=("sm_90",), dtypes=DTYPES, full: bool = False, candidates: bool = False,
         kernels: tuple[str, ...] | None = None, activations: tuple[str, ...] | None = None,
         lean: bool = False, variants: tuple[str, ...] | None = None) -> list[Task]:
    """The compiles to run: per kernel, arch and dtype, every offered config (every candidate with
    `candidates`) with the costliest epilogue, plus every activation for the first offered config
    of each spec in its first dtype on its first arch (with `full`: every activation everywhere),
    except for a spec whose epilogue code another covers (KernelSpec.epilogue_covered_by: the
    narrow MLP's wider spec, ~10 s a compile). `kernels`: only these kernel names;
    `activations`: only these epilogues; `variants`: only these variants (e.g. "tile-train").
    `lean`: a dtype in STANDS_FOR is left out where its stand-in is planned with the same configs."""
    from ..ops import KERNELS
    from ..ops._tuning import not_offered_because

    known = sorted({spec.name for spec in KERNELS})
    for name in kernels or ():
        if name not in known:
            raise ValueError(f"kernel {name!r} is not one of the library's: {known}")
    known_variants = sorted({spec.variant for spec in KERNELS if not kernels or spec.name in kernels})
    for name in variants or ():
        if name not in known_variants:
            raise ValueError(f"variant {name!r} is not one of {known_variants}")
    tasks = []
    for k, spec in enumerate(KERNELS):
        if (kernels and spec.name not in kernels) or (variants and spec.variant not in variants):
            continue
        constexprs = _constexprs_of(spec)
        for arch_name in (a for a in archs if a in spec.archs):
            planned = {}
            for dtype in (d for d in dtypes if d in spec.dtypes):
                reasons = {c: not_offered_because(config, ARCHS[arch_name], dtype, constexprs, spec.shared_estimate,
                                                  spec.excluded)
                           for c, config in enumerate(spec.candidates)}
                chosen = [c for c, reason in reasons.items() if reason is None or candidates]
                if lean and planned.get(STANDS_FOR.get(dtype)) == (chosen, reasons):
                    continue
                planned[dtype] = (chosen, reasons)
                offered = [c for c in chosen if reasons[c] is None]
                if full:
                    every_activation = set(chosen)
                else:
                    first = (dtype == spec.dtypes[0] and arch_name == next(a for a in archs if a in spec.archs)
                             and spec.epilogue_covered_by is None)
                    every_activation = {offered[0]} if offered and first else set()
                launched = spec.activations or ACTIVATIONS
                for c in chosen:
                    for activation in launched if c in every_activation else (COSTLIEST_ACTIVATION,):
                        if (activations and activation not in activations) or activation not in launched:
                            continue
                        tasks.append(Task(k, c, arch_name, dtype, activation, reasons[c] is None, reasons[c]))
    return tasks


def offered_series(arch: str = "sm_90", kernels: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    """(kernel, variant, config label) of every config offered on `arch` for some dtype; compiles nothing."""
    from ..ops import KERNELS

    return sorted({(KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant,
                    config_label(config_dict(KERNELS[t.kernel_index].candidates[t.config_index])))
                   for t in plan((arch,), kernels=kernels)})


def _constexprs_of(spec) -> dict:
    """The constexprs of the kernel's representative problem (what a shared-memory estimate reads)."""
    import torch

    return spec.example(torch.bfloat16, COSTLIEST_ACTIVATION)[1]


def check(archs=("sm_90",), dtypes=DTYPES, full: bool = False, candidates: bool = False,
          kernels: tuple[str, ...] | None = None, jobs: int | None = None, on_record=None,
          activations: tuple[str, ...] | None = None, lean: bool = False,
          variants: tuple[str, ...] | None = None) -> list[Record]:
    """Compile everything `plan` lists, on `jobs` processes (default: every core); `on_record` is
    called with each record as it is done, in plan order."""
    unknown = [a for a in archs if a not in ARCHS]
    if unknown:
        raise ValueError(f"arch {unknown[0]!r} is not checked; expected one of {list(ARCHS)}")
    if INTERPRETER:
        raise RuntimeError("fused_mlp was imported with TRITON_INTERPRET set: its kernels are interpreted "
                           "and cannot be compiled for a GPU; unset TRITON_INTERPRET")
    tasks = plan(archs, dtypes, full, candidates, kernels, activations, lean, variants)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    records = []
    if jobs == 1:
        worker_init()
        done = map(compile_task, tasks)
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited Triton state
        pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=worker_init)
        done = pool.map(compile_task, tasks)
    try:
        for record in done:
            records.append(record)
            if on_record is not None:
                on_record(record)
    finally:
        if jobs != 1:
            pool.shutdown(cancel_futures=True)
    return records


__all__ = ["ACTIVATIONS", "ARCHS", "COSTLIEST_ACTIVATION", "DTYPES", "INTERPRETER", "STANDS_FOR", "Record", "Task", "check",
           "config_label", "offered_series", "plan"]
