"""Which commit of a run a page shows or marks: by a link's (prefix of a) hash, by the gate's rule
(commit_order.resolve_commit), else the newest; a commit the run lacks is noted on the query.
"""

from __future__ import annotations

from asv_results import commit_order
from dashboard.data.run_view import Run
from dashboard.data.urlstate import Query


def commit_label(commit: str, date) -> str:
    return f"{commit[:8]} · {date:%Y-%m-%d %H:%M}"


def commit_options(run: Run | None) -> list[dict]:
    if run is None:
        return []
    commits = run.commits.iloc[::-1]  # newest first
    return [{"label": commit_label(h, d), "value": h} for h, d in zip(commits["commit_hash"], commits["date"])]


def named_commit(run: Run | None, wanted: str | None) -> str | None:
    """The commit of the run that ``wanted`` names (commit_order.resolve_commit: the gate's rule,
    a unique hash prefix, any case), or None."""
    if run is None or not wanted:
        return None
    try:
        return commit_order.resolve_commit(run.commits["commit_hash"].tolist(), wanted)
    except ValueError:
        return None


def commit_or_newest(run: Run | None, wanted: str | None, offset_from_newest: int = 0) -> str | None:
    """The commit ``wanted`` names in the run, else its newest minus ``offset_from_newest``."""
    if run is None or run.commits.empty:
        return None
    hashes = run.commits["commit_hash"].tolist()
    return named_commit(run, wanted) or hashes[max(len(hashes) - 1 - offset_from_newest, 0)]


resolve_commit = commit_or_newest  # the name the pages import; the matching rule is commit_order's


def commit_of(run: Run | None, query: Query, key: str, offset_from_newest: int = 0) -> str | None:
    """commit_or_newest for ``key`` of the query, noting a commit the run does not have."""
    wanted = query.one(key)
    if wanted and named_commit(run, wanted) is None:
        query.reject(key, wanted)
    return commit_or_newest(run, wanted, offset_from_newest)


def marked_commit(run: Run | None, query: Query) -> str | None:
    """The commit a link marks, if the run has it (else nothing is marked, and the page says so)."""
    wanted = query.one("commit")
    chosen = named_commit(run, wanted)
    if wanted and chosen is None:
        query.reject("commit", wanted)
    return chosen
