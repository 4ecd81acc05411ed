"""Several result files for one commit of one machine x environment: one rule, for the
dashboard and the gate alike (no Dash, no pandas).

asv writes one file per commit and environment, named ``<hash[:8]>-<env>.json``. A copy (a
re-run saved beside it, a file renamed by hand, a merge that kept both) holds the same commit:
merging both would count that commit twice, and a copy with an earlier date would move the
commit back in a date-ordered history. The rule: the file with asv's own name is read; among
several (or none) with it, the one whose path sorts first. Every other one is left out, and
the load report says so (a "partial" line, so the gate still judges: nothing it needs was lost).
"""

from __future__ import annotations


def asv_file_name(commit_hash: str, env_name: str) -> str:
    return f"{commit_hash[:8]}-{env_name}.json"


def _name(path: str) -> str:
    return str(path).replace("\\", "/").rsplit("/", 1)[-1]


def choose(files) -> tuple[list[int], list[str]]:
    """``files``: (path, machine, env_name, commit_hash) per usable result file. Returns the
    indices to read, in the given order, and one line per file left out (with the one kept)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, (_, machine, env, commit) in enumerate(files):
        groups.setdefault((machine, env, commit), []).append(i)
    keep, notes = set(), []
    for (machine, env, commit), members in groups.items():
        members = sorted(members, key=lambda i: (_name(files[i][0]) != asv_file_name(commit, env), str(files[i][0])))
        keep.add(members[0])
        for i in members[1:]:
            notes.append(f"{files[i][0]}: another result file for commit {commit[:8]} of {machine} / {env}; "
                         f"{files[members[0]][0]} is read instead (one file per commit: asv's own name, else the "
                         "first path)")
    return [i for i in range(len(files)) if i in keep], notes
