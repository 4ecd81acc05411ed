"""Why an output file cannot be written, found before the work that fills it (minutes of GPU
measurement lost to a traceback at the end otherwise). Torch-free; fused_mlp/aot keeps its own
copy of this check (the library never imports benchmarks/)."""

from __future__ import annotations

from pathlib import Path


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot be written (its folders are created as the writer would), or None.
    Opened for appending, so an existing file is left as it is; one this creates is removed."""
    path = Path(path)
    if path.is_dir():
        return "is a folder"
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        return f"{blocking} is not a folder"
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.open("a").close()
    except OSError as exc:
        return f"cannot write there ({exc.strerror or exc})"
    if not existed:
        path.unlink()
    return None
