"""The one commit order of the dashboard, its detector worker and the gate, and the one way a
hash or prefix names a commit of the results (no Dash).

asv's rule: commits go in the repository's revision order (``git rev-list --all --date-order``
of the repository asv.conf.json names, asv_results.asvconf) where it can be read, else by the date
asv stored. Every reader of results orders commits here: the dashboard's table, and the gate's
frame through an ``order`` column (each row's commit position in its machine x environment), which
the detector (findings.py), the failures (failures.py) and the gate's judged commits sort by.
"""

from __future__ import annotations

import numpy as np

ORDER = "order"  # the frame column: the row's commit position in its (machine, env_name), oldest 0


def commit_order(dates: dict[str, int], rank: dict[str, int] | None) -> list[str]:
    """Commits oldest first: by the repository's order where it knows a commit (asv's own rule:
    ``git rev-list --all --date-order``), else by the date asv stored. Commits the repository does
    not know are placed by date among the ones it does (against the latest date so far)."""
    if not rank or not any(h in rank for h in dates):
        return sorted(dates, key=lambda h: (dates[h], h))
    known = sorted((h for h in dates if h in rank), key=lambda h: rank[h])
    keys, latest = {}, None
    for h in known:  # a running max keeps the repository's order among known commits
        latest = dates[h] if latest is None else max(latest, dates[h])
        keys[h] = (latest, 0, rank[h])
    for h in dates:
        if h not in rank:
            keys[h] = (dates[h], 1, h)
    return sorted(dates, key=lambda h: keys[h])


def resolve_commit(commits, wanted: str) -> str:
    """The full hash that ``wanted`` (a hash or a prefix, any case) names among ``commits`` (hashes,
    or a frame with a ``commit_hash`` column); ValueError naming the problem when it names none or
    several. The gate's --base/--head and every page's commit in a link go through here."""
    if hasattr(commits, "columns"):
        commits = commits["commit_hash"].astype(str).unique()
    prefix = str(wanted or "").strip().lower()
    if not prefix:
        raise ValueError("no commit given")
    matches = sorted({h for h in map(str, commits) if h.lower().startswith(prefix)})
    if not matches:
        raise ValueError(f"commit {wanted!r} is not in the results")
    if len(matches) > 1:
        raise ValueError(f"commit {wanted!r} is ambiguous: {', '.join(m[:12] for m in matches[:5])}")
    return matches[0]


def order_note(rank: dict[str, int] | None, repo=None) -> str:
    """What every page and the gate say about the order they use."""
    if rank:
        return f"commits in the order of the repository {repo}" if repo else "commits in the repository's order"
    return "commits in the order of the dates asv stored"


def with_order(frame, rank: dict[str, int] | None):
    """``frame`` (asv_results.loading.load_results' rows) with the ``order`` column: each row's commit
    position in its machine x environment, by :func:`commit_order` (one pass over the distinct
    commits, then a join: a frame has millions of rows and thousands of commits)."""
    import pandas as pd

    out = frame.copy()
    if not len(out):
        out[ORDER] = np.zeros(0, dtype=np.int64)
        return out
    keys = pd.DataFrame({c: out[c].astype(str).to_numpy() for c in ("machine", "env_name", "commit_hash")})
    keys["ms"] = (out["date"].astype("int64") // 1_000_000).to_numpy()
    commits = keys.groupby(["machine", "env_name", "commit_hash"], sort=False)["ms"].min().reset_index()
    positions = []
    for _, run in commits.groupby(["machine", "env_name"], sort=False):
        ordered = commit_order(dict(zip(run["commit_hash"], run["ms"].tolist())), rank)
        at = {h: i for i, h in enumerate(ordered)}
        positions.append(pd.Series([at[h] for h in run["commit_hash"]], index=run.index))
    commits[ORDER] = pd.concat(positions)
    joined = keys.merge(commits[["machine", "env_name", "commit_hash", ORDER]], how="left",
                        on=["machine", "env_name", "commit_hash"])
    out[ORDER] = joined[ORDER].to_numpy(dtype=np.int64)
    return out


def commits_in_order(frame):
    """Commits of each (machine, env) of a load_results frame in order: machine, env_name,
    commit_hash, date. The order is the frame's ``order`` column where it has one (with_order:
    the repository's order), else :func:`commit_order` by the stored dates."""
    cols = ["machine", "env_name", "commit_hash", "date"]
    if ORDER in frame.columns:
        commits = frame[[*cols, ORDER]].drop_duplicates(subset=cols[:3])
    else:
        commits = with_order(frame[cols].drop_duplicates(subset=cols[:3]), None)
    return commits.sort_values(["machine", "env_name", ORDER, "commit_hash"])[cols].reset_index(drop=True)
