"""The one walk of an asv results folder: which files are results, of which machine, and what
cannot be read at all (no pandas, no Dash).

asv's layout: ``<results>/benchmarks.json``, ``<results>/<machine>/machine.json`` and
``<results>/<machine>/<commit>-<env>.json``. The gate's loader (asv_results.loading.load_results),
the dashboard's cache (asv_results.cache) and the dashboard's reload check
(dashboard.store.load_data.results_signature) all list the folder here, so they read the same files and
report the same broken ones with the same reasons.

Rules: folders whose name starts with a dot are not machines, nor is ``profiles`` (profile
passes, dashboard.data.profiles); a machine folder that leads out of the results folder is skipped;
a file that cannot be stat'ed (a dangling symlink) is skipped with the reason. Files are read
only through asv_results.safe_read (regular files inside the folder, size and nesting capped).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from asv_results.safe_read import inside, read_json

# Not asv results: results/profiles holds profile passes (dashboard.data.profiles), results/reasons
# why cases were not measured (benchmarks/skip_reasons.py, dashboard.data.na_reasons)
NOT_MACHINES = ("profiles", "reasons")
MACHINE_FILE = "machine.json"
BENCHMARKS_FILE = "benchmarks.json"


@dataclass(frozen=True)
class SkippedFile:
    path: str
    reason: str


class ResultsDirError(Exception):
    """The results directory itself is unusable (missing, not a directory, cannot be listed)."""


@dataclass(frozen=True)
class ResultFile:
    """One result file and what identifies its content on disk (rewriting a file in place with
    the same size and mtime still changes its ctime)."""

    relative: str  # "<machine>/<name>"
    machine: str
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @property
    def identity(self) -> tuple:
        return (self.relative, self.size, self.mtime_ns, self.ctime_ns, self.inode)


@dataclass
class Listing:
    """What a results folder holds, in a fixed order (machines by name, files by name)."""

    root: Path
    files: list[ResultFile] = field(default_factory=list)
    machines: dict = field(default_factory=dict)  # machine -> machine.json content
    skipped: list[SkippedFile] = field(default_factory=list)  # machine folders and files that cannot be used
    stamps: list[tuple] = field(default_factory=list)  # (relative, size, mtime, ctime) of the other JSON files

    def signature(self) -> tuple:
        """Changes whenever anything the loaders read changes: a result file, benchmarks.json, a
        machine.json, accepted.json beside them, or what cannot be read."""
        return (tuple(f.identity for f in self.files), tuple(sorted(self.stamps)),
                tuple((s.path, s.reason) for s in self.skipped))


def _stamp(path: Path, relative: str) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (relative, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def check_root(root: Path) -> None:
    """ResultsDirError unless ``root`` is an existing folder."""
    if not root.exists():
        raise ResultsDirError(f"results directory {str(root)!r} does not exist")
    if not root.is_dir():
        raise ResultsDirError(f"results path {str(root)!r} is not a directory")


def list_results(results_dir: str | Path, machine: str | None = None, read_machines: bool = True) -> Listing:
    """Every result file of the folder (of one ``machine``'s folder when given), each machine's
    machine.json (``read_machines``: parsed; else only stamped, for a cheap change check) and what
    cannot be used. Raises ResultsDirError when the folder itself is unusable."""
    root = Path(results_dir)
    check_root(root)
    out = Listing(root)
    try:
        with os.scandir(root) as top:
            entries = sorted(top, key=lambda e: e.name)
            machine_names = [e.name for e in entries if e.is_dir() and not e.name.startswith(".")
                             and e.name not in NOT_MACHINES]
            out.stamps += [s for e in entries if not e.is_dir() and e.name.endswith(".json")
                           and (s := _stamp(Path(e.path), e.name)) is not None]
    except OSError as exc:
        raise ResultsDirError(f"results directory {str(root)!r} cannot be listed ({exc.strerror or exc})") from None
    for name in machine_names:
        if machine is None or name == machine:
            _list_machine(out, root, name, read_machines)
    return out


def _list_machine(out: Listing, root: Path, machine: str, read_machines: bool) -> None:
    mdir = root / machine
    if not inside(mdir, root):
        out.skipped.append(SkippedFile(str(mdir), f"a symlink to {os.path.realpath(mdir)!r}, outside {str(root)!r}"))
        return
    try:
        with os.scandir(mdir) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".json"))
    except OSError as exc:
        out.skipped.append(SkippedFile(str(mdir), f"cannot list the machine folder ({exc.strerror or exc})"))
        return
    for name in names:
        path = mdir / name
        if name == MACHINE_FILE:
            stamp = _stamp(path, f"{machine}/{name}")
            out.stamps += [stamp] if stamp else []
            if read_machines:
                info, reason = read_json(path, root)
                if reason is None and isinstance(info, dict):
                    out.machines[machine] = info
                else:
                    out.skipped.append(SkippedFile(str(path), reason or "not an asv machine.json"))
            continue
        try:
            st = path.stat()  # of what a symlink points to: a new target is a changed file
        except OSError as exc:
            out.skipped.append(SkippedFile(str(path), f"cannot stat ({exc.strerror or exc})"))
            continue
        out.files.append(ResultFile(f"{machine}/{name}", machine, st.st_size, st.st_mtime_ns, st.st_ctime_ns,
                                    st.st_ino))


def read_benchmarks(root: Path) -> tuple[dict, list[SkippedFile]]:
    """benchmarks.json (name -> metadata; {} when absent) and its problem, if any."""
    path = Path(root) / BENCHMARKS_FILE
    if not (path.exists() or path.is_symlink()):
        return {}, []
    doc, reason = read_json(path, Path(root))
    if reason is None and not isinstance(doc, dict):
        reason = "not an asv benchmarks.json (top level is not an object)"
    if reason is not None:
        return {}, [SkippedFile(str(path), reason + "; parameter names and units unknown")]
    return {k: v for k, v in doc.items() if isinstance(v, dict)}, []
