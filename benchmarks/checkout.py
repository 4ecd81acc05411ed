"""Is the checkout's code what HEAD says? Results are filed under a commit, so they must measure
that commit's code. results/ is left out: it is data these tools write (and commit), not code.
File modes are left out too: a copy of the working tree that lost its executable bits (as the GPU
machine gets it) runs the same code."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def uncommitted_code_changes(repo: Path = REPO) -> str:
    """`git status` lines of tracked files changed outside results/ ("" when the code is HEAD's)."""
    return subprocess.run(["git", "-C", str(repo), "-c", "core.fileMode=false", "status", "--porcelain", "--untracked-files=no", "--",
                           ".", ":(exclude)results"], capture_output=True, text=True, check=True).stdout.strip()
