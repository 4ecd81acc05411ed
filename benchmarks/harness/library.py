"""The library under test, reached only through here: whatever commit asv installed or put first on
the path. Imported on first use: importing fused_mlp imports Triton, which decides then whether
its kernels run under the CPU interpreter."""

import importlib
import os


def library():
    """The fused_mlp package of the commit under test."""
    import fused_mlp

    return fused_mlp


def compile_check():
    """(fused_mlp.aot, None), or (None, why) at a commit whose library has no compile check."""
    library()  # a library that does not import at all is a failure, not a skip
    try:
        return importlib.import_module("fused_mlp.aot"), None
    except ModuleNotFoundError as exc:
        return None, f"fused_mlp at this commit has no compile check ({exc})"


def interpreter_requested() -> bool:
    """TRITON_INTERPRET is set: Triton runs the kernels on the CPU (correctness, not speed)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")
