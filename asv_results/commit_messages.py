"""Commit subjects from the repository asv.conf.json names (asv_results.asvconf), for the
Regressions list: what a commit says it did, beside what it measured (no Dash, no pandas).

Read once per repository and set of commits with ``git log --all``; a repository that cannot be
read gives no subjects (the pages then show hashes only, as before)."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from pathlib import Path

GIT_TIMEOUT_S = 20
MAX_SUBJECT = 120  # characters shown; a subject is one line, but some are long


@lru_cache(maxsize=4)
def _read(repo: str, known: int) -> dict[str, str]:
    try:
        done = subprocess.run(["git", "-C", repo, "log", "--all", "--format=%H%x00%s"], capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_S, errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    out = {}
    for line in done.stdout.splitlines():
        commit, _, subject = line.partition("\x00")
        if subject:
            out[commit] = subject if len(subject) <= MAX_SUBJECT else subject[:MAX_SUBJECT - 1] + "…"
    return out


def subjects(repo: Path | None, commit_rank: dict | None = None) -> dict[str, str]:
    """hash -> subject line of every commit of ``repo`` (empty without one). ``commit_rank`` (the
    repository's commits, asv_results.asvconf) keys the cache, so a repository that moved on is read again."""
    if repo is None:
        return {}
    return _read(str(repo), len(commit_rank or ()))
