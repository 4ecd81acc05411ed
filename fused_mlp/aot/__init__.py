"""The compile check: every Triton kernel of the library, compiled for a GPU this machine need
not have, with the specialisation a launch uses, and what each config costs there.

    python -m fused_mlp.aot --arch sm_90 --arch sm_80 [--json FILE] [--full] [--candidates] [--list]
    python -m fused_mlp.aot --arch sm_100 --arch sm_120 --arch gfx942 --arch gfx950 [--subset ci]

For each kernel x variant x offered config x dtype it records registers, spill bytes, shared
memory (LDS on AMD), tensor-core instructions and the code's size (NVIDIA: read from the cubin by
the cuobjdump inside Triton's wheel and ptxas; AMD: from the AMDGCN metadata), and whether the config breaks a rule (aot/rules.py). Activation: the costliest
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
# --subset: a few compiles that stand for a whole plan where time is short. "ci": on each arch
# asked for, the first offered config of these (kernel, variant, dtype), costliest epilogue: the
# GEMM tile, the gated GEMM, W8A8 (the FP8 tensor-core path) and the persistent TMA variant where
# the arch has TMA, else the backward GEMM. For the four new archs: 16 compiles (.ci/run).
SUBSETS = {"ci": (("linear_act", "tile", "bf16"), ("gated_up", "tile", "bf16"), ("linear_act_fp8", "w8a8", "fp8"),
                  ("linear_act", "persistent", "bf16"), ("backward_gemm", "dact", "bf16"))}
SUBSET_PER_ARCH = 4


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
    from ..ops._tuning import for_arch, offered_on

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
            arch = ARCHS[arch_name]
            configs = [for_arch(config, arch) for config in spec.candidates]
            planned = {}
            for dtype in (d for d in dtypes if d in spec.dtypes):
                reasons = dict(enumerate(offered_on(configs, arch, dtype, constexprs, spec.shared_estimate,
                                                    spec.excluded)))
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


def subset(tasks: list[Task], name: str) -> list[Task]:
    """The tasks of subset `name` (SUBSETS): per arch, the first offered task of each listed
    (kernel, variant, dtype) with the costliest epilogue, at most SUBSET_PER_ARCH, in list order."""
    from ..ops import KERNELS

    if name not in SUBSETS:
        raise ValueError(f"subset {name!r} is not one of {sorted(SUBSETS)}")
    chosen = []
    for arch in dict.fromkeys(t.arch for t in tasks):
        firsts = {}
        for t in tasks:
            key = (KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant, t.dtype)
            if t.arch == arch and t.offered and t.activation == COSTLIEST_ACTIVATION and key in SUBSETS[name]:
                firsts.setdefault(key, t)
        chosen += [firsts[key] for key in SUBSETS[name] if key in firsts][:SUBSET_PER_ARCH]
    return chosen


def unavailable(archs=("sm_90",), kernels: tuple[str, ...] | None = None,
                variants: tuple[str, ...] | None = None) -> list[tuple[str, str, str, str]]:
    """(kernel, variant, arch, why) of every kernel variant that does not run on one of `archs`
    at all (the persistent TMA variants on AMD, W8A8 without FP8 tensor cores); compiles nothing."""
    from ..ops import KERNELS
    from ..ops._kernel_spec import unavailable_because

    return [(spec.name, spec.variant, a, why) for spec in KERNELS for a in archs
            if (not kernels or spec.name in kernels) and (not variants or spec.variant in variants)
            and (why := unavailable_because(spec, ARCHS[a])) is not None]


def task_config(task: Task):
    """The triton.Config a task compiles (in its arch's form: AMD knobs on AMD)."""
    from ..ops import KERNELS
    from ..ops._tuning import for_arch

    return for_arch(KERNELS[task.kernel_index].candidates[task.config_index], ARCHS[task.arch])


def offered_series(arch: str = "sm_90", kernels: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
    """(kernel, variant, config label) of every config offered on `arch` for some dtype; compiles nothing."""
    from ..ops import KERNELS

    return sorted({(KERNELS[t.kernel_index].name, KERNELS[t.kernel_index].variant, config_label(config_dict(task_config(t))))
                   for t in plan((arch,), kernels=kernels)})


def _constexprs_of(spec) -> dict:
    """The constexprs of the kernel's representative problem (what a shared-memory estimate reads)."""
    import torch

    return spec.example(torch.bfloat16, COSTLIEST_ACTIVATION)[1]


def check(archs=("sm_90",), dtypes=DTYPES, full: bool = False, candidates: bool = False,
          kernels: tuple[str, ...] | None = None, jobs: int | None = None, on_record=None,
          activations: tuple[str, ...] | None = None, lean: bool = False,
          variants: tuple[str, ...] | None = None, subset_name: str | None = None) -> list[Record]:
    """Compile everything `plan` lists (only `subset_name`'s tasks, see SUBSETS, if given), on
    `jobs` processes (default: every core); `on_record` is called with each record as it is done,
    in plan order."""
    unknown = [a for a in archs if a not in ARCHS]
    if unknown:
        raise ValueError(f"arch {unknown[0]!r} is not checked; expected one of {list(ARCHS)}")
    if INTERPRETER:
        raise RuntimeError("fused_mlp was imported with TRITON_INTERPRET set: its kernels are interpreted "
                           "and cannot be compiled for a GPU; unset TRITON_INTERPRET")
    tasks = plan(archs, dtypes, full, candidates, kernels, activations, lean, variants)
    if subset_name is not None:
        tasks = subset(tasks, subset_name)
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
           "SUBSETS", "config_label", "offered_series", "plan", "subset", "unavailable"]
