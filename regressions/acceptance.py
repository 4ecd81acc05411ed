"""Accepted regressions: ``results/accepted.json``, committed with the results, read by the gate and
the dashboard's Regressions page alike (as Bencher and Conbench let a team dismiss an alert).

    {"version": 1,
     "accepted": [{"benchmark": "bench_ops.GatedMLP.track_latency",
                   "params": "case='gated_mlp M=8192 K=768 N=3072 bf16 gelu_tanh', impl='fused'",
                   "machine": "h200-runner",
                   "commit": "1a2b3c4d",
                   "who": "alice",
                   "why": "exact GELU instead of tanh: 3 % slower, needed for parity"}]}

``params`` (the report prints it exactly) and ``machine`` may be left out to accept the change
for every parameter combination or machine; ``commit`` (a hash or a prefix of at least 7 hex
digits) is the commit the change is at, or any of the commits the report says it could be at.
An entry accepts that one change, never later ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from asv_results.safe_read import read_json

ACCEPTED_FILE = "accepted.json"
REQUIRED = ("benchmark", "commit", "who", "why")
OPTIONAL = ("params", "machine")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
# The one spelling of what a person replaces in an offered entry (the gate's report and the
# dashboard's "accept…" both offer it); an entry still holding it accepts nothing.
PLACEHOLDERS = {"who": "<your name>", "why": "<why this change is accepted>"}
# Spellings older versions offered (the old Regressions page, the old gate): entries copied from
# them are still around and must not accept a regression either. Compared case-insensitively.
LEGACY_PLACEHOLDERS = {"who": ("your name",), "why": ("why this change is accepted", "<why this is acceptable>")}


@dataclass(frozen=True)
class Acceptance:
    benchmark: str
    commit: str
    who: str
    why: str
    params: str | None = None  # None: every parameter combination
    machine: str | None = None  # None: every machine

    def covers(self, benchmark: str, params: str, machine: str, commits: Iterable[str]) -> bool:
        """Whether this entry accepts a change of (benchmark, params, machine) that may be at any
        of ``commits`` (full hashes)."""
        return (self.benchmark == benchmark and self.params in (None, params) and self.machine in (None, machine)
                and any(c.startswith(self.commit) for c in commits))

    def label(self) -> str:
        return f"accepted by {self.who}: {self.why}"


class AcceptedFileError(Exception):
    """accepted.json exists but cannot be used; the message names the problem."""


def accepted_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / ACCEPTED_FILE


def load_accepted(path: str | Path, root: str | Path | None = None) -> list[Acceptance]:
    """The entries of an accepted.json ([] when there is none); AcceptedFileError when it is
    unreadable or any entry is malformed (a gate must not guess which regressions were accepted)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    doc, reason = read_json(path, Path(root) if root is not None else path.parent)
    if reason is not None:
        raise AcceptedFileError(f"{path}: {reason}")
    if not isinstance(doc, dict) or not isinstance(doc.get("accepted"), list):
        raise AcceptedFileError(f"{path}: expected an object with an 'accepted' list")
    version = doc.get("version", 1)
    if type(version) is not int or version != 1:  # true == 1 in Python: not a version
        raise AcceptedFileError(f"{path}: unsupported version {doc.get('version')!r} (this reader understands 1)")
    return [_entry(path, i, item) for i, item in enumerate(doc["accepted"])]


def _entry(path: Path, i: int, item: object) -> Acceptance:
    where = f"{path}: entry {i + 1}"
    if not isinstance(item, dict):
        raise AcceptedFileError(f"{where} is {type(item).__name__}, expected an object")
    unknown = sorted(set(item) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise AcceptedFileError(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: "
                                f"{', '.join(REQUIRED + OPTIONAL)})")
    for key in REQUIRED:
        if not isinstance(item.get(key), str) or not item[key].strip():
            raise AcceptedFileError(f"{where}: '{key}' must be a non-empty string")
    for key in OPTIONAL:
        if key in item and not isinstance(item[key], str):
            raise AcceptedFileError(f"{where}: '{key}' must be a string")
    for key, placeholder in PLACEHOLDERS.items():
        if item[key].strip().lower() in (placeholder, *LEGACY_PLACEHOLDERS[key]):
            raise AcceptedFileError(f"{where}: '{key}' is still the placeholder {placeholder!r}: say {key} "
                                    "before committing it")
    commit = item["commit"].strip().lower()
    if not COMMIT.match(commit):
        raise AcceptedFileError(f"{where}: 'commit' {item['commit']!r} is not a commit hash (7 to 40 hex digits)")
    return Acceptance(benchmark=item["benchmark"], commit=commit, who=item["who"], why=item["why"],
                      params=item.get("params"), machine=item.get("machine"))


def find_acceptance(entries: Sequence[Acceptance], benchmark: str, params: str, machine: str,
                    commits: Iterable[str]) -> Acceptance | None:
    commits = list(commits)
    return next((e for e in entries if e.covers(benchmark, params, machine, commits)), None)


def unknown_commits(entries: Sequence[Acceptance], known: Iterable[str]) -> list[Acceptance]:
    """Entries whose commit is in none of the results (a typo, or results not committed)."""
    known = list(known)
    return [e for e in entries if not any(c.startswith(e.commit) for c in known)]


def plausible_commits(change, ordered_commits: Sequence[str]) -> list[str]:
    """The commits a finding may be at (its reported commit, and earliest..latest when the report
    says it could be any of several), in the order of ``ordered_commits`` of its run."""
    span = [change.commit_hash]
    low, high = getattr(change, "earliest_commit", ""), getattr(change, "latest_commit", "")
    if low and high and low in ordered_commits and high in ordered_commits:
        span += list(ordered_commits[ordered_commits.index(low):ordered_commits.index(high) + 1])
    return span
