"""What an asv.conf.json tells the dashboard about the project whose results it shows: the URL a
commit hash links to, and the repository that puts commits in order (no Dash, no pandas).

The config comes from ``--asv-conf FILE``, else from an asv.conf.json beside the results folder
(asv's own layout: the config and ``results/`` in one directory). Without one there are no commit
links and commits are ordered by the date asv stored; this repository's config is never assumed
for another project's results.

The config is parsed once per change of the file (asv_results.conf_reader: size-capped, cached by
the file's identity), so a reload of the results does not parse it again.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from asv_results import conf_reader

CONF_NAME = "asv.conf.json"
GIT_TIMEOUT_S = 20
# A commit link is shown as an <a href>: only a web address, never javascript:, data: or file:
# (a browser drops tabs and newlines inside a URL, so any whitespace or control character is refused).
_WEB_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f]+$", re.IGNORECASE)


@dataclass(frozen=True)
class ProjectInfo:
    conf_path: Path | None = None
    commit_url: str | None = None  # show_commit_url: a commit's page is commit_url + hash
    repo: Path | None = None  # a local checkout, when the config's "repo" is one
    commit_rank: dict[str, int] = field(default_factory=dict)  # hash -> asv's revision number
    notes: tuple[str, ...] = ()  # what could not be used, in words

    def order_note(self) -> str:
        if self.commit_rank:
            return f"commits in the order of the repository {self.repo}"
        return "commits in the order of the dates asv stored"


def find_conf(results_dir: Path, explicit: Path | None) -> Path | None:
    """``explicit`` if given, else asv.conf.json beside ``results_dir`` if there is one."""
    if explicit is not None:
        return Path(explicit)
    beside = Path(results_dir).resolve().parent / CONF_NAME
    return beside if beside.is_file() else None


def read_project(conf_path: Path | None) -> ProjectInfo:
    """The commit URL and commit order from an asv config; never raises (a broken config only
    loses the links and the order, with a note saying why)."""
    if conf_path is None:
        return ProjectInfo(notes=("no asv.conf.json beside the results (use --asv-conf FILE for commit links "
                                  "and the repository's commit order)",))
    if not Path(conf_path).is_file():
        return ProjectInfo(conf_path, notes=(f"{conf_path} is not a file",))
    conf, reason = conf_reader.load_conf(conf_path)
    if reason is not None:
        return ProjectInfo(conf_path, notes=(f"cannot read {conf_path}: {reason}",))
    if not isinstance(conf, dict):
        return ProjectInfo(conf_path, notes=(f"{conf_path} is not an asv config (not an object)",))
    url, url_notes = commit_url(conf.get("show_commit_url"))
    repo, rank, notes = _repo_order(Path(conf_path).resolve().parent, conf.get("repo"))
    return ProjectInfo(conf_path, url, repo, rank, tuple(url_notes + notes))


def commit_url(setting) -> tuple[str | None, list[str]]:
    """``show_commit_url`` if it is an http(s) address, else None and a note why."""
    if setting is None or setting == "":
        return None, []
    if isinstance(setting, str) and _WEB_URL.match(setting):
        return setting, []
    shown = repr(setting)[:80]
    return None, [f"show_commit_url {shown} is not an http(s) address; commits are not linked"]


def _repo_order(base: Path, repo_setting) -> tuple[Path | None, dict[str, int], list[str]]:
    if not isinstance(repo_setting, str) or not repo_setting:
        return None, {}, ["the asv config names no repo"]
    if "://" in repo_setting or repo_setting.startswith("git@"):
        return None, {}, [f"repo {repo_setting} is not a local checkout; commits ordered by date"]
    repo = (base / repo_setting).resolve()
    if not repo.is_dir():
        return None, {}, [f"repo {repo} does not exist; commits ordered by date"]
    return repo, *git_revision_numbers(repo)


def git_revision_numbers(repo: Path) -> tuple[dict[str, int], list[str]]:
    """asv's revision numbers (``asv.plugins.git.Git.get_revisions``): the position of every
    commit in ``git rev-list --all --date-order --reverse``."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "rev-list", "--all", "--date-order", "--reverse"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, [f"git rev-list in {repo} failed ({exc}); commits ordered by date"]
    if done.returncode != 0:
        return {}, [f"{repo} is not a git checkout ({done.stderr.strip()[:200]}); commits ordered by date"]
    return {h: i for i, h in enumerate(done.stdout.split())}, []
