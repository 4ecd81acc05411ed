"""Whether the gate read everything it judges: a verdict on results it could not read is no
verdict ("could not judge", exit 2), never a pass.

Three ways results go missing under a gate:
- a result file of a judged commit is refused by the loader (truncated, half written, a FIFO ...).
  asv names its files ``<hash[:8]>-<env>.json``, so a refused file is placed by its name: a judged
  commit's (by its name, or the hash asv writes near its start), or one the gate cannot place
  before the judged commits, means the gate cannot judge; a broken copy of a commit whose
  results on that machine were read from another file is a warning;
  a file of an older commit (in the results, an ancestor of the base in git, or dated before the
  judged commits by the ``date`` asv writes near the start of the file) is only a warning, as on
  the dashboard. A file named otherwise is placed by the hash stored in it; one that cannot be
  read at all (cut before its hash, a FIFO) and is not dated before the judged commits stops the
  gate too, whatever its name; a readable JSON file that names no commit (notes) is a warning;
- a run that has results at the base has none at the head (``--base A..B``): its shard has not
  landed, or its file was lost;
- the folder changed while it was read (a shard landing meanwhile): what was judged is a mix.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from asv_results.data import SkippedFile
from asv_results.results_folder import ResultsDirError, list_results
from asv_results.safe_read import UnreadableFile, date_problem, read_bytes, read_json

# asv's result file name: the commit's first 8 hex digits, a dash, the environment's name
RESULT_FILE_NAME = re.compile(r"^([0-9a-f]{7,40})-.+\.json$")
MACHINE_FILE = "machine.json"  # asv's machine identity, not a result
# asv writes a result's commit date among its first keys; a cut file usually still has it
STORED_DATE = re.compile(rb'"date":\s*(\d{1,16})\s*[,}]')
STORED_HASH = re.compile(rb'"commit_hash":\s*"([0-9a-f]{7,40})"')
HEAD_BYTES = 1 << 16


def listing_now(results_dir: str | Path, machine: str | None = None) -> tuple:
    """The folder's listing as it is now (results_folder.Listing.signature, of one ``machine``'s
    folder when given), to hold against the one the load found (ParsedResults.listed): any write,
    rename or replacement of a file the gate reads changes it, even one that restores the size
    and mtime."""
    try:
        return list_results(results_dir, machine).signature()
    except ResultsDirError as exc:
        return ((("the results folder", "unreadable", str(exc)),), (), ())


def changed_files(before: tuple, after: tuple) -> list[str]:
    """Names whose identity differs between two listings' signatures."""
    def named(signature: tuple) -> dict:
        files, stamps, skipped = signature
        return {**{e[0]: e for e in (*files, *stamps)}, **{path: ("skipped", why) for path, why in skipped}}

    a, b = named(before), named(after)
    return sorted(n for n in a.keys() | b.keys() if a.get(n) != b.get(n))


def unread_results(skipped: Sequence[SkippedFile], results_dir: str | Path, frame: pd.DataFrame,
                   judged: dict[str, list[str]], base_of: dict[str, str],
                   is_ancestor: Callable[[str, str], bool | None],
                   judged_from: dict[str, int] | None = None) -> list[str]:
    """Why refused files stop the gate (empty: none does).

    ``frame``: every result read (not cut at the head); ``judged``: machine -> its judged commits
    (full hashes); ``base_of``: machine -> the newest commit before them ("" if none);
    ``is_ancestor(prefix, commit)``: whether git places the commit named by ``prefix`` at or
    before ``commit`` (None when git does not know it); ``judged_from``: machine -> the date (ms)
    of its oldest judged commit.
    """
    root = Path(results_dir)
    judged_from = judged_from or {}
    all_judged = {c for commits in judged.values() for c in commits}
    hashes = frame["commit_hash"].astype(str)
    known = set(hashes.unique())
    read_on = {str(m): set(h) for m, h in hashes.groupby(frame["machine"].astype(str), observed=True)}
    problems = []
    for item in skipped:
        path = Path(item.path)
        if path.parent == root and path.name == "benchmarks.json":
            problems.append(f"{path} could not be read ({item.reason}): without it units and directions are unknown")
            continue
        if path.parent.parent != root or path.name == MACHINE_FILE:
            continue  # machine.json, a folder, a file deeper down: warnings
        machine = path.parent.name
        head = _head(path, root)
        stored = STORED_HASH.search(head)
        match = RESULT_FILE_NAME.match(path.name)
        prefix = stored.group(1).decode() if stored else match.group(1) if match else None
        if prefix is None:  # named otherwise, and no hash in it
            if read_json(path, root)[1] is None:
                continue  # readable JSON that names no commit (notes): a warning
            dated_before = machine in judged_from and (_stored_date(head) or judged_from[machine]) < judged_from[machine]
            if not dated_before:
                problems.append(f"{path} could not be read ({item.reason}) and nothing in it or its name says "
                                "which commit it holds")
            continue
        if any(c.startswith(prefix) for c in read_on.get(machine, ())):
            continue  # a broken copy: this machine's results of that commit were read from another file
        if any(c.startswith(prefix) for c in all_judged):
            problems.append(f"{path}, a result of a judged commit, could not be read ({item.reason})")
        elif any(c.startswith(prefix) for c in known):
            continue  # a commit the results hold elsewhere and that is not judged
        elif base_of.get(machine) and is_ancestor(prefix, base_of[machine]):
            continue  # older than the judged commits
        elif machine in judged_from and (_stored_date(head) or judged_from[machine]) < judged_from[machine]:
            continue  # dated before the judged commits
        else:
            problems.append(f"{path} could not be read ({item.reason}) and its commit {prefix[:12]} cannot be "
                            f"placed before the judged commits")
    return problems


def _head(path: Path, root: Path) -> bytes:
    """The first bytes of a result file (b"" if it cannot be read at all): asv writes the
    commit's hash and date among the first keys, so a cut file usually still says which it is."""
    try:
        return read_bytes(path, root)[:HEAD_BYTES]
    except UnreadableFile:
        return b""


def _stored_date(head: bytes) -> int | None:
    match = STORED_DATE.search(head)
    if match is None or date_problem(int(match.group(1))) is not None:
        return None
    return int(match.group(1))


def missing_at_head(frame_before_head: pd.DataFrame, base: str, head: str) -> list[str]:
    """Runs (machine, environment) with results at the base commit and none at the head."""
    hashes = frame_before_head["commit_hash"].astype(str)
    runs = frame_before_head[["machine", "env_name"]].astype(str)
    at_base = set(map(tuple, runs[hashes == base].drop_duplicates().to_numpy()))
    at_head = set(map(tuple, runs[hashes == head].drop_duplicates().to_numpy()))
    return [f"{m} ({e}) has results at the base {base[:12]} but no results for {head[:12]}"
            for m, e in sorted(at_base - at_head)]


def git_is_ancestor(prefix: str, commit: str) -> bool | None:
    """Whether the commit named by ``prefix`` is ``commit`` or one of its ancestors in this
    checkout's git (None: git does not know ``prefix``)."""
    try:
        named = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{prefix}^{{commit}}"],
                               capture_output=True, text=True, timeout=30)
        if named.returncode != 0 or not named.stdout.strip():
            return None
        done = subprocess.run(["git", "merge-base", "--is-ancestor", named.stdout.strip(), commit],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode == 0
