"""What the compile implementations rely on in Inductor (torch/_inductor/config.py), checked
when they are built, and where Inductor keeps its caches.

compile_max_autotune = torch.compile(eager, mode="max-autotune-no-cudagraphs", dynamic=False).
Read from torch 2.11's (the GPU runner's) and torch 2.13's config.py and _inductor/__init__.py
(list_mode_options); the flags and defaults below are the same in both:

    max_autotune = True, coordinate_descent_tuning = True
        what the mode turns on (list_mode_options); triton.cudagraphs stays off
    max_autotune_gemm_backends = "ATEN,TRITON,CPP" (env TORCHINDUCTOR_MAX_AUTOTUNE_GEMM_BACKENDS)
        TRITON must be listed: Inductor's Triton GEMM templates are the only ones it fuses a
        pointwise epilogue into; ATEN (cuBLAS) must be listed so the template has to win
    epilogue_fusion = True
        fuse pointwise ops (bias, activation, gate * up) into a template's epilogue
    benchmark_epilogue_fusion = True (env TORCHINDUCTOR_BENCHMARK_EPILOGUE_FUSION, default "1"),
    max_epilogue_benchmarked_choices = 1
        the best template with the epilogue fused is timed against the best template plus a
        separate epilogue kernel, and the faster kept: one kernel for linear+act (the
        kernels-per-call metric) means the template won and the fusion paid
    fx_graph_cache = True, autotune_local_cache = True, force_disable_caches = False
        compiled graphs and autotuning choices are kept on disk under TORCHINDUCTOR_CACHE_DIR
        (remote caches are off outside Meta), so each asv process after the first loads them

The checks are cheap (config reads): a flag changed by the environment fails the compile
implementations' rows with the flag named, rather than timing something else under their name.
"""

from __future__ import annotations

import os

CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
MAX_AUTOTUNE_MODE = "max-autotune-no-cudagraphs"
# Inductor's own default is tempfile.gettempdir()/torchinductor_<user>: lost when a runner
# clears /tmp between sessions. A folder under the user's cache outlives that and is one
# path to carry or clear.
DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "fused-mlp-bench", "torchinductor")


def use_disk_caches() -> str:
    """Set TORCHINDUCTOR_CACHE_DIR (unless the caller set it) before the first compile; the path.
    Every process of an asv run, and the next run, then shares the FX graph and autotune caches."""
    os.environ.setdefault(CACHE_ENV, DEFAULT_CACHE_DIR)
    return os.environ[CACHE_ENV]


def _gemm_backends(config) -> list[str]:
    return [b.strip().upper() for b in config.max_autotune_gemm_backends.split(",")]


def config_problems(mode: str | None) -> list[str]:
    """The flags above that do not hold in this process, for torch.compile's `mode` (None:
    the default mode, which relies on the caches only)."""
    import torch
    from torch._inductor import config, list_mode_options

    problems = []
    if config.force_disable_caches or not config.fx_graph_cache:
        problems.append("Inductor's FX graph cache is off (fx_graph_cache / force_disable_caches)")
    if not config.autotune_local_cache:
        problems.append("Inductor's local autotune cache is off (autotune_local_cache)")
    if mode == MAX_AUTOTUNE_MODE:
        options = list_mode_options(mode)
        if not options.get("max_autotune") or options.get("triton.cudagraphs"):
            problems.append(f"torch {torch.__version__}'s {mode} mode is {options}, not max_autotune without cudagraphs")
        if not config.epilogue_fusion:
            problems.append("Inductor's epilogue_fusion is off")
        missing = {"TRITON", "ATEN"} - set(_gemm_backends(config))
        if missing:
            problems.append(f"max_autotune_gemm_backends={config.max_autotune_gemm_backends!r} lacks {sorted(missing)}")
    return problems


def check_config(mode: str | None) -> None:
    """A RuntimeError that names every flag the compile implementation relies on and lacks."""
    problems = config_problems(mode)
    if problems:
        raise RuntimeError(f"torch.compile(mode={mode!r}) would not be what the suite names it: "
                           + "; ".join(problems))
